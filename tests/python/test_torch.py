# SPDX-License-Identifier: MIT
"""The symaddr Python package on torch symmetric memory, one rank per GPU:
    mpirun -np 2 python3 tests/python/test_torch.py
Exact values from distinct per-rank data against NCCL's all_reduce (through torch) and a
sequential reference; prints the harness's summary line."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))

from mpi4py import MPI  # noqa: E402  (initialises MPI before symaddr)
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.distributed._symmetric_memory as symm_mem  # noqa: E402

import symaddr as sa  # noqa: E402

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
passed = failed = skipped = 0


def case(name, fn):
    global passed, failed, skipped
    try:
        res = fn()
        ok = 1 if res is None else 2  # 2: skipped with a reason
    except Exception as e:  # noqa: BLE001
        ok, res = 0, "%s: %s" % (type(e).__name__, e)
    worst = comm.allreduce(ok, op=MPI.MIN)
    if rank == 0:
        if worst == 0:
            print("not ok - %s (%s)" % (name, res), flush=True)
        elif ok == 2:
            print("skip   - %s: %s" % (name, res), flush=True)
        else:
            print("ok     - %s" % name, flush=True)
    if worst == 0:
        failed += 1
    elif ok == 2:
        skipped += 1
    else:
        passed += 1


ndev = torch.cuda.device_count()
if ndev < size:
    if rank == 0:
        print("skip   - all: torch symmetric memory needs one GPU per rank (%d ranks, %d GPUs)"
              "\n0 passed, 0 failed, 1 skipped" % (size, ndev))
    sys.exit(77)
torch.cuda.set_device(rank % ndev)
port = comm.bcast(29500 + os.getpid() % 1000 if rank == 0 else None)
dist.init_process_group("nccl", init_method="tcp://127.0.0.1:%d" % port, rank=rank,
                        world_size=size, device_id=torch.device("cuda", rank % ndev))
ctx = sa.Context(comm, backend="cuda")
N = 1001  # odd
group = dist.group.WORLD


def values(r, n, dtype):
    return (((torch.arange(n, device="cuda") % 7) + 1) * (r + 1)).to(dtype)  # exact in bf16


def test_table_is_buffer_ptrs():
    buf = symm_mem.empty(N, dtype=torch.float32, device="cuda")
    h = symm_mem.rendezvous(buf, group.group_name)
    m = ctx.register_symm_mem(buf, h)
    assert m.peer_bases == list(h.buffer_ptrs), (m.peer_bases, list(h.buffer_ptrs))
    m.unregister()
    dist.barrier()


def test_allreduce_symm_to_own():
    for dtype in (torch.float32, torch.bfloat16):
        buf = symm_mem.empty(N + 3, dtype=dtype, device="cuda")
        h = symm_mem.rendezvous(buf, group.group_name)
        m = ctx.register_symm_mem(buf, h)
        own = ctx.empty(N + 3, dtype)
        send = buf[3:]  # a view at an odd element offset
        send.copy_(values(rank, N, dtype))
        torch.cuda.synchronize()
        ref = values(rank, N, torch.float32)
        dist.all_reduce(ref)  # NCCL's sum of the same values
        ctx.allreduce(send, own[3:])  # foreign send, own recv: one kernel
        ctx.sync()
        got = own[3:].float()
        bad = int((got != ref).sum())
        assert bad == 0, "%s: %d of %d wrong" % (dtype, bad, N)
        dist.barrier()
        m.unregister()
        ctx.free(own)
        # symaddr left torch's memory alone
        assert bool((send == values(rank, N, dtype)).all())


def test_put_own_to_symm():
    buf = symm_mem.empty(N, dtype=torch.float32, device="cuda")
    h = symm_mem.rendezvous(buf, group.group_name)
    m = ctx.register_symm_mem(buf, h)
    buf.zero_()
    src = values(rank, N, torch.float32)
    torch.cuda.synchronize()
    dist.barrier()
    ctx.put(buf, src, (rank + 1) % size)
    ctx.sync()
    dist.barrier()
    left = (rank + size - 1) % size
    assert bool((buf == values(left, N, torch.float32)).all()), "put landed wrong"
    m.unregister()


def test_bad_inputs():
    buf = symm_mem.empty(16, dtype=torch.float32, device="cuda")
    h = symm_mem.rendezvous(buf, group.group_name)
    try:
        ctx.register(buf, 64, list(h.buffer_ptrs)[:-1])
        raise AssertionError("a short table was accepted")
    except sa.SymaddrError as e:
        assert "entries" in str(e)
    try:
        ctx.allreduce(torch.zeros(4, dtype=torch.complex64, device="cuda"))
        raise AssertionError("complex64 was accepted")
    except sa.SymaddrError as e:
        assert "no reduction" in str(e)
    # A table whose own entry is not the buffer: the library's own check, on every rank.
    bad = list(h.buffer_ptrs)
    bad[rank] += 256
    try:
        ctx.register(buf, 64, bad)
        raise AssertionError("a wrong own entry was accepted")
    except sa.SymaddrError as e:
        assert e.status == -1, e.status
    dist.barrier()


case("table_is_buffer_ptrs", test_table_is_buffer_ptrs)
case("allreduce_symm_to_own", test_allreduce_symm_to_own)
case("put_own_to_symm", test_put_own_to_symm)
case("bad_inputs", test_bad_inputs)
ctx.close()
dist.destroy_process_group()
if rank == 0:
    print("%d passed, %d failed, %d skipped" % (passed, failed, skipped), flush=True)
sys.exit(1 if failed else 0)
