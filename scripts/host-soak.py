#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Random calls of Context's host collectives from Python against a sequential computation,
for a given time: every collective the library lists (read from its table, the reference
made from the row's shape: reduces, send_all, recv_all, rooted, root_only), every dtype, op
("sum", "prod", "max", "min", "avg", mpi4py's ops), root, odd counts and offsets; send from
the heap or ipc provider or an import (at an interior offset that differs per rank); recv
another such symmetric array, plain memory (staged through the context's workspace) or the
in-place form; in a rooted collective whose ranks' recv are their own (reduce, broadcast,
scatter), half the time each rank's of its own kind, symmetric or plain, as MPI programs pass
them. Every rank draws the same calls (one seed); each checks its result exactly (the
data are small integers, the reference rounded once to the dtype), and that nothing outside
recv changed: send out of place, the bytes around recv, recv off the root where the row writes
the root's alone. Prints the rank-calls and the wrong elements; exit status 1 if any was
wrong.

    PYTHONPATH=python mpiexec -n 3 python3 scripts/host-soak.py 60
    SYMADDR_BACKEND=cuda mpiexec -n 8 python3 scripts/host-soak.py 120 --array torch
"""
import numpy as np
from mpi4py import MPI

import symaddr
import _soak as soak

run = soak.start(__doc__, 4321)
a, ctx, rank, size, rng = run.args, run.ctx, run.rank, run.size, run.rng
lib = symaddr.load()
bits = lib.abi["collective_flag"]
rows = [(c["name"], {k: bool(c["flags"] & v) for k, v in bits.items()})
        for c in lib.abi["collectives"]]
own = np.random.default_rng([a.seed, rank])  # this rank's own draws: its recv's kind
dtype_of, put, host, plain, rounded, divided = (run.dtype_of, run.put, run.host, run.plain,
                                                run.rounded, run.divided)
if a.array == "torch":
    import torch
mpi_ops = {"sum": MPI.SUM, "prod": MPI.PROD, "max": MPI.MAX, "min": MPI.MIN}
reduce_of = {"sum": np.sum, "avg": np.sum, "prod": np.prod, "max": np.max, "min": np.min}
calls = wrong = 0
while soak.running(run):
    name, row = rows[int(rng.integers(0, len(rows)))]
    dname = str(rng.choice(sorted(lib.dtypes)))
    dtype = dtype_of(dname)
    floating = dname.startswith(("float", "bfloat"))
    c = int(rng.integers(1, 700))  # elements a block; send/recv hold c or size * c
    n_send, n_recv = c * (size if row["send_all"] else 1), c * (size if row["recv_all"] else 1)
    op = str(rng.choice(["sum", "prod", "max", "min"] + ["avg"] * floating))
    root = int(rng.integers(0, size))
    # small integers, so that every order of a sum or product is exact in every dtype
    lo = 0 if dname.startswith("uint") else -8
    every = rng.integers(lo, 9, (size, n_send)).astype(np.float64)
    if op == "prod":
        every = rng.choice([1.0, 2.0] if lo == 0 else [-1.0, 1.0, 2.0], (size, n_send))
        every[4:] = np.where(every[4:] == 2.0, 1.0, every[4:])  # |product| <= 16
    contrib = every.reshape(size, -1, c) if row["send_all"] else every[:, None, :]
    if row["reduces"]:  # rank p's result from every rank q's block p (or whole send)
        want = reduce_of[op](contrib[:, rank if row["send_all"] else 0], axis=0)
        want = divided(want, dtype) if op == "avg" else want
    elif row["recv_all"]:
        want = contrib[:, rank if row["send_all"] else 0].reshape(-1)
    else:
        want = contrib[root, rank if row["send_all"] else 0]
    form = str(rng.choice(["symmetric", "plain", "in place"]))
    if row["send_all"] and row["recv_all"]:
        form = form if form != "in place" else "plain"  # no in-place form
    off, pad = int(rng.integers(0, 5)), int(rng.integers(1, 4))
    mem = [str(p) for p in rng.choice(["heap", "ipc", "import"], 2)]
    mpi_op = rng.random() < 0.25 and op in mpi_ops
    x, free_x = soak.symmetric(run, max(n_send, n_recv) + off + pad, dtype, mem[0])
    put(x, np.full(x.shape[0], 5))
    send = x[off:off + n_send]
    put(send, every[rank])
    store, free_r, free_other = None, None, None
    mixed = row["rooted"] and not (row["root_only"] and row["recv_all"]) and \
        form != "in place" and rng.random() < 0.5  # not gather: its peers reach root's recv
    if form == "in place":  # the row's in-place form: recv and send one array
        if row["recv_all"]:
            recv = x[off:off + n_recv]
            send = recv[rank * c:(rank + 1) * c]
            put(recv, np.full(n_recv, 7))
            put(send, every[rank])
        elif row["send_all"]:
            recv = send[rank * c:(rank + 1) * c]
        else:
            recv = send
    else:
        if mixed:  # every rank makes both (the symmetric one collectively), takes its own
            form = str(own.choice(["symmetric", "plain"]))
            sym, free_sym = soak.symmetric(run, n_recv + off + pad, dtype, mem[1])
            store = sym if form == "symmetric" else plain(n_recv + off + pad, dtype)
            free_r, free_other = (free_sym, None) if form == "symmetric" else (None, free_sym)
        elif form == "symmetric":
            store, free_r = soak.symmetric(run, n_recv + off + pad, dtype, mem[1])
        else:
            store = plain(n_recv + off + pad, dtype)
        put(store, np.full(store.shape[0], 7))
        recv = store[off:off + n_recv]
    before = host(x).copy(), None if store is None else host(store).copy()
    args = {"op": mpi_ops[op] if mpi_op else op} if row["reduces"] else {}
    if row["rooted"]:
        args["root"] = root
    call = getattr(ctx, name)
    got = call(send, None if form == "in place" and recv is send and rng.random() < 0.5
               else recv, **args)
    if a.array == "torch" and ctx.backend != "cpu":
        torch.cuda.synchronize()
    # what each element of x and of recv's store must hold now: as before, but recv's
    # elements where this rank's recv is written; nan where the row leaves it unspecified
    ref = [before[0].copy(), None if store is None else before[1].copy()]
    held = 1 if store is not None else 0
    at = off + (rank * c if form == "in place" and row["send_all"] else 0)
    if not row["root_only"] or rank == root:
        ref[held][at:at + n_recv] = want if op == "avg" else rounded(want, dtype)
    elif row["reduces"] and form != "plain":  # reduce's recv off the root (symaddr.h)
        ref[held][at:at + n_recv] = np.nan
    bad = 0 if got is recv else 1
    for now, was in zip((host(x), None if store is None else host(store)), ref):
        if was is not None:
            bad += int(((now != was) & ~np.isnan(was)).sum())
    if bad:
        print("rank %d: %s %s c=%d offset=%d %s root=%d, recv %s, send %s: %d wrong" % (
            rank, name, dname, c, off, ("op=%s%s" % (op, " (MPI's)" * mpi_op)) if
            row["reduces"] else "", root, (form if form != "symmetric" else mem[1]) +
            " (kinds mixed)" * mixed, mem[0], bad),
            flush=True)
    wrong, calls = wrong + bad, calls + 1
    for free in (free_x, free_r, free_other):
        if free is not None:
            free()
soak.finish(run, "host-soak", calls, wrong)
