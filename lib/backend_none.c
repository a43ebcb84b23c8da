/* SPDX-License-Identifier: MIT */
/* Built when -Dgpu=none (or auto found no GPU compiler). */
#include "backend.h"

const symaddr_backend_ops_t *const symaddr_backend_gpu_ops = NULL;
