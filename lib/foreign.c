/* SPDX-License-Identifier: MIT */
/* Named wrappers for other symmetric-memory libraries, over symaddr_register_ptr_fn. The
 * library's own functions are found in the running program (which linked and initialised it),
 * so libsymaddr never depends on it; the build only decides whether a wrapper exists. */
#include "internal.h"

#include <dlfcn.h>
#include <stdlib.h>

#if defined(SYMADDR_HAVE_OPENSHMEM)
#include <shmem.h>
/* The generic adapter's type is shmem_ptr's. */
_Static_assert(__builtin_types_compatible_p(__typeof__(&shmem_ptr), symaddr_peer_ptr_fn_t),
               "shmem_ptr does not have the *_ptr(ptr, pe) shape");
_Static_assert(__builtin_types_compatible_p(__typeof__(&shmem_addr_accessible),
                                            int (*)(const void *, int)),
               "shmem_addr_accessible has an unexpected type");
#endif

typedef int (*pe_fn_t)(void);
typedef int (*accessible_fn_t)(const void *addr, int pe);

/* The checks and the PE exchange every wrapper shares; local is this rank's own verdict. */
static symaddr_status_t register_foreign(symaddr_context_t *ctx, void *ptr, size_t bytes,
                                         symaddr_status_t local, const char *fn, const char *lib,
                                         const char *alloc, symaddr_peer_ptr_fn_t ptr_fn,
                                         pe_fn_t my_pe_fn, accessible_fn_t accessible,
                                         symaddr_map_t **map_p)
{
    int my_pe = -1;
    if (local == SYMADDR_OK && (!ptr || !map_p))
        local = symaddr_set_error(ctx, SYMADDR_ERR_INVALID_ARG, "%s: ptr or map_p is NULL", fn);
    if (local == SYMADDR_OK) {
        my_pe = my_pe_fn();
        /* A *_ptr function returns the caller's own address for its own PE, and NULL for
         * memory off the symmetric heap (Open MPI's shmem_ptr aborts instead: ask first). */
        const char *last = (const char *)ptr + (bytes ? bytes - 1 : 0);
        if ((accessible && (!accessible(ptr, my_pe) || !accessible(last, my_pe))) ||
            ptr_fn(ptr, my_pe) != ptr || !ptr_fn(last, my_pe))
            local = symaddr_set_error(ctx, SYMADDR_ERR_NOT_SHAREABLE,
                                      "%s: [%p, +%zu) is not on %s's symmetric heap; allocate "
                                      "it with %s",
                                      fn, ptr, bytes, lib, alloc);
    }
    symaddr_status_t st = symaddr_agree_status(ctx, local, fn);
    if (st != SYMADDR_OK)
        return st;
    int *pe_of_rank = malloc(sizeof(int) * (size_t)ctx->size);
    if (!pe_of_rank)
        local = symaddr_set_error(ctx, SYMADDR_ERR_NO_MEMORY, "%s: out of host memory", fn);
    else if (MPI_Allgather(&my_pe, 1, MPI_INT, pe_of_rank, 1, MPI_INT, ctx->comm) != MPI_SUCCESS)
        local = symaddr_set_error(ctx, SYMADDR_ERR_MPI, "%s: MPI_Allgather failed", fn);
    if ((st = symaddr_agree_status(ctx, local, fn)) == SYMADDR_OK)
        st = symaddr_register_ptr_fn(ctx, ptr, bytes, ptr_fn, pe_of_rank,
                                     SYMADDR_CAP_LOAD_STORE | SYMADDR_CAP_ATOMICS |
                                         SYMADDR_CAP_SYSTEM_ATOMICS,
                                     map_p);
    free(pe_of_rank);
    return st;
}

