/* SPDX-License-Identifier: MIT */
/* The library's names, values and struct layouts as one JSON text: what bindings (the Python
 * package) read instead of keeping copies of symaddr.h that drift. */
#include "providers/provider.h"
#include "core/algos.h"
#include "core/config.h"
#include "bootstrap/bootstrap.h"
#include "symaddr/device.h"

#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

static const char *const redop_names[SYMADDR_REDOP_COUNT_] = {
    [SYMADDR_SUM] = "sum",
    [SYMADDR_PROD] = "prod",
    [SYMADDR_MIN] = "min",
    [SYMADDR_MAX] = "max",
};

const char *symaddr_redop_name(symaddr_redop_t op)
{
    return (int)op >= 0 && op < SYMADDR_REDOP_COUNT_ ? redop_names[op] : NULL;
}

#ifndef SYMADDR_BUILD_INFO
#define SYMADDR_BUILD_INFO "unknown"
#endif
const char *symaddr_build_info(void)
{
    /* the build's options, then the MPI whose header it was compiled against */
    return SYMADDR_BUILD_INFO "; MPI header: " SYMADDR_MPI_HEADER;
}

const char *symaddr_provider_name(symaddr_provider_kind_t kind)
{
    return (int)kind >= 0 && kind < SYMADDR_PROVIDER_COUNT_ ? symaddr_provider_ops(kind)->name
                                                            : NULL;
}

typedef struct {
    char *p;
    size_t left;
} out_t;

