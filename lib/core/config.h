/* SPDX-License-Identifier: MIT */
/* The SYMADDR_* environment and the checks of a context's settings. */
#ifndef SYMADDR_LIB_CONFIG_H
#define SYMADDR_LIB_CONFIG_H

#include <stddef.h>

#include "symaddr/symaddr.h"

/* Largest ll_bytes: the LL inbox of the collectives (lib/coll/sync.c checks that they agree). */
#define SYMADDR_CONFIG_LL_MAX_BYTES ((size_t)32 << 10)
/* Largest lamport_bytes: what one Lamport call may move (lib/coll/sync.c checks it too). */
#define SYMADDR_CONFIG_LAMPORT_MAX_BYTES ((size_t)2 << 20)

/* The name of a backend kind ("auto", "cpu", ...), NULL past the last. */
const char *symaddr_config_backend_name(symaddr_backend_kind_t kind);

/* SYMADDR_OK, or the status and a message naming the setting (and its variable, when the
 * environment gave a value that does not parse) that symaddr_init refuses. */
symaddr_status_t symaddr_config_check(const symaddr_config_t *cfg, char *why, size_t len);

/* The first entry of env (an environ-style array) from index from on that names an unknown
 * SYMADDR_* variable: its index, with a message naming the nearest known one in why; -1 if
 * none. */
int symaddr_config_unknown(char *const *env, int from, char *why, size_t len);

/* The symaddr_config_t field the variable of index sets (symaddr_config_var's numbering); NULL
 * past the last. */
const char *symaddr_config_var_field(int index);

#endif