/* This rank's verdict on whether the wrapper can run: built in, library loaded, backend. */
static symaddr_status_t foreign_usable(symaddr_context_t *ctx, int built, const char *fn,
                                       const char *lib, const char *option, const char *ptr_name,
                                       const char *pe_name, symaddr_backend_kind_t backend,
                                       symaddr_peer_ptr_fn_t *ptr_fn_p, pe_fn_t *pe_fn_p)
{
    if (!built)
        return symaddr_set_error(ctx, SYMADDR_ERR_UNSUPPORTED,
                                 "%s: symaddr was built without %s; reconfigure with -D%s=enabled "
                                 "(or use symaddr_register_ptr_fn with %s)",
                                 fn, lib, option, ptr_name);
    *(void **)ptr_fn_p = dlsym(RTLD_DEFAULT, ptr_name);
    *(void **)pe_fn_p = dlsym(RTLD_DEFAULT, pe_name);
    if (!*ptr_fn_p || !*pe_fn_p)
        return symaddr_set_error(ctx, SYMADDR_ERR_UNSUPPORTED,
                                 "%s: %s is not loaded in this process; link the program with "
                                 "%s and initialise it before registering its memory",
                                 fn, ptr_name, lib);
    if (ctx->be.ops->kind != backend)
        return symaddr_set_error(ctx, SYMADDR_ERR_UNSUPPORTED,
                                 "%s: %s memory needs the %s backend, and this context runs on "
                                 "%s; create it with symaddr_config_t.backend (or "
                                 "SYMADDR_BACKEND=%s)",
                                 fn, lib, symaddr_backend_name(backend), ctx->be.ops->name,
                                 symaddr_backend_name(backend));
    return SYMADDR_OK;
}

symaddr_status_t symaddr_register_openshmem(symaddr_context_t *ctx, void *ptr, size_t bytes,
                                            symaddr_map_t **map_p)
{
    static const char fn[] = "symaddr_register_openshmem";
    symaddr_peer_ptr_fn_t ptr_fn = NULL;
    pe_fn_t pe_fn = NULL;
#if defined(SYMADDR_HAVE_OPENSHMEM)
    const int built = 1;
#else
    const int built = 0;
#endif
    if (!ctx)
        return SYMADDR_ERR_INVALID_ARG;
    /* OpenSHMEM's heap is host memory: only the cpu backend's kernels reach it. */
    symaddr_status_t local = foreign_usable(ctx, built, fn, "OpenSHMEM", "openshmem", "shmem_ptr",
                                            "shmem_my_pe", SYMADDR_BACKEND_CPU, &ptr_fn, &pe_fn);
    accessible_fn_t accessible = NULL;
    if (local == SYMADDR_OK && !(*(void **)&accessible = dlsym(RTLD_DEFAULT, "shmem_addr_accessible")))
        local = symaddr_set_error(ctx, SYMADDR_ERR_UNSUPPORTED, "%s: this OpenSHMEM has no "
                                  "shmem_addr_accessible", fn);
    return register_foreign(ctx, ptr, bytes, local, fn, "OpenSHMEM", "shmem_malloc", ptr_fn,
                            pe_fn, accessible, map_p);
}

symaddr_status_t symaddr_register_nvshmem(symaddr_context_t *ctx, void *ptr, size_t bytes,
                                          symaddr_map_t **map_p)
{
    static const char fn[] = "symaddr_register_nvshmem";
    symaddr_peer_ptr_fn_t ptr_fn = NULL;
    pe_fn_t pe_fn = NULL;
#if defined(SYMADDR_HAVE_NVSHMEM)
    const int built = 1;
#else
    const int built = 0;
#endif
    if (!ctx)
        return SYMADDR_ERR_INVALID_ARG;
    symaddr_status_t local = foreign_usable(ctx, built, fn, "NVSHMEM", "nvshmem", "nvshmem_ptr",
                                            "nvshmem_my_pe", SYMADDR_BACKEND_CUDA, &ptr_fn, &pe_fn);
    return register_foreign(ctx, ptr, bytes, local, fn, "NVSHMEM", "nvshmem_malloc", ptr_fn,
                            pe_fn, NULL, map_p);
}
