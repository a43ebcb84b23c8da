/* SPDX-License-Identifier: MIT */
/* A fused allreduce + residual add + RMSNorm over bf16 rows, as a transformer layer ends, written
 * with the collective blocks of symaddr/team.h (the kernels: allreduce_rmsnorm.h): one kernel
 * pushes this rank's rows to every peer (Lamport: no barrier, no flag), and each block then sums
 * its row from every peer, adds the residual, and normalises the row while it is still in
 * registers. This program checks it, and the unfused pipeline (symaddr_allreduce, then the same
 * RMSNorm as a kernel of its own), against a sequential reference:
 *
 *   mpiexec -n 2 ./example-allreduce-rmsnorm
 *
 * `symaddr-bench fused_rmsnorm` times both, and NCCL's allreduce followed by the same RMSNorm.
 * The team is the context's node: on several nodes this example reduces over each node alone.
 */
#include "allreduce_rmsnorm.h"

static uint16_t x_of(int rank, size_t i)
{
    return to_bf((float)((int)((i * 7 + (size_t)rank * 13) % 23) - 11) / 8.0f * (float)(rank + 1));
}
static uint16_t r_of(size_t i) { return to_bf((float)((int)(i % 19) - 9) / 4.0f); }
static uint16_t w_of(size_t j) { return to_bf(0.5f + (float)(j % 5) / 8.0f); }

typedef struct run {
    symaddr_context_t *ctx;
    symaddr_team_t team;
    symaddr_provider_t *prov;
    uint16_t *x, *res, *w, *y, *sum; /* all symmetric but w (the two-shot stores into peers') */
    symaddr_map_t *xm, *resm, *ym, *summ;
    int max_rows, rows_per_call;
} run_t;

