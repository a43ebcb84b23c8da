/* SPDX-License-Identifier: MIT */
/* Memory that is not symmetric and data movement from the host: plain allocations, copies,
 * stream waits, and put, get and atomics through a registration's table. */
#include "lifecycle/context.h"

#include <stdlib.h>
#include <string.h>

symaddr_status_t symaddr_mem_alloc(symaddr_context_t *ctx, size_t bytes, void **ptr_p)
{
    static const char fn[] = "symaddr_mem_alloc";
    if (!ctx)
        return SYMADDR_ERR_INVALID_ARG;
    if (!ptr_p)
        return symaddr_set_error(ctx, SYMADDR_ERR_INVALID_ARG, "%s: ptr_p is NULL", fn);
    symaddr_status_t st = symaddr_check_size(&ctx->core.err, bytes, fn);
    if (st != SYMADDR_OK)
        return st;
    void *ptr = NULL;
    st = ctx->be.ops->mem_alloc(&ctx->be, bytes, SYMADDR_MEM_BULK, &ptr);
    if (st != SYMADDR_OK)
        return symaddr_set_error(ctx, st, "%s: cannot allocate %zu bytes: %s", fn, bytes,
                                 symaddr_runtime_says(ctx));
    if (symaddr_plain_add(ctx, ptr, bytes) != SYMADDR_OK) {
        ctx->be.ops->mem_free(&ctx->be, ptr);
        return symaddr_set_error(ctx, SYMADDR_ERR_NO_MEMORY, "%s: out of host memory", fn);
    }
    *ptr_p = ptr;
    return SYMADDR_OK;
}

symaddr_status_t symaddr_mem_free(symaddr_context_t *ctx, void *ptr)
{
    static const char fn[] = "symaddr_mem_free";
    bool overlap = false;
    if (!ctx)
        return SYMADDR_ERR_INVALID_ARG;
    if (!ptr)
        return symaddr_set_error(ctx, SYMADDR_ERR_INVALID_ARG, "%s: ptr is NULL", fn);
    if (!symaddr_plain_take(ctx, ptr, &overlap))
        return overlap ? symaddr_set_error(ctx, SYMADDR_ERR_ALREADY_REGISTERED,
                                           "%s: %p is still imported; symaddr_unregister its "
                                           "maps first",
                                           fn, ptr)
                       : symaddr_set_error(ctx, SYMADDR_ERR_NOT_FOUND,
                                           "%s: %p is not from symaddr_mem_alloc on this context "
                                           "(or was freed already); free it with the context "
                                           "that allocated it",
                                           fn, ptr);
    symaddr_status_t st = ctx->be.ops->mem_free(&ctx->be, ptr);
    if (st != SYMADDR_OK)
        symaddr_set_error(ctx, st, "%s: %s", fn, symaddr_runtime_says(ctx));
    return st;
}

symaddr_status_t symaddr_memcpy(symaddr_context_t *ctx, void *dst, const void *src, size_t bytes)
{
    if (!ctx)
        return SYMADDR_ERR_INVALID_ARG;
    if ((!dst || !src) && bytes)
        return symaddr_set_error(ctx, SYMADDR_ERR_INVALID_ARG, "symaddr_memcpy: NULL pointer");
    if (!bytes)
        return SYMADDR_OK;
    if ((uintptr_t)dst + bytes < (uintptr_t)dst || (uintptr_t)src + bytes < (uintptr_t)src)
        return symaddr_set_error(ctx, SYMADDR_ERR_INVALID_SIZE,
                                 "symaddr_memcpy: %zu bytes run past the end of the address "
                                 "space",
                                 bytes);
    symaddr_status_t st = ctx->be.ops->memcpy(&ctx->be, dst, src, bytes);
    if (st != SYMADDR_OK)
        symaddr_set_error(ctx, st, "symaddr_memcpy: the %s runtime refused the copy: %s",
                          ctx->be.ops->name, symaddr_runtime_says(ctx));
    return st;
}

symaddr_status_t symaddr_stream_sync(symaddr_context_t *ctx, void *stream)
{
    if (!ctx)
        return SYMADDR_ERR_INVALID_ARG;
    symaddr_status_t st = ctx->be.ops->stream_sync(&ctx->be, stream);
    if (st != SYMADDR_OK)
        return symaddr_set_error(ctx, st,
                                 "symaddr_stream_sync: the %s runtime reported an "
                                 "error on the stream: %s",
                                 ctx->be.ops->name, symaddr_runtime_says(ctx));
    return symaddr_coll_status(ctx);
}

/* A kernel launch's status, with the runtime's reason when it refused. */
static symaddr_status_t launched(symaddr_context_t *ctx, symaddr_status_t st, const char *fn)
{
    if (st != SYMADDR_OK)
        symaddr_set_error(ctx, st, "%s: the %s runtime refused the launch: %s", fn,
                          ctx->be.ops->name, symaddr_launch_why);
    return st;
}

