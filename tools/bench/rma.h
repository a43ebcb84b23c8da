/* SPDX-License-Identifier: MIT */
/* symaddr-bench's RMA ops: put, get, translate, latency and atomic, with the kernels they
 * time against. */
#ifndef SYMADDR_BENCH_RMA_H
#define SYMADDR_BENCH_RMA_H

/* 16-byte aligned: one 16-byte access per element, as the library's own copies make. */
typedef struct v16 {
    uint64_t a, b;
} __attribute__((aligned(16))) v16_t;

/* Translation on every access, as the least careful user would write it. */
__global__ void copy_translated(v16_t *dst, const v16_t *src, size_t n, int target,
                                const uint64_t *peer_bases, int me)
{
    for (size_t i = symaddr_grid_thread(); i < n; i += symaddr_grid_threads())
        *(v16_t *)symaddr_translate(dst + i, target, peer_bases, me) = src[i];
}

__global__ void copy_raw(v16_t *remote_dst, const v16_t *src, size_t n)
{
    for (size_t i = symaddr_grid_thread(); i < n; i += symaddr_grid_threads())
        remote_dst[i] = src[i];
}

__global__ void pingpong(uint64_t *buf, uint64_t *sig, int peer, int iters, int initiator,
                         const uint64_t *pb_buf, const uint64_t *pb_sig, int me, int *status)
{
    int st = SYMADDR_OK;
    for (int i = 1; i <= iters && st == SYMADDR_OK; i++) {
        if (!initiator)
            st = symaddr_signal_wait_until(sig, (uint64_t)i, 10ull * 1000000000ull);
        symaddr_store_u64(buf, (uint64_t)i, peer, pb_buf, me);
        symaddr_signal_set(sig, (uint64_t)i, peer, pb_sig, me);
        if (initiator)
            st = symaddr_signal_wait_until(sig, (uint64_t)i, 10ull * 1000000000ull);
    }
    *status = st;
}

/* MODE_PEER_*: the runtime's peer copy (cudaMemcpyPeer, hipMemcpyPeer) of the same bytes. */
#if defined(__CUDACC__)
static symaddr_status_t peer_copy_async(void *dst, int dst_dev, const void *src, int src_dev,
                                        size_t bytes, void *stream)
{
    return cudaMemcpyPeerAsync(dst, dst_dev, src, src_dev, bytes, (cudaStream_t)stream) ==
                   cudaSuccess
               ? SYMADDR_OK
               : SYMADDR_ERR_BACKEND;
}
#elif defined(__HIPCC__)
static symaddr_status_t peer_copy_async(void *dst, int dst_dev, const void *src, int src_dev,
                                        size_t bytes, void *stream)
{
    return hipMemcpyPeerAsync(dst, dst_dev, src, src_dev, bytes, (hipStream_t)stream) == hipSuccess
               ? SYMADDR_OK
               : SYMADDR_ERR_BACKEND;
}
#endif
enum {
    MODE_PUT,
    MODE_GET,
    MODE_TRANSLATED,
    MODE_RAW,
    MODE_PEER_PUT,
    MODE_PEER_GET,
    MODE_NVSH_PUT,
    MODE_NVSH_GET
};

static unsigned blocks_for(size_t n)
{
    size_t b = (n + 255) / 256;
    return b == 0 ? 1u : b > 1024 ? 1024u : (unsigned)b;
}

