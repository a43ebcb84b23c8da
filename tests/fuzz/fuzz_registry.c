/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the registry against a brute-force model, the check every received
 * handle record passes, and device-side validation against its rules. Any disagreement or
 * crash is a finding. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "maps/exch.h"
#include "maps/registry.h"

#define SYMADDR_VALIDATE 1
#include "symaddr/device.h"

#define SLOTS 32

typedef struct reader {
    const uint8_t *p;
    size_t n;
} reader_t;

static uint64_t take(reader_t *r, int bytes)
{
    uint64_t v = 0;
    for (int i = 0; i < bytes && r->n; i++, r->n--, r->p++)
        v |= (uint64_t)*r->p << (8 * i);
    return v;
}

static void fuzz_registry(reader_t *in)
{
    symaddr_registry_t reg;
    symaddr_registration_t *live[SLOTS] = {0};
    symaddr_registry_init(&reg);
    while (in->n) {
        unsigned op = (unsigned)take(in, 1) % 3, k = (unsigned)take(in, 1) % SLOTS;
        uint64_t base = 0x10000 + take(in, 1) * 0x40, len = take(in, 1);
        if (op == 0 && !live[k]) {
            int clash = len == 0 ? -1 : 0;
            for (int j = 0; j < SLOTS && clash == 0; j++)
                if (live[j] && base < live[j]->map.range_base + live[j]->map.range_bytes &&
                    live[j]->map.range_base < base + len)
                    clash = 1;
            symaddr_registration_t *r = calloc(1, sizeof(*r));
            r->map.range_base = base;
            r->map.range_bytes = len;
            symaddr_status_t st = symaddr_registry_insert(&reg, r);
            symaddr_status_t want = clash < 0 ? SYMADDR_ERR_INVALID_SIZE
                                    : clash   ? SYMADDR_ERR_ALREADY_REGISTERED
                                              : SYMADDR_OK;
            if (st != want)
                abort();
            if (st == SYMADDR_OK)
                live[k] = r;
            else
                free(r);
        } else if (op == 1 && live[k]) {
            if (symaddr_registry_remove(&reg, live[k]) != SYMADDR_OK ||
                symaddr_registry_owner(&reg, &live[k]->map))
                abort();
            free(live[k]);
            live[k] = NULL;
        } else {
            uint64_t ptr = base + len / 2;
            symaddr_registration_t *found = NULL, *want = NULL;
            for (int j = 0; j < SLOTS; j++)
                if (live[j] && ptr - live[j]->map.range_base < live[j]->map.range_bytes)
                    want = live[j];
            symaddr_status_t st = symaddr_registry_find(&reg, (void *)(uintptr_t)ptr, &found);
            if ((st == SYMADDR_OK) != (want != NULL) || (want && found != want))
                abort();
        }
    }
    for (int j = 0; j < SLOTS; j++)
        if (live[j]) {
            symaddr_registry_remove(&reg, live[j]);
            free(live[j]);
        }
    symaddr_registry_fini(&reg);
}

/* A record from a peer: any bytes at all. The check must decide without crashing, and what it
 * accepts must be openable in principle. */
static void fuzz_exch(reader_t *in)
{
    exch_t rec;
    uint8_t *b = (uint8_t *)&rec;
    for (size_t i = 0; i < sizeof(rec); i++)
        b[i] = (uint8_t)take(in, 1);
    int got_fd = (int)take(in, 1) & 1;
    if (symaddr_exch_check(&rec, got_fd) == SYMADDR_OK &&
        (rec.handle.bytes == 0 || rec.offset >= rec.handle.bytes ||
         rec.handle.kind > SYMADDR_HANDLE_VMM_FABRIC))
        abort();
}

/* Validation: a table with a header, an allocation size, a pointer and a target from the
 * input; translate must refuse exactly the accesses the rules forbid. */
static void fuzz_validation(reader_t *in)
{
    uint64_t words[SYMADDR_TABLE_HEADER + 8];
    uint64_t *pb = words + SYMADDR_TABLE_HEADER;
    int world = 1 + (int)(take(in, 1) % 8), me = (int)(take(in, 1) % (uint64_t)world);
    uint64_t bytes = take(in, 2), unreachable = take(in, 1);
    words[0] = SYMADDR_TABLE_MAGIC;
    words[1] = (uint64_t)world | (1ull << 32);
    words[2] = bytes;
    words[3] = 0;
    for (int r = 0; r < world; r++)
        pb[r] = (unreachable >> r) & 1 && r != me ? 0 : 0x100000000ull * (uint64_t)(r + 1);
    uint64_t ptr = pb[me] + take(in, 3) - 0x1000;
    int target = (int)(int8_t)take(in, 1);
    void *out = symaddr_translate((void *)(uintptr_t)ptr, target, pb, me);
    int want = ptr - pb[me] >= bytes           ? SYMADDR_ERR_OUT_OF_BOUNDS
               : target < 0 || target >= world ? SYMADDR_ERR_INVALID_ARG
               : pb[target] == 0               ? SYMADDR_ERR_UNREACHABLE
                                               : SYMADDR_OK;
    uint32_t flag = (uint32_t)words[3];
    if ((want == SYMADDR_OK) != (out != NULL) || (uint32_t)-want != flag)
        abort();
    if (out && (uint64_t)(uintptr_t)out != pb[target] + (ptr - pb[me]))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    reader_t in = {data + (size > 0), size > 0 ? size - 1 : 0};
    switch (size ? data[0] % 3 : 0) {
    case 0: fuzz_registry(&in); break;
    case 1: fuzz_exch(&in); break;
    default: fuzz_validation(&in); break;
    }
    return 0;
}