/* Checks shared by put and get: sym is the symmetric side. */
static symaddr_status_t rma_map(symaddr_context_t *ctx, const void *sym, const void *local,
                                size_t bytes, int target, const symaddr_map_t **map_p,
                                const char *fn)
{
    symaddr_registration_t *r;
    if (!sym || !local)
        return symaddr_set_error(ctx, SYMADDR_ERR_INVALID_ARG, "%s: NULL buffer", fn);
    if ((uintptr_t)local + bytes < (uintptr_t)local)
        return symaddr_set_error(ctx, SYMADDR_ERR_INVALID_SIZE,
                                 "%s: %zu bytes at %p run past the end of the address space", fn,
                                 bytes, local);
    if (target < 0 || target >= ctx->core.size)
        return symaddr_set_error(ctx, SYMADDR_ERR_INVALID_ARG,
                                 "%s: target %d is not a rank of this context (0..%d)", fn, target,
                                 ctx->core.size - 1);
    if (symaddr_registry_lookup(&ctx->reg, sym, &r) != SYMADDR_OK)
        return symaddr_set_error(ctx, SYMADDR_ERR_NOT_FOUND,
                                 "%s: %p is not symmetric memory of this context; allocate it "
                                 "with symaddr_symmetric_alloc or symaddr_import it",
                                 fn, sym);
    uint64_t off = (uint64_t)(uintptr_t)sym - r->map.range_base;
    if (bytes > r->map.range_bytes - off)
        return symaddr_set_error(ctx, SYMADDR_ERR_OUT_OF_BOUNDS,
                                 "%s: %zu bytes at %p run past the end of its registration", fn,
                                 bytes, sym);
    if (r->map.host_peer_bases[target] == 0)
        return symaddr_set_error(ctx, SYMADDR_ERR_UNREACHABLE,
                                 "%s: rank %d is on another node; use MPI for it", fn, target);
    *map_p = &r->map;
    return SYMADDR_OK;
}

/* target's copy of sym where the copy engine moves a put or get of bytes: from rma_copy_bytes
 * (the backend's measured crossover) to a rank on another GPU, where the engine outruns a
 * kernel's stores and loads; NULL where a kernel moves it (ranks sharing a GPU copy within
 * one memory, where the kernel is faster). */
static void *by_copy_engine(const symaddr_context_t *ctx, const symaddr_map_t *m, const void *sym,
                            size_t bytes, int target)
{
    void *peer;
    if (bytes < ctx->rma_copy_bytes || ctx->loc.peer_class[target] != SYMADDR_PEER_SAME_NODE)
        return NULL;
    return symaddr_translate_host(m, sym, target, &peer) == SYMADDR_OK ? peer : NULL;
}

static symaddr_status_t copied(symaddr_context_t *ctx, symaddr_status_t st, const char *fn)
{
    if (st != SYMADDR_OK)
        symaddr_set_error(ctx, st, "%s: the %s runtime refused the copy: %s", fn, ctx->be.ops->name,
                          symaddr_runtime_says(ctx));
    return st;
}

symaddr_status_t symaddr_put(symaddr_context_t *ctx, void *dst, const void *src, size_t bytes,
                             int target, void *stream)
{
    const symaddr_map_t *m;
    void *peer;
    if (!ctx)
        return SYMADDR_ERR_INVALID_ARG;
    symaddr_status_t st = rma_map(ctx, dst, src, bytes, target, &m, "symaddr_put");
    if (st != SYMADDR_OK || bytes == 0)
        return st;
    if ((peer = by_copy_engine(ctx, m, dst, bytes, target)))
        return copied(ctx, ctx->be.ops->memcpy_async(&ctx->be, peer, src, bytes, stream),
                      "symaddr_put");
    return launched(ctx,
                    ctx->be.ops->kernels->put_bytes(stream, dst, src, bytes, target, m->peer_bases,
                                                    m->local_rank),
                    "symaddr_put");
}

symaddr_status_t symaddr_get(symaddr_context_t *ctx, void *dst, const void *src, size_t bytes,
                             int target, void *stream)
{
    const symaddr_map_t *m;
    void *peer;
    if (!ctx)
        return SYMADDR_ERR_INVALID_ARG;
    symaddr_status_t st = rma_map(ctx, src, dst, bytes, target, &m, "symaddr_get");
    if (st != SYMADDR_OK || bytes == 0)
        return st;
    if ((peer = by_copy_engine(ctx, m, src, bytes, target)))
        return copied(ctx, ctx->be.ops->memcpy_async(&ctx->be, dst, peer, bytes, stream),
                      "symaddr_get");
    return launched(ctx,
                    ctx->be.ops->kernels->get_bytes(stream, dst, src, bytes, target, m->peer_bases,
                                                    m->local_rank),
                    "symaddr_get");
}

#define DEFINE_HOST_ATOMIC_ADD(T, U, sfx, usfx)                                                    \
    symaddr_status_t symaddr_stream_atomic_add_##sfx(symaddr_context_t *ctx, T *ptr, T value,      \
                                                     int target, void *stream)                     \
    {                                                                                              \
        const symaddr_map_t *m;                                                                    \
        if (!ctx)                                                                                  \
            return SYMADDR_ERR_INVALID_ARG;                                                        \
        if ((uintptr_t)ptr % sizeof(T))                                                            \
            return symaddr_set_error(ctx, SYMADDR_ERR_INVALID_ARG,                                 \
                                     "symaddr_stream_atomic_add_" #sfx                             \
                                     ": %p is not %zu-byte aligned",                               \
                                     (void *)ptr, sizeof(T));                                      \
        symaddr_status_t st =                                                                      \
            rma_map(ctx, ptr, ptr, sizeof(T), target, &m, "symaddr_stream_atomic_add_" #sfx);      \
        if (st != SYMADDR_OK)                                                                      \
            return st;                                                                             \
        return launched(ctx,                                                                       \
                        ctx->be.ops->kernels->atomic_add_##usfx(                                   \
                            stream, (U *)ptr, (U)value, target, m->peer_bases, m->local_rank),     \
                        "symaddr_stream_atomic_add_" #sfx);                                        \
    }

DEFINE_HOST_ATOMIC_ADD(int32_t, uint32_t, i32, u32)
DEFINE_HOST_ATOMIC_ADD(uint32_t, uint32_t, u32, u32)
DEFINE_HOST_ATOMIC_ADD(int64_t, uint64_t, i64, u64)
DEFINE_HOST_ATOMIC_ADD(uint64_t, uint64_t, u64, u64)
