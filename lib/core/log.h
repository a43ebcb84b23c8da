/* SPDX-License-Identifier: MIT */
/* The one logger: every line symaddr prints goes through symaddr_log, to the config's logger
 * callback, else $SYMADDR_DEBUG_FILE, else stderr, prefixed "host:pid:rank [node_rank] symaddr
 * LEVEL". $SYMADDR_DEBUG picks the level (WARN, the default, prints failures only) and
 * $SYMADDR_DEBUG_SUBSYS the subsystems. */
#ifndef SYMADDR_LIB_LOG_H
#define SYMADDR_LIB_LOG_H

#include "symaddr/symaddr.h"

enum {
    SYMADDR_LOG_WARN = 0,
    SYMADDR_LOG_INFO = 1,
    SYMADDR_LOG_TRACE = 2,
};

enum {
    SYMADDR_SUB_INIT = 1u << 0,
    SYMADDR_SUB_BOOT = 1u << 1,
    SYMADDR_SUB_ALLOC = 1u << 2,
    SYMADDR_SUB_COLL = 1u << 3,
    SYMADDR_SUB_RMA = 1u << 4,
    SYMADDR_SUB_ENV = 1u << 5,
    SYMADDR_SUB_ALL = (1u << 6) - 1,
};

/* Longest $SYMADDR_DEBUG_FILE pattern (symaddr_init refuses a longer one). */
#define SYMADDR_LOG_PATTERN_MAX 255

/* Level and subsystems from their variables' text; 0 when the text does not parse. */
int symaddr_log_parse_level(const char *text, int *level_p);
int symaddr_log_parse_subsys(const char *text, unsigned *mask_p);

/* Whether a line of this level and subsystem would be printed under cfg (WARN always is). */
int symaddr_log_on(const symaddr_config_t *cfg, int level, unsigned subsys);

/* Print one line; rank and node_rank -1 where there is no context yet. */
void symaddr_log(const symaddr_config_t *cfg, int rank, int node_rank, int level, unsigned subsys,
                 const char *fmt, ...) __attribute__((format(printf, 6, 7)));

#endif