/* Time iters calls; returns the slowest rank's seconds per call. */
static double time_loop(symaddr_context_t *ctx, const opts_t *o, int mode, int remote, char *dst,
                        char *src, size_t bytes, const symaddr_map_t *dst_map)
{
    int rank = symaddr_rank(ctx), size = symaddr_size(ctx);
    int target = remote ? (rank + 1) % size : rank;
    double mine, worst;
    symaddr_status_t st = SYMADDR_OK;
    void *raw = NULL;
    if (mode == MODE_RAW)
        st = symaddr_translate_host(dst_map, dst, target, &raw);
#if !defined(SYMADDR_KERNELS_CPU)
    const symaddr_locality_t *loc = NULL;
    symaddr_map_t *peer_map = NULL;
    int peer_dev = 0;
    if (mode == MODE_PEER_PUT || mode == MODE_PEER_GET) {
        char *mapped = mode == MODE_PEER_PUT ? dst : src;
        st = symaddr_locality_get(ctx, &loc);
        if (st == SYMADDR_OK)
            st = symaddr_lookup(ctx, mapped, &peer_map);
        if (st == SYMADDR_OK)
            st = symaddr_translate_host(peer_map, mapped, target, &raw);
        if (st == SYMADDR_OK)
            peer_dev = loc->device[target];
    }
#endif
    int active = !o->one_pair || rank == 0;
    void *stream = NULL; /* --graph captures on a stream of its own */
#if defined(SYMADDR_USE_CUDA)
    cudaStream_t own = NULL;
    if (o->graph && cudaStreamCreateWithFlags(&own, cudaStreamNonBlocking) != cudaSuccess)
        st = SYMADDR_ERR_BACKEND;
    stream = own;
#endif
    size_t n = bytes / sizeof(v16_t);
    auto call = [&]() -> symaddr_status_t {
        if (!active)
            return SYMADDR_OK;
        switch (mode) {
        case MODE_PUT: return symaddr_put(ctx, dst, src, bytes, target, stream);
        case MODE_GET: return symaddr_get(ctx, dst, src, bytes, target, stream);
        case MODE_TRANSLATED:
            return SYMADDR_KERNEL_LAUNCH(copy_translated, blocks_for(n), 256, stream, (v16_t *)dst,
                                         (const v16_t *)src, n, target, dst_map->peer_bases, rank);
#if defined(SYMADDR_BENCH_NVSHMEM)
        case MODE_NVSH_PUT: /* NVSHMEM's stream-ordered copies, on the same buffers */
            nvsh.put(dst, src, bytes, target, (cudaStream_t)stream);
            return SYMADDR_OK;
        case MODE_NVSH_GET:
            nvsh.get(dst, src, bytes, target, (cudaStream_t)stream);
            return SYMADDR_OK;
#endif
#if !defined(SYMADDR_KERNELS_CPU)
        case MODE_PEER_PUT:
            return peer_copy_async(raw, peer_dev, src, symaddr_device(ctx), bytes, stream);
        case MODE_PEER_GET:
            return peer_copy_async(dst, symaddr_device(ctx), raw, peer_dev, bytes, stream);
#endif
        default:
            return SYMADDR_KERNEL_LAUNCH(copy_raw, blocks_for(n), 256, stream, (v16_t *)raw,
                                         (const v16_t *)src, n);
        }
    };
    mine = 0;
    if (st == SYMADDR_OK)
        st = time_calls(ctx, o, stream, call, &mine);
#if defined(SYMADDR_USE_CUDA)
    if (own)
        cudaStreamDestroy(own);
#endif
    if (st != SYMADDR_OK) {
        fprintf(stderr, "symaddr-bench: %s (%s)\n", symaddr_strerror(st), symaddr_last_error(ctx));
        MPI_Abort(symaddr_comm(ctx), 1);
    }
    MPI_Allreduce(&mine, &worst, 1, MPI_DOUBLE, MPI_MAX, symaddr_comm(ctx));
    return worst;
}

__global__ void atomic_loop(uint64_t *ctr, int target, int n, const uint64_t *pb, int me)
{
    for (int i = 0; i < n; i++)
        symaddr_atomic_fetch_add_u64(ctr, 1, target, pb, me);
}

static int run_atomic(symaddr_context_t *ctx, const opts_t *o)
{
    int rank = symaddr_rank(ctx), n = symaddr_size(ctx), iters = o->iters * 50;
    symaddr_provider_t *prov;
    symaddr_map_t *m;
    uint64_t *ctr, zero[1] = {0}, got[2];
    if (!kernels_match(ctx, o))
        return 2;
    if (symaddr_provider_get(ctx, o->provider, &prov) ||
        symaddr_symmetric_alloc(prov, 2 * sizeof(uint64_t), (void **)&ctr, &m))
        return 1;
    double t[2];
    for (int k = 0; k < 2; k++) { /* 0: every rank adds to rank 0's counter; 1: its own */
        symaddr_memcpy(ctx, ctr + k, zero, sizeof(uint64_t));
        MPI_Barrier(symaddr_comm(ctx));
        double t0 = MPI_Wtime();
        symaddr_status_t st = SYMADDR_KERNEL_LAUNCH(atomic_loop, 1, 1, NULL, ctr + k, k ? rank : 0,
                                                    iters, m->peer_bases, rank);
        if (st == SYMADDR_OK)
            st = symaddr_stream_sync(ctx, NULL);
        if (st != SYMADDR_OK) {
            fprintf(stderr, "symaddr-bench: atomic: %s\n", symaddr_strerror(st));
            MPI_Abort(symaddr_comm(ctx), 1);
        }
        t[k] = now_max(ctx, (MPI_Wtime() - t0) / iters);
        MPI_Barrier(symaddr_comm(ctx));
    }
    symaddr_memcpy(ctx, got, ctr, sizeof(got));
    long wrong = rank == 0 ? got[0] != (uint64_t)n * (uint64_t)iters : 0, all = 0;
    wrong += got[1] != (uint64_t)iters;
    MPI_Allreduce(&wrong, &all, 1, MPI_LONG, MPI_SUM, symaddr_comm(ctx));
    if (rank == 0) {
        printf("# symaddr-bench atomic: %d ranks, backend %s: fetch_add_u64, %d per rank\n", n,
               symaddr_backend_name(symaddr_backend(ctx)), iters);
        printf("# reference: the same kernel on the rank's own counter\n");
        printf("%22s %12s %12s %8s %7s\n", "", "time(us)", "local(us)", "ratio", "#wrong");
        printf("%22s %12.3f %12.3f %8.2f %7ld\n", "all ranks -> rank 0", t[0] * 1e6, t[1] * 1e6,
               t[0] / t[1], all);
    }
    symaddr_symmetric_free(prov, ctr);
    return 0;
}

