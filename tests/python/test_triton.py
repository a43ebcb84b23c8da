# SPDX-License-Identifier: MIT
"""symaddr's Python P0 flow and symaddr.triton, across processes:
    TRITON_INTERPRET=1 SYMADDR_BACKEND=cpu mpiexec -n 3 python3 tests/python/test_triton.py
The cpu backend's peer_bases are addresses valid in every process and Triton's interpreter
loads and stores through raw addresses, so the kernels run without a GPU; on a GPU machine
(SYMADDR_TEST_ARRAYS=torch, cuda backend) the same kernels are compiled. Arrays:
SYMADDR_TEST_ARRAYS=numpy (default: NumPy arrays over symaddr memory), torch (torch tensors:
CPU tensors on the cpu backend, CUDA tensors on GPUs).

Every case checks exact values from distinct per-rank data (rank + 1), odd sizes and views at
odd offsets, against a sequential computation or MPI's own collectives. Prints the harness's
summary line."""
import os
import re
import sys

if os.environ.get("SYMADDR_TEST_PYTHONPATH"):  # the source tree's package, before an installed one
    sys.path.insert(0, os.environ["SYMADDR_TEST_PYTHONPATH"])
HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.environ.get("SYMADDR_TEST_SOURCE", os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(SOURCE, "examples"))

import faulthandler  # noqa: E402

from mpi4py import MPI  # noqa: E402  (initialises MPI before symaddr)
import numpy as np  # noqa: E402

# A rank that fails inside a case while its peers wait in MPI would hang them: fail instead.
faulthandler.dump_traceback_later(float(os.environ.get("SYMADDR_TEST_DEADLINE", "900")),
                                  exit=True)

import symaddr as sa  # noqa: E402
from mpi_cases import Cases, check, refused  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402
import symaddr.triton as st  # noqa: E402
from symaddr.triton import heap as iris  # noqa: E402
from symaddr.triton import collectives as tc  # noqa: E402
from symaddr.triton._peers import aligned  # noqa: E402
from symaddr.triton.team import (MAX_BLOCKS, STATUS_AT, call_ident, team_aligned,  # noqa: E402
                                 team_barrier, team_begin, team_end, team_fail, team_translate)
from triton_put import put_kernel  # noqa: E402  (the example's kernel, as the seed writes it)

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
right, left = (rank + 1) % size, (rank - 1) % size
ARRAYS = os.environ.get("SYMADDR_TEST_ARRAYS", "numpy")
N = 37  # odd: the last block is masked
cases = Cases(comm)

if ARRAYS == "torch":
    import torch
    DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16,
              "int32": torch.int32}
    OTHER_DTYPES = {"float64": torch.float64, "int64": torch.int64, "int8": torch.int8,
                    "complex64": torch.complex64}
else:
    torch = None
    import ml_dtypes
    DTYPES = {"float32": np.float32, "bfloat16": ml_dtypes.bfloat16, "float16": np.float16,
              "int32": np.int32}
    OTHER_DTYPES = {"float64": np.float64, "int64": np.int64, "int8": np.int8,
                    "complex64": np.complex64}

ctx = sa.Context(backend=os.environ.get("SYMADDR_BACKEND", "auto"))
ON_GPU = ctx.backend != "cpu"


def host(a):
    """A NumPy copy of an array's values (bf16 as float32), for comparing."""
    if torch is not None and isinstance(a, torch.Tensor):
        a = a.detach()
        if a.dtype == torch.bfloat16:
            a = a.float()
        return a.cpu().numpy().copy()
    a = np.array(a.view(np.ndarray))
    return a.astype(np.float32) if str(a.dtype) == "bfloat16" else a


def fill(a, values):
    """a[:] = values (a NumPy array)."""
    if torch is not None and isinstance(a, torch.Tensor):
        a.copy_(torch.from_numpy(np.ascontiguousarray(values)).to(a.dtype))
    else:
        a[...] = np.asarray(values).astype(a.dtype)


def settle():
    """Every rank's kernels finished and every peer is here (between a put and its check)."""
    if ON_GPU:
        torch.cuda.synchronize()
    ctx.barrier()
    if ON_GPU:
        ctx.sync()


def alloc(shape, dtype="float32", provider="ipc"):
    """A symmetric array of one of DTYPES (the cases' loops run over them) or OTHER_DTYPES."""
    return ctx.allocate_symmetric(shape, DTYPES.get(dtype) or OTHER_DTYPES[dtype],
                                  provider=provider)


def want(values, dtype):
    """values as the dtype stores them, back as float32/int32 (bf16 and f16 round)."""
    if dtype == "int32":
        return np.asarray(values).astype(np.int32)
    if dtype == "float16":
        return np.asarray(values).astype(np.float16).astype(np.float32)
    if dtype == "bfloat16":
        import ml_dtypes
        return np.asarray(values).astype(ml_dtypes.bfloat16).astype(np.float32)
    return np.asarray(values).astype(np.float32)


def data(r, n, dtype):
    """Rank r's distinct values: small integers and halves, exact in every dtype."""
    v = (np.arange(n) % 23) * 0.5 + 100 * (r + 1)
    return v.astype(np.int32) if dtype == "int32" else v


def providers():
    """The providers that allocate on this backend (the cpu backend has no VMM memory)."""
    return ("ipc", "heap") if ctx.backend == "cpu" else ("ipc", "heap", "vmm")


def grid(n, block):
    return (triton.cdiv(n, block),)


# ---- kernels: each uses only symaddr.triton's functions (and tl's local ones) ----------------
# Rank counts are tl.constexpr: loops over peers then unroll, and Triton 3.6's interpreter
# cannot take a loop bound from an argument under NumPy 2.5.

