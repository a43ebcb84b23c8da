# SPDX-License-Identifier: MIT
"""Python's cost over the C calls, in one run: allocate_symmetric + free from Python against
symaddr_symmetric_alloc + symaddr_symmetric_free called directly through ctypes, on the same
context, alternately, in rounds. Run under MPI:

    mpiexec -n 8 python -m symaddr.bench [--iters 200] [--rounds 5] [--bytes 4096] [--provider ipc]

Prints, on rank 0, the best round's time per pair for each, their ratio, and the goal's bound
(Python at most 1.5x the C calls plus 20 us)."""
import argparse
import ctypes
import time

import symaddr


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m symaddr.bench", description=__doc__.split("\n")[0])
    ap.add_argument("--iters", type=int, default=200, help="pairs per round (default 200)")
    ap.add_argument("--rounds", type=int, default=5, help="rounds of each, alternately (default 5)")
    ap.add_argument("--bytes", type=int, default=4096, help="bytes per allocation (default 4096)")
    ap.add_argument("--provider", default="ipc", help="ipc, heap or vmm (default ipc)")
    ap.add_argument("--backend", default="auto", help="symaddr backend (default auto)")
    a = ap.parse_args(argv)
    import numpy as np
    ctx = symaddr.Context(backend=a.backend)
    lib, kind = ctx._lib, ctx._lib.abi["provider"][a.provider]
    prov = ctypes.c_void_p()
    ctx._check(lib.symaddr_provider_get(ctx._h, kind, ctypes.byref(prov)))
    ptr, m = ctypes.c_void_p(), ctypes.c_void_p()
    n = a.bytes // 4

    def c_pairs():
        for _ in range(a.iters):
            ctx._check(lib.symaddr_symmetric_alloc(prov, a.bytes, ctypes.byref(ptr),
                                                   ctypes.byref(m)))
            ctx._check(lib.symaddr_symmetric_free(prov, ptr))

    def py_pairs():
        for _ in range(a.iters):
            t, _ = ctx.allocate_symmetric((n,), np.float32, provider=a.provider)
            ctx.free(t)

    best = {"c": float("inf"), "python": float("inf")}
    c_pairs()  # warm-up: retention and caches as in steady state
    py_pairs()
    for _ in range(a.rounds):
        for name, fn in (("c", c_pairs), ("python", py_pairs)):
            ctx.barrier()
            t0 = time.perf_counter()
            fn()
            best[name] = min(best[name], (time.perf_counter() - t0) / a.iters)
    if ctx.rank == 0:
        c_us, py_us = best["c"] * 1e6, best["python"] * 1e6
        bound = 1.5 * c_us + 20
        print("# symaddr.bench alloc: %d ranks, backend %s, provider %s, %d B, %d pairs x %d "
              "rounds (best round)" % (ctx.size, ctx.backend, a.provider, a.bytes, a.iters,
                                       a.rounds))
        print("# %12s %12s %8s %14s %s" % ("C us/pair", "Python us", "ratio", "bound 1.5C+20",
                                           "goal"))
        print("  %12.1f %12.1f %8.3f %14.1f %s" % (c_us, py_us, py_us / c_us, bound,
                                                   "met" if py_us <= bound else "NOT MET"))
    ctx.close()


if __name__ == "__main__":
    main()
