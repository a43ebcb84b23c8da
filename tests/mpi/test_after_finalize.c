/* SPDX-License-Identifier: MIT */
/* symaddr_finalize after MPI_Finalize returns SYMADDR_ERR_MPI saying to finalize the context
 * first, on every rank, with *ctx_p left as it was, and the process ends normally. Before,
 * the teardown made MPI calls after MPI_Finalize and Open MPI aborted the job. A program of
 * its own: after MPI_Finalize the harness cannot tally across ranks, so each rank's exit
 * status is its verdict (mpiexec fails if any rank's does). */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#include "symaddr/symaddr.h"

/* still reachable at exit: the context is left to the process's end, not leaked */
static symaddr_context_t *ctx;

int main(int argc, char **argv)
{
    int rank = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    symaddr_status_t st = symaddr_init(MPI_COMM_WORLD, NULL, &ctx);
    if (st != SYMADDR_OK) {
        printf("not ok - rank %d: symaddr_init: %s (%s)\n", rank, symaddr_strerror(st),
               symaddr_last_error(NULL));
        MPI_Finalize();
        return 1;
    }
    MPI_Finalize();
    symaddr_context_t *kept = ctx;
    st = symaddr_finalize(&ctx);
    const char *why = symaddr_last_error(kept);
    int ok = st == SYMADDR_ERR_MPI && ctx == kept && strstr(why, "before MPI_Finalize") != NULL;
    printf("%s - rank %d: symaddr_finalize after MPI_Finalize returned %s (%s)\n",
           ok ? "ok    " : "not ok", rank, symaddr_strerror(st), why);
    return ok ? 0 : 1;
}