@triton.jit
def k_store_explicit(dst, src, n, peer, peer_bases, cur_rank, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    st.store(dst + offs, tl.load(src + offs, mask=m), peer, peer_bases, cur_rank, mask=m)


@triton.jit
def k_load_explicit(out, src, n, peer, peer_bases, cur_rank, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out + offs, st.load(src + offs, peer, peer_bases, cur_rank, mask=m), mask=m)


@triton.jit
def k_put_get_explicit(dst, src, back, n, peer, peer_bases_dst, peer_bases_src, cur_rank,
                       BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    st.put(src + offs, dst + offs, cur_rank, peer, peer_bases_dst, mask=m)
    st.get(src + offs, back + offs, cur_rank, peer, peer_bases_src, mask=m)


@triton.jit
def k_hoisted(dst, src, n, peer, peer_bases, cur_rank, BLOCK: tl.constexpr):
    remote = st.translate(dst, peer, peer_bases, cur_rank)  # one translation, many accesses
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(remote + offs, tl.load(src + offs, mask=m), mask=m)


@triton.jit
def k_bound(buf, src, back, n, peer, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    st.buffer_store(buf, offs, tl.load(src + offs, mask=m), peer, mask=m)
    st.buffer_get(buf, offs, back + offs, peer, mask=m)


@triton.jit
def k_bound_put_load(buf, src, out, n, peer, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    st.buffer_put(src + offs, buf, offs, peer, mask=m)
    tl.store(out + offs, tl.load(st.buffer_translate(buf, offs, peer), mask=m), mask=m)


@triton.jit
def k_bound_load(out, buf, n, peer, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out + offs, st.buffer_load(buf, offs, peer, mask=m), mask=m)


@triton.jit
def k_heap(dst, src, back, n, cur_rank, peer, heap_bases, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    iris.store(dst + offs, tl.load(src + offs, mask=m), cur_rank, peer, heap_bases, mask=m)
    iris.put(src + offs, dst + n + offs, cur_rank, peer, heap_bases, mask=m)
    iris.get(src + offs, back + offs, cur_rank, peer, heap_bases, mask=m)
    tl.store(back + n + offs, iris.load(src + offs, cur_rank, peer, heap_bases, mask=m), mask=m)


@triton.jit
def k_atomic_add(counts, n_ranks: tl.constexpr, peer_bases, cur_rank, BLOCK: tl.constexpr):
    # every rank adds (cur_rank + 1) * (i + 1) to element i of every rank's counts
    offs = tl.arange(0, BLOCK)
    for t in range(0, n_ranks):
        st.atomic_add(counts + offs, (cur_rank + 1) * (offs + 1), t, peer_bases, cur_rank,
                      sem="relaxed", scope="sys")


@triton.jit
def k_atomic_forms(slots, olds, n_ranks: tl.constexpr, peer_bases, cur_rank,
                   heap_mode: tl.constexpr):
    # slot 0 of rank 0: every rank tries cas(-1 -> cur_rank); slot 1 of every rank: xchg
    # (cur_rank + 1) into the right neighbour; slot 2 of every rank: add 1 from everyone
    right = (cur_rank + 1) % n_ranks
    if heap_mode:
        old = iris.atomic_cas(slots, -1, cur_rank, cur_rank, 0, peer_bases, sem="acq_rel",
                              scope="sys")
        tl.store(olds, old)
        old = iris.atomic_xchg(slots + 1, cur_rank + 1, cur_rank, right, peer_bases,
                               sem="acq_rel", scope="sys")
        tl.store(olds + 1, old)
        for t in range(0, n_ranks):
            iris.atomic_add(slots + 2, 1, cur_rank, t, peer_bases, sem="relaxed", scope="sys")
    else:
        old = st.atomic_cas(slots, -1, cur_rank, 0, peer_bases, cur_rank, sem="acq_rel",
                            scope="sys")
        tl.store(olds, old)
        old = st.atomic_xchg(slots + 1, cur_rank + 1, right, peer_bases, cur_rank,
                             sem="acq_rel", scope="sys")
        tl.store(olds + 1, old)
        for t in range(0, n_ranks):
            st.atomic_add(slots + 2, 1, t, peer_bases, cur_rank, sem="relaxed", scope="sys")


@triton.jit
def k_atomic_bound(buf, olds, n_ranks: tl.constexpr):
    right = (buf.local_rank + 1) % n_ranks
    tl.store(olds, st.buffer_atomic_cas(buf, 0, -1, buf.local_rank, 0, sem="acq_rel",
                                        scope="sys"))
    tl.store(olds + 1, st.buffer_atomic_xchg(buf, 1, buf.local_rank + 1, right,
                                             sem="acq_rel", scope="sys"))
    for t in range(0, n_ranks):
        st.buffer_atomic_add(buf, 2, 1, t, sem="relaxed", scope="sys")


@triton.jit
def k_signal(data, flags, status, n, peer, peer_bases_data, peer_bases_flags, cur_rank,
             BLOCK: tl.constexpr):
    # put this rank's data into the right neighbour with its flag (put_signal); wait for the
    # left's with every comparison that holds; a wait nobody answers gives up in time
    offs = tl.arange(0, BLOCK)
    m = offs < n
    st.put_signal(data + offs, data + n + offs, flags, 5, cur_rank, peer, peer_bases_data,
                  mask=m, sig_peer_bases=peer_bases_flags)
    tl.store(status, st.signal_wait_until(flags, "eq", 5))
    tl.store(status + 1, st.signal_wait_until(flags, "ge", 5) + st.signal_wait_until(flags, "gt", 4)
             + st.signal_wait_until(flags, "le", 5) + st.signal_wait_until(flags, "lt", 6)
             + st.signal_wait_until(flags, "ne", 0))
    tl.store(status + 2, st.signal_wait_until(flags + 1, "eq", 1, timeout_ns=200000000))
    st.fence(peer_bases_flags)
    st.signal_add(flags + 2, 3, peer, peer_bases_flags, cur_rank)
    st.quiet(peer_bases_flags)
    tl.store(status + 3, st.signal_wait_until(flags + 2, st.CMP_EQ, 3))


@triton.jit
def k_order(w, pb, src, got, gotb, buf, flags, fpb, fbuf, status, n, cur, right,
            OLD: tl.constexpr, BLOCK: tl.constexpr):
    # put, get, copy and put_signal of the explicit and bound forms: the one order (source
    # first, Iris's), or the 0.x order, which must do the same with a FutureWarning
    offs = tl.arange(0, BLOCK)
    m = offs < n
    if OLD:
        st.put(w + n + offs, src + offs, right, pb, cur, mask=m)
        st.get(got + offs, w + offs, right, pb, cur, mask=m)
        st.copy(w + 2 * n + offs, w + offs, cur, right, pb, cur, mask=m)
        st.put_signal(w + 3 * n + offs, src + offs, flags, 1, right, pb, cur, mask=m,
                      sig_peer_bases=fpb)
        st.buffer_put(buf, 4 * n + offs, src + offs, right, mask=m)
        st.buffer_get(gotb + offs, buf, offs, right, mask=m)
        st.buffer_copy(buf, 5 * n + offs, buf, offs, cur, right, mask=m)
        st.buffer_put_signal(buf, 6 * n + offs, src + offs, fbuf, 1, 1, right, mask=m)
    else:
        st.put(src + offs, w + n + offs, cur, right, pb, mask=m)
        st.get(w + offs, got + offs, cur, right, pb, mask=m)
        st.copy(w + offs, w + 2 * n + offs, right, cur, cur, pb, mask=m)
        st.put_signal(src + offs, w + 3 * n + offs, flags, 1, cur, right, pb, mask=m,
                      sig_peer_bases=fpb)
        st.buffer_put(src + offs, buf, 4 * n + offs, right, mask=m)
        st.buffer_get(buf, offs, gotb + offs, right, mask=m)
        st.buffer_copy(buf, buf, offs, right, cur, dst_offsets=5 * n + offs, mask=m)
        st.buffer_put_signal(src + offs, buf, 6 * n + offs, fbuf, 1, 1, right, mask=m)
    tl.store(status, st.signal_wait_until(flags, "eq", 1))
    tl.store(status + 1, st.signal_wait_until(flags + 1, "eq", 1))


@triton.jit
def k_signal_bound(buf, data, src, status, peer, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    st.buffer_put_signal(src + offs, data, offs, buf, 0, 1, peer, mask=offs < n, sig_op="add")
    tl.store(status, st.buffer_signal_wait_until(buf, 0, "eq", 1))
    st.buffer_fence(buf)
    st.buffer_quiet(buf)


@triton.jit
def k_signal_heap(flags, status, cur_rank, peer, heap_bases):
    iris.signal_set(flags, 7, cur_rank, peer, heap_bases)
    tl.store(status, iris.signal_wait_until(flags, "ge", 7))
    iris.fence(heap_bases)
    iris.signal_add(flags + 1, 2, cur_rank, peer, heap_bases)
    iris.quiet(heap_bases)
    tl.store(status + 1, iris.signal_wait_until(flags + 1, "eq", 2))


@triton.jit
def k_mixed(out, a, a_pb, b, b_pb, c, c_pb, d, d_pb, n, cur_rank, n_ranks: tl.constexpr,
            BLOCK: tl.constexpr):
    # out = sum over ranks of every rank's a + b + c + d: four maps in one launch
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for t in range(0, n_ranks):
        acc += st.load(a + offs, t, a_pb, cur_rank, mask=m, other=0.0)
        acc += st.load(b + offs, t, b_pb, cur_rank, mask=m, other=0.0)
        acc += st.load(c + offs, t, c_pb, cur_rank, mask=m, other=0.0)
        acc += st.load(d + offs, t, d_pb, cur_rank, mask=m, other=0.0)
    tl.store(out + offs, acc, mask=m)


@triton.jit
def k_reachable(out, peer_bases, n_ranks: tl.constexpr):
    for t in range(0, n_ranks):
        tl.store(out + t, st.reachable(t, peer_bases).to(tl.int32))


@triton.jit
def k_team_grid(team, N_RANKS: tl.constexpr):
    call = team_begin(team)
    team_barrier(team, call, 1, N_RANKS)
    team_end(team, call)


@triton.jit
def k_fail(team, CODE: tl.constexpr, N_RANKS: tl.constexpr):
    team_fail(team, tl.full((), CODE, tl.int32), N_RANKS)


# ---- cases -------------------------------------------------------------------------------------

def header_enums():
    """Every enum of symaddr's public headers, parsed from their text."""
    text = ""
    for h in ("types.h", "symaddr.h"):
        text += open(os.path.join(SOURCE, "include", "symaddr", h)).read()
    return {m.group(1): int(m.group(2), 0)
            for m in re.finditer(r"^\s*(SYMADDR_[A-Z0-9_]+)\s*=\s*(-?\d+)", text, re.M)}, text


def test_abi():
    """Every Python constant is the library's, and the library's are its headers'."""
    enums, text = header_enums()
    abi = ctx._lib.abi
    for name, value in abi["status"].items():
        check(enums.get(name) == value, "status %s: library %d, header %s" % (
            name, value, enums.get(name)))
    check(len(abi["status"]) == -enums["SYMADDR_ERR_LAST_"], "every status is listed")
    for kind, prefix in (("provider", "SYMADDR_PROVIDER_"), ("backend", "SYMADDR_BACKEND_")):
        for name, value in abi[kind].items():
            check(enums.get(prefix + name.upper()) == value, "%s %s: library %d, header %s" % (
                kind, name, value, enums.get(prefix + name.upper())))
    for name, value in abi["redop"].items():
        check(enums.get("SYMADDR_" + name.upper()) == value, "redop %s" % name)
    check(len(abi["dtype"]) == enums["SYMADDR_DTYPE_COUNT_"], "every dtype")
    for name, value in abi["allreduce_algo"].items():  # as SYMADDR_ALLREDUCE spells them
        want = enums.get("SYMADDR_ALLREDUCE_" + name.upper().replace("-", "_"))
        check(want == value, "allreduce algorithm %s: library %d, header %s" % (name, value, want))
    check(len(abi["allreduce_algo"]) == len([k for k in enums if k.startswith(
        "SYMADDR_ALLREDUCE_")]), "every allreduce algorithm")
    for name, bit in abi["capability"].items():
        m = re.search(r"#define SYMADDR_CAP_%s[\s\\]+\(?\s*\(1ull << (\d+)\)" % name.upper(),
                      text)
        check(m and 1 << int(m.group(1)) == bit, "capability %s" % name)
    # the struct layouts list every member of the header's structs, in order
    for struct, cname in (("symaddr_config_t", "symaddr_config"), ("symaddr_map_t", "symaddr_map"),
                          ("symaddr_buffer_t", "symaddr_buffer")):
        body = re.search(r"typedef struct %s \{(.*?)\} %s;" % (cname, struct), text, re.S).group(1)
        body = re.sub(r"/\*.*?\*/", "", body, flags=re.S)
        members = re.findall(r"(\w+)\s*;", body)
        got = [f[0] for f in abi["structs"][struct]["fields"]]
        check(got == members, "%s: library lists %s, header has %s" % (struct, got, members))
    # a provider asked for by name is the provider the library reports
    for name in providers():
        a, amap = ctx.allocate_symmetric(5, DTYPES["float32"], provider=name)
        check(amap.provider == name, "provider %r gave a %s map" % (name, amap.provider))
        ctx.free(a)
    if "vmm" not in providers():  # refused by name, not taken for another provider
        try:
            ctx.allocate_symmetric(5, DTYPES["float32"], provider="vmm")
            raise AssertionError("vmm allocated on the cpu backend")
        except sa.SymaddrError as e:
            check(e.name == "SYMADDR_ERR_UNSUPPORTED" and "VMM" in str(e), str(e))
    check(sa.__version__ == "%d.%d.%d" % sa.version(), "__version__")


def test_seed_put_kernel():
    """The seed's put_kernel (examples/triton_put.py), as written, over ipc and heap maps."""
    for provider in ("ipc", "heap"):
        n = 3001
        src, _ = alloc((n,), provider=provider)
        dst, dst_map = alloc((n,), provider=provider)
        fill(src, data(rank, n, "float32"))
        fill(dst, np.full(n, -1.0))
        check(int(host(dst_map.peer_bases)[dst_map.local_rank]) == dst_map.allocation_base,
              "peer_bases[local_rank] == allocation_base")
        settle()
        put_kernel[grid(n, 1024)](src, dst, dst_map.peer_bases, n, right,
                                  CUR_RANK=dst_map.local_rank, BLOCK=1024)
        settle()
        check(np.array_equal(host(dst), want(data(left, n, "float32"), "float32")),
              "%s: dst holds the left neighbour's src" % provider)
        settle()
        ctx.free(dst)
        ctx.free(src)


def test_explicit_form():
    """store, load, put, get and a hoisted translate, every dtype, views at odd offsets."""
    for dtype in DTYPES:
        dst, dmap = alloc((N + 5,), dtype)
        src, smap = alloc((N + 3,), dtype)
        out, _ = alloc((N,), dtype)
        back, _ = alloc((N,), dtype)
        fill(src[3:], data(rank, N, dtype))
        fill(dst, np.zeros(N + 5))
        settle()
        # store into the right neighbour's dst[5:], through a view at an odd offset
        k_store_explicit[grid(N, 16)](dst[5:], src[3:], N, right, dmap.peer_bases,
                                      dmap.local_rank, BLOCK=16)
        settle()
        check(np.array_equal(host(dst[5:]), want(data(left, N, dtype), dtype)),
              "%s store" % dtype)
        check(np.array_equal(host(dst[:5]), want(np.zeros(5), dtype)),
              "%s store wrote outside its view" % dtype)
        # load the right neighbour's src[3:]
        k_load_explicit[grid(N, 16)](out, src[3:], N, right, smap.peer_bases, smap.local_rank,
                                     BLOCK=16)
        settle()
        check(np.array_equal(host(out), want(data(right, N, dtype), dtype)), "%s load" % dtype)
        # put into the right's dst[5:], get from the right's src[3:]
        fill(dst, np.zeros(N + 5))
        settle()
        k_put_get_explicit[grid(N, 8)](dst[5:], src[3:], back, N, right, dmap.peer_bases,
                                       smap.peer_bases, dmap.local_rank, BLOCK=8)
        settle()
        check(np.array_equal(host(dst[5:]), want(data(left, N, dtype), dtype)), "%s put" % dtype)
        check(np.array_equal(host(back), want(data(right, N, dtype), dtype)), "%s get" % dtype)
        fill(dst, np.zeros(N + 5))
        settle()
        k_hoisted[grid(N, 32)](dst[5:], src[3:], N, right, dmap.peer_bases, dmap.local_rank,
                               BLOCK=32)
        settle()
        check(np.array_equal(host(dst[5:]), want(data(left, N, dtype), dtype)),
              "%s hoisted translate" % dtype)
        settle()
        for a in (dst, src, out, back):
            ctx.free(a)


def test_bound_form():
    """bind(): SymmetricBuffer(ptr, peer_bases, capabilities, local_rank) as one argument."""
    for dtype in ("float32", "int32", "bfloat16"):
        dst, dmap = alloc((N + 7,), dtype)
        src, _ = alloc((N,), dtype)
        back, _ = alloc((N,), dtype)
        out, _ = alloc((N,), dtype)
        fill(src, data(rank, N, dtype))
        fill(dst, np.zeros(N + 7))
        buf = ctx.bind(dst[7:])
        check(isinstance(buf, sa.SymmetricBuffer) and buf.capabilities == dmap.capabilities
              and buf.local_rank == rank, "bind's fields")
        settle()
        k_bound[grid(N, 16)](buf, src, back, N, right, BLOCK=16)
        settle()
        check(np.array_equal(host(dst[7:]), want(data(left, N, dtype), dtype)),
              "%s buffer_store" % dtype)
        check(np.array_equal(host(back), want(data(rank, N, dtype), dtype)),
              "%s buffer_get reads back what this rank stored" % dtype)
        fill(dst, np.zeros(N + 7))
        settle()
        k_bound_put_load[grid(N, 16)](buf, src, out, N, right, BLOCK=16)
        settle()
        check(np.array_equal(host(dst[7:]), want(data(left, N, dtype), dtype)),
              "%s buffer_put" % dtype)
        check(np.array_equal(host(out), want(data(rank, N, dtype), dtype)),
              "%s buffer_translate" % dtype)
        k_bound_load[grid(N, 16)](out, buf, N, left, BLOCK=16)
        settle()
        # the left neighbour's dst[7:] holds what its own left put there
        check(np.array_equal(host(out), want(data((rank - 2) % size, N, dtype), dtype)),
              "%s buffer_load" % dtype)
        settle()
        for a in (dst, src, back, out):
            ctx.free(a)


@triton.jit
def k_iris_full(a, b, c, olds, n, cur, peer, table, BLOCK: tl.constexpr):
    """Every function of Iris's API through symaddr.triton.heap, with Iris's keywords, on one
    allocation's own table: a (this rank's data), b and c (results), olds (atomics' old
    values, 6 slots)."""
    offs = tl.arange(0, BLOCK)
    m = offs < n
    # load with other, cache_modifier, volatile and hint; masked lanes read other (-5)
    # cache_modifier and volatile on two loads (PTX refuses .volatile with .cg); equal values
    xc = iris.load(a + offs, cur, peer, table, mask=m, other=-5.0, cache_modifier=".cg", hint=1)
    xv = iris.load(a + offs, cur, peer, table, mask=m, other=-5.0, volatile=True)
    x = (xc + xv) * 0.5
    iris.store(b + offs, x, cur, cur, table, mask=offs < BLOCK, hint=1, cache_modifier=".wb")
    # put (to the peer's c[0:n]), get (from the peer's a into c[n:2n] locally)
    iris.put(a + offs, c + offs, cur, peer, table, mask=m, other=0.0,
           load_cache_modifier=".ca", store_cache_modifier=".wt", hint=1)
    iris.get(a + offs, c + n + offs, cur, peer, table, mask=m, other=0.0,
           load_cache_modifier=".cv", store_cache_modifier=".wb")
    # copy: the peer's a into this rank's c[2n:3n] (cur_rank is to_rank)
    iris.copy(a + offs, c + 2 * n + offs, peer, cur, cur, table, mask=m, other=0.0,
            load_cache_modifier=".cg", store_cache_modifier=".wb", hint=1)


@triton.jit
def k_iris_atomics(slots, olds, cur, peer, table):
    """Iris's atomics onto the peer's six int32 slots, each once, with sem and scope."""
    v = cur + 1
    tl.store(olds + 0, iris.atomic_sub(slots + 0, v, cur, peer, table, sem="acq_rel", scope="sys"))
    tl.store(olds + 1, iris.atomic_and(slots + 1, 0xF0 | v, cur, peer, table, sem="relaxed",
                                     scope="sys"))
    tl.store(olds + 2, iris.atomic_or(slots + 2, v << 8, cur, peer, table, scope="sys"))
    tl.store(olds + 3, iris.atomic_xor(slots + 3, v, cur, peer, table, scope="sys"))
    tl.store(olds + 4, iris.atomic_min(slots + 4, v, cur, peer, table, scope="sys", hint=1))
    tl.store(olds + 5, iris.atomic_max(slots + 5, v, cur, peer, table, sem="release",
                                     scope="sys"))


def test_heap_form():
    """symaddr.triton.heap: Iris's names and order over the context-wide heap_bases."""
    dst, dmap = alloc((2 * N,), "float32", provider="heap")
    src, _ = alloc((N,), "float32", provider="heap")
    back, _ = alloc((2 * N,), "float32", provider="heap")
    hb, own = host(ctx.heap_bases), host(dmap.peer_bases)
    shift = dmap.allocation_base - int(hb[rank])
    check(np.array_equal(own, np.where(hb != 0, hb + shift, 0)),
          "a heap allocation's table is heap_bases shifted to it (the same translation)")
    fill(src, data(rank, N, "float32"))
    fill(dst, np.zeros(2 * N))
    settle()
    k_heap[grid(N, 16)](dst, src, back, N, rank, right, ctx.heap_bases, BLOCK=16)
    settle()
    w_left = want(data(left, N, "float32"), "float32")
    check(np.array_equal(host(dst[:N]), w_left), "heap store")
    check(np.array_equal(host(dst[N:]), w_left), "heap put")
    w_right = want(data(right, N, "float32"), "float32")
    check(np.array_equal(host(back[:N]), w_right), "heap get")
    check(np.array_equal(host(back[N:]), w_right), "heap load")
    settle()
    for a in (dst, src, back):
        ctx.free(a)


def test_iris_full():
    """Iris's device API in full (symaddr.triton.heap): load, store, put, get and copy with
    other, cache modifiers, volatile and hint; sub, and, or, xor, min and max from the left
    neighbour; on an ipc allocation's own peer_bases (the table slot takes any map's table)
    and on the heap's heap_bases."""
    block = 64
    for provider in ("ipc", "heap"):
        # one allocation, three views at odd offsets: a table translates its own memory only
        whole, wmap = alloc((1 + N + block + 3 * N,), "float32", provider=provider)
        a, b, c = whole[1:1 + N], whole[1 + N:1 + N + block], whole[1 + N + block:]
        table = wmap.peer_bases if provider == "ipc" else ctx.heap_bases
        fill(a, data(rank, N, "float32"))
        fill(c, np.zeros(3 * N))
        settle()
        k_iris_full[(1,)](a, b, c, None, N, rank, right, table, BLOCK=block)
        settle()
        w_right = want(data(right, N, "float32"), "float32")
        w_left = want(data(left, N, "float32"), "float32")
        got_b = host(b)
        check(np.array_equal(got_b[:N], w_right) and np.all(got_b[N:] == -5.0),
              "%s load (other=-5 past n): %s" % (provider, got_b[N - 2:N + 2]))
        check(np.array_equal(host(c[:N]), w_left), "%s put" % provider)
        check(np.array_equal(host(c[N:2 * N]), w_right), "%s get" % provider)
        check(np.array_equal(host(c[2 * N:]), w_right), "%s copy" % provider)
        slots, smap = alloc((6,), "int32", provider=provider)
        olds, _ = alloc((6,), "int32")
        start = [1000, 0xFF, 0x1, 0x55, 1 << 20, -1]
        fill(slots, start)
        settle()
        k_iris_atomics[(1,)](slots, olds, rank, right,
                             smap.peer_bases if provider == "ipc" else ctx.heap_bases)
        settle()
        v = left + 1
        check(host(olds).tolist() == start, "%s old values %s" % (provider, host(olds)))
        check(host(slots).tolist() == [1000 - v, 0xFF & (0xF0 | v), 0x1 | (v << 8), 0x55 ^ v,
                                       min(1 << 20, v), max(-1, v)],
              "%s atomics from rank %d: %s" % (provider, left, host(slots)))
        settle()
        for x in (whole, slots, olds):
            ctx.free(x)


def test_atomics_every_rank():
    """atomic_add from every rank at once onto every rank; cas, xchg and add in the three forms."""
    block = 16
    counts, cmap = alloc((block,), "int32")
    fill(counts, np.zeros(block))
    settle()
    k_atomic_add[(1,)](counts, size, cmap.peer_bases, rank, BLOCK=block)
    settle()
    total = size * (size + 1) // 2
    check(np.array_equal(host(counts), np.arange(1, block + 1) * total), "atomic_add totals")
    settle()
    ctx.free(counts)
    for form in ("explicit", "heap", "bound"):
        slots, smap = alloc((3,), "int32", provider="heap" if form == "heap" else "ipc")
        olds, _ = alloc((2,), "int32")
        fill(slots, [-1, 0, 0])
        fill(olds, [-7, -7])
        settle()
        if form == "bound":
            k_atomic_bound[(1,)](ctx.bind(slots), olds, size)
        else:
            k_atomic_forms[(1,)](slots, olds, size,
                                 ctx.heap_bases if form == "heap" else smap.peer_bases, rank,
                                 heap_mode=form == "heap")
        settle()
        got, old = host(slots), host(olds)
        winners = comm.allgather(int(old[0]))
        if rank == 0:
            check(int(got[0]) in range(size), "%s cas: slot holds %d" % (form, got[0]))
        check(winners.count(-1) == 1, "%s cas: %d ranks saw -1, want exactly 1" % (
            form, winners.count(-1)))
        check(winners[int(comm.bcast(int(got[0]) if rank == 0 else None))] == -1,
              "%s cas: the rank the slot names is the one that saw -1" % form)
        check(int(got[1]) == left + 1 and int(old[1]) == 0, "%s xchg: slot %d old %d" % (
            form, got[1], old[1]))
        check(int(got[2]) == size, "%s add: %d, want %d" % (form, got[2], size))
        settle()
        ctx.free(slots)
        ctx.free(olds)


def test_one_order():
    """put, get, copy and put_signal take one order in every form, Iris's (the source first):
    exact on views at odd offsets; a kernel in the 0.x order (the destination first) gives
    the same values and a FutureWarning for each such call (under Triton's interpreter at
    each call; compiled, when the kernel compiles: test_ptx checks that with a fresh cache)."""
    import warnings
    ok = sa._lib.STATUS["SYMADDR_OK"]
    results = []
    for old in (False, True):
        whole, wmap = alloc((7 * N + 3,), "float32")
        locals_, _ = alloc((3 * N + 5,), "float32")
        flags, fmap = alloc((2,), "int32")
        status, _ = alloc((2,), "int32")
        w, src, got, gotb = whole[3:], locals_[5:N + 5], locals_[N + 5:2 * N + 5], \
            locals_[2 * N + 5:]
        fill(whole, np.concatenate([[-1, -1, -1], data(rank, N, "float32"), -np.ones(6 * N)]))
        fill(locals_, np.concatenate([-np.ones(5), data(rank + size, N, "float32"),
                                      -np.ones(2 * N)]))
        fill(flags, [0, 0])
        fill(status, [99, 99])
        settle()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            k_order[(1,)](w, wmap.peer_bases, src, got, gotb, ctx.bind(w), flags,
                          fmap.peer_bases, ctx.bind(flags), status, N, rank, right, OLD=old,
                          BLOCK=64)
            settle()
        ours = [c for c in caught if issubclass(c.category, FutureWarning)]
        said = sorted({re.match(r"symaddr\.triton\.(\w+)\(", str(c.message)).group(1)
                       for c in ours})
        form = "0.x order" if old else "one order"
        if not ON_GPU:  # interpreted: at each call, on the kernel's own line
            check(said == (sorted(["put", "get", "copy", "put_signal", "buffer_put",
                                   "buffer_get", "buffer_copy", "buffer_put_signal"])
                           if old else []), "%s: FutureWarnings for %s" % (form, said))
            lines = {c.lineno for c in ours if os.path.samefile(c.filename, __file__)}
            check(len(lines) == (8 if old else 0), "%s: warned at the kernel's lines %s "
                  "(of %s)" % (form, sorted(lines), sorted({c.filename for c in ours})))
        check(list(host(status)) == [ok, ok], "%s: put_signal's flags %s" % (
            form, list(host(status))))
        mine_, right_ = data(rank, N, "float32"), data(right, N, "float32")
        from_left = data(left + size, N, "float32")
        got_w = host(w)
        for i, (what, expect) in enumerate((("whole[0:n]", mine_), ("put", from_left),
                                            ("copy", right_), ("put_signal", from_left),
                                            ("buffer_put", from_left), ("buffer_copy", right_),
                                            ("buffer_put_signal", from_left))):
            check(np.array_equal(got_w[i * N:(i + 1) * N], expect), "%s: %s %s" % (
                form, what, got_w[i * N:i * N + 3]))
        check(np.array_equal(host(got), right_), "%s: get %s" % (form, host(got)[:3]))
        check(np.array_equal(host(gotb), right_), "%s: buffer_get" % form)
        check(np.all(host(whole)[:3] == -1) and np.all(host(locals_)[:5] == -1),
              "%s: nothing written before the views" % form)
        results.append(got_w)
        settle()
        for x in (whole, locals_, flags, status):
            ctx.free(x)
    check(np.array_equal(results[0], results[1]), "the two orders wrote the same")


def test_signals():
    """NVSHMEM's signals in the three forms: put_signal (data, then its flag), every
    comparison of signal_wait_until, fence and quiet; a wait nobody answers gives TIMEOUT
    after its bound in time (200 ms), not a count of polls."""
    import time
    d, dmap = alloc((2 * N,), "float32")
    flags, fmap = alloc((3,), "int32")
    status, _ = alloc((4,), "int32")
    fill(d, np.concatenate([data(rank, N, "float32"), np.zeros(N)]))
    fill(flags, [0, 0, 0])
    fill(status, [99, 99, 99, 99])
    settle()
    t0 = time.monotonic()
    k_signal[(1,)](d, flags, status, N, right, dmap.peer_bases, fmap.peer_bases, rank, BLOCK=64)
    settle()
    took = time.monotonic() - t0
    ok, timeout = sa._lib.STATUS["SYMADDR_OK"], sa._lib.STATUS["SYMADDR_ERR_TIMEOUT"]
    check(list(host(status)) == [ok, 5 * ok, timeout, ok], "signal statuses %s, want "
          "[%d, %d, %d, %d]" % (list(host(status)), ok, 5 * ok, timeout, ok))
    check(took >= 0.2, "the unanswered wait gave up after %.3f s, before its 200 ms" % took)
    check(np.array_equal(host(d[N:]), want(data(left, N, "float32"), "float32")),
          "data before the flag")
    flagged, _ = alloc((1,), "int32")
    got, _ = alloc((N,), "float32")
    src = d[:N]
    fill(flagged, [0])
    fill(got, np.zeros(N))
    fill(status, [99, 99, 99, 99])
    settle()
    k_signal_bound[(1,)](ctx.bind(flagged), ctx.bind(got), src, status, right, N, BLOCK=64)
    settle()
    check(int(host(status)[0]) == ok and int(host(flagged)[0]) == 1, "buffer put_signal")
    check(np.array_equal(host(got), want(data(left, N, "float32"), "float32")),
          "buffer put_signal's data")
    hflags, _ = alloc((2,), "int32", provider="heap")
    fill(hflags, [0, 0])
    settle()
    k_signal_heap[(1,)](hflags, status, rank, right, ctx.heap_bases)
    settle()
    check(list(host(status)[:2]) == [ok, ok] and list(host(hflags)) == [7, 2], "heap signals")
    settle()
    for a in (d, flags, status, hflags, flagged, got):
        ctx.free(a)


@triton.jit
def k_signal_block(flags, status, old, OLD: tl.constexpr):
    """A wait on a block of 4 flags (OK only where all hold), and the 0.x form."""
    offs = tl.arange(0, 4)
    if OLD:
        tl.store(status, st.signal_wait_until(flags + offs, 2, 1000))
    else:
        tl.store(status, st.signal_wait_until(flags + offs, "eq", 2, timeout_ns=100000000))


def test_signal_blocks():
    """A wait on a block of flags returns OK only once every lane's flag holds (before: OK
    when one of four held); the 0.x call signal_wait_until(sig, value, max_spins) waits as it
    did (sig >= value, at most max_spins polls) with a FutureWarning naming the new form
    (before: an error inside Triton's compiler); DEFAULT_TIMEOUT_NS is SYMADDR_TIMEOUT_MS at
    import, as the docstring says."""
    import warnings
    flags, _ = alloc((4,), "int32")
    status, _ = alloc((1,), "int32")
    ok, timeout = sa._lib.STATUS["SYMADDR_OK"], sa._lib.STATUS["SYMADDR_ERR_TIMEOUT"]
    said = []
    for values, want_new, want_old in (([2, 0, 0, 0], timeout, timeout),
                                       ([2, 2, 2, 2], ok, ok), ([3, 2, 5, 2], timeout, ok)):
        for old, want_st in ((False, want_new), (True, want_old)):
            fill(flags, values)
            fill(status, [99])
            settle()
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                k_signal_block[(1,)](flags, status, 0, OLD=old)
                settle()
            check(int(host(status)[0]) == want_st, "%s wait on %s: %d, want %d" % (
                "0.x" if old else "a", values, int(host(status)[0]), want_st))
            said += [(old, str(w.message)) for w in caught
                     if issubclass(w.category, FutureWarning)]
    # shown when the kernel compiles: at each call under the interpreter, once compiled
    check(any(old and 'signal_wait_until(sig, "ge", value, timeout_ns)' in t
              for old, t in said) and not any(not old for old, _ in said),
          "the 0.x form's warning: %s" % said)
    want_ns = sa._lib.default_timeout_ms() * 1000000
    check(int(st.DEFAULT_TIMEOUT_NS) == want_ns, "DEFAULT_TIMEOUT_NS %s, SYMADDR_TIMEOUT_MS "
          "at import gives %d" % (st.DEFAULT_TIMEOUT_NS, want_ns))
    for a in (flags, status):
        ctx.free(a)


def plain_local(n, offset):
    """n f32 of the backend's plain allocator at an interior offset: torch's caching allocator
    on GPUs (torch.empty), symaddr_mem_alloc on the cpu backend (plain malloc memory cannot be
    shared there). Returns (the allocation, the view)."""
    if ON_GPU:
        whole = torch.empty(n + offset, dtype=torch.float32, device="cuda")
    else:
        whole = ctx.empty_local((n + offset,), DTYPES["float32"])
    return whole, whole[offset:]


def test_imports():
    """The caller's own memory at interior offsets that differ per rank, imported, found by
    get_symmetric_address_map, and written by the seed's put_kernel."""
    n = 1003
    whole, view = plain_local(n, 1 + 2 * rank)
    vmap = ctx.import_(view)
    check(ctx.get_symmetric_address_map(view[5:]) is vmap, "a view of the import finds its map")
    check(vmap.provider == "import" and int(host(vmap.peer_bases)[rank]) ==
          vmap.allocation_base, "the import's own entry is its root")
    src, _ = alloc((n,))
    fill(src, data(rank, n, "float32"))
    fill(view, np.zeros(n))
    settle()
    put_kernel[grid(n, 256)](src, view, vmap.peer_bases, n, right, CUR_RANK=vmap.local_rank,
                             BLOCK=256)
    settle()
    check(np.array_equal(host(view), want(data(left, n, "float32"), "float32")),
          "put into an import at another offset on every rank")
    settle()
    vmap.unregister()
    ctx.free(src)
    if not ON_GPU:
        ctx.free_local(whole)


def foreign_table(n):
    """Memory of another library, as symaddr meets it: its own peer table. On the cpu backend
    an MPI shared window; on GPUs the caller's import re-registered through its peers'
    addresses (the form another library's *_ptr table has). Returns (array, map, cleanup)."""
    if ON_GPU:
        whole, view = plain_local(n, 3)
        imap = ctx.import_(view)
        peers = [int(p) for p in host(imap.peer_bases)]
        offset = view.data_ptr() - imap.allocation_base
        imap.unregister()
        fmap = ctx.register(view, n * 4, [p + offset for p in peers])
        return view, fmap, lambda: fmap.unregister()
    node = comm.Split_type(MPI.COMM_TYPE_SHARED)
    check(node.Get_size() == size, "one host")
    win = MPI.Win.Allocate_shared(n * 4, 4, comm=node)
    peers = [np.frombuffer(win.Shared_query(r)[0], np.uint8).ctypes.data for r in range(size)]
    fmap = ctx.register(peers[rank], n * 4, peers)
    d, _ = sa._arrays.host_array(peers[rank], (n,), np.float32, fmap._life)

    def cleanup():
        fmap.unregister()
        win.Free()
        node.Free()
    return d, fmap, cleanup


def test_mixed_providers():
    """One kernel reads a heap array, an ipc array, an import and a foreign table (an MPI
    shared window on the cpu backend): each through its own map."""
    a, amap = alloc((N,), "float32", provider="heap")
    b, bmap = alloc((N,), "float32", provider="ipc")
    c, cview = plain_local(N, 1)  # an interior pointer of the plain allocation
    cmap = ctx.import_(cview)
    d, dmap, d_cleanup = foreign_table(N)
    for arr, k in ((a, 1), (b, 2), (cview, 3), (d, 4)):
        fill(arr, data(rank, N, "float32") * k)
    for m, base in ((amap, a), (bmap, b), (cmap, cview), (dmap, d)):
        check(int(host(m.peer_bases)[rank]) == m.allocation_base, "%s: own entry" % m.provider)
    out, _ = alloc((N,))
    settle()
    k_mixed[grid(N, 16)](out, a, amap.peer_bases, b, bmap.peer_bases, cview, cmap.peer_bases,
                         d, dmap.peer_bases, N, rank, size, BLOCK=16)
    settle()
    ref = sum(data(r, N, "float32") * 10 for r in range(size)).astype(np.float32)
    check(np.array_equal(host(out), ref), "sum of four maps")
    cmap.unregister()
    d_cleanup()
    if not ON_GPU:
        ctx.free_local(c)
    for x in (a, b, out):
        ctx.free(x)


def reference(values_by_rank, op, dtype="float32"):
    """The reduction of every rank's values as dtype holds them, in float64 (exact for the
    tests' data); the caller rounds the result to dtype once (want)."""
    stack = np.stack([np.asarray(want(v, dtype), np.float64) for v in values_by_rank])
    return {"sum": stack.sum(0), "max": stack.max(0), "min": stack.min(0)}[op]


def test_triton_collectives():
    """symaddr.triton.collectives, one kernel each and no host barrier: one-shot allreduce
    (f32, bf16, f16, int32; sum, max, min), two-shot (x on the heap, out an ipc allocation),
    reduce-scatter, all-gather, all-to-all and broadcast, odd counts, views at odd offsets,
    against MPI's data and ctx's own collectives."""
    n = 2 * size + 3  # odd, and not a multiple of the rank count
    every = [data(r, size * n, "float32") for r in range(size)]
    for dtype in ("float32", "bfloat16", "float16", "int32"):
        x, _ = alloc((size * n + 3,), dtype, provider="heap")
        xs = x[3:]  # a view at an odd offset
        fill(xs, every[rank] if dtype != "int32" else every[rank].astype(np.int32))
        settle()
        for op in ("sum", "max", "min"):
            for algo in ("auto", "oneshot") + (("lamport",) if dtype != "int32" else ()):
                out = tc.allreduce(ctx, xs, op=op, algo=algo)
                settle()
                check(np.array_equal(host(out), want(reference(every, op, dtype), dtype)),
                      "%s %s %s: %s want %s" % (dtype, algo, op, host(out),
                                                want(reference(every, op, dtype), dtype)))
        if dtype in ("float32", "int32"):
            out2, _ = alloc((size * n,), dtype)  # another provider's memory
            tc.allreduce(ctx, xs, out2, algo="twoshot")
            settle()
            ref, _ = alloc((size * n,), dtype)
            ctx.allreduce(xs, ref)
            settle()
            check(np.array_equal(host(out2), want(reference(every, "sum", dtype), dtype)) and
                  np.array_equal(host(out2), host(ref)), "%s two-shot = ctx.allreduce" % dtype)
            rs = tc.reduce_scatter(ctx, xs, op="max")
            settle()
            check(np.array_equal(host(rs), want(reference(every, "max", dtype), dtype)[
                rank * n:(rank + 1) * n]), "%s reduce-scatter max" % dtype)
            for a in (out2, ref):
                ctx.free(a)
            # in place (out = x), and "auto" in place past the Lamport's reach (int32): the
            # two-shot (refused before, as the one-shot refuses out = x)
            ip, _ = alloc((size * n + 1,), dtype, provider="ipc")
            for algo in ("twoshot",) + (("auto",) if dtype == "int32" else ()):
                ips = ip[1:]
                fill(ips, every[rank] if dtype != "int32" else every[rank].astype(np.int32))
                settle()
                got = tc.allreduce(ctx, ips, ips, algo=algo)
                settle()
                check(got is ips and np.array_equal(host(ips), want(reference(
                    every, "sum", dtype), dtype)), "%s two-shot in place (%s)" % (dtype, algo))
            ctx.free(ip)
        part = xs[:n]
        g = tc.allgather(ctx, part)
        settle()
        check(np.array_equal(host(g), want(np.concatenate([e[:n] for e in every]), dtype)),
              "%s all-gather" % dtype)
        a2a = tc.alltoall(ctx, xs)
        settle()
        check(np.array_equal(host(a2a), want(np.concatenate(
            [e[rank * n:(rank + 1) * n] for e in every]), dtype)), "%s all-to-all" % dtype)
        b = tc.broadcast(ctx, part, root=size - 1)
        settle()
        check(np.array_equal(host(b), want(every[size - 1][:n], dtype)), "%s broadcast" % dtype)
        # a root and a block of NumPy's integers, as Python indexes with them (refused as
        # "not a rank" before, root 1 of 0..1 included)
        b = tc.broadcast(ctx, part, root=np.int64(size - 1), block=np.int32(4))
        settle()
        check(np.array_equal(host(b), want(every[size - 1][:n], dtype)),
              "%s broadcast, root np.int64" % dtype)
        ctx.free(x)


def test_triton_kept_kernels():
    """Every host function of symaddr.triton.collectives called aligned, then on views at odd
    offsets with the same dtypes and sizes: on a GPU the kernel compiled for the first call is
    started directly for the second (its pointers are not specialised), and each kernel was
    kept; exact against a sequential computation. Then the same calls as large ones (more
    than SMALL_BYTES, here lowered to 0), whose kernels Triton specialises on the pointers'
    alignment: aligned, at odd offsets, aligned again; on a GPU a kernel compiled for
    aligned pointers (16-byte loads) that started for the odd offsets faults or reads wrong
    data, and the kernels kept for both are started directly the third time. On a GPU a
    launch hook of Triton's (a profiler's) sees a kept kernel's launches, each with its
    name, though without one they skip Triton's runner."""
    n = 3 * size + 2
    every = [np.arange(size * n) * 3 + 1000 * r for r in range(size)]
    total = sum(every)
    small = tc.SMALL_BYTES
    try:
        for large, off in ((0, 0), (0, 1), (1, 0), (1, 1), (1, 0)):
            tc.SMALL_BYTES = 0 if large else small
            _kept_calls(n, every, total, off, large)
    finally:
        tc.SMALL_BYTES = small
    if ON_GPU:
        kept = {k[1] for k in ctx._plans}
        check({tc._allreduce_small, tc._move_small, tc._allreduce_kernel,
               tc._move_kernel} <= kept, "kernels kept: %s" % sorted(str(k) for k in kept))
        from triton import knobs
        names = []

        def hook(metadata):
            names.append(metadata.get()["name"])
        x, _ = alloc((size * n,), "float32")
        fill(x, every[rank].astype(np.float32))
        out = _plain(size * n, "float32")
        tc.allreduce(ctx, x, out)  # compiled and kept before the hook
        knobs.runtime.launch_enter_hook.add(hook)
        try:
            for _ in range(3):
                tc.allreduce(ctx, x, out)
        finally:
            knobs.runtime.launch_enter_hook.remove(hook)
        settle()
        check(np.array_equal(host(out), total.astype(np.float32)), "the hooked calls' sum")
        check(names == ["_lamport_kernel"] * 3, "the launch hook saw %s" % names)
        ctx.free(x)


def _kept_calls(n, every, total, off, large):
    """test_triton_kept_kernels' calls at element off of fresh allocations."""
    x, _ = alloc((size * n + 1,), "int32")
    o, _ = alloc((size * n + 1,), "int32")  # symmetric: the two-shot's out
    plain = _plain(size * size * n + 1, "int32")
    xs, os_, ps = x[off:off + size * n], o[off:off + size * n], plain[off:]
    fill(xs, every[rank])
    settle()
    calls = {
        "one-shot": (lambda: tc.allreduce(ctx, xs, ps[:size * n], algo="oneshot"), total),
        "two-shot": (lambda: tc.allreduce(ctx, xs, os_, algo="twoshot"), total),
        "reduce-scatter": (lambda: tc.reduce_scatter(ctx, xs, ps[:n]),
                           total[rank * n:(rank + 1) * n]),
        "all-gather": (lambda: tc.allgather(ctx, xs[:n], ps[:size * n]),
                       np.concatenate([e[:n] for e in every])),
        "all-to-all": (lambda: tc.alltoall(ctx, xs, ps[:size * n]),
                       np.concatenate([e[rank * n:(rank + 1) * n] for e in every])),
        "broadcast": (lambda: tc.broadcast(ctx, xs, ps[:size * n], root=size - 1),
                      every[size - 1]),
    }
    for name, (call, wanted) in calls.items():
        out = call()
        settle()
        got = host(os_ if name == "two-shot" else out)
        check(np.array_equal(got, wanted), "%s%s at offset %d: %d wrong" % (
            name, " (large)" if large else "", off, int((got != wanted).sum())))
    ctx.free(o)
    ctx.free(x)


def test_triton_collectives_in_rounds():
    """A Triton collective launches at most team_programs' programs, each taking several tiles
    in turn where there are more: on a GPU shared by 8 ranks (16 programs each on an H200) a
    2 MiB call took 64 programs, and the Triton calls after it read wrong data (a barrier
    waiting for a program that cannot be scheduled fails at the timeout). Here team_programs
    gives 3 and tiles hold at most 1024 elements, as on a GPU shared by many ranks: every host
    function, the Lamport one-shot's too (its tiles grow first, to _lamport_tile's: 2 of 1024
    f32 here at 2 and 3 ranks, 4 of 512 in 2 rounds at 8; test_triton_lamport_large checks
    the tiles and rounds), odd counts, a view at an odd offset, exact."""
    cap, seen = 3, []
    real = {k: getattr(tc, k, None) for k in ("team_programs", "_launch", "BLOCK_MAX")}

    def launch(c, kernel, grid, *args, **kwargs):  # the programs of every launch
        seen.append(grid[0])
        return real["_launch"](c, kernel, grid, *args, **kwargs)
    count = 2 * 1024 * cap + 7  # tiles of one rank's part: 7, so 3 rounds
    every = [np.arange(size * count) % 1013 + 1000 * r for r in range(size)]
    total = sum(every)
    x, _ = alloc((size * count + 1,), "int32")
    o, _ = alloc((size * count,), "int32")  # symmetric: the two-shot's out
    xs, plain = x[1:], _plain(size * count, "int32")
    fill(xs, every[rank])
    ipa, _ = alloc((2 * size * count + 3,), "int32", provider="heap")
    ip, bp = ipa[3:3 + size * count], ipa[3 + size * count:]
    fill(ip, every[rank])
    fill(bp, every[rank])
    nl = 7 * 256 + 5  # the Lamport's: 8 tiles of 1 KiB, from and into plain memory
    lx, lout = _plain(nl + 1, "float32")[1:], _plain(nl, "float32")
    fill(lx, every[rank][:nl].astype(np.float32))
    settle()
    calls = {
        "one-shot": (lambda: tc.allreduce(ctx, xs, plain, algo="oneshot"), total),
        "two-shot": (lambda: tc.allreduce(ctx, xs, o, algo="twoshot"), total),
        "two-shot in place": (lambda: tc.allreduce(ctx, ip, ip, algo="twoshot"), total),
        "broadcast in place": (lambda: tc.broadcast(ctx, bp, bp, root=size - 1),
                               every[size - 1]),
        "Lamport": (lambda: tc.allreduce(ctx, lx, lout, algo="lamport"),
                    total[:nl].astype(np.float32)),
        "reduce-scatter": (lambda: tc.reduce_scatter(ctx, xs, plain[:count]),
                           total[rank * count:(rank + 1) * count]),
        "all-gather": (lambda: tc.allgather(ctx, xs[:count], plain),
                       np.concatenate([e[:count] for e in every])),
        "all-to-all": (lambda: tc.alltoall(ctx, xs, plain),
                       np.concatenate([e[rank * count:(rank + 1) * count] for e in every])),
        "broadcast": (lambda: tc.broadcast(ctx, xs[:count], plain[:count], root=size - 1),
                      every[size - 1][:count]),
    }
    tc.team_programs = lambda c, tiles, per_sm=1: max(1, min(int(tiles), cap))
    tc._launch, tc.BLOCK_MAX = launch, 1024
    try:
        for name, (call, wanted) in calls.items():
            del seen[:]
            out = call()
            settle()
            got = host(o if name == "two-shot" else out)
            check(seen and max(seen) <= cap, "%s launched %s programs, more than %d"
                  % (name, seen, cap))
            check(np.array_equal(got, wanted), "%s: %d of %d wrong"
                  % (name, int((got != wanted).sum()), got.size))
    finally:
        for k, v in real.items():
            setattr(tc, k, v)
    for a in (o, x, ipa):
        ctx.free(a)
    # ranks on one GPU under an MPS partition (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE): the device
    # reports the client's share, so only overlapping shares divide it (8 ranks at 12% took
    # 2 programs each on an H200, a sixteenth of the room each had)
    from symaddr.triton.team import mps_sharing
    shares = {(8, None): 8, (8, "12"): 1, (8, "12.5"): 1, (8, "25"): 2, (3, "50"): 2,
              (8, "100"): 8, (8, "0"): 8, (8, "lots"): 8, (1, "10"): 1}
    got = {k: mps_sharing(*k) for k in shares}
    check(got == shares, "mps_sharing: %s, want %s" % (got, shares))


def test_triton_ops():
    """The Triton reductions take their op as Context's collectives do: "sum", "max", "min" or
    mpi4py's MPI.SUM, MPI.MAX, MPI.MIN (which raised ValueError before), one call whichever
    form a rank passes (the identity hashes the name: "sum" on one rank and MPI.SUM on another
    agree); another op or algo raises SYMADDR_ERR_INVALID_ARG naming the call, where
    ValueError was raised."""
    n = 2 * size + 1
    every = [np.arange(size * n) % 13 + 10 * r for r in range(size)]
    x, _ = alloc((size * n,), "int32")
    fill(x, every[rank])
    settle()
    for op, mpi_op, ref in (("sum", MPI.SUM, sum(every)), ("max", MPI.MAX, np.max(every, 0)),
                            ("min", MPI.MIN, np.min(every, 0))):
        mine = op if rank % 2 else mpi_op  # both forms in one call
        for algo in ("oneshot", "auto"):
            got = host(tc.allreduce(ctx, x, op=mine, algo=algo))
            settle()
            check(np.array_equal(got, ref), "%s (%s) %s: %s" % (op, mine, algo, got[:4]))
        got = host(tc.reduce_scatter(ctx, x, op=mine))
        settle()
        check(np.array_equal(got, ref[rank * n:(rank + 1) * n]), "reduce_scatter %s" % op)
    f, _ = alloc((64,), "float32")
    for what, fn in (("op \"prod\"", lambda: tc.allreduce(ctx, x, op="prod")),
                     ("op MPI.PROD", lambda: tc.allreduce(ctx, x, op=MPI.PROD)),
                     ("op \"avg\" (Lamport's size)", lambda: tc.allreduce(ctx, f, op="avg")),
                     ("op None", lambda: tc.reduce_scatter(ctx, x, op=None)),
                     ("algo \"ring\"", lambda: tc.allreduce(ctx, x, algo="ring")),
                     ("algo a list", lambda: tc.allreduce(ctx, x, algo=["auto"]))):
        refused(what, fn, ["symaddr.triton.collectives."])
    for a in (x, f):
        ctx.free(a)


def test_triton_in_place():
    """The Triton collectives in place as torch's take them: all_gather_into_tensor's x as
    this rank's part of out, reduce_scatter_tensor's out as this rank's part of x, broadcast
    and the two-shot with out = x (all refused before, as out overlapping x). Views at an odd
    offset, odd counts, f32 and int32, exact against a sequential computation; an out around
    x that runs past x's allocation, which the peers' parts are read through, refused (the
    cpu backend, where an array can be made at any address)."""
    n = 2 * size + 3
    for dtype in ("float32", "int32"):
        every = [np.arange(size * n) % 31 + 100 * r for r in range(size)]
        whole, _ = alloc((size * n + 1,), dtype, provider="heap")
        w = whole[1:]
        fill(w[rank * n:(rank + 1) * n], every[rank][:n])  # the other parts: stale
        fill(w[:rank * n], np.full(rank * n, -5))
        fill(w[(rank + 1) * n:], np.full((size - rank - 1) * n, -5))
        settle()
        got = tc.allgather(ctx, w[rank * n:(rank + 1) * n], w)
        settle()
        check(got is w and np.array_equal(host(w), np.concatenate([e[:n] for e in every])),
              "%s all-gather in place: %s" % (dtype, host(w)[:2 * n]))
        fill(w, every[rank])
        settle()
        part = w[rank * n:(rank + 1) * n]
        tc.reduce_scatter(ctx, w, part, op="sum")
        settle()
        check(np.array_equal(host(part), sum(every)[rank * n:(rank + 1) * n]),
              "%s reduce-scatter in place" % dtype)
        fill(w, every[rank])
        settle()
        tc.broadcast(ctx, w, w, root=size - 1)
        settle()
        check(np.array_equal(host(w), every[size - 1]), "%s broadcast in place" % dtype)
        ctx.free(whole)
    if ON_GPU:  # an out around x below: an array at any address (the cpu backend's)
        return None
    x, xmap = alloc((5,), "float32")  # exactly x: 20 bytes
    check(xmap.allocation_bytes == 20, "an ipc allocation of 20 bytes")
    around, _ = sa._arrays.host_array(xmap.allocation_base - rank * 20, (size * 5,),
                                      np.float32, None)  # never written: refused first
    if torch is not None:  # x's kind
        around = torch.from_numpy(np.asarray(around))
    refused("an all-gather in place whose out runs past x's allocation",
            lambda: tc.allgather(ctx, x, around), ["in place", "x's symmetric allocation"])
    ctx.free(x)


def test_triton_wide_dtypes():
    """The Triton reductions over f64 and int64 keep their own precision, as the C collectives
    accumulate them: f64 was summed in f32, so 1 + k * 2**-40 from each rank came back as a
    whole number, returned as OK. Now exact and equal to ctx.allreduce's bit for bit (one-shot,
    two-shot, reduce-scatter). A reduction over a type without the C collectives' arithmetic
    (int8) is refused; the moves take it; complex is refused by every host function, where
    Triton's binder raised KeyError."""
    n = 2 * size + 3
    for dtype in ("float64", "int64"):
        if dtype == "float64":
            every = [1 + (np.arange(size * n) % 7 + r) * 2.0 ** -40 for r in range(size)]
        else:
            every = [np.arange(size * n, dtype=np.int64) * (1 << 33) + r for r in range(size)]
        total, top = every[0].copy(), np.max(np.stack(every), 0)
        for v in every[1:]:  # rank order, as the kernels
            total = total + v
        x, _ = alloc((size * n + 1,), dtype)
        xs = x[1:]
        fill(xs, every[rank])
        ref, _ = alloc((size * n,), dtype)
        o2, _ = alloc((size * n,), dtype)
        settle()
        ctx.allreduce(xs, ref)
        settle()
        got = {}
        for algo in ("oneshot", "auto"):
            got[algo] = host(tc.allreduce(ctx, xs, algo=algo))
            settle()
        tc.allreduce(ctx, xs, o2, algo="twoshot")
        settle()
        got["twoshot"] = host(o2)
        got["reduce-scatter max"] = host(tc.reduce_scatter(ctx, xs, op="max"))
        settle()
        for what, v in got.items():
            wanted = top[rank * n:(rank + 1) * n] if "max" in what else total
            check(np.array_equal(v, wanted) and ("max" in what or np.array_equal(v, host(ref))),
                  "%s %s: %d of %d differ (%s, want %s)" % (
                      dtype, what, int((v != wanted).sum()), v.size, v[:2] - wanted[:2],
                      wanted[:2]))
        for a in (x, ref, o2):
            ctx.free(a)
    small, _ = alloc((size * n,), "int8")
    fill(small, (np.arange(size * n) + rank) % 100)
    settle()
    g = tc.allgather(ctx, small[:n])
    settle()
    check(np.array_equal(host(g), np.concatenate([(np.arange(n) + r) % 100
                                                  for r in range(size)])), "int8 all-gather")
    refused("an int8 allreduce", lambda: tc.allreduce(ctx, small), ["a reduction takes"])
    refused("an int8 reduce-scatter", lambda: tc.reduce_scatter(ctx, small),
            ["a reduction takes"])
    c, _ = alloc((size * n,), "complex64")
    for name in ("allreduce", "allgather", "alltoall", "broadcast"):
        refused("a complex64 " + name, lambda f=getattr(tc, name): f(ctx, c),
                ["symaddr.triton.collectives." + name, "complex64"])
    for a in (small, c):
        ctx.free(a)


@triton.jit
def k_aligned(out, pb, rank, N_RANKS: tl.constexpr):
    tl.store(out, aligned(pb, rank, N_RANKS).to(tl.int32))


@triton.jit
def k_team_translate(team, x, x_pb, out, n, N_RANKS: tl.constexpr, BLOCK: tl.constexpr):
    """out[r * n:(r + 1) * n] = rank r's x[:n] for every r, loaded through team_translate with
    team_aligned's answer (a user's fused kernel's peer loads)."""
    offs = tl.arange(0, BLOCK)
    m = offs < n
    for r in tl.static_range(N_RANKS):
        if team_aligned(x_pb, team, N_RANKS):
            v = tl.load(team_translate(x + offs, r, x_pb, team, True), mask=m)
        else:
            v = tl.load(team_translate(x + offs, r, x_pb, team, False), mask=m)
        tl.store(out + r * n + offs, v, mask=m)


def test_triton_unaligned_tables():
    """The collectives over imports at 1 + 2 * rank and 2 + 2 * rank elements into plain
    allocations, whose ranks' copies differ by 8 bytes a rank: the blocks find those tables
    unaligned (aligned(): False where there are two ranks; True for an allocation's table) and
    load and store element by element, since a 16-byte vector there would be misaligned on a
    GPU; exact against a sequential computation. team_translate, as team_aligned leads it,
    over either table, exact."""
    n = 2 * size + 5
    every = [np.arange(size * n) * 7 + 1000 * r for r in range(size)]
    total = sum(every)
    xw, xv = plain_local(size * n, 1 + 2 * rank)
    ow, ov = plain_local(size * n, 2 + 2 * rank)
    xmap, omap = ctx.import_(xv), ctx.import_(ov)
    a, amap = alloc((size * n,), "float32")
    flags, _ = alloc((3,), "int32")
    fill(xv, every[rank].astype(np.float32))
    settle()
    for i, m in enumerate((xmap, omap, amap)):
        k_aligned[(1,)](flags[i:], m.peer_bases, rank, N_RANKS=size)
    settle()
    check(list(host(flags)) == [size == 1, size == 1, True], "aligned(): imports %s, an "
          "allocation %s" % (list(host(flags))[:2], host(flags)[2]))
    fill(a, every[rank].astype(np.float32))
    settle()
    team = ctx.team()
    for name, x, m in (("an import", xv, xmap), ("an allocation", a, amap)):
        got, _ = alloc((size * n,), "float32")
        k_team_translate[(1,)](team, x, m.peer_bases, got, n, N_RANKS=size, BLOCK=64)
        settle()
        wanted = np.concatenate([e[:n] for e in every]).astype(np.float32)
        check(np.array_equal(host(got), wanted), "team_translate over %s's table: %d of %d "
              "wrong" % (name, int((host(got) != wanted).sum()), wanted.size))
        ctx.free(got)
    plain = _plain(size * n, "float32")
    calls = {
        "two-shot": (lambda: tc.allreduce(ctx, xv, ov, algo="twoshot"), total),
        "one-shot": (lambda: tc.allreduce(ctx, xv, plain, algo="oneshot"), total),
        "reduce-scatter": (lambda: tc.reduce_scatter(ctx, xv, plain[:n]),
                           total[rank * n:(rank + 1) * n]),
        "all-gather": (lambda: tc.allgather(ctx, xv[:n], plain),
                       np.concatenate([e[:n] for e in every])),
        "all-to-all": (lambda: tc.alltoall(ctx, xv, plain),
                       np.concatenate([e[rank * n:(rank + 1) * n] for e in every])),
        "broadcast": (lambda: tc.broadcast(ctx, xv[:n], plain[:n], root=size - 1),
                      every[size - 1][:n]),
    }
    for name, (call, wanted) in calls.items():
        out = call()
        settle()
        got = host(ov if name == "two-shot" else out)
        check(np.array_equal(got, wanted.astype(np.float32)), "%s over unaligned tables: %d "
              "of %d wrong" % (name, int((got != wanted).sum()), got.size))
    settle()
    xmap.unregister()
    omap.unregister()
    for arr in (a, flags):
        ctx.free(arr)
    if not ON_GPU:
        ctx.free_local(xw)
        ctx.free_local(ow)


def test_triton_small_identity():
    """A Triton collective whose identity (call_ident) is below 2**31, which Triton passes as
    an i32: the blocks widen it (the kernel failed to compile, "Scalar 1099511627776 is out
    of range for type int32", for about one count in 500: 105 float32 elements under NumPy)."""
    name = "float32" if torch is None else str(DTYPES["float32"])  # str(x.dtype), as passed
    n = next(k for k in range(100, 100000) if call_ident("allreduce", k, name, "sum") < 2 ** 31)
    x, _ = alloc((n + 1,), "float32")
    xs = x[1:]
    fill(xs, np.arange(n) + 100 * rank)
    settle()
    out = tc.allreduce(ctx, xs)
    settle()
    check(np.array_equal(host(out), sum(np.arange(n) + 100 * r for r in range(size))),
          "allreduce of %d float32 elements: %s" % (n, host(out)[:4]))
    ctx.free(x)


def test_call_ident_cache():
    """call_ident looks its hash up by value and type (a hash a call cost about 2 µs): the
    same as the hash computed afresh, for dtypes that compare equal but print differently
    (NumPy's dtype and scalar type), and for an argument that cannot be a key."""
    import hashlib

    def fresh(kind, count, dtype, op=None, root=0):
        text = repr((str(kind), int(count), str(dtype), str(op), int(root))).encode()
        return int.from_bytes(hashlib.blake2b(text, digest_size=5).digest(), "little")
    for args in (("allreduce", 5, np.dtype("float32"), "sum"), ("allreduce", 5, np.float32, "sum"),
                 ("allreduce", np.int64(5), np.dtype("<f4"), "sum"),
                 ("broadcast", 7, "int32", None, 2), ("allgather", 3, ["not", "a", "key"])):
        for _ in range(2):  # computed, then looked up
            check(call_ident(*args) == fresh(*args), "call_ident%r" % (args,))
    check(call_ident("allreduce", 5, np.dtype("float32"), "sum") !=
          call_ident("allreduce", 5, np.float32, "sum"), "two spellings, one cached hash")


def test_triton_lamport():
    """The Lamport one-shot (no barrier: the data marks its own arrival) over several programs,
    from and into plain memory (x is not symmetric), f32, bf16 and f16 views at odd offsets:
    exact against MPI's data, as the barrier one-shot; -0.0 keeps its sign and a NaN whose
    bits are all ones (the one value sent altered) stays a NaN; a count past _lamport_bytes
    (128 KiB of f32 at 8 ranks) or an integer dtype is refused with a message that names the
    algorithms that take it."""
    n = 3 * 512 + 5  # several programs of every dtype (a tile is at most 1 KiB)
    every = [data(r, n, "float32") for r in range(size)]
    for v in every:
        v[1] = -0.0
    for dtype in ("float32", "bfloat16", "float16"):
        plain = _plain(n + 1, dtype)
        xs = plain[1:]
        fill(xs, every[rank])
        if dtype == "float32" and rank == size - 1:  # all ones: a NaN, from the last rank only
            if ARRAYS == "torch":  # a CUDA tensor, or a CPU one on the cpu backend
                xs[2:3].view(torch.int32).fill_(-1)
            else:
                raw = host(xs).view(np.uint32)
                raw[2] = 0xFFFFFFFF
                xs[2] = raw.view(np.float32)[2]
        settle()
        out = _plain(n + 3, dtype)[3:]
        for op in ("sum", "max"):
            tc.allreduce(ctx, xs, out, op=op, algo="lamport")
            settle()
            got, ref = host(out), want(reference(every, op, dtype), dtype)
            if dtype == "float32":  # a sum keeps the NaN; a GPU's max may drop it (fmax)
                check(op != "sum" or np.isnan(got[2]), "%s %s: all ones from one rank gave "
                      "%r, not a NaN" % (dtype, op, got[2]))
                got, ref = np.delete(got, 2), np.delete(ref, 2)
            check(np.array_equal(got, ref), "%s lamport %s over %d elements: %d wrong"
                  % (dtype, op, n, int((got != ref).sum())))
            check(np.signbit(host(out)[1]), "%s %s: -0.0 lost its sign" % (dtype, op))
    # one call aligned, at odd offsets, aligned again, and after set_timeout (which remakes
    # the Team): on a GPU the kernel compiled for the first is started directly for the
    # others (its pointers are not specialised), and set_timeout drops it
    base, outs = _plain(n + 1, "float32"), _plain(n + 1, "float32")
    ref = want(reference(every, "sum", "float32"), "float32")
    for step, off in enumerate((0, 1, 0, 1)):
        if step == 3:
            kept = len(ctx._plans)
            ctx.set_timeout(ctx.timeout_ms)
            check(not ctx._plans, "set_timeout kept %d compiled kernels" % len(ctx._plans))
            check(kept or not ON_GPU, "no compiled kernel kept on a GPU: every call went "
                  "through Triton's JIT")
        fill(base[off:off + n], every[rank])
        settle()
        tc.allreduce(ctx, base[off:off + n], outs[off:off + n])
        settle()
        got = host(outs[off:off + n])
        check(np.array_equal(got, ref), "float32 lamport at offset %d, call %d: %d wrong"
              % (off, step, int((got != ref).sum())))
    # what a Lamport call computes once per count, dtype, op and algo (ctx._calls): calls
    # that differ in one of them, each twice, and the checks of out still made each call
    for rep in range(2):
        for count, op, algo, dtype in ((5, "sum", "auto", "float32"), (7, "sum", "auto",
                                       "float32"), (5, "min", "lamport", "float32"),
                                       (5, "sum", "lamport", "float16"), (5, "max", "auto",
                                                                         "float32")):
            xs = _plain(count + 1, dtype)[1:]
            fill(xs, every[rank][:count])
            settle()
            got = host(tc.allreduce(ctx, xs, op=op, algo=algo))
            ref = want(reference([e[:count] for e in every], op, dtype), dtype)
            check(np.array_equal(got, ref), "call %d: %d %s %s %s: %s, want %s" % (
                rep, count, dtype, op, algo, got, ref))
            try:
                tc.allreduce(ctx, xs, _plain(count - 1, dtype), op=op, algo=algo)
                raise AssertionError("a short out passed after a call of its plan")
            except sa.SymaddrError as e:
                check(e.name == "SYMADDR_ERR_INVALID_ARG", str(e))
    most = tc._lamport_bytes(size, 4)
    for bad, why in ((_plain(most // 4 + 1, "float32"), "%d bytes" % (most + 4)),
                     (_plain(8, "int32"), "floating point")):
        refused("lamport of %s" % why, lambda b=bad: tc.allreduce(ctx, b, algo="lamport"),
                ["symaddr.triton.collectives.allreduce", "oneshot", "twoshot"])


def test_triton_lamport_large():
    """The Lamport one-shot past 64 KiB (the barrier one-shot took these sizes, at 3x the C
    call's time eager on an H200 at 8 ranks): tiles of LAMPORT_TILE bytes while
    team_programs has programs for them, larger where it has not (to _lamport_tile's, where
    that is larger), then rounds. On a GPU at real sizes, to _lamport_bytes (128 KiB of f32
    at 8 ranks, 256 KiB at 2); under the interpreter at small ones with team_programs giving
    3, so that the tiles grow and take rounds. f32 and bf16, odd counts, x at an odd offset,
    in place too, exact against a sequential sum; the tiles and rounds as the rule above makes
    them."""
    cap = MAX_BLOCKS if ON_GPU else 3
    real = tc.team_programs
    cases = []
    for dtype, esize in (("float32", 4), ("bfloat16", 2)):
        most = tc._lamport_bytes(size, esize) // esize
        cases += [(dtype, esize, n) for n in ((most // 2 + 3, most) if ON_GPU else (
            1000, 6 * tc._lamport_tile(size, esize) + 5))]
    if not ON_GPU:
        tc.team_programs = lambda c, tiles, per_sm=1: max(1, min(int(tiles), cap))
    try:
        for dtype, esize, n in cases:
            every = [data(r, n, dtype) for r in range(size)]
            ref = want(reference(every, "sum", dtype), dtype)
            x = _plain(n + 1, dtype)[1:]
            for in_place in (False, True):
                fill(x, every[rank])
                settle()
                out = x if in_place else _plain(n, dtype)
                tc.allreduce(ctx, x, out)  # auto: the Lamport to _lamport_bytes
                settle()
                got = host(out)
                check(np.array_equal(got, ref), "%s over %d elements%s: %d wrong" % (
                    dtype, n, " in place" if in_place else "", int((got != ref).sum())))
            grid, r, _, tail, warps = ctx._calls[(n, x.dtype, "sum", "auto")]
            block, small = tail[1], tc.LAMPORT_TILE // esize  # (every case holds a tile)
            tiles = -(-n // small)
            programs = min(cap, real(ctx, tiles, per_sm=4))
            wanted = small if tiles <= programs else max(small, min(
                tc._lamport_tile(size, esize), 1 << (-(-n // programs) - 1).bit_length()))
            rounds = -(-(-(-n // wanted)) // programs)
            check((block, r) == (wanted, rounds) and grid[0] * r * block >= n and
                  grid[0] <= cap, "%s over %d elements: %d programs of %d elements in %d "
                  "rounds, want %d elements in %d rounds" % (dtype, n, grid[0], block, r,
                                                            wanted, rounds))
            # a 16-byte vector of each rank's tile a thread (32 a warp)
            check(warps * 512 == max(512, block * esize), "%s over %d elements: %d warps "
                  "for tiles of %d bytes" % (dtype, n, warps, block * esize))
    finally:
        tc.team_programs = real


def _plain(n, dtype):
    """n elements of plain memory (not symmetric), as the arrays of the run: a torch tensor (on
    the GPU, or the cpu backend's host) or a NumPy array."""
    if ARRAYS == "torch":
        return torch.zeros(n, dtype=DTYPES[dtype], device="cuda" if ON_GPU else "cpu")
    return np.zeros(n, DTYPES[dtype])


def test_triton_kept_plans():
    """What a Triton collective keeps of a call over symmetric arrays (their tables and the
    call's identity, per count, dtype, op and address) lasts while their registrations do:
    calls over the same views at an odd offset stay exact; once x is freed, its release
    pending behind other freed allocations, a call over a view of it raises INVALID_MAP (a
    plain ndarray or a tensor: known by its address alone), as the first call over it would,
    and its release is not held back by a plan; an allocation made after the release (at x's
    address or not) reduces its own values."""
    n = 2 * size + 3
    olds = [alloc((n,), "float32")[0] for _ in range(5)]
    for a in olds:
        ctx.free(a)
    x, _ = alloc((n + 1,), "float32")
    xv = x[1:] if ARRAYS == "torch" else np.asarray(x)[1:]
    out, gathered = _plain(n, "float32"), _plain(size * n, "float32")
    for k in range(3):  # the same arrays, call after call: kept, then taken
        fill(xv, data(rank, n, "float32") + k)
        settle()
        tc.allreduce(ctx, xv, out, algo="oneshot")
        tc.allgather(ctx, xv, gathered)
        tc.allreduce(ctx, xv, algo="twoshot", out=xv) if k == 2 else None
        settle()
        total = sum(want(data(r, n, "float32") + k, "float32") for r in range(size))
        check(np.array_equal(host(out), total), "call %d: the one-shot's sum" % k)
        check(np.array_equal(host(gathered), np.concatenate(
            [want(data(r, n, "float32") + k, "float32") for r in range(size)])),
            "call %d: the all-gather" % k)
        if k == 2:
            check(np.array_equal(host(xv), total), "call %d: the two-shot in place" % k)
    check(sum(type(key) is tuple and key[0] == "allgather" for key in ctx._calls) == 1,
          "the all-gather's plan kept once: %s" % [k for k in ctx._calls if k[0] == "allgather"])
    base = x.data_ptr() if ARRAYS == "torch" else x.__array_interface__["data"][0]
    ctx.free(x)
    for what, fn in (("one-shot", lambda: tc.allreduce(ctx, xv, out, algo="oneshot")),
                     ("two-shot", lambda: tc.allreduce(ctx, xv, algo="twoshot", out=xv)),
                     ("all-gather", lambda: tc.allgather(ctx, xv, gathered))):
        refused("a %s over a freed view" % what, fn, ("freed",), "SYMADDR_ERR_INVALID_MAP")
    x = xv = None  # (the freed views dropped before the release)
    ctx.collect()
    check(base not in ctx._freed, "x released once no view of it is left: no plan keeps its "
          "table reached")
    y, _ = alloc((n + 1,), "float32")
    yv = y[1:]
    fill(yv, data(rank, n, "float32") * 3)
    settle()
    tc.allreduce(ctx, yv, out, algo="oneshot")
    tc.allgather(ctx, yv, gathered)
    settle()
    check(np.array_equal(host(out), sum(want(data(r, n, "float32") * 3, "float32")
                                        for r in range(size))), "a new allocation's sum")
    check(np.array_equal(host(gathered), np.concatenate(
        [want(data(r, n, "float32") * 3, "float32") for r in range(size)])),
        "a new allocation's all-gather")
    ctx.free(y)


def test_triton_stream_of_calls():
    """50 consecutive Triton allreduces with no host call between them: the device-side
    epochs keep every call apart (each rank changes its input between calls, as a stream of
    kernels would)."""
    n, calls = 5, 50
    for dtype in ("int32", "float32"):  # the barrier one-shot, the Lamport one (3 buffers)
        x, _ = alloc((n,), dtype)
        outs = [_plain(n, dtype) for _ in range(calls)]
        settle()
        for i in range(calls):
            fill(x, np.arange(n) + 100 * rank + i)  # after the previous call's last barrier
            tc.allreduce(ctx, x, outs[i])
        settle()
        for i in range(calls):
            wanted = sum(np.arange(n) + 100 * r + i for r in range(size))
            check(np.array_equal(host(outs[i]), wanted), "%s call %d: %s"
                  % (dtype, i, host(outs[i])))
        ctx.free(x)


def test_triton_lamport_back_to_back():
    """Lamport allreduces back to back on one input, as a benchmark makes them (400 a size on
    a GPU, 3 under the interpreter), at 8 B, 32 B and 1 KiB of f32: every call exact and no
    failure. On a GPU, a tile smaller than the program's threads is held by several threads,
    each loading its own copy of a word as it polls; 5be7d3e's poll left the loop on one
    copy's arrival and checked the identities on another's: at 8 ranks the first 32 B run of
    `python -m symaddr.bench triton` failed with MISMATCH in 4 runs of 4 on an H100, and this
    case on every rank on an H200 (each thread's own view must count, as _lamport's _all
    makes it)."""
    calls = 400 if ON_GPU else 3
    for n in (2, 8, 256):
        x, _ = alloc((n,), "float32")
        out = _plain(n, "float32")
        fill(x, np.arange(n) % 7 + rank)
        settle()
        for _ in range(calls):
            tc.allreduce(ctx, x, out, algo="lamport")
        settle()  # raises where a call failed
        wanted = sum(np.arange(n) % 7 + r for r in range(size))
        got = host(out)
        check(np.array_equal(got, wanted), "%d f32: %d wrong after %d calls"
              % (n, int((got != wanted).sum()), calls))
        ctx.free(x)


def test_triton_skipped_call():
    """A rank that skips a Triton collective (the barrier one-shot on int32, the Lamport one
    on float32): its peers' next call times out on the device, and nobody's next host call
    returns OK (TIMEOUT where it waited, BROKEN on the rank that skipped); the context is
    broken afterwards, for the host calls and the Triton ones."""
    if size < 2:
        return "SKIP: needs 2 ranks"
    for dtype in ("int32", "float32"):
        _skip_one(dtype)


def _skip_one(dtype):
    with sa.Context(backend=ctx.backend) as short:
        short.set_timeout(1500)  # after init: a loaded machine's init may take longer
        check(short.team().timeout_ns == 1500 * 1000000, "the team's timeout: %d ns"
              % short.team().timeout_ns)
        x, _ = short.allocate_symmetric((4,), DTYPES[dtype])
        fill(x, [rank] * 4)
        short.team()
        for call in range(2):
            if rank != 1 or call == 0:
                tc.allreduce(short, x)
        try:
            if ON_GPU:
                torch.cuda.synchronize()
            short.barrier()
            short.sync()
            raise AssertionError("the call after a skip returned OK")
        except sa.SymaddrError as e:
            check(e.name in ("SYMADDR_ERR_TIMEOUT", "SYMADDR_ERR_BROKEN"), str(e))
        try:
            short.barrier()
            raise AssertionError("a broken context's barrier returned OK")
        except sa.SymaddrError as e:
            check(e.name == "SYMADDR_ERR_BROKEN", str(e))
        for what, call in (("allreduce", lambda: short.allreduce(x)),
                           ("allgather into plain memory", lambda: short.allgather(
                               x, _plain(4 * size, dtype)))):
            try:  # the host collectives' fast path skipped the check: they returned OK
                call()
                raise AssertionError("a broken context's host %s returned OK" % what)
            except sa.SymaddrError as e:
                check(e.name == "SYMADDR_ERR_BROKEN", "%s: %s" % (what, e))
        try:  # the Lamport one (float32) launched, and returned with out unwritten
            tc.allreduce(short, x)
            raise AssertionError("a broken context's Triton %s allreduce returned" % dtype)
        except sa.SymaddrError as e:
            check(e.name == "SYMADDR_ERR_BROKEN", str(e))


def test_triton_identity_mismatch():
    """Ranks that disagree on a Triton collective (the last rank passes another count, op,
    collective, root, algorithm or dtype, works in place where the others do not, or passes a
    buffer the peers reach in another allocation or at another offset): every rank's next host
    call raises MISMATCH, as the C collectives do without validation; before, each of these
    returned OK with another call's data, the wrong op over the right data, or (the buffers)
    another allocation's data, in validation mode too."""
    if size < 2:
        return "SKIP: needs 2 ranks"
    n, odd = 5, rank == size - 1
    cases = {
        "count": lambda c, x, y, o: tc.allreduce(c, x[:n - odd]),
        "op": lambda c, x, y, o: tc.allreduce(c, x[:n], op="max" if odd else "sum"),
        "collective": lambda c, x, y, o: (tc.reduce_scatter(c, x[:size * n]) if odd else
                                          tc.allgather(c, x[:n])),
        "root": lambda c, x, y, o: tc.broadcast(c, x[:n], root=int(odd)),
        "algorithm": lambda c, x, y, o: tc.allreduce(c, x[:n], o[:n],
                                                     algo="twoshot" if odd else "oneshot"),
        "Lamport or barrier": lambda c, x, y, o: tc.allreduce(
            c, y[:n], algo="oneshot" if odd else "lamport"),
        "Lamport count": lambda c, x, y, o: tc.allreduce(c, y[:n - odd], algo="lamport"),
        "Lamport grid": lambda c, x, y, o: tc.allreduce(c, y[:600 if odd else n],
                                                        algo="lamport"),
        "Lamport op": lambda c, x, y, o: tc.allreduce(c, y[:n], op="min" if odd else "sum"),
        "dtype": lambda c, x, y, o: tc.allreduce(c, y[:n] if odd else x[:n]),
        # in place on one rank and apart on the others: each would miss the other's part
        "two-shot in place or apart": lambda c, x, y, o: tc.allreduce(
            c, x[:n], x[:n] if odd else o[:n], algo="twoshot"),
        "all-gather in place or apart": lambda c, x, y, o: tc.allgather(
            c, o[rank * n:(rank + 1) * n], o) if odd else tc.allgather(c, x[:n]),
        "x in another allocation": lambda c, x, y, o: tc.allreduce(c, (o if odd else x)[:n],
                                                                   algo="oneshot"),
        "x at another offset": lambda c, x, y, o: tc.allreduce(c, x[odd:n + odd],
                                                               algo="oneshot"),
        "two-shot out in another allocation": lambda c, x, y, o: tc.allreduce(
            c, x[:n], x[n:2 * n] if odd else o[:n], algo="twoshot"),
        "all-gather x in another allocation": lambda c, x, y, o: tc.allgather(
            c, (o if odd else x)[:n]),
        "broadcast x at another offset": lambda c, x, y, o: tc.broadcast(c, x[odd:n + odd]),
        "all-to-all x in another allocation": lambda c, x, y, o: tc.alltoall(
            c, o if odd else x),
    }
    wrong = []
    for name, launch in cases.items():
        with sa.Context(backend=ctx.backend) as short:
            short.set_timeout(3000)  # after init: a loaded machine's init may take longer
            x, _ = short.allocate_symmetric((size * n,), DTYPES["int32"])
            y, _ = short.allocate_symmetric((max(size * n, 600),), DTYPES["float32"])
            o, _ = short.allocate_symmetric((size * n,), DTYPES["int32"])
            fill(x, np.arange(size * n) + 100 * rank)
            fill(y, np.arange(max(size * n, 600)) + 100 * rank)
            short.team()
            launch(short, x, y, o)
            try:
                if ON_GPU:
                    torch.cuda.synchronize()
                short.barrier()
                short.sync()
                wrong.append("%s: OK" % name)
            except sa.SymaddrError as e:
                if e.name != "SYMADDR_ERR_MISMATCH":
                    wrong.append("%s: %s" % (name, e))
                    continue
            try:  # broken for the host collectives too (their fast path skipped the check)
                short.allreduce(x[:n])
                wrong.append("%s: the host allreduce after it returned OK" % name)
            except sa.SymaddrError as e:
                if e.name != "SYMADDR_ERR_BROKEN":
                    wrong.append("%s: the host allreduce after it: %s" % (name, e))
    check(not wrong, "%d of %d cases: %s" % (len(wrong), len(cases), "; ".join(wrong)))


def test_team_fail_passes_on_mismatch():
    """A rank that fails a call after a peer's MISMATCH reached it (it left its wait on seeing
    that failure, and records TIMEOUT) tells its peers MISMATCH, the failure that stuck, not
    BROKEN: otherwise a peer that its BROKEN reached first raised BROKEN for ranks that passed
    another count (test_triton_identity_mismatch's "Lamport count" at 8 ranks, now and then)."""
    if size < 2:
        return "SKIP: needs 2 ranks"
    mismatch, timeout = (-sa.STATUS[s] for s in ("SYMADDR_ERR_MISMATCH", "SYMADDR_ERR_TIMEOUT"))
    at = STATUS_AT.value  # an int: torch's indexing fails inside on a tl.constexpr
    with sa.Context(backend=ctx.backend) as short:
        team = short.team()
        comm.Barrier()
        if rank == 0:  # a peer's MISMATCH, arrived first; then this rank's own failure
            team.sync[at] = mismatch
            k_fail[(1,)](team, CODE=timeout, N_RANKS=size)
            if ON_GPU:
                torch.cuda.synchronize()
        comm.Barrier()
        got = int(host(team.sync[at:at + 1])[0])
        want = mismatch
        names = {v: k for k, v in sa.STATUS.items()}
        check(got == want, "rank %d's status: %s, want %s" % (
            rank, names.get(-got, got), names[-want]))


def test_team_grid_too_large():
    """A team kernel launched with more programs than the sync area has words for (MAX_BLOCKS):
    the programs past it fail the call (INVALID_ARG on a rank that saw its own, BROKEN where a
    peer's came first, the message naming MAX_BLOCKS somewhere) and write nothing past the
    sync area (they used to write their flags into the memory after it)."""
    if size < 2:
        return "SKIP: needs 2 ranks"
    with sa.Context(backend=ctx.backend) as short:
        short.set_timeout(1500)  # after init: a loaded machine's init may take longer
        team = short.team()
        area = team.sync
        nbytes = area.numel() * 8 if ON_GPU else area.nbytes
        start = area.data_ptr() if ON_GPU else area.__array_interface__["data"][0]

        def past_end():  # the 16 words after the area, within its (page-rounded) mapping;
            if ON_GPU:  # a GPU's copy past an allocation fails: the error is the check there
                return None
            import ctypes
            return np.frombuffer(ctypes.string_at(start + nbytes, 128), np.int64).copy()
        before = past_end()
        k_team_grid[(MAX_BLOCKS + 1,)](team, N_RANKS=size)
        names, texts = set(), ""
        try:
            if ON_GPU:
                torch.cuda.synchronize()
            short.barrier()
            short.sync()  # where a GPU's kernel failures are read
            raise AssertionError("a team kernel of %d programs returned OK" % (MAX_BLOCKS + 1))
        except sa.SymaddrError as e:
            names.add(e.name)
            texts = str(e)
        check(names <= {"SYMADDR_ERR_INVALID_ARG", "SYMADDR_ERR_BROKEN"} and names, names)
        told = comm.allreduce(int("MAX_BLOCKS" in texts))
        check(told >= 1, "no rank's message named MAX_BLOCKS: %s" % texts)
        if not ON_GPU:
            check(np.array_equal(past_end(), before), "written past the sync area: %s -> %s"
                  % (before, past_end()))


def test_unreachable_peers():
    """Simulated nodes of one rank (node_size=1): other ranks' entries are 0; the map says so,
    check_reachable refuses with UNREACHABLE, and the kernel's reachable() agrees."""
    if size < 2:
        return "SKIP: needs 2 ranks"
    with sa.Context(backend=ctx.backend, node_size=1) as far:
        a, amap = far.allocate_symmetric((N,), DTYPES["float32"])
        table = host(amap.peer_bases)
        check(int(table[rank]) == amap.allocation_base and all(
            int(table[r]) == 0 for r in range(size) if r != rank), "far table %s" % table)
        check(amap.reachable(rank) and not amap.reachable(right), "reachable()")
        try:
            amap.check_reachable([right])
            raise AssertionError("an unreachable rank passed check_reachable")
        except sa.SymaddrError as e:
            check(e.name == "SYMADDR_ERR_UNREACHABLE" and "another node" in str(e), str(e))
        flags, _ = far.allocate_symmetric((size,), DTYPES["int32"])
        k_reachable[(1,)](flags, amap.peer_bases, size)
        if ON_GPU:
            torch.cuda.synchronize()
        check(list(host(flags)) == [int(r == rank) for r in range(size)],
              "kernel reachable() %s" % list(host(flags)))
        try:
            far.put(a, np.zeros(N, np.float32) if torch is None else
                    torch.zeros(N, device=a.device), right)
            raise AssertionError("a put to another node's rank through a map passed")
        except sa.SymaddrError as e:
            check(e.status < 0, str(e))
        far.free(flags)
        far.free(a)


def test_unreachable_collectives():
    """The Triton collectives over memory that some rank does not reach raise UNREACHABLE on
    every rank, as the host collectives do: a foreign table whose other entries are 0, and a
    context of nodes of one rank (node_size=1), whose Team is refused. Before, their kernels
    stored to address 0 + offset: SIGSEGV under the interpreter (a foreign table at 2 ranks,
    SYMADDR_NODE_SIZE=2 at 4). Both contexts work on after it."""
    if size < 2:
        return "SKIP: needs 2 ranks"
    n = 8 * size
    whole, view = plain_local(n + 3, 1 + rank)
    fill(view, data(rank, n + 3, "float32"))
    addr = view.data_ptr() if hasattr(view, "data_ptr") else view.ctypes.data
    fmap = ctx.register_tensor(view, [addr if r == rank else 0 for r in range(size)])
    far_ranks = ", ".join(str(r) for r in range(size) if r != rank)

    def unreachable(what, fn, role="x"):
        refused(what, fn, ("%s is not mapped on rank" % role, far_ranks),
                "SYMADDR_ERR_UNREACHABLE")

    unreachable("one-shot allreduce", lambda: tc.allreduce(ctx, view, algo="oneshot"))
    unreachable("two-shot allreduce in place", lambda: tc.allreduce(ctx, view, view,
                                                                    algo="twoshot"), "out")
    unreachable("allgather", lambda: tc.allgather(ctx, view[:N]))
    unreachable("reduce_scatter", lambda: tc.reduce_scatter(ctx, view[:n]))
    unreachable("alltoall", lambda: tc.alltoall(ctx, view[:n]))
    unreachable("broadcast", lambda: tc.broadcast(ctx, view[:N], root=size - 1))
    y, _ = alloc((N,))
    fill(y, data(rank, N, "float32"))
    out = tc.allreduce(ctx, y, algo="oneshot")
    if ON_GPU:
        torch.cuda.synchronize()
    check(np.array_equal(host(out), sum(data(r, N, "float32") for r in range(size))),
          "the context's next Triton allreduce")
    ctx.free(y)
    fmap.unregister()
    with sa.Context(backend=ctx.backend, node_size=1) as far:
        a, _ = far.allocate_symmetric((N,), DTYPES["float32"])
        b, _ = far.allocate_symmetric((N,), DTYPES["float32"])
        fill(a, data(rank, N, "float32"))
        words = ("Context.team", "more than one node", "host collectives")
        refused("the Team of nodes of one rank", far.team, words, "SYMADDR_ERR_UNREACHABLE")
        refused("a Triton allreduce there", lambda: tc.allreduce(far, a), words,
                "SYMADDR_ERR_UNREACHABLE")
        refused("a Triton allgather there", lambda: tc.allgather(far, a), words,
                "SYMADDR_ERR_UNREACHABLE")
        far.allreduce(a, b)
        if ON_GPU:
            far.sync()
        check(np.array_equal(host(b), sum(data(r, N, "float32") for r in range(size))),
              "the host allreduce across the nodes")
        far.free(a)
        far.free(b)


def test_address_maps():
    """The seed's map fields for every provider, views resolving to their root, zero-copy
    tables, and get_symmetric_address_map from any view."""
    for provider in providers():
        a, amap = alloc((3, N), "float32", provider=provider)
        check(tuple(a.shape) == (3, N), "shape")
        view = a[1, 5:]
        m = ctx.get_symmetric_address_map(view)
        check(m is amap, "%s: a view's map is its allocation's" % provider)
        check(amap.local_rank == rank and amap.world_size == size, "rank and size")
        check(amap.allocation_bytes >= 3 * N * 4, "allocation_bytes")
        table = amap.peer_bases
        check(int(host(table)[rank]) == amap.allocation_base, "own entry")
        check(str(table.dtype).endswith("int64") and tuple(table.shape) == (size,), "int64 table")
        # zero-copy: the array is the library's own symaddr_map_t.peer_bases
        check(table.data_ptr() == amap._s.peer_bases, "peer_bases aliases the library's table")
        buf = ctx.bind(view)
        check(buf.ptr is view and buf.peer_bases is table, "bind")
        ctx.free(a)


def test_python_mistakes():
    """Each mistake raises SymaddrError with its status and the allowed values."""
    def raises(fn, name, *words):  # this case's order: the call, its status, the words
        refused("a mistake", fn, words, name)

    raises(lambda: sa.Context(heap_size=1 << 20), "SYMADDR_ERR_INVALID_ARG", "heap_bytes",
           "timeout_ms")
    raises(lambda: sa.Context(backend="gpu"), "SYMADDR_ERR_INVALID_ARG", "cpu", "cuda")
    raises(lambda: sa.Context(backend=["cpu"]), "SYMADDR_ERR_INVALID_ARG", "cpu", "cuda")
    # the library's own refusal of a failed init, read without a context
    raises(lambda: sa.Context(backend=ctx.backend, timeout_ms=0), "SYMADDR_ERR_INVALID_ARG",
           "timeout_ms must be > 0")
    raises(lambda: ctx.set_timeout(0), "SYMADDR_ERR_INVALID_ARG", "timeout_ms must be > 0")
    a, amap = alloc((N,), "float32")
    raises(lambda: ctx.allreduce(a, op="mean"), "SYMADDR_ERR_INVALID_ARG", "sum", "max",
           "avg", "MPI.SUM")
    ia, _ = alloc((N,), "int32")
    raises(lambda: ctx.allreduce(ia, op="avg"), "SYMADDR_ERR_INVALID_ARG", "floating-point")
    ctx.free(ia)
    raises(lambda: ctx.allocate_symmetric(4, DTYPES["float32"], provider="nvlink"),
           "SYMADDR_ERR_INVALID_ARG", "ipc", "vmm")
    raises(lambda: ctx.allocate_symmetric((2, -1), DTYPES["float32"]),
           "SYMADDR_ERR_INVALID_SIZE", "negative")
    # a string or a float is no extent: "10" was the shape (1, 0), (2.5,) was (2,), and "ab"
    # raised ValueError from int()
    for bad in ("10", "ab", (2.5,), 2.5):
        raises(lambda: ctx.allocate_symmetric(bad, DTYPES["float32"]), "SYMADDR_ERR_INVALID_ARG",
               "tuple of ints")
    x, _ = ctx.allocate_symmetric((np.int64(2), 3), DTYPES["float32"])  # NumPy's ints are ints
    check(tuple(x.shape) == (2, 3), "shape (np.int64(2), 3): %s" % (tuple(x.shape),))
    ctx.free(x)
    if torch is None:
        raises(lambda: ctx.allreduce(np.zeros(4, np.complex64)), "SYMADDR_ERR_INVALID_ARG",
               "float32", "int32")
        local = np.zeros(2 * N, np.float32)
        raises(lambda: ctx.put(a, local[::2], right), "SYMADDR_ERR_INVALID_ARG", "contiguous")
        raises(lambda: ctx.get(local[::2], a, right), "SYMADDR_ERR_INVALID_ARG", "contiguous")
    b, _ = alloc((2 * N,), "float32")
    raises(lambda: ctx.allreduce(b[::2]), "SYMADDR_ERR_INVALID_ARG", "contiguous")
    raises(lambda: ctx.alltoall(a, a), "SYMADDR_ERR_INVALID_ARG", "split") if N % size else None
    raises(lambda: ctx.put(a, a, size), "SYMADDR_ERR_INVALID_ARG", "not a rank")
    a[:] = 7.0
    view = a[2:]
    ctx.free(a)
    # symaddr refuses the freed allocation; its memory stays mapped while Python reaches it
    for use in (lambda: amap.peer_bases, lambda: amap.allocation_base,
                lambda: ctx.get_symmetric_address_map(view), lambda: ctx.bind(view),
                lambda: ctx.allreduce(view), lambda: put_kernel[(1,)](
                    b, view, amap.peer_bases, 4, right, CUR_RANK=rank, BLOCK=16)):
        raises(use, "SYMADDR_ERR_INVALID_MAP", "freed")
    check(float(host(view)[0]) == 7.0 and float(host(a).sum()) == 7.0 * N,
          "a freed allocation's views read its own memory")
    raises(lambda: ctx.free(a), "SYMADDR_ERR_DOUBLE_FREE", "once")
    raises(lambda: ctx.free(b[1:]), "SYMADDR_ERR_INVALID_ARG", "allocate_symmetric")
    ctx.free(b)
    with sa.Context(backend=ctx.backend) as other:
        c, cmap = other.allocate_symmetric((N,), DTYPES["float32"])
        c[:] = 5.0
    check(float(host(c)[N - 1]) == 5.0, "a closed context's array still reads its memory")
    for use in (lambda: cmap.peer_bases, lambda: other.barrier(),
                lambda: other.allocate_symmetric(4, DTYPES["float32"])):
        try:
            use()
            raise AssertionError("use after close passed")
        except sa.SymaddrError as e:
            check("closed" in str(e), str(e))


def test_package():
    """The package as a user meets it: every public function and method of symaddr,
    symaddr.triton (its three forms), .heap, .collectives and .p0 has a docstring;
    help(symaddr.triton) names the three forms; py.typed ships beside the modules."""
    import inspect
    import pydoc
    from symaddr.triton import p0
    missing = []
    for mod in (sa, st, iris, tc, p0):
        for name in getattr(mod, "__all__", None) or dir(mod):
            obj = getattr(mod, name)
            fn = getattr(obj, "fn", obj)  # a jit function's own Python function
            if (name.startswith("_") or inspect.ismodule(obj) or not callable(obj) or
                    not str(getattr(fn, "__module__", "")).startswith("symaddr")):
                continue  # not the package's (Triton's interpreter adds names to modules)
            if not (getattr(obj, "__doc__", None) or getattr(getattr(obj, "fn", None),
                                                             "__doc__", None)):
                missing.append("%s.%s" % (mod.__name__, name))
            if inspect.isclass(obj) and obj.__module__.startswith("symaddr"):
                missing += ["%s.%s.%s" % (mod.__name__, name, m) for m, f in vars(obj).items()
                            if not m.startswith("_") and (callable(f) or isinstance(f, property))
                            and not f.__doc__]
    check(not missing, "no docstring: %s" % missing)
    text = pydoc.render_doc(st, renderer=pydoc.plaintext)
    check(all(w in text for w in ("explicit", "bound", "symaddr.triton.heap", "Iris")),
          "help(symaddr.triton) names the three forms")
    check(os.path.exists(os.path.join(os.path.dirname(sa.__file__), "py.typed")), "py.typed")


def test_plain_recv():
    """Host collectives as torch and mpi4py users call them: recv a plain array or tensor on
    the context's device (staged through the workspace), op "avg" and mpi4py's MPI.SUM, the
    stream as a raw handle; exact against mpi4py."""
    n = 2 * size + 1
    x, _ = alloc((n,), "float32")
    vals = data(rank, n, "float32").astype(np.float32)
    fill(x, vals)
    plain = (torch.empty(n, dtype=torch.float32, device=x.device) if torch is not None
             else np.empty(n, np.float32))
    stream = torch.cuda.current_stream().cuda_stream if ON_GPU else 0
    total = np.empty(n, np.float32)
    comm.Allreduce(vals, total, op=MPI.SUM)
    for op, want_vals in (("sum", total), (MPI.SUM, total), ("avg", total / size)):
        ctx.allreduce(x, plain, op=op, stream=stream)
        settle()
        check(np.allclose(host(plain), want_vals, rtol=1e-6), "allreduce %s into plain" % op)
    gathered = (torch.empty(size * n, dtype=torch.float32, device=x.device) if torch is not None
                else np.empty(size * n, np.float32))
    ctx.allgather(x, gathered)
    settle()
    everyone = np.empty(size * n, np.float32)
    comm.Allgather(vals, everyone)
    got = host(gathered)
    bad = [r for r in range(size) if not np.array_equal(got[r * n:(r + 1) * n],
                                                       everyone[r * n:(r + 1) * n])]
    settle()  # before the check: a rank that fails leaves no peer waiting
    check(not bad, "allgather into plain: the blocks of ranks %s wrong, e.g. %s for %s" % (
        bad, got[bad[0] * n:bad[0] * n + 4] if bad else "", everyone[bad[0] * n:][:4]
        if bad else ""))
    ctx.free(x)


def test_triton_refused_buffers():
    """The host functions of symaddr.triton.collectives check their buffers before a launch,
    as the kernels index them: an out too short (the kernels wrote past its end and returned,
    and the next calls crashed the interpreter), of another dtype or device, strided, or
    overlapping x where the peers still read it; a count that does not split into parts; a
    root that is no rank; a block that is no power of two. Each raises its named status on
    every rank, writes nothing (a guard past the short out stays), and leaves the context
    sound: the Lamport one-shot in place and a one-shot after are exact."""
    n = 37
    x, _ = alloc((2 * n + 1,), "float32")
    xs = x[1:n + 1]
    fill(xs, data(rank, n, "float32"))
    total = want(reference([data(r, n, "float32") for r in range(size)], "sum"), "float32")
    guard = _plain(size * n + 8, "float32")
    fill(guard, np.full(size * n + 8, -7.0))
    short, other = guard[:n - 1], _plain(n, "int32")
    whole, _ = alloc((size * n,), "float32")
    settle()
    refusals = [
        ("allreduce, out short (%s)" % algo, "SYMADDR_ERR_INVALID_ARG",
         lambda algo=algo: tc.allreduce(ctx, xs, short, algo=algo))
        for algo in ("auto", "lamport", "oneshot")] + [
        ("allreduce, out of another dtype", "SYMADDR_ERR_INVALID_ARG",
         lambda: tc.allreduce(ctx, xs, other)),
        ("allreduce, x strided", "SYMADDR_ERR_INVALID_ARG",
         lambda: tc.allreduce(ctx, x[::2], algo="oneshot")),
        ("one-shot, out = x", "SYMADDR_ERR_INVALID_ARG",
         lambda: tc.allreduce(ctx, xs, xs, algo="oneshot")),
        ("two-shot, out overlapping x", "SYMADDR_ERR_INVALID_ARG",
         lambda: tc.allreduce(ctx, xs, x[2:n + 2], algo="twoshot")),
        ("Lamport, out overlapping x a element on", "SYMADDR_ERR_INVALID_ARG",
         lambda: tc.allreduce(ctx, xs, x[2:n + 2], algo="lamport")),
        ("two-shot, out plain", "SYMADDR_ERR_NOT_FOUND",
         lambda: tc.allreduce(ctx, xs, guard[:n], algo="twoshot")),
        ("one-shot, x plain", "SYMADDR_ERR_NOT_FOUND",
         lambda: tc.allreduce(ctx, guard[:n], algo="oneshot")),
        ("allreduce, out a list", "SYMADDR_ERR_INVALID_ARG",
         lambda: tc.allreduce(ctx, xs, [0.0] * n))] + [
        ("%s, x a list" % name, "SYMADDR_ERR_INVALID_ARG",
         lambda f=getattr(tc, name): f(ctx, [1.0] * size * 2))
        for name in ("allreduce", "reduce_scatter", "allgather", "alltoall", "broadcast")] + [
        ("allreduce, block 100", "SYMADDR_ERR_INVALID_ARG",
         lambda: tc.allreduce(ctx, xs, algo="oneshot", block=100)),
        ("allgather, out short", "SYMADDR_ERR_INVALID_ARG",
         lambda: tc.allgather(ctx, xs, guard[:size * n - 1])),
        ("allgather, out over x, x at another rank's part", "SYMADDR_ERR_INVALID_ARG",
         lambda: tc.allgather(ctx, whole[(rank + 1) % size * n:((rank + 1) % size + 1) * n],
                              whole)),
        ("reduce_scatter, out short", "SYMADDR_ERR_INVALID_ARG",
         lambda: tc.reduce_scatter(ctx, whole, guard[:n - 1])),
        ("reduce_scatter, a count of no equal parts", "SYMADDR_ERR_INVALID_ARG",
         lambda: tc.reduce_scatter(ctx, whole[1:])),
        ("alltoall, a count of no equal parts", "SYMADDR_ERR_INVALID_ARG",
         lambda: tc.alltoall(ctx, whole[1:], guard[:size * n - 1])),
        ("broadcast, root = size", "SYMADDR_ERR_INVALID_ARG",
         lambda: tc.broadcast(ctx, xs, guard[:n], root=size)),
        ("broadcast, root -1", "SYMADDR_ERR_INVALID_ARG",
         lambda: tc.broadcast(ctx, xs, guard[:n], root=-1)),
        ("broadcast, root True (a flag out of place, taken as rank 1 before)",
         "SYMADDR_ERR_INVALID_ARG", lambda: tc.broadcast(ctx, xs, guard[:n], root=True)),
        ("allgather, block True", "SYMADDR_ERR_INVALID_ARG",
         lambda: tc.allgather(ctx, xs, guard[:size * n], block=True))]
    if ON_GPU:
        refusals.append(("allreduce, out on the host", "SYMADDR_ERR_INVALID_ARG",
                         lambda: tc.allreduce(ctx, xs, torch.zeros(n))))
    elif ARRAYS == "numpy":  # views a byte off their elements (torch makes none; on a GPU
        # their loads fault): launched before
        bytes_x, bytes_out = x.view(np.uint8), guard.view(np.uint8)
        odd_x = bytes_x[1:1 + 4 * n].view(np.float32)
        odd_out = bytes_out[1:1 + 4 * n].view(np.float32)
        refusals += [("allreduce, x a byte off (%s)" % algo, "SYMADDR_ERR_INVALID_ARG",
                      lambda algo=algo: tc.allreduce(ctx, odd_x, algo=algo))
                     for algo in ("lamport", "oneshot")]
        refusals += [("allreduce, out a byte off", "SYMADDR_ERR_INVALID_ARG",
                      lambda: tc.allreduce(ctx, xs, odd_out)),
                     ("allgather, x a byte off", "SYMADDR_ERR_INVALID_ARG",
                      lambda: tc.allgather(ctx, odd_x, guard[:size * n]))]
        # NumPy's read-only mark (torch's tensors have none): the kernel wrote it before
        frozen = _plain(size * n, "float32")
        frozen.flags.writeable = False
        refusals += [("allreduce, out read-only (%s)" % algo, "SYMADDR_ERR_INVALID_ARG",
                      lambda algo=algo: tc.allreduce(ctx, xs, frozen[:n], algo=algo))
                     for algo in ("lamport", "oneshot")]
        refusals.append(("allgather, out read-only", "SYMADDR_ERR_INVALID_ARG",
                         lambda: tc.allgather(ctx, xs, frozen)))
    passed, other = [], []
    for what, status, call in refusals:
        try:
            call()
            passed.append(what)
        except Exception as e:  # noqa: BLE001  (what else a call raised is reported)
            if getattr(e, "name", type(e).__name__) != status or \
                    "symaddr.triton.collectives." not in str(e):
                other.append("%s: %s %s (want %s, naming the call)" % (
                    what, type(e).__name__, e, status))
        settle()
    check(not passed and not other, "passed, where they write past or misread their buffers: "
          "%s; refused otherwise: %s" % (passed, other))
    refused("the one-shot in place", lambda: tc.allreduce(ctx, xs, xs, algo="oneshot"),
            ['out = x itself: algo="twoshot", or "lamport"'], "SYMADDR_ERR_INVALID_ARG")
    # out=None makes a plain array, which the two-shot's peers cannot read: it said "out is
    # not symmetric memory" (NOT_FOUND) of an out the caller never passed
    refused("the two-shot with out=None", lambda: tc.allreduce(ctx, xs, algo="twoshot"),
            ["out=None", "pass out=x (in place)"], "SYMADDR_ERR_INVALID_ARG")
    check(np.all(host(guard) == -7.0), "the refused calls wrote into plain memory: %s"
          % host(guard)[:8])
    if not ON_GPU and ARRAYS == "numpy":  # a read-only out: NumPy's arrays alone have the flag
        check(not frozen.any(), "a refused call wrote a read-only out: %s" % frozen[:8])
    if not ON_GPU:  # the torch tensors' fast path of the check, on tensors' methods alone
        class Tensor:  # device: (its type, its index), as torch.device has them
            def __init__(self, at, n, dtype="f32", device=("cuda", 0), contiguous=True):
                self.at, self.n, self.dtype, self.device = at, n, dtype, device
                self.contiguous = contiguous
                self.is_cpu, self.is_cuda = device[0] == "cpu", device[0] == "cuda"

            def is_contiguous(self):
                return self.contiguous

            def get_device(self):  # torch's: -1 for every device but CUDA's
                return self.device[1] if self.is_cuda else -1

            def numel(self):
                return self.n

            def data_ptr(self):
                return self.at

            def element_size(self):
                return 4

        t = Tensor(4096, 10)
        for what, o, n_out, x_at, fits in (  # x_at: where x may lie in out (in place)
                ("apart", Tensor(8192, 10), 10, None, True),
                ("right after x", Tensor(4096 + 40, 10), 10, None, True),
                ("x itself, in place", t, 10, 0, True),
                ("x itself", t, 10, None, False),
                ("one element on", Tensor(4100, 10), 10, 0, False),
                ("x at its element 10, in place", Tensor(4096 - 40, 30), 30, 10, True),
                ("x at its element 9", Tensor(4096 - 36, 30), 30, 10, False),
                ("ending in x", Tensor(4096 - 36, 10), 10, None, False),
                ("short", Tensor(8192, 9), 10, None, False),
                ("another dtype", Tensor(8192, 10, "f16"), 10, None, False),
                ("another device", Tensor(8192, 10, device=("cuda", 1)), 10, None, False),
                ("on the host", Tensor(8192, 10, device=("cpu", -1)), 10, None, False),
                ("strided", Tensor(8192, 10, contiguous=False), 10, None, False),
                ("x and out on the host", Tensor(8192, 10, device=("cpu", -1)), 10, None,
                 True),
                # meta's get_device() is the host's -1: taken before, then the launch failed
                ("on meta, x on the host", Tensor(8192, 10, device=("meta", -1)), 10, None,
                 False)):
            x_of = Tensor(4096, 10, device=("cpu", -1)) if "x and out on" in what or \
                "x on the host" in what else t
            try:
                check(tc._checked(ctx, "c", x_of, o, n_out, 1024, x_at) is o and fits,
                      "the fast path took out %s" % what)
            except (sa.SymaddrError, AttributeError):  # the slow path asks for more
                check(not fits, "the fast path refused out %s" % what)
    tc.allreduce(ctx, xs, xs, algo="lamport")  # in place: no peer reads x
    settle()
    check(np.array_equal(host(xs), total), "Lamport in place: %s want %s" % (host(xs)[:4],
                                                                           total[:4]))
    fill(xs, data(rank, n, "float32"))
    settle()
    out = tc.allreduce(ctx, xs, guard[:n], algo="oneshot")
    settle()
    check(np.array_equal(host(out), total), "a one-shot after the refusals")
    square = whole[:(size * n) // 2 * 2].reshape(-1, 2)  # 2-D: out of x's shape by default
    shapes = [tuple(fn(ctx, square, **kw).shape) for fn, kw in (
        (tc.allreduce, {}), (tc.allreduce, {"algo": "oneshot"}), (tc.broadcast, {}))]
    settle()
    check(shapes == [tuple(square.shape)] * 3, "out of a 2-D x: %s, want %s" % (
        shapes, tuple(square.shape)))
    ctx.free(whole)
    ctx.free(x)


def test_deprecated_names():
    """allocate(numel, ...) and Map still work, as aliases."""
    import warnings
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        a, amap = ctx.allocate(N, DTYPES["float32"])
    check(any(issubclass(x.category, DeprecationWarning) for x in w), "a DeprecationWarning")
    check(isinstance(amap, sa.Map) and tuple(a.shape) == (N,), "alias")
    ctx.free(a)


def test_interpreter_loop_bound():
    """Where Triton 3.6's interpreter runs the kernels and NumPy refuses int() of a 1-element
    array (2.4 on; here the suite makes the pinned NumPy's warning of it an error), a kernel
    whose loop bound is an argument raises TypeError: symaddr.triton warns, saying what to
    do (symaddr's own kernels, run by the cases above, loop without it)."""
    import warnings
    try:
        int(np.array([1]))
        refuses = False
    except Exception:  # noqa: BLE001  (TypeError, or the DeprecationWarning made an error)
        refuses = True
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always", RuntimeWarning)
        said = st._interpreter_index_check()
    told = [str(w.message) for w in got if "numpy<2.4" in str(w.message)]
    if ON_GPU or not refuses:
        check(not said and not told, "warned where kernels compile or NumPy converts: %s" % told)
    elif tuple(int(v) for v in triton.__version__.split(".")[:2]) <= (3, 6):
        check(said and len(told) == 1 and "triton-lang/triton#9171" in told[0],
              "no warning under Triton %s's interpreter and a NumPy that refuses: %s"
              % (triton.__version__, [str(w.message) for w in got]))
    else:
        return "SKIP: Triton %s, which may have the fix" % triton.__version__


for name, fn in (("abi: constants from the library, which match its headers", test_abi),
                 ("the seed's put_kernel", test_seed_put_kernel),
                 ("explicit form: store, load, put, get, translate; 4 dtypes", test_explicit_form),
                 ("bound form: bind() and buffer_*", test_bound_form),
                 ("heap_bases form (Iris's order)", test_heap_form),
                 ("Iris's device API in full, keywords, any map's table", test_iris_full),
                 ("atomics from every rank, three forms", test_atomics_every_rank),
                 ("signals, three forms: put_signal, six comparisons, fence, quiet, a timeout in time", test_signals),
                 ("a wait on a block of flags; the 0.x wait; the default bound", test_signal_blocks),
                 ("imports at per-rank offsets, the seed's put_kernel", test_imports),
                 ("heap, ipc, import and foreign maps in one kernel", test_mixed_providers),
                 ("Triton collectives, one kernel each, no host barrier",
                  test_triton_collectives),
                 ("the Triton collectives' kept kernels, aligned then at odd offsets",
                  test_triton_kept_kernels),
                 ("Triton collectives in rounds of tiles, at most team_programs' programs",
                  test_triton_collectives_in_rounds),
                 ("Triton reductions' ops: names and mpi4py's, others refused",
                  test_triton_ops),
                 ("Triton collectives in place: all-gather, reduce-scatter, broadcast",
                  test_triton_in_place),
                 ("Triton reductions over f64 and int64 in their own precision; types "
                  "refused", test_triton_wide_dtypes),
                 ("Triton collectives over tables whose ranks' copies are not 16-byte "
                  "aligned alike", test_triton_unaligned_tables),
                 ("a Triton collective whose identity Triton passes as an i32",
                  test_triton_small_identity),
                 ("call_ident's cache: by value and type", test_call_ident_cache),
                 ("the Triton Lamport one-shot: several programs, plain memory, -0.0 and NaN",
                  test_triton_lamport),
                 ("the Triton Lamport one-shot past 64 KiB: larger tiles, then rounds",
                  test_triton_lamport_large),
                 ("what Triton collectives keep of a call lasts while its arrays do",
                  test_triton_kept_plans),
                 ("50 Triton collectives with no host call between them",
                  test_triton_stream_of_calls),
                 ("Lamport allreduces back to back, as a benchmark makes them",
                  test_triton_lamport_back_to_back),
                 ("a rank that skips a Triton collective", test_triton_skipped_call),
                 ("ranks that pass another count, op, collective, root, algorithm or dtype "
                  "to a Triton collective, work in place where the others do not, or pass a "
                  "buffer elsewhere",
                  test_triton_identity_mismatch),
                 ("team_fail after a peer's MISMATCH passes MISMATCH on",
                  test_team_fail_passes_on_mismatch),
                 ("a team kernel with more programs than MAX_BLOCKS", test_team_grid_too_large),
                 ("unreachable peers (simulated nodes)", test_unreachable_peers),
                 ("collectives over unreachable memory", test_unreachable_collectives),
                 ("address maps of every provider, zero-copy", test_address_maps),
                 ("put, get, copy, put_signal: one order in every form; the 0.x order warns",
                  test_one_order),
                 ("Python mistakes raise SymaddrError", test_python_mistakes),
                 ("host collectives into plain memory, avg, MPI.SUM, a raw stream",
                  test_plain_recv),
                 ("Triton collectives refuse buffers they would write past or misread",
                  test_triton_refused_buffers),
                 ("deprecated names", test_deprecated_names),
                 ("Triton's interpreter and a NumPy that refuses a loop bound's int(): a warning",
                  test_interpreter_loop_bound),
                 ("the package: docstrings, help, py.typed", test_package)):
    cases.run(name, fn)
ctx.close()
sys.exit(cases.finish())