/* The two symmetric buffers of every RMA op: a holds rank-distinct bytes, b receives. */
typedef struct rma_bufs {
    symaddr_provider_t *prov;
    char *a, *b;
    symaddr_map_t *m1, *m2;
    symaddr_context_t *ctx;
    int nvshmem; /* --compare nvshmem: a and b are NVSHMEM's, registered */
    unsigned char *host;
    json_out_t json;
} rma_bufs_t;

static int rma_open(symaddr_context_t *ctx, const opts_t *o, rma_bufs_t *r)
{
    int rank = symaddr_rank(ctx), size = symaddr_size(ctx);
    memset(r, 0, sizeof(*r));
    symaddr_status_t st = symaddr_provider_get(ctx, o->provider, &r->prov);
    r->ctx = ctx;
    r->nvshmem = with_nvshmem(o);
    if (st == SYMADDR_OK)
        st = bench_buffer(ctx, r->nvshmem, r->prov, o->max, &r->a, &r->m1);
    if (st == SYMADDR_OK)
        st = bench_buffer(ctx, r->nvshmem, r->prov, o->max, &r->b, &r->m2);
    if (st != SYMADDR_OK) {
        if (rank == 0)
            fprintf(stderr, "symaddr-bench: %s\n", symaddr_last_error(ctx));
        return 1;
    }
    r->host = (unsigned char *)malloc(o->max);
    for (size_t i = 0; i < o->max; i++)
        r->host[i] = (unsigned char)(rank * 31 + i * 7 + 1);
    symaddr_memcpy(ctx, r->a, r->host, o->max);
    if (rank == 0) {
        printf("# symaddr-bench %s: %d ranks, backend %s, provider %s\n", o->op, size,
               symaddr_backend_name(symaddr_backend(ctx)),
               o->provider == SYMADDR_PROVIDER_HEAP  ? "heap"
               : o->provider == SYMADDR_PROVIDER_VMM ? "vmm"
                                                     : "ipc");
        json_open(&r->json, o->json);
        json_str(&r->json, "op", o->op);
        json_num(&r->json, "ranks", size, 0);
        json_str(&r->json, "backend", symaddr_backend_name(symaddr_backend(ctx)));
    }
    return 0;
}

static void rma_close(rma_bufs_t *r)
{
    json_close(&r->json);
    free(r->host);
    bench_buffer_free(r->ctx, r->nvshmem, r->prov, r->a, r->m1);
    bench_buffer_free(r->ctx, r->nvshmem, r->prov, r->b, r->m2);
    nvshmem_close();
}