static void put(out_t *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(out_t *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(o->p, o->left, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= o->left) { /* cut: the text stays a valid prefix, never parsed */
        o->p += o->left ? o->left - 1 : 0;
        o->left = o->left ? 1 : 0;
        return;
    }
    o->p += n;
    o->left -= (size_t)n;
}

/* "name": value pairs of one enum, from a name function over 0..count-1 */
static void names(out_t *o, const char *key, const char *(*name)(int), int count)
{
    put(o, "\"%s\": {", key);
    for (int k = 0, first = 1; k < count; k++)
        if (name(k)) {
            put(o, "%s\"%s\": %d", first ? "" : ", ", name(k), k);
            first = 0;
        }
    put(o, "}, ");
}

static const char *backend_at(int k) { return symaddr_backend_name((symaddr_backend_kind_t)k); }
static const char *provider_at(int k) { return symaddr_provider_name((symaddr_provider_kind_t)k); }
static const char *redop_at(int k) { return symaddr_redop_name((symaddr_redop_t)k); }
static const char *dtype_at(int k) { return symaddr_dtype_name((symaddr_dtype_t)k); }
static const char *algo_at(int k)
{
    return symaddr_allreduce_algo_name((symaddr_allreduce_algo_t)k);
}

typedef struct {
    const char *name, *type;
    size_t offset, bytes;
} field_t;

#define FIELD(s, f, t)                                                                             \
    {                                                                                              \
#f, t, offsetof(s, f), sizeof(((s *)0)->f)                                                 \
    }

static const field_t config_fields[] = {
    FIELD(symaddr_config_t, size, "size_t"),
    FIELD(symaddr_config_t, backend, "int"),
    FIELD(symaddr_config_t, device, "int"),
    FIELD(symaddr_config_t, heap_bytes, "size_t"),
    FIELD(symaddr_config_t, node_size, "int"),
    FIELD(symaddr_config_t, validate, "int"),
    FIELD(symaddr_config_t, timeout_ms, "unsigned"),
    FIELD(symaddr_config_t, allreduce_algo, "int"),
    FIELD(symaddr_config_t, twoshot_bytes, "size_t"),
    FIELD(symaddr_config_t, ll_bytes, "size_t"),
    FIELD(symaddr_config_t, logger, "ptr"),
    FIELD(symaddr_config_t, logger_cookie, "ptr"),
    FIELD(symaddr_config_t, lamport_bytes, "size_t"),
    FIELD(symaddr_config_t, debug_level, "int"),
    FIELD(symaddr_config_t, debug_subsys, "unsigned"),
    FIELD(symaddr_config_t, debug_file, "ptr"),
    FIELD(symaddr_config_t, retain_bytes, "size_t"),
    FIELD(symaddr_config_t, hip_finegrained, "int"),
    FIELD(symaddr_config_t, no_call_check, "int"),
};

static const field_t map_fields[] = {
    FIELD(symaddr_map_t, peer_bases, "ptr"),
    FIELD(symaddr_map_t, host_peer_bases, "ptr"),
    FIELD(symaddr_map_t, local_rank, "int"),
    FIELD(symaddr_map_t, world_size, "int"),
    FIELD(symaddr_map_t, allocation_base, "uint64"),
    FIELD(symaddr_map_t, allocation_bytes, "uint64"),
    FIELD(symaddr_map_t, capabilities, "uint64"),
    FIELD(symaddr_map_t, range_base, "uint64"),
    FIELD(symaddr_map_t, range_bytes, "uint64"),
    FIELD(symaddr_map_t, error_flag, "ptr"),
    FIELD(symaddr_map_t, provider, "int"),
};

static const field_t buffer_fields[] = {
    FIELD(symaddr_buffer_t, ptr, "ptr"),
    FIELD(symaddr_buffer_t, peer_bases, "ptr"),
    FIELD(symaddr_buffer_t, local_rank, "int"),
    FIELD(symaddr_buffer_t, caps, "uint64"),
};

static const field_t bootstrap_ops_fields[] = {
    FIELD(symaddr_bootstrap_ops_t, version, "unsigned"),
    FIELD(symaddr_bootstrap_ops_t, sendrecv, "ptr"),
    FIELD(symaddr_bootstrap_ops_t, allgather, "ptr"),
    FIELD(symaddr_bootstrap_ops_t, barrier, "ptr"),
    FIELD(symaddr_bootstrap_ops_t, node_key, "ptr"),
    FIELD(symaddr_bootstrap_ops_t, fini, "ptr"),
};

static void layout(out_t *o, const char *name, size_t bytes, const field_t *f, size_t n)
{
    put(o, "\"%s\": {\"size\": %zu, \"fields\": [", name, bytes);
    for (size_t i = 0; i < n; i++)
        put(o, "%s[\"%s\", \"%s\", %zu, %zu]", i ? ", " : "", f[i].name, f[i].type, f[i].offset,
            f[i].bytes);
    put(o, "]}");
}

#define LAYOUT(o, s, f) layout(o, #s, sizeof(s), f, sizeof(f) / sizeof(f[0]))

static char abi_text[8192];
static pthread_once_t abi_once = PTHREAD_ONCE_INIT;

static void abi_build(void)
{
    out_t o = {abi_text, sizeof(abi_text)};
    int major, minor, patch;
    symaddr_version(&major, &minor, &patch);
    put(&o, "{\"version\": \"%d.%d.%d\", ", major, minor, patch);
    put(&o, "\"mpi\": {\"header\": \"%s\", \"family\": \"%s\"}, ", SYMADDR_MPI_HEADER,
        SYMADDR_MPI_HEADER_OPENMPI > 0    ? "Open MPI"
        : SYMADDR_MPI_HEADER_OPENMPI == 0 ? "MPICH"
                                          : "other");
    put(&o, "\"status\": {");
    for (int st = 0; st > SYMADDR_ERR_LAST_; st--) {
        const char *t = symaddr_strerror((symaddr_status_t)st);
        put(&o, "%s\"%.*s\": %d", st ? ", " : "", (int)strcspn(t, ":"), t, st);
    }
    put(&o, "}, ");
    names(&o, "backend", backend_at, SYMADDR_BACKEND_COUNT_);
    names(&o, "provider", provider_at, SYMADDR_PROVIDER_COUNT_);
    names(&o, "redop", redop_at, SYMADDR_REDOP_COUNT_);
    names(&o, "dtype", dtype_at, SYMADDR_DTYPE_COUNT_);
    names(&o, "allreduce_algo", algo_at, SYMADDR_ALLREDUCE_ALGO_COUNT_);
    put(&o, "\"dtype_bytes\": {");
    for (int d = 0; d < SYMADDR_DTYPE_COUNT_; d++)
        put(&o, "%s\"%s\": %zu", d ? ", " : "", dtype_at(d),
            symaddr_dtype_size((symaddr_dtype_t)d));
    put(&o,
        "}, \"capability\": {\"load_store\": %llu, \"atomics\": %llu, "
        "\"system_atomics\": %llu, \"owned\": %llu, \"fabric\": %llu, \"coherent\": %llu}, ",
        SYMADDR_CAP_LOAD_STORE, SYMADDR_CAP_ATOMICS, SYMADDR_CAP_SYSTEM_ATOMICS, SYMADDR_CAP_OWNED,
        SYMADDR_CAP_FABRIC, SYMADDR_CAP_COHERENT);
    put(&o,
        "\"collective_flag\": {\"send_all\": %d, \"recv_all\": %d, \"reduces\": %d, "
        "\"rooted\": %d, \"root_only\": %d}, \"collectives\": [",
        SYMADDR_COLLECTIVE_SEND_ALL, SYMADDR_COLLECTIVE_RECV_ALL, SYMADDR_COLLECTIVE_REDUCES,
        SYMADDR_COLLECTIVE_ROOTED, SYMADDR_COLLECTIVE_ROOT_ONLY);
    for (int i = 0; i < symaddr_collective_count(); i++) {
        const symaddr_collective_info_t *c = symaddr_collective_info(i);
        put(&o, "%s{\"name\": \"%s\", \"doc\": \"%s\", \"flags\": %u}", i ? ", " : "", c->name,
            c->doc, c->flags);
    }
    put(&o, "], ");
    /* the header in front of every table symaddr builds (validation reads it, as Triton's
     * validated translate does) */
    put(&o,
        "\"table_header\": {\"magic\": %llu, \"words\": %d, \"magic_at\": %d, "
        "\"info_at\": %d, \"bytes_at\": %d, \"error_at\": %d, \"caps_shift\": %d}, ",
        (unsigned long long)SYMADDR_TABLE_MAGIC, SYMADDR_TABLE_HEADER, SYMADDR_HDR_MAGIC,
        SYMADDR_HDR_INFO, SYMADDR_HDR_BYTES, SYMADDR_HDR_ERROR, SYMADDR_HDR_CAPS_SHIFT);
    /* the variables, each with the config field it sets and what it accepts (bindings name
     * them in their refusals) */
    put(&o, "\"config_vars\": [");
    const char *var, *dflt, *doc;
    for (int i = 0; symaddr_config_var(i, &var, &dflt, &doc); i++)
        put(&o, "%s{\"name\": \"%s\", \"field\": \"%s\", \"accepts\": \"%s\"}", i ? ", " : "", var,
            symaddr_config_var_field(i), symaddr_config_var_accepts(i));
    put(&o, "], \"validate\": {\"off\": %d, \"on\": %d, \"args\": %d}, ", SYMADDR_VALIDATE_OFF,
        SYMADDR_VALIDATE_ON, SYMADDR_VALIDATE_ARGS);
    /* this process's validation area (Triton's validated translate records and sinks there) */
    put(&o, "\"validation_area\": {\"stray\": %llu, \"sink\": %llu, \"sink_span\": %d}, ",
        (unsigned long long)(uintptr_t)&symaddr_validation_area_.stray,
        (unsigned long long)(uintptr_t)symaddr_validation_area_.sink, SYMADDR_SINK_SPAN);
    put(&o, "\"structs\": {");
    LAYOUT(&o, symaddr_config_t, config_fields);
    put(&o, ", ");
    LAYOUT(&o, symaddr_map_t, map_fields);
    put(&o, ", ");
    LAYOUT(&o, symaddr_buffer_t, buffer_fields);
    put(&o, ", ");
    LAYOUT(&o, symaddr_bootstrap_ops_t, bootstrap_ops_fields);
    put(&o, "}, \"bootstrap_ops_version\": %d}", SYMADDR_BOOTSTRAP_OPS_VERSION);
}

const char *symaddr_abi_json(void)
{
    pthread_once(&abi_once, abi_build);
    return abi_text;
}
