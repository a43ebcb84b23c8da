/* SPDX-License-Identifier: MIT */
/* Starts one mpi-suite test as its own MPI job:
 *   mpilaunch MPIEXEC NRANKS OVERSUBSCRIBE TEST [ARGS...]
 * and refuses to run inside an outer MPI job (`mpirun -np 8 meson test`),
 * which would start the whole suite once per outer rank. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *outer_rank(void)
{
    static const char *vars[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK",
                                 "MPI_LOCALRANKID"};
    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
        if (getenv(vars[i]))
            return getenv(vars[i]);
    return NULL;
}

int main(int argc, char **argv)
{
    const char *rank = outer_rank();
    if (argc < 5) {
        fprintf(stderr, "usage: %s MPIEXEC NRANKS OVERSUBSCRIBE TEST [ARGS...]\n", argv[0]);
        return 2;
    }
    if (rank) {
        if (atoi(rank) == 0)
            fprintf(stderr,
                    "symaddr: the test suite was started under an MPI launcher (for example "
                    "`mpirun -np 8 meson test`).\nEach mpi test starts its own %s-rank job, so "
                    "run the suite without mpirun:\n    meson test -C <builddir>\n",
                    argv[2]);
        return 1;
    }
    char *args[argc + 4];
    int n = 0;
    args[n++] = argv[1];
    args[n++] = "-n";
    args[n++] = argv[2];
    if (strcmp(argv[3], "1") == 0)
        args[n++] = "--oversubscribe";
    for (int i = 4; i < argc; i++)
        args[n++] = argv[i];
    args[n] = NULL;
    execvp(args[0], args);
    perror("symaddr: cannot start the MPI launcher");
    return 1;
}
