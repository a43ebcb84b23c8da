/* SPDX-License-Identifier: MIT */
/* Tiles: what one thread loads, reduces and stores per step, as 16-byte packs where every
 * pointer allows it. Part of collectives.hip. */
#ifndef SYMADDR_LIB_DEVICE_COLL_TILES_H
#define SYMADDR_LIB_DEVICE_COLL_TILES_H

/* Tiles of N elements of a range, spread over every thread of the grid. */
#define FOR_TILES(N, base, len, lo, hi)                                                            \
    for (size_t base = (lo) + symaddr_grid_thread() * (N); base < (hi);                            \
         base += symaddr_grid_threads() * (N))                                                     \
        for (size_t len = (hi)-base < (N) ? (hi)-base : (N), once_ = 1; once_; once_ = 0)

struct alignas(16) coll_pack_t {
    uint64_t a, b;
};

/* One 16-byte store. Left to itself, nvcc merges the packed and the element-wise store paths
 * of a tile into 4-byte stores, which a peer link carries at a fraction of its rate. */
SYMADDR_DEVFN void pack_store(void *p, coll_pack_t v)
{
#if defined(__CUDA_ARCH__)
    asm volatile("st.v2.u64 [%0], {%1, %2};" ::"l"(p), "l"(v.a), "l"(v.b) : "memory");
#else
    *(coll_pack_t *)p = v;
#endif
}

/* A whole tile, held in registers: loaded and stored as 16-byte packs when d.vec says every
 * pointer involved is 16-byte aligned, else element by element. A partial tile (the tail of a
 * range) is reduced element by element straight to its destination. */
template <typename T, int N> union coll_tile_t {
    coll_pack_t p[N * sizeof(T) / 16];
    T v[N];
};

template <typename T, int N> SYMADDR_DEVFN void tile_load(coll_tile_t<T, N> &t, const T *p, int vec)
{
#if !defined(SYMADDR_KERNELS_CPU)
    if (vec) {
        COLL_UNROLL
        for (int k = 0; k < (int)(N * sizeof(T) / 16); k++)
            t.p[k] = ((const coll_pack_t *)p)[k];
        return;
    }
#endif
    (void)vec;
    COLL_UNROLL
    for (int j = 0; j < N; j++)
        t.v[j] = p[j];
}

template <typename T, int N>
SYMADDR_DEVFN void tile_store(T *p, const coll_tile_t<T, N> &t, int vec)
{
#if !defined(SYMADDR_KERNELS_CPU)
    if (vec) {
        COLL_UNROLL
        for (int k = 0; k < (int)(N * sizeof(T) / 16); k++)
            pack_store((coll_pack_t *)p + k, t.p[k]);
        return;
    }
#endif
    (void)vec;
    COLL_UNROLL
    for (int j = 0; j < N; j++)
        p[j] = t.v[j];
}

/* Convert a tile to the accumulating type, by the rule (EXACT) or loosely (coll_types.h). */
template <int DT, int EXACT>
SYMADDR_DEVFN void tile_convert(const typename traits<DT>::T *in, typename traits<DT>::A *out,
                                int n)
{
    if (EXACT)
        traits<DT>::load_n(in, out, n);
    else
        traits<DT>::load_loose_n(in, out, n);
}

/* acc op= the tile in, converted to the accumulating type. */
template <int DT, int OP, int N, int EXACT>
SYMADDR_DEVFN void accumulate(typename traits<DT>::A *acc,
                              const coll_tile_t<typename traits<DT>::T, N> &in)
{
    typename traits<DT>::A v[N];
    if (traits<DT>::template add_n<OP>(acc, in.v, N))
        return;
    tile_convert<DT, EXACT>(in.v, v, N);
    COLL_UNROLL
    for (int j = 0; j < N; j++)
        acc[j] = apply<OP>(acc[j], v[j]);
}

/* out = the sum of the n rows' tiles at base, each row read once in place, where the type has
 * a one-pass sum (f32, f16 and bf16 on x86 cpus) and it covered all len; 0 otherwise. */
template <int DT>
SYMADDR_HOSTDEVFN int sum_rows(typename traits<DT>::T *out,
                               const typename traits<DT>::T *const *src, int n, size_t base,
                               int len)
{
    if constexpr (DT == SYMADDR_FLOAT32)
        return f32_sum_rows(out, src, n, base, len) == len;
    else if constexpr (DT == SYMADDR_BFLOAT16)
        return bf16_sum_rows(out, src, n, base, len) == len;
    else if constexpr (DT == SYMADDR_FLOAT16)
        return f16_sum_rows(out, src, n, base, len) == len;
    (void)out, (void)src, (void)n, (void)base, (void)len;
    return 0;
}

