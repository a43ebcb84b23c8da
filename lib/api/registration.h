/* SPDX-License-Identifier: MIT */
/* Entry points that other entry points call from inside the guard. */
#ifndef SYMADDR_LIB_REGISTRATION_H
#define SYMADDR_LIB_REGISTRATION_H

#include "lifecycle/context.h"

/* The bodies of public calls, for callers already inside symaddr_call_enter. */
symaddr_status_t symaddr_symmetric_alloc_(symaddr_provider_t *provider, size_t bytes, void **ptr_p,
                                          symaddr_map_t **map_p);
symaddr_status_t symaddr_symmetric_free_(symaddr_provider_t *provider, void *ptr);
symaddr_status_t symaddr_register_ptr_fn_(symaddr_context_t *ctx, void *local_ptr, size_t bytes,
                                          symaddr_peer_ptr_fn_t fn, const int *pe_of_rank,
                                          uint64_t caps, symaddr_map_t **map_p);

#endif