static void launch_fused(run_t *r, int rows, void *stream)
{
    if (!fused_launch(&r->team, r->x, r->xm->peer_bases, r->res, r->resm->peer_bases, r->w, r->y,
                      r->ym->peer_bases, rows, stream)) {
        fprintf(stderr, "example-allreduce-rmsnorm: the fused kernel's launch was refused\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

static void launch_unfused(run_t *r, int rows, void *stream)
{
    CHECK(r->ctx, symaddr_allreduce(r->ctx, r->x, r->sum, (size_t)rows * HIDDEN, SYMADDR_BFLOAT16,
                                    SYMADDR_SUM, stream));
    if (!rmsnorm_launch(r->sum, r->res, r->w, r->y, rows, stream)) {
        fprintf(stderr, "example-allreduce-rmsnorm: the RMSNorm kernel's launch was refused\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

/* Upload the inputs of rows rows, run the fused (or unfused) kernel once, and compare residual'
 * (bit for bit: the sums are f32 in rank order on both sides; the unfused allreduce rounds its
 * sum to bf16 before the residual is added) and y (within 2 bf16 steps: the row's sum of
 * squares is added in another order) with a sequential reference. */
static long check(run_t *r, int rows, int fused, int rank, int size)
{
    size_t n = (size_t)rows * HIDDEN;
    uint16_t *h = (uint16_t *)malloc(n * 2), *res = (uint16_t *)malloc(n * 2),
             *y = (uint16_t *)malloc(n * 2), w[HIDDEN];
    for (size_t i = 0; i < n; i++)
        h[i] = x_of(rank, i), res[i] = r_of(i);
    for (size_t j = 0; j < HIDDEN; j++)
        w[j] = w_of(j);
    CHECK(r->ctx, symaddr_memcpy(r->ctx, r->x, h, n * 2));
    CHECK(r->ctx, symaddr_memcpy(r->ctx, r->res, res, n * 2));
    CHECK(r->ctx, symaddr_memcpy(r->ctx, r->w, w, sizeof(w)));
    CHECK(r->ctx, symaddr_barrier(r->ctx, NULL));
    if (fused)
        launch_fused(r, rows, NULL);
    else
        launch_unfused(r, rows, NULL);
    CHECK(r->ctx, symaddr_stream_sync(r->ctx, NULL));
    CHECK(r->ctx, symaddr_memcpy(r->ctx, h, r->res, n * 2));
    CHECK(r->ctx, symaddr_memcpy(r->ctx, y, r->y, n * 2));
    long wrong = 0;
    for (int row = 0; row < rows; row++) {
        float ss = 0;
        uint16_t want[HIDDEN];
        for (size_t j = 0; j < HIDDEN; j++) {
            size_t i = (size_t)row * HIDDEN + j;
            float acc = 0;
            for (int q = 0; q < size; q++)
                acc += bf(x_of(q, i));
            want[j] = to_bf((fused ? acc : bf(to_bf(acc))) + bf(res[i]));
            ss += bf(want[j]) * bf(want[j]);
            wrong += h[i] != want[j];
        }
        float scale = 1.0f / sqrtf(ss / HIDDEN + EPS);
        for (size_t j = 0; j < HIDDEN; j++) {
            float got = bf(y[(size_t)row * HIDDEN + j]), ref = bf(want[j]) * scale * bf(w[j]);
            wrong += !(fabsf(got - ref) <= fabsf(ref) / 64 + 1e-6f);
        }
    }
    free(h);
    free(res);
    free(y);
    return wrong;
}

int main(int argc, char **argv)
{
    run_t r;

    MPI_Init(&argc, &argv);
    memset(&r, 0, sizeof(r));
    CHECK(NULL, symaddr_init(MPI_COMM_WORLD, NULL, &r.ctx));
    int rank = symaddr_rank(r.ctx), size = symaddr_size(r.ctx);
    CHECK(r.ctx, symaddr_team_get(r.ctx, &r.team));
    if (r.team.node_size != size) {
        if (rank == 0)
            printf("example-allreduce-rmsnorm: SKIP: the team is one node of %d ranks, not all %d; "
                   "run on one node\n",
                   r.team.node_size, size);
        CHECK(r.ctx, symaddr_finalize(&r.ctx));
        MPI_Finalize();
        return 77;
    }
    r.max_rows = 128;
    r.rows_per_call = fused_rows_per_call(&r.team);
    size_t bytes = (size_t)r.max_rows * HIDDEN * 2;
    CHECK(r.ctx, symaddr_provider_get(r.ctx, SYMADDR_PROVIDER_IPC, &r.prov));
    CHECK(r.ctx, symaddr_symmetric_alloc(r.prov, bytes, (void **)&r.x, &r.xm));
    CHECK(r.ctx, symaddr_symmetric_alloc(r.prov, bytes, (void **)&r.sum, &r.summ));
    CHECK(r.ctx, symaddr_symmetric_alloc(r.prov, bytes, (void **)&r.res, &r.resm));
    CHECK(r.ctx, symaddr_symmetric_alloc(r.prov, bytes, (void **)&r.y, &r.ym));
    CHECK(r.ctx, symaddr_mem_alloc(r.ctx, HIDDEN * 2, (void **)&r.w));

    long wrong = 0;
    static const int rows[] = {1, 6, 7, 45, 128};
    for (int k = 0; k < 5; k++)
        for (int fused = 1; fused >= 0; fused--)
            wrong += check(&r, rows[k], fused, rank, size);
    long all_wrong = 0;
    MPI_Allreduce(&wrong, &all_wrong, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("example-allreduce-rmsnorm: %d ranks, backend %s, hidden %d, rows 1, 6, 7, 45, 128 "
               "(one Lamport call to %d rows, a two-shot above): %ld wrong\n",
               size, symaddr_backend_name(symaddr_backend(r.ctx)), HIDDEN, r.rows_per_call,
               all_wrong);
    CHECK(r.ctx, symaddr_symmetric_free(r.prov, r.res));
    CHECK(r.ctx, symaddr_symmetric_free(r.prov, r.y));
    CHECK(r.ctx, symaddr_mem_free(r.ctx, r.w));
    CHECK(r.ctx, symaddr_symmetric_free(r.prov, r.x));
    CHECK(r.ctx, symaddr_symmetric_free(r.prov, r.sum));
    CHECK(r.ctx, symaddr_finalize(&r.ctx));
    MPI_Finalize();
    return all_wrong ? 1 : 0;
}