/* latency: ranks 0 and 1 ping-pong an 8-byte put and a signal inside one kernel. */
static int run_latency(symaddr_context_t *ctx, const opts_t *o)
{
    int rank = symaddr_rank(ctx);
    symaddr_status_t st = SYMADDR_OK;
    rma_bufs_t r;
    if (!kernels_match(ctx, o))
        return 2;
    if (symaddr_size(ctx) < 2) {
        if (rank == 0)
            fprintf(stderr, "symaddr-bench: latency needs at least 2 ranks\n");
        return 2;
    }
    if (rma_open(ctx, o, &r)) {
        rma_close(&r);
        return 1;
    }
    /* a holds the 8-byte payloads, b the signal: both start at zero. */
    const uint64_t zero[2] = {0, 0};
    int *status = NULL, dev_st = SYMADDR_OK;
    symaddr_memcpy(ctx, r.a, zero, sizeof(zero));
    symaddr_memcpy(ctx, r.b, zero, sizeof(zero));
    symaddr_mem_alloc(ctx, sizeof(int), (void **)&status);
    symaddr_stream_sync(ctx, NULL);
    MPI_Barrier(symaddr_comm(ctx));
    double t0 = MPI_Wtime();
    if (rank < 2)
        st = SYMADDR_KERNEL_LAUNCH(pingpong, 1, 1, NULL, (uint64_t *)r.a, (uint64_t *)r.b, 1 - rank,
                                   o->iters, rank == 0, r.m1->peer_bases, r.m2->peer_bases, rank,
                                   status);
    symaddr_stream_sync(ctx, NULL);
    double t = (MPI_Wtime() - t0) / o->iters / 2, worst;
    if (rank < 2)
        symaddr_memcpy(ctx, &dev_st, status, sizeof(dev_st));
    MPI_Allreduce(&t, &worst, 1, MPI_DOUBLE, MPI_MAX, symaddr_comm(ctx));
    int bad = st != SYMADDR_OK || dev_st != SYMADDR_OK, all_bad;
    MPI_Allreduce(&bad, &all_bad, 1, MPI_INT, MPI_MAX, symaddr_comm(ctx));
    if (rank == 0) {
        printf("# ranks 0 and 1: 8-byte put + signal, %d round trips in one kernel\n", o->iters);
        printf("%12s %14s %8s\n", "size(B)", "one-way(us)", "status");
        printf("%12d %14.3f %8s\n", 8, worst * 1e6, all_bad ? "TIMEOUT" : "ok");
        json_row(&r.json);
        json_num(&r.json, "bytes", 8, 0);
        json_num(&r.json, "time_us", worst * 1e6, 3);
        json_num(&r.json, "wrong", all_bad, 0);
        json_row_end(&r.json);
    }
    symaddr_mem_free(ctx, status);
    rma_close(&r);
    return 0;
}

/* put, get (the library's calls) and translate (this tool's kernel, translating every access,
 * against the same kernel given the raw peer pointer). */
