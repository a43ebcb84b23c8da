"""symaddr.Context over a torch.distributed process group, with no MPI in the process:
    TRITON_INTERPRET=1 SYMADDR_BACKEND=cpu torchrun --nproc-per-node 3 tests/python/test_torchrun.py
and the same cases over a gloo group that the test makes under mpiexec (Context(group=)):
    TRITON_INTERPRET=1 SYMADDR_BACKEND=cpu mpiexec -n 3 python3 tests/python/test_torchrun.py
Allocation and the maps, put and get, every host collective, a Triton kernel through the
device functions, a Triton collective, validation's refusal, the lifetimes' agreement and the
refusals of bad arguments, each exact on distinct per-rank data of odd sizes. Prints the
harness's summary line."""
import os
import socket
import sys

if os.environ.get("SYMADDR_TEST_PYTHONPATH"):  # the source tree's package, before an installed one
    sys.path.insert(0, os.environ["SYMADDR_TEST_PYTHONPATH"])

import faulthandler  # noqa: E402

faulthandler.dump_traceback_later(float(os.environ.get("SYMADDR_TEST_DEADLINE", "600")),
                                  exit=True)

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

TORCHRUN = "TORCHELASTIC_RUN_ID" in os.environ
if TORCHRUN:
    dist.init_process_group("gloo")
else:  # under mpiexec: a gloo group at an address rank 0 picked, told through MPI
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    port = None
    if comm.Get_rank() == 0:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
    port = comm.bcast(port)
    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:%d" % port,
                            rank=comm.Get_rank(), world_size=comm.Get_size())

import symaddr as sa  # noqa: E402
from mpi_cases import Cases, check, refused  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402
import symaddr.triton as st  # noqa: E402
from symaddr.triton import collectives as tc  # noqa: E402

rank, size = dist.get_rank(), dist.get_world_size()
right, left = (rank + 1) % size, (rank - 1) % size
cases = Cases(group=dist.group.WORLD)
BACKEND = os.environ.get("SYMADDR_BACKEND", "cpu")
# under torchrun the default group is the default; under mpiexec it is passed
ctx = sa.Context(backend=BACKEND) if TORCHRUN else sa.Context(backend=BACKEND,
                                                              group=dist.group.WORLD)
N = 1001  # odd
# the arrays' device: CPU tensors on the cpu backend (Triton's interpreter), the context's GPU
# on a GPU backend (Triton compiled)
DEV = torch.device("cuda", ctx.device) if ctx.device >= 0 else torch.device("cpu")


def data(r, n=N):
    return (torch.arange(n, dtype=torch.int32) * 3 + 1000 * (r + 1) - 7).to(DEV)


def settle(c=None):
    if DEV.type == "cuda":
        torch.cuda.synchronize()
    (c or ctx).barrier()
    if DEV.type == "cuda":
        torch.cuda.synchronize()


