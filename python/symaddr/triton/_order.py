# SPDX-License-Identifier: MIT
"""How symaddr.triton's put, get, copy and put_signal tell 0.1's argument order (the
destination first) from the one order of every form (Iris's, the source first), and the
FutureWarning they give for the old one. Both orders take the same number of arguments; the
table (explicit form) or the SymmetricBuffer (bound form) stands in another place in each,
which Triton knows while it compiles."""
import ast
import os
import sys
import warnings

import triton
import triton.language as tl
from triton.language.core import TRITON_BUILTIN


def _compile_time(fn):
    """fn runs in Python while Triton compiles the kernel (interpreted: at each call), as
    tl.static_assert does: its answers are constants, and the branch it picks is the only
    code compiled."""
    setattr(fn, TRITON_BUILTIN, True)
    return fn


@_compile_time
def _is_table(x, _semantic=None):
    """Whether x is a pointer (a table where the 0.x order passed one), not a rank."""
    return tl.constexpr(isinstance(x, tl.tensor) and x.dtype.is_ptr())


@_compile_time
def _is_comparison(x, _semantic=None):
    """Whether x is one of signal_wait_until's comparisons (a string), not the 0.x form's
    value (an int or a tensor)."""
    return tl.constexpr(isinstance(getattr(x, "value", x), str))


@_compile_time
def _is_buffer(x, _semantic=None):
    """Whether x is a SymmetricBuffer (Context.bind), not a pointer or offsets."""
    return tl.constexpr(hasattr(x, "peer_bases") and hasattr(x, "local_rank"))


_ORDERS = {  # the 0.x order a call was recognised by -> the one order
    "put": ("put(dst, src, target_rank, peer_bases, cur_rank)",
            "put(from_ptr, to_ptr, from_rank, to_rank, peer_bases)"),
    "get": ("get(dst, src, target_rank, peer_bases, cur_rank)",
            "get(from_ptr, to_ptr, from_rank, to_rank, peer_bases)"),
    "copy": ("copy(dst, src, to_rank, from_rank, peer_bases, cur_rank)",
             "copy(src_ptr, dst_ptr, from_rank, to_rank, cur_rank, peer_bases)"),
    "put_signal": ("put_signal(dst, src, sig, sig_value, target_rank, peer_bases, cur_rank)",
                   "put_signal(from_ptr, to_ptr, sig, sig_value, from_rank, to_rank, "
                   "peer_bases)"),
    "buffer_put": ("buffer_put(buf, offsets, src, to_rank)",
                   "buffer_put(src, buf, offsets, to_rank)"),
    "buffer_get": ("buffer_get(dst, buf, offsets, from_rank)",
                   "buffer_get(buf, offsets, dst, from_rank)"),
    "buffer_copy": ("buffer_copy(dst, dst_offsets, src, src_offsets, to_rank, from_rank)",
                    "buffer_copy(src, dst, offsets, from_rank, to_rank, dst_offsets=None)"),
    "buffer_put_signal": ("buffer_put_signal(buf, offsets, src, sig, ...)",
                          "buffer_put_signal(src, buf, offsets, sig, ...)"),
}
_FORMS = {  # calls whose 0.x form changed more than its order -> the whole text
    "signal_wait_until": "symaddr.triton.signal_wait_until(sig, value, max_spins) is the 0.x "
    "form, deprecated: it still works (until sig >= value, at most max_spins polls), but the "
    "wait now takes NVSHMEM's comparison and a bound in time: signal_wait_until(sig, \"ge\", "
    "value, timeout_ns) (cmp one of \"eq\", \"ne\", \"gt\", \"ge\", \"lt\", \"le\"). "
    "Triton's cache keeps the compiled kernel: this shows when it compiles",
}


# Frames of these are symaddr.triton's functions, Triton's compiler and interpreter, and the
# ast module's visitor that Triton's code generator runs on
_INSIDE = (os.path.dirname(os.path.abspath(__file__)) + os.sep,
           os.path.dirname(os.path.abspath(triton.__file__)) + os.sep,
           os.path.abspath(ast.__file__))


def _user_frame():
    """The first frame outside symaddr.triton and Triton: under Triton's interpreter the
    kernel's own line that made the call, compiled the line that launched (or compiled) the
    kernel."""
    f = sys._getframe(2)
    while f is not None and os.path.abspath(f.f_code.co_filename).startswith(_INSIDE):
        f = f.f_back
    return f


@_compile_time
def _deprecated_order(name, _semantic=None):
    """A FutureWarning (shown by default) where a kernel calls name in the 0.x order, said at
    the user's line (_user_frame), once per line as warnings does."""
    name = getattr(name, "value", name)
    text = _FORMS.get(name)
    if text is None:
        old, new = _ORDERS[name]
        text = ("symaddr.triton.%s is the 0.x order, deprecated: it still works, but put, get, "
                "copy and put_signal now take Iris's order in every form, the source before "
                "the destination: %s (symaddr.triton.heap's). Triton's cache keeps the "
                "compiled kernel: this shows when it compiles" % (old, new))
    f = _user_frame()
    if f is None:
        warnings.warn(text, FutureWarning, stacklevel=2)
        return
    glob = f.f_globals
    warnings.warn_explicit(text, FutureWarning, f.f_code.co_filename, f.f_lineno,
                           module=glob.get("__name__"),
                           registry=glob.setdefault("__warningregistry__", {}),
                           module_globals=glob)
