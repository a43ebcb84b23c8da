/* SPDX-License-Identifier: MIT */
/* Starts one test of the suite:
 *   mpilaunch MPIEXEC NRANKS OVERSUBSCRIBE TEST [ARGS...]   as its own NRANKS-rank MPI job
 *   mpilaunch - TEST [ARGS...]                               as one process
 * Every test goes through it, so that `mpirun -np 8 meson test` runs the suite once: each outer
 * rank's meson starts every test, outer rank 0 runs it with the outer job's variables removed
 * (its jobs are its own, not ranks of the outer one), and the other outer ranks report it
 * skipped. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern char **environ;

static const char *outer_rank(void)
{
    static const char *vars[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK",
                                 "MPI_LOCALRANKID"};
    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
        if (getenv(vars[i]))
            return getenv(vars[i]);
    return NULL;
}

static int starts(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* Set by a launcher for its ranks (Open MPI's mpirun and PMIx, MPICH's Hydra); the user's own
 * settings (OMPI_MCA_btl..., OMPI_ALLOW_RUN_AS_ROOT) stay. */
static int launcher_set(const char *name)
{
    static const char *ours[] = {"PMIX_",
                                 "PMI_",
                                 "HYDRA_",
                                 "HYDI_",
                                 "MPI_LOCALRANKID=",
                                 "MPI_LOCALNRANKS=",
                                 "OMPI_MCA_orte_",
                                 "OMPI_MCA_ess",
                                 "OMPI_MCA_pmix",
                                 "OMPI_MCA_initial_wdir=",
                                 "OMPI_MCA_mpi_oversubscribe=",
                                 "OMPI_MCA_shmem_RUNTIME_QUERY_hint="};
    for (size_t i = 0; i < sizeof(ours) / sizeof(ours[0]); i++)
        if (starts(name, ours[i]))
            return 1;
    return starts(name, "OMPI_") && !starts(name, "OMPI_MCA_") &&
           !starts(name, "OMPI_ALLOW_RUN_AS_ROOT");
}

static void leave_outer_job(void)
{
    for (;;) {
        char **e = environ;
        while (*e && !launcher_set(*e))
            e++;
        if (!*e)
            return;
        size_t len = strcspn(*e, "=");
        char name[len + 1];
        memcpy(name, *e, len);
        name[len] = '\0';
        unsetenv(name);
    }
}

int main(int argc, char **argv)
{
    int mpi = argc >= 2 && strcmp(argv[1], "-") != 0;
    if (argc < (mpi ? 5 : 3)) {
        fprintf(stderr,
                "usage: %s MPIEXEC NRANKS OVERSUBSCRIBE TEST [ARGS...]\n"
                "       %s - TEST [ARGS...]\n",
                argv[0], argv[0]);
        return 2;
    }
    const char *rank = outer_rank();
    if (rank && atoi(rank) != 0) {
        printf("SKIP: this meson runs as outer rank %s of an MPI launcher; outer rank 0 runs "
               "each test of the suite\n",
               rank);
        return 77;
    }
    if (rank)
        leave_outer_job();
    char *args[argc + 4];
    int n = 0;
    if (mpi) {
        args[n++] = argv[1];
        args[n++] = "-n";
        args[n++] = argv[2];
        if (strcmp(argv[3], "1") == 0)
            args[n++] = "--oversubscribe";
    }
    for (int i = mpi ? 4 : 2; i < argc; i++)
        args[n++] = argv[i];
    args[n] = NULL;
    execvp(args[0], args);
    fprintf(stderr, "symaddr: cannot start %s: ", args[0]);
    perror(NULL);
    return 1;
}
