/* SPDX-License-Identifier: MIT */
/* Named wrappers for other symmetric-memory libraries, over symaddr_register_ptr_fn. The
 * library's own functions are found in the running program (which linked and initialised it),
 * so libsymaddr never depends on it; the build only decides whether a wrapper exists. */
#include "api/registration.h"

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

/* What a named wrapper needs to know of its library. */
typedef struct foreign_lib {
    const char *fn, *name, *option, *alloc;
    const char *ptr_sym, *pe_sym, *accessible_sym; /* accessible_sym may be NULL */
    symaddr_backend_kind_t backend;                /* whose kernels reach the memory */
    int built;
} foreign_lib_t;

/* The library's functions, as this process found them. */
typedef struct foreign_fns {
    symaddr_peer_ptr_fn_t ptr;
    pe_fn_t my_pe;
    accessible_fn_t accessible; /* may be NULL */
} foreign_fns_t;

/* The checks and the PE exchange every wrapper shares; local is this rank's own verdict. */
static symaddr_status_t register_foreign(symaddr_context_t *ctx, void *ptr, size_t bytes,
                                         symaddr_status_t local, const foreign_lib_t *l,
                                         const foreign_fns_t *f, symaddr_map_t **map_p)
{
    const char *fn = l->fn;
    int my_pe = -1;
    if (local == SYMADDR_OK && (!ptr || !map_p))
        local = symaddr_set_error(ctx, SYMADDR_ERR_INVALID_ARG, "%s: ptr or map_p is NULL", fn);
    if (local == SYMADDR_OK) {
        my_pe = f->my_pe();
        /* A *_ptr function returns the caller's own address for its own PE, and NULL for
         * memory off the symmetric heap. */
        const char *last = (const char *)ptr + (bytes ? bytes - 1 : 0);
        if ((f->accessible && (!f->accessible(ptr, my_pe) || !f->accessible(last, my_pe))) ||
            f->ptr(ptr, my_pe) != ptr || !f->ptr(last, my_pe))
            local = symaddr_set_error(ctx, SYMADDR_ERR_NOT_SHAREABLE,
                                      "%s: [%p, +%zu) is not on %s's symmetric heap; allocate "
                                      "it with %s",
                                      fn, ptr, bytes, l->name, l->alloc);
    }
    symaddr_status_t st = symaddr_agree_status(&ctx->core, local, fn);
    if (st != SYMADDR_OK)
        return st;
    int *pe_of_rank = malloc(sizeof(int) * (size_t)ctx->core.size);
    if (!pe_of_rank)
        local = symaddr_set_error(ctx, SYMADDR_ERR_NO_MEMORY, "%s: out of host memory", fn);
    else if ((local = symaddr_boot_allgather(
                  &ctx->core.boot, &ctx->core.boot.world, &my_pe, pe_of_rank, sizeof(int),
                  symaddr_bootstrap_deadline(&ctx->core.boot, 0))) != SYMADDR_OK)
        symaddr_set_error(ctx, local, "%s: the ranks could not swap their PE numbers", fn);
    if ((st = symaddr_agree_status(&ctx->core, local, fn)) == SYMADDR_OK)
        st = symaddr_register_ptr_fn_(
            ctx, ptr, bytes, f->ptr, pe_of_rank,
            SYMADDR_CAP_LOAD_STORE | SYMADDR_CAP_ATOMICS | SYMADDR_CAP_SYSTEM_ATOMICS, map_p);
    free(pe_of_rank);
    return st;
}

/* This rank's verdict on whether the wrapper can run (built in, library loaded, backend), then
 * the registration. */
static symaddr_status_t register_named(symaddr_context_t *ctx, void *ptr, size_t bytes,
                                       const foreign_lib_t *l, symaddr_map_t **map_p)
{
    foreign_fns_t f = {NULL, NULL, NULL};
    symaddr_status_t local = SYMADDR_OK;
    if (!l->built)
        local = symaddr_set_error(ctx, SYMADDR_ERR_UNSUPPORTED,
                                  "%s: symaddr was built without %s; reconfigure with "
                                  "-D%s=enabled (or use symaddr_register_ptr_fn with %s)",
                                  l->fn, l->name, l->option, l->ptr_sym);
    if (local == SYMADDR_OK) {
        *(void **)&f.ptr = dlsym(RTLD_DEFAULT, l->ptr_sym);
        *(void **)&f.my_pe = dlsym(RTLD_DEFAULT, l->pe_sym);
        if (l->accessible_sym)
            *(void **)&f.accessible = dlsym(RTLD_DEFAULT, l->accessible_sym);
        if (!f.ptr || !f.my_pe || (l->accessible_sym && !f.accessible))
            local = symaddr_set_error(ctx, SYMADDR_ERR_UNSUPPORTED,
                                      "%s: %s is not loaded in this process; link the program "
                                      "with %s and initialise it before registering its memory",
                                      l->fn, l->ptr_sym, l->name);
    }
    if (local == SYMADDR_OK && ctx->be.ops->kind != l->backend)
        local = symaddr_set_error(ctx, SYMADDR_ERR_UNSUPPORTED,
                                  "%s: %s memory needs the %s backend, and this context runs on "
                                  "%s; create it with symaddr_config_t.backend (or "
                                  "SYMADDR_BACKEND=%s)",
                                  l->fn, l->name, symaddr_backend_name(l->backend),
                                  ctx->be.ops->name, symaddr_backend_name(l->backend));
    return register_foreign(ctx, ptr, bytes, local, l, &f, map_p);
}

#if defined(SYMADDR_HAVE_OPENSHMEM)
#define OPENSHMEM_BUILT 1
#else
#define OPENSHMEM_BUILT 0
#endif
#if defined(SYMADDR_HAVE_NVSHMEM)
#define NVSHMEM_BUILT 1
#else
#define NVSHMEM_BUILT 0
#endif

/* OpenSHMEM's heap is host memory: only the cpu backend's kernels reach it. Open MPI's
 * shmem_ptr aborts on an address off the heap, so shmem_addr_accessible asks first. */
static const foreign_lib_t openshmem = {
    .fn = "symaddr_register_openshmem",
    .name = "OpenSHMEM",
    .option = "openshmem",
    .alloc = "shmem_malloc",
    .ptr_sym = "shmem_ptr",
    .pe_sym = "shmem_my_pe",
    .accessible_sym = "shmem_addr_accessible",
    .backend = SYMADDR_BACKEND_CPU,
    .built = OPENSHMEM_BUILT,
};

static const foreign_lib_t nvshmem = {
    .fn = "symaddr_register_nvshmem",
    .name = "NVSHMEM",
    .option = "nvshmem",
    .alloc = "nvshmem_malloc",
    .ptr_sym = "nvshmem_ptr",
    .pe_sym = "nvshmem_my_pe",
    .backend = SYMADDR_BACKEND_CUDA,
    .built = NVSHMEM_BUILT,
};

symaddr_status_t symaddr_register_openshmem(symaddr_context_t *ctx, void *ptr, size_t bytes,
                                            symaddr_map_t **map_p)
{
    GUARDED(ctx, openshmem.fn, register_named(ctx, ptr, bytes, &openshmem, map_p));
}

symaddr_status_t symaddr_register_nvshmem(symaddr_context_t *ctx, void *ptr, size_t bytes,
                                          symaddr_map_t **map_p)
{
    GUARDED(ctx, nvshmem.fn, register_named(ctx, ptr, bytes, &nvshmem, map_p));
}
