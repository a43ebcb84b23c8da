/* SPDX-License-Identifier: MIT */
/* The backends of this build, one row per kind: names, symaddr_backend_built and the choice
 * of symaddr_init all come from this table. */
#include "backends/backend.h"
#include "core/config.h"

/* Filled by a refused kernel launch (lib/device/runtime.h), read by the message about it. */
__thread char symaddr_launch_why[192];

static const symaddr_backend_ops_t *const backends[] = {
    [SYMADDR_BACKEND_AUTO] = NULL,
    [SYMADDR_BACKEND_CPU] = &symaddr_backend_cpu_ops,
#if defined(SYMADDR_HAVE_CUDA)
    [SYMADDR_BACKEND_CUDA] = &symaddr_backend_cuda_ops,
#endif
#if defined(SYMADDR_HAVE_HIP)
    [SYMADDR_BACKEND_HIP] = &symaddr_backend_hip_ops,
#endif
};

#define NKINDS (sizeof(backends) / sizeof(backends[0]))

const symaddr_backend_ops_t *symaddr_backend_ops_get(symaddr_backend_kind_t kind)
{
    return (unsigned)kind < NKINDS ? backends[kind] : NULL;
}

const symaddr_backend_ops_t *symaddr_backend_gpu(void)
{
    for (unsigned k = 0; k < NKINDS; k++)
        if (backends[k] && k != SYMADDR_BACKEND_CPU)
            return backends[k];
    return NULL;
}

const char *symaddr_backend_name(symaddr_backend_kind_t kind)
{
    const char *name = symaddr_config_backend_name(kind);
    return name ? name : "unknown";
}

int symaddr_backend_built(symaddr_backend_kind_t kind)
{
    return symaddr_backend_ops_get(kind) != NULL;
}