@triton.jit
def k_put(dst, src, n, peer, table, cur, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    st.store(dst + offs, tl.load(src + offs, mask=m), peer, table, cur, mask=m)


def test_context():
    """The context is the group's: its rank and size, no communicator, and (under torchrun)
    no MPI in the process."""
    check(ctx.rank == rank and ctx.size == size, "rank %d of %d" % (ctx.rank, ctx.size))
    check(ctx.comm is None and ctx.group is not None, "a context of the group")
    check(ctx.node_size == size and ctx.node_rank == rank, "one node: %d of %d" % (
        ctx.node_rank, ctx.node_size))
    if TORCHRUN:
        check("mpi4py.MPI" not in sys.modules, "mpi4py was not imported")


def test_maps_put_get():
    """An allocation's map (peer_bases[me] == its base), put into the right neighbour and
    get from it, exact."""
    x, xmap = ctx.allocate_symmetric((N,), torch.int32)
    check(int(xmap.peer_bases[rank]) == xmap.allocation_base, "peer_bases[me] == base")
    x.copy_(torch.full((N,), -1, dtype=torch.int32))
    settle()
    ctx.put(x, data(rank), right)
    settle()
    check(torch.equal(x, data(left)), "put: the left neighbour's data")
    back = torch.empty(N, dtype=torch.int32, device=DEV)
    ctx.get(back, x, right)
    settle()
    check(torch.equal(back, data(rank)), "get: this rank's own data back from the right")
    settle()
    ctx.free(x)


def test_host_collectives():
    """allreduce, allgather, reduce_scatter, broadcast and alltoall of distinct int32 values,
    against the sequential result."""
    x, _ = ctx.allocate_symmetric((N,), torch.int32)
    x.copy_(data(rank))
    out, _ = ctx.allocate_symmetric((N,), torch.int32)
    settle()
    ctx.allreduce(x, out)
    settle()
    check(torch.equal(out, sum(data(r) for r in range(size))), "allreduce")
    every, _ = ctx.allocate_symmetric((size * N,), torch.int32)
    ctx.allgather(x, every)
    settle()
    check(torch.equal(every, torch.cat([data(r) for r in range(size)])), "allgather")
    rs, _ = ctx.allocate_symmetric((N,), torch.int32)
    ctx.reduce_scatter(every, rs)
    settle()
    check(torch.equal(rs, size * data(rank)), "reduce_scatter of the gathered blocks")
    ctx.broadcast(x, out, root=size - 1)
    settle()
    check(torch.equal(out, data(size - 1)), "broadcast from the last rank")
    mine = torch.cat([data(rank, N) + 10 * q for q in range(size)])
    src, _ = ctx.allocate_symmetric((size * N,), torch.int32)
    src.copy_(mine)
    settle()
    ctx.alltoall(src, every)
    settle()
    check(torch.equal(every, torch.cat([data(r) + 10 * rank for r in range(size)])),
          "alltoall")
    for a in (x, out, every, rs, src):
        ctx.free(a)


def test_triton():
    """A Triton kernel that stores through the map's table into the right neighbour, and a
    Triton allreduce, exact."""
    dst, dmap = ctx.allocate_symmetric((N,), torch.int32)
    dst.fill_(-1)
    src = data(rank)
    settle()
    k_put[(triton.cdiv(N, 256),)](dst, src, N, right, dmap.peer_bases, dmap.local_rank,
                                  BLOCK=256)
    settle()
    check(torch.equal(dst, data(left)), "Triton store through the table")
    x, _ = ctx.allocate_symmetric((N,), torch.float32)
    x.copy_(data(rank).float())
    settle()
    got = tc.allreduce(ctx, x)
    settle()
    check(torch.equal(got, sum(data(r) for r in range(size)).float()), "Triton allreduce")
    settle()
    ctx.free(dst)
    ctx.free(x)


def test_validation():
    """Validation over the group: a store through another allocation's table, and one to a rank
    out of range, are refused in the kernel and raised by the next host call; nothing lands."""
    if not st.VALIDATE:
        return "SKIP: SYMADDR_VALIDATE=1 was not set when symaddr.triton was imported"
    vctx = sa.Context(backend=BACKEND, validate=1, group=ctx._ranks.group)
    a, amap = vctx.allocate_symmetric((N,), torch.int32)
    b, bmap = vctx.allocate_symmetric((N,), torch.int32)
    b.fill_(5)
    settle(vctx)
    src = data(rank)
    k_put[(triton.cdiv(N, 256),)](b, src, N, right, amap.peer_bases, amap.local_rank,
                                  BLOCK=256)
    refused("barrier after another table's store", vctx.barrier, ["refused by validation"],
            "SYMADDR_ERR_OUT_OF_BOUNDS")
    settle(vctx)
    k_put[(triton.cdiv(N, 256),)](b, src, N, size + 2, bmap.peer_bases, bmap.local_rank,
                                  BLOCK=256)
    refused("barrier after a store to rank %d" % (size + 2), vctx.barrier,
            ["refused by validation"], "SYMADDR_ERR_INVALID_ARG")
    settle(vctx)
    check(torch.all(b == 5), "nothing landed")
    vctx.free(a)
    vctx.free(b)
    vctx.close()


def test_lifetimes():
    """free() of an allocation a view still holds: kept by the group's agreement while a rank
    holds it, released once none does."""
    x, _ = ctx.allocate_symmetric((N,), torch.int32)
    view = x[3:] if rank == 0 else None  # one rank's view holds it on every rank
    ctx.free(x)
    del x
    ctx.collect()
    check(len(ctx._lifetimes.pending) == 1, "held by rank 0's view: still pending")
    del view
    ctx.collect()
    check(len(ctx._lifetimes.pending) == 0, "released once no rank holds it")


def test_refusals():
    """Bad arguments: both comm= and group=, a group that is not a ProcessGroup."""
    refused("Context(comm=, group=)", lambda: sa.Context(comm=object(), group=object(),
                                                         backend=BACKEND), ["pass one"])
    refused("Context(group=3)", lambda: sa.Context(group=3, backend=BACKEND), ["ProcessGroup"])


for name, fn in sorted(((k, v) for k, v in list(globals().items()) if k.startswith("test_")),
                       key=lambda kv: kv[1].__code__.co_firstlineno):
    cases.run(name[5:].replace("_", " "), fn)
ctx.close()
code = cases.finish()
dist.destroy_process_group()
sys.exit(code)
