/* SPDX-License-Identifier: MIT */
/* The allreduce algorithms: their facts from algos.h, auto's choice, and the fallback of a
 * message an algorithm cannot take. */
#include "core/algos.h"
#include "coll/coll.h"

enum { DTYPES_ANY, DTYPES_FLOATS };
enum { LARGEST_NONE, LARGEST_STAGE, LARGEST_INBOX, LARGEST_SLOT };
enum { WORK_BYTES, WORK_SHARE, WORK_X2, WORK_X4 };

static const struct algo {
    symaddr_coll_kind_t kind;
    int dtypes, largest, work;
    symaddr_allreduce_algo_t fallback;
} algos[SYMADDR_ALLREDUCE_ALGO_COUNT_] = {
#define ROW(E, name, dt, big, wk, fb)                                                              \
    [SYMADDR_ALLREDUCE_##E] = {.kind = SYMADDR_COLL_ALLREDUCE_##E,                                 \
                               .dtypes = DTYPES_##dt,                                              \
                               .largest = LARGEST_##big,                                           \
                               .work = WORK_##wk,                                                  \
                               .fallback = SYMADDR_ALLREDUCE_##fb},
    SYMADDR_ALLREDUCE_ALGO_LIST(ROW)
#undef ROW
};

/* Whether algorithm a takes bytes of dt. */
static bool takes(const symaddr_context_t *ctx, symaddr_allreduce_algo_t a, size_t bytes,
                  symaddr_dtype_t dt)
{
    const struct algo *r = &algos[a];
    if (r->dtypes == DTYPES_FLOATS && dt != SYMADDR_FLOAT32 && dt != SYMADDR_FLOAT16 &&
        dt != SYMADDR_BFLOAT16)
        return false;
    size_t largest = r->largest == LARGEST_STAGE   ? SYMADDR_COLL_STAGE_BYTES
                     : r->largest == LARGEST_INBOX ? SYMADDR_COLL_LL_BYTES
                     : r->largest == LARGEST_SLOT  ? ctx->coll.lamport_slot - 16 /* identity */
                                                   : SIZE_MAX;
    return bytes <= largest;
}

/* Auto: the first of these whose sizes hold the message (the config's thresholds and the
 * backend's measured ones). */
static symaddr_allreduce_algo_t choose_auto(const symaddr_context_t *ctx, size_t bytes,
                                            symaddr_dtype_t dt)
{
    const symaddr_config_t *c = &ctx->core.cfg;
    if (bytes <= c->lamport_bytes && takes(ctx, SYMADDR_ALLREDUCE_LAMPORT, bytes, dt))
        return SYMADDR_ALLREDUCE_LAMPORT;
    if (bytes <= c->ll_bytes)
        return SYMADDR_ALLREDUCE_LL;
    if (bytes < c->twoshot_bytes)
        return SYMADDR_ALLREDUCE_ONESHOT;
    if (bytes >= ctx->coll.twoshot_copy_bytes)
        return SYMADDR_ALLREDUCE_TWOSHOT_COPY;
    if (bytes >= ctx->coll.twoshot_get_bytes)
        return SYMADDR_ALLREDUCE_TWOSHOT_GET;
    return SYMADDR_ALLREDUCE_TWOSHOT;
}

symaddr_coll_kind_t symaddr_coll_allreduce_kind(const symaddr_context_t *ctx, size_t bytes,
                                                symaddr_dtype_t dt, size_t *work_p)
{
    symaddr_allreduce_algo_t a = ctx->core.cfg.allreduce_algo;
    if (a == SYMADDR_ALLREDUCE_AUTO)
        a = choose_auto(ctx, bytes, dt);
    while (!takes(ctx, a, bytes, dt)) /* every chain ends at a two-shot, which takes any */
        a = algos[a].fallback;
    const struct algo *r = &algos[a];
    *work_p = r->work == WORK_SHARE ? bytes / (size_t)ctx->core.boot.node_size
              : r->work == WORK_X4  ? bytes * 4
              : r->work == WORK_X2  ? bytes * 2
                                    : bytes;
    return r->kind;
}
