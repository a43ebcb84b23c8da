/* SPDX-License-Identifier: MIT */
/* A rank dies (SIGKILL) while the others are in a collective and in a signal wait. The
 * survivors must come back with SYMADDR_ERR_TIMEOUT within the configured timeout, not hang.
 * Each survivor writes "<what> <status> <milliseconds>" to DIR/rank-N; tests/fault.sh checks
 * the files and that nothing of symaddr's outlives the job. Run as: test_fault DIR. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "symaddr/device.h"
#include "symaddr/symaddr.h"

#define TIMEOUT_MS 1000
#define VICTIM 1

int main(int argc, char **argv)
{
    symaddr_config_t cfg;
    symaddr_context_t *ctx;
    symaddr_provider_t *ipc;
    symaddr_map_t *m;
    uint64_t *buf;
    int rank;
    char path[4096];

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (argc < 2)
        return 2;
    symaddr_config_default(&cfg);
    cfg.backend = SYMADDR_BACKEND_CPU;
    cfg.timeout_ms = TIMEOUT_MS;
    if (symaddr_init(MPI_COMM_WORLD, &cfg, &ctx) != SYMADDR_OK ||
        symaddr_provider_get(ctx, SYMADDR_PROVIDER_IPC, &ipc) != SYMADDR_OK ||
        symaddr_allocate_symmetric(ipc, 4096, (void **)&buf, &m) != SYMADDR_OK)
        return 1;
    memset(buf, 0, 4096);
    /* Everyone is here and the context works. */
    if (symaddr_barrier(ctx, NULL) != SYMADDR_OK)
        return 1;
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == VICTIM)
        kill(getpid(), SIGKILL);

    snprintf(path, sizeof(path), "%s/rank-%d", argv[1], rank);
    FILE *out = fopen(path, "w");
    double t0 = MPI_Wtime();
    symaddr_status_t st = symaddr_allreduce(ctx, buf, buf + 8, 8, SYMADDR_UINT64, SYMADDR_SUM,
                                            NULL);
    fprintf(out, "allreduce %d %.0f\n", (int)st, (MPI_Wtime() - t0) * 1e3);
    /* The victim would have signalled this flag. */
    t0 = MPI_Wtime();
    st = symaddr_signal_wait_until(buf + 100, 1, (uint64_t)TIMEOUT_MS * 1000000u);
    fprintf(out, "signal %d %.0f\n", (int)st, (MPI_Wtime() - t0) * 1e3);
    fclose(out);
    /* MPI cannot finalize with a dead peer: leave without it; the kernel reclaims the rest. */
    _exit(0);
}