static int run_copy(symaddr_context_t *ctx, const opts_t *o)
{
    int rank = symaddr_rank(ctx), size = symaddr_size(ctx);
    int mode = !strcmp(o->op, "put") ? MODE_PUT : !strcmp(o->op, "get") ? MODE_GET : -1;
    rma_bufs_t r;
    if (mode < 0 && !kernels_match(ctx, o))
        return 2;
    int nvsh_ref = with_nvshmem(o);
    if (o->compare && (mode < 0 || !nvsh_ref)) {
        if (rank == 0)
            fprintf(stderr,
                    "symaddr-bench: %s's reference is its own; --compare takes nvshmem, "
                    "for put and get\n",
                    o->op);
        return 2;
    }
    if (nvsh_ref && !reference_available(ctx, o))
        return 2;
    if (rma_open(ctx, o, &r)) {
        rma_close(&r);
        return 1;
    }
    int peer_ref = (mode == MODE_PUT || mode == MODE_GET) && BENCH_BACKEND != SYMADDR_BACKEND_CPU;
    if (rank == 0) {
        if (o->one_pair)
            printf("# one pair: rank 0 %s rank 1, the other ranks idle\n",
                   mode == MODE_GET ? "reads from" : "writes to");
        if (mode < 0)
            printf("# reference: the same copy kernel given the raw peer pointer; best of 3 "
                   "alternating rounds each\n");
        else
            printf("# reference: the same kernel copying inside the rank's own allocation\n");
        if (peer_ref)
            printf("# and the runtime's peer copy (cudaMemcpyPeer/hipMemcpyPeer) of the same "
                   "bytes to the same peer; peer ratio > 1: symaddr is faster\n");
        if (nvsh_ref)
            printf("# and NVSHMEM's nvshmemx_%smem_on_stream on the same buffers (NVSHMEM's, "
                   "registered with symaddr); nvsh/sym > 1: symaddr is faster\n",
                   mode == MODE_GET ? "get" : "put");
        printf("%12s %12s %10s %12s %10s %8s %7s", "size(B)", "time(us)", "GB/s",
               mode < 0 ? "raw(us)" : "local(us)", "GB/s", "ratio", "#wrong");
        if (peer_ref)
            printf(" %10s %10s %8s", "peer(us)", "GB/s", "peer/sym");
        if (nvsh_ref)
            printf(" %11s %10s %8s", "nvshmem(us)", "GB/s", "nvsh/sym");
        printf("\n");
    }
    long all_wrong = 0;
    /* b's bytes that are not the sender's pattern, over every rank that received */
    auto wrong_in_b = [&](size_t bytes) -> long {
        long wrong = 0, sum = 0;
        MPI_Barrier(symaddr_comm(ctx));
        unsigned char *got = (unsigned char *)malloc(bytes);
        symaddr_memcpy(ctx, got, r.b, bytes);
        int from = mode == MODE_GET ? (rank + 1) % size : (rank + size - 1) % size;
        int receiver = mode == MODE_GET ? 0 : 1;
        for (size_t i = 0; i < bytes && (!o->one_pair || rank == receiver); i++)
            wrong += got[i] != (unsigned char)(from * 31 + i * 7 + 1);
        free(got);
        MPI_Allreduce(&wrong, &sum, 1, MPI_LONG, MPI_SUM, symaddr_comm(ctx));
        MPI_Barrier(symaddr_comm(ctx));
        return sum;
    };
    for (double s = (double)o->min; s <= (double)o->max; s = next_size(o, s)) {
        size_t bytes = mode < 0 ? (size_t)s / 16 * 16 : (size_t)s;
        if (bytes == 0)
            continue;
        /* put: a (local) -> b on the right neighbour; get: a on the right neighbour -> b.
         * translate compares two kernels of a few microseconds, where whichever runs first
         * pays for the warm-up: three rounds, alternating, best of each. */
        double t_sym =
            time_loop(ctx, o, mode < 0 ? MODE_TRANSLATED : mode, 1, r.b, r.a, bytes, r.m2);
        /* put and get are checked before their reference, which copies a to b locally */
        if (o->check && mode >= 0)
            all_wrong = wrong_in_b(bytes);
        double t_ref = mode < 0 ? time_loop(ctx, o, MODE_RAW, 1, r.b, r.a, bytes, r.m2)
                                : time_loop(ctx, o, mode, 0, r.b, r.a, bytes, r.m2);
        for (int round = 1; mode < 0 && round < 3; round++) {
            t_ref = fmin(t_ref, time_loop(ctx, o, MODE_RAW, 1, r.b, r.a, bytes, r.m2));
            t_sym = fmin(t_sym, time_loop(ctx, o, MODE_TRANSLATED, 1, r.b, r.a, bytes, r.m2));
        }
        if (o->check && mode < 0) /* translate's reference stores the same bytes to the peer */
            all_wrong = wrong_in_b(bytes);
        double t_peer = peer_ref
                            ? time_loop(ctx, o, mode == MODE_PUT ? MODE_PEER_PUT : MODE_PEER_GET, 1,
                                        r.b, r.a, bytes, r.m2)
                            : 0;
        double t_nvsh = nvsh_ref
                            ? time_loop(ctx, o, mode == MODE_PUT ? MODE_NVSH_PUT : MODE_NVSH_GET, 1,
                                        r.b, r.a, bytes, r.m2)
                            : 0;
        if (rank == 0) {
            char wrong_s[24] = "-";
            if (o->check)
                snprintf(wrong_s, sizeof(wrong_s), "%ld", all_wrong);
            /* ratio > 1 means symaddr's path is slower than the reference. */
            printf("%12zu %12.2f %10.2f %12.2f %10.2f %8.3f %7s", bytes, t_sym * 1e6,
                   bytes / t_sym / 1e9, t_ref * 1e6, bytes / t_ref / 1e9, t_sym / t_ref, wrong_s);
            if (peer_ref)
                printf(" %10.2f %10.2f %8.3f", t_peer * 1e6, bytes / t_peer / 1e9, t_peer / t_sym);
            if (nvsh_ref)
                printf(" %11.2f %10.2f %8.3f", t_nvsh * 1e6, bytes / t_nvsh / 1e9, t_nvsh / t_sym);
            printf("\n");
            json_row(&r.json);
            json_num(&r.json, "bytes", (double)bytes, 0);
            json_num(&r.json, "time_us", t_sym * 1e6, 3);
            json_num(&r.json, "ref_time_us", t_ref * 1e6, 3);
            json_num(&r.json, "wrong", (double)all_wrong, 0);
            if (peer_ref)
                json_num(&r.json, "peer_time_us", t_peer * 1e6, 3);
            if (nvsh_ref)
                json_num(&r.json, "nvshmem_time_us", t_nvsh * 1e6, 3);
            json_row_end(&r.json);
        }
        if (all_wrong)
            break;
    }
    rma_close(&r);
    if (all_wrong && rank == 0)
        fprintf(stderr, "symaddr-bench: %s moved %ld wrong bytes\n", o->op, all_wrong);
    return all_wrong ? 1 : 0;
}
#endif
