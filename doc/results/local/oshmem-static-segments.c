/* Open MPI's oshmem counts writable private mappings below the executable's end as static
 * segments; ranks with different counts. ODD=k: odd ranks map k extra pages there first. */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <mpi.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int extra = getenv("ODD") ? atoi(getenv("ODD")) : 0;
    if (rank % 2)
        for (int k = 0; k < extra; k++) { /* separate mappings: a gap between each */
            void *want = (void *)(uintptr_t)(0x10000000000ull + (uint64_t)k * 0x200000);
            void *p = mmap(want, 4096, PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
            if (p == MAP_FAILED) { perror("mmap"); return 1; }
            *(volatile char *)p = 1;
        }
    shmem_init();
    int *x = shmem_malloc(64);
    shmem_barrier_all();
    void *p = shmem_ptr(x, (rank + 1) % shmem_n_pes());
    printf("rank %d: shmem_ptr %s\n", rank, p ? "ok" : "NULL");
    shmem_free(x);
    shmem_finalize();
    int fin;
    MPI_Finalized(&fin);
    if (!fin)
        MPI_Finalize();
    return 0;
}