/* out = src[0][tile] op ... op src[n-1][tile], in node-rank order on every rank, so that every
 * rank gets the same bits. Two peers' tiles are loaded before either is added, so that two
 * trips to memory overlap; the additions keep their order. */
template <int DT, int OP, int N, int EXACT>
SYMADDR_DEVFN void reduce_tile_(coll_tile_t<typename traits<DT>::T, N> &out,
                                const typename traits<DT>::T *const *src, int n, size_t base,
                                int vec)
{
    typedef traits<DT> tr;
    coll_tile_t<typename tr::T, N> in, in2;
    typename tr::A acc[N];
#if defined(SYMADDR_KERNELS_CPU)
    /* a sum by the one-pass rows where there is one (f16 by its loose conversion only, as
     * accumulate's): the same additions in the same order, without a pass over acc per row
     * nor the conversion of acc after */
    if (OP == SYMADDR_SUM && (!EXACT || !tr::loose) && sum_rows<DT>(out.v, src, n, base, N))
        return;
#endif
    tile_load<typename tr::T, N>(in, src[0] + base, vec);
    tile_convert<DT, EXACT>(in.v, acc, N);
    int q = 1;
    for (; q + 1 < n; q += 2) {
        tile_load<typename tr::T, N>(in, src[q] + base, vec);
        tile_load<typename tr::T, N>(in2, src[q + 1] + base, vec);
        accumulate<DT, OP, N, EXACT>(acc, in);
        accumulate<DT, OP, N, EXACT>(acc, in2);
    }
    if (q < n) {
        tile_load<typename tr::T, N>(in, src[q] + base, vec);
        accumulate<DT, OP, N, EXACT>(acc, in);
    }
    tr::store_n(acc, out.v, N);
}

/* The tile reduced with loose conversions where the type has them, and again by the rule where
 * the result has a NaN, whose bits the loose ones do not keep. */
template <int DT, int OP, int N>
SYMADDR_DEVFN void reduce_tile(coll_tile_t<typename traits<DT>::T, N> &out,
                               const typename traits<DT>::T *const *src, int n, size_t base,
                               int vec)
{
    typedef traits<DT> tr;
    if constexpr (tr::loose) {
        reduce_tile_<DT, OP, N, 0>(out, src, n, base, vec);
        if (tr::nan_n(out.v, N))
            reduce_tile_<DT, OP, N, 1>(out, src, n, base, vec);
    } else {
        reduce_tile_<DT, OP, N, 1>(out, src, n, base, vec);
    }
}

template <int DT, int OP>
SYMADDR_DEVFN typename traits<DT>::T reduce_elem(const typename traits<DT>::T *const *src, int n,
                                                 size_t i)
{
    typedef traits<DT> tr;
    typename tr::A acc = tr::load(src[0][i]);
    for (int q = 1; q < n; q++)
        acc = apply<OP>(acc, tr::load(src[q][i]));
    return tr::store(acc);
}

#define TILE_N (COLL_TILE_BYTES / (int)sizeof(T))

/* dst[0, len) = src[0, len) for the tile at hand: a whole one through registers (16-byte packs
 * where vec_in and vec_out allow), a partial one element by element. */
template <typename T>
SYMADDR_DEVFN void copy_tile(T *dst, const T *src, size_t len, int vec_in, int vec_out)
{
    if (len == (size_t)TILE_N) {
        coll_tile_t<T, TILE_N> v;
        tile_load<T, TILE_N>(v, src, vec_in);
        tile_store<T, TILE_N>(dst, v, vec_out);
    } else {
        for (size_t j = 0; j < len; j++)
            dst[j] = src[j];
    }
}

/* Reduce the tile [base, base + len) of src into dst[(first + k) % ndst] for every k < ndst:
 * a whole tile through registers (16-byte packs where vec_in and vec_out allow), a partial one
 * element by element. */
template <int DT, int OP>
SYMADDR_DEVFN void reduce_tile_to(typename traits<DT>::T *const *dst, int ndst, int first,
                                  const typename traits<DT>::T *const *src, int n, size_t base,
                                  size_t len, int vec_in, int vec_out)
{
    typedef typename traits<DT>::T T;
    if (len == (size_t)TILE_N) {
        coll_tile_t<T, TILE_N> out;
        reduce_tile<DT, OP, TILE_N>(out, src, n, base, vec_in);
        for (int k = 0; k < ndst; k++)
            tile_store<T, TILE_N>(dst[(first + k) % ndst] + base, out, vec_out);
    } else {
        for (size_t j = 0; j < len; j++) {
            T v = reduce_elem<DT, OP>(src, n, base + j);
            for (int k = 0; k < ndst; k++)
                dst[(first + k) % ndst][base + j] = v;
        }
    }
}

#endif
