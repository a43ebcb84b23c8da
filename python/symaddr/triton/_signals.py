# SPDX-License-Identifier: MIT
"""symaddr.triton's signals, fence and quiet (NVSHMEM's), in the explicit form; the bound and
heap forms call these. Imported into symaddr.triton: use them from there."""
import os
import time

import triton
import triton.language as tl

from .._lib import default_timeout_ms as _timeout_ms
from . import OK, TIMEOUT, _ERROR_AT, _put, translate
from ._order import _deprecated_order, _is_comparison, _is_table

# NVSHMEM's comparisons, and the default bound of a wait in time
CMP_EQ, CMP_NE, CMP_GT = tl.constexpr("eq"), tl.constexpr("ne"), tl.constexpr("gt")
CMP_GE, CMP_LT, CMP_LE = tl.constexpr("ge"), tl.constexpr("lt"), tl.constexpr("le")
DEFAULT_TIMEOUT_NS = tl.constexpr(_timeout_ms() * 1000000)
_monotonic_ns = time.monotonic_ns


def _clock():
    """Which clock a wait reads: Python's under Triton's interpreter, else the GPU's."""
    if os.environ.get("TRITON_INTERPRET", "0") not in ("", "0"):
        return "python"
    try:
        return triton.runtime.driver.active.get_current_target().backend
    except Exception:  # noqa: BLE001  (no GPU here: compiling for NVIDIA, as test_ptx does)
        return "cuda"


_CLOCK = tl.constexpr(_clock())
# ---- signals, fence and quiet (NVSHMEM's) ---------------------------------------------------

# A clock in nanoseconds for the waits: Python's under the interpreter, the GPU's compiled (a
# definition per clock: Triton's compiler refuses a Python function in a jit function's body)
if _CLOCK == "python":
    @triton.jit
    def _now_ns():
        return tl.full((), _monotonic_ns(), tl.int64)
elif _CLOCK == "hip":
    @triton.jit
    def _now_ns():  # s_memrealtime counts at 100 MHz
        return tl.inline_asm_elementwise("s_memrealtime $0\ns_waitcnt lgkmcnt(0)", "=s", [],
                                         dtype=tl.int64, is_pure=False, pack=1) * 10
else:
    @triton.jit
    def _now_ns():
        return tl.inline_asm_elementwise("mov.u64 $0, %globaltimer;", "=l", [], dtype=tl.int64,
                                         is_pure=False, pack=1)


@triton.jit
def _compare(seen, cmp: tl.constexpr, value):
    tl.static_assert((cmp == "eq") | (cmp == "ne") | (cmp == "gt") | (cmp == "ge") |
                     (cmp == "lt") | (cmp == "le"),
                     "signal_wait_until: cmp is one of \"eq\", \"ne\", \"gt\", \"ge\", \"lt\", "
                     "\"le\" (symaddr.triton.CMP_*)")
    if cmp == "eq":
        return seen == value
    elif cmp == "ne":
        return seen != value
    elif cmp == "gt":
        return seen > value
    elif cmp == "ge":
        return seen >= value
    elif cmp == "lt":
        return seen < value
    else:
        return seen <= value


@triton.jit
def signal_set(sig, value, target_rank, peer_bases, cur_rank):
    """Set rank target_rank's copy of the flag sig to value, after this rank's earlier stores
    (release, system scope)."""
    tl.atomic_xchg(translate(sig, target_rank, peer_bases, cur_rank), value, sem="release",
                   scope="sys")


@triton.jit
def signal_add(sig, value, target_rank, peer_bases, cur_rank):
    """Add value to rank target_rank's copy of the flag sig (release, system scope)."""
    tl.atomic_add(translate(sig, target_rank, peer_bases, cur_rank), value, sem="release",
                  scope="sys")


@triton.jit
def _held(seen, cmp: tl.constexpr, value):
    """Whether the flags compare as cmp says: every lane of a block, or the one flag."""
    ok = _compare(seen, cmp, value)
    if ok.type.is_block():
        return tl.min(ok.to(tl.int32)) == 1
    else:
        return ok


