/* SPDX-License-Identifier: MIT */
/* The lifecycle layer: the guard every collective or allocation call passes through. */
#ifndef SYMADDR_LIB_CONTEXT_H
#define SYMADDR_LIB_CONTEXT_H

#include "maps/maps.h"

/* Start of a collective or allocation call: SYMADDR_ERR_BROKEN when the context is broken,
 * SYMADDR_ERR_INVALID_ARG when another thread is in such a call; else the call's deadline
 * starts and symaddr_call_leave must end it. */
symaddr_status_t symaddr_call_enter(symaddr_context_t *ctx, const char *fn);
/* End of the call: st, unless another thread entered meanwhile (the context then breaks, and
 * a collective's OK becomes SYMADDR_ERR_BROKEN: its peers may have paired it with another
 * call; an allocation's result stands, its memory goes at finalize). */
symaddr_status_t symaddr_call_leave(symaddr_context_t *ctx, symaddr_status_t st, const char *fn);

/* The body of a public collective or allocation call, between enter and leave; bodies call
 * each other directly. */
#define GUARDED(ctx, fn, body)                                                                     \
    do {                                                                                           \
        if (!(ctx))                                                                                \
            return SYMADDR_ERR_INVALID_ARG;                                                        \
        symaddr_status_t g_st_ = symaddr_call_enter((ctx), (fn));                                  \
        if (g_st_ == SYMADDR_OK)                                                                   \
            g_st_ = symaddr_call_leave((ctx), (body), (fn));                                       \
        return g_st_;                                                                              \
    } while (0)

#endif