@triton.jit
def signal_wait_until(sig, cmp, value, timeout_ns=DEFAULT_TIMEOUT_NS):
    """Wait until this rank's flag sig compares to value as cmp says ("eq", "ne", "gt", "ge",
    "lt", "le": NVSHMEM's order and comparisons; acquire, system scope), for at most timeout_ns
    nanoseconds of a clock. A block of flags waits until every one of them holds (OK only
    then), as signal_set and signal_add set or add every lane's flag. Returns OK, or TIMEOUT
    when the flags never got there.
    The default bound is not the Context's timeout (a kernel does not know its context): it
    is SYMADDR_TIMEOUT_MS as the environment had it when symaddr.triton was imported, 60 s
    without it (DEFAULT_TIMEOUT_NS); pass timeout_ns=ctx.timeout_ms * 1000000 (or a Team's
    timeout_ns) to bound a wait by the context's, which set_timeout changes.
    A 0.x call signal_wait_until(sig, value, max_spins) (until sig >= value, at most
    max_spins polls) still works as it did, with a FutureWarning when the kernel compiles."""
    if _is_comparison(cmp):
        seen = tl.atomic_add(sig, 0, sem="acquire", scope="sys")
        start = _now_ns()
        late = False
        while (not _held(seen, cmp, value)) & (not late):
            seen = tl.atomic_add(sig, 0, sem="acquire", scope="sys")
            late = _now_ns() - start > timeout_ns
        status = OK
        if not _held(seen, cmp, value):
            status = TIMEOUT
        return status
    else:
        _deprecated_order("signal_wait_until")
        seen = tl.atomic_add(sig, 0, sem="acquire", scope="sys")
        spins = 0
        while (not _held(seen, "ge", cmp)) & (spins < value):
            seen = tl.atomic_add(sig, 0, sem="acquire", scope="sys")
            spins += 1
        status = OK
        if not _held(seen, "ge", cmp):
            status = TIMEOUT
        return status


@triton.jit
def fence(peer_bases):
    """Order this program's earlier stores and atomics (to any rank) before its later ones, as
    seen by every rank: a barrier of the program's threads, then a system-scope acq_rel atomic
    on the header of a table of symaddr (peer_bases: any map's, or heap_bases)."""
    tl.debug_barrier()
    tl.atomic_add((peer_bases + _ERROR_AT).to(tl.pointer_type(tl.int32), bitcast=True), 0,
                  sem="acq_rel", scope="sys")


@triton.jit
def quiet(peer_bases):
    """Complete this program's earlier stores and atomics to every rank. Loads and stores have
    nothing in flight past a system-scope fence, so quiet is fence (NVSHMEM keeps both
    names)."""
    fence(peer_bases)


@triton.jit
def _put_signal(dst, src, sig, sig_value, target_rank, peer_bases, cur_rank, mask=None,
                sig_op: tl.constexpr = None, sig_peer_bases=None):
    """put_signal in 0.1's order (the destination first): rank target_rank's copy of dst =
    this rank's src (masked), then the flag, as put_signal says."""
    tl.static_assert((sig_op is None) or (sig_op == "set") or (sig_op == "add"),
                     "put_signal: sig_op is \"set\" (the default) or \"add\"")
    _put(dst, src, target_rank, peer_bases, cur_rank, mask=mask)
    table = peer_bases
    if sig_peer_bases is not None:
        table = sig_peer_bases
    tl.debug_barrier()  # every thread's stores before the release below
    if sig_op == "add":
        signal_add(sig, sig_value, target_rank, table, cur_rank)
    else:
        signal_set(sig, sig_value, target_rank, table, cur_rank)


@triton.jit
def put_signal(from_ptr, to_ptr, sig, sig_value, from_rank, to_rank, peer_bases, mask=None,
               sig_op: tl.constexpr = None, sig_peer_bases=None):
    """NVSHMEM's put-with-signal in Iris's order (as put): to_rank's copy of to_ptr = from_ptr
    (local; from_rank is this rank), masked, then, once every lane's store is visible, its copy
    of the flag sig is set to (sig_op "set", the default) or increased by ("add") sig_value.
    sig may lie in another allocation: pass its table as sig_peer_bases (default: peer_bases).
    A 0.x call put_signal(dst, src, sig, sig_value, target_rank, peer_bases, cur_rank) still
    works, with a FutureWarning when the kernel compiles."""
    if _is_table(to_rank):
        _deprecated_order("put_signal")
        _put_signal(from_ptr, to_ptr, sig, sig_value, from_rank, to_rank, peer_bases, mask,
                    sig_op, sig_peer_bases)
    else:
        _put_signal(to_ptr, from_ptr, sig, sig_value, to_rank, peer_bases, from_rank, mask,
                    sig_op, sig_peer_bases)
