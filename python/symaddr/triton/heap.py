# SPDX-License-Identifier: MIT
"""The heap_bases form: Iris's device API, name for name, argument for argument, keyword for
keyword, so that a kernel written for Iris runs on symaddr by changing its import:

    from symaddr.triton import heap as iris
    iris.store(buffer + offsets, 1, cur_rank, target_rank, heap_bases, mask=mask)

The table slot takes Context.heap_bases (the table of every heap allocation) or any map's
peer_bases (an ipc, vmm, import or foreign allocation's own table): translation needs only the
pointer's own allocation's table. Each function is the explicit form of symaddr.triton with
Iris's rank order: the pointer is this rank's (from_rank for store, put and the atomics,
to_rank for load and get, cur_rank for copy). Keywords as Iris takes them: mask, other,
cache_modifier, volatile, sem, scope, load_cache_modifier, store_cache_modifier, and hint (a
vectorisation hint for the translated pointer)."""
import triton
import triton.language as tl  # noqa: F401  (Triton's interpreter patches the jit functions' tl)

from triton.language.core import _aggregate

from symaddr import triton as sym


@triton.jit
def translate(ptr, from_rank, to_rank, heap_bases, hint: tl.constexpr = None):
    """ptr of from_rank (this rank) as to_rank's copy."""
    return sym._hinted(sym.translate(ptr, to_rank, heap_bases, from_rank), hint)


@triton.jit
def load(pointer, to_rank, from_rank, heap_bases, mask=None, other=None, cache_modifier=None,
         volatile=False, hint: tl.constexpr = None):
    """Load from from_rank's copy of pointer; to_rank is this rank (Iris's order)."""
    return sym.load(pointer, from_rank, heap_bases, to_rank, mask=mask, other=other,
                    cache_modifier=cache_modifier, volatile=volatile, hint=hint)


@triton.jit
def store(pointer, value, from_rank, to_rank, heap_bases, mask=None, hint: tl.constexpr = None,
          cache_modifier=None):
    """Store into to_rank's copy of pointer; from_rank is this rank."""
    sym.store(pointer, value, to_rank, heap_bases, from_rank, mask=mask,
              cache_modifier=cache_modifier, hint=hint)


@triton.jit
def copy(src_ptr, dst_ptr, from_rank, to_rank, cur_rank, heap_bases, mask=None, other=None,
         load_cache_modifier=None, store_cache_modifier=None, hint: tl.constexpr = None):
    """to_rank's copy of dst_ptr = from_rank's copy of src_ptr; both pointers are cur_rank's,
    which is from_rank or to_rank."""
    sym._copy(dst_ptr, src_ptr, to_rank, from_rank, heap_bases, cur_rank, mask=mask,
              other=other, load_cache_modifier=load_cache_modifier,
              store_cache_modifier=store_cache_modifier, hint=hint)


@triton.jit
def get(from_ptr, to_ptr, from_rank, to_rank, heap_bases, mask=None, other=None,
        load_cache_modifier=None, store_cache_modifier=None, hint: tl.constexpr = None):
    """to_ptr (local) = to_rank's copy of from_ptr; from_rank is this rank (the rank whose
    address space both pointers are in), as Iris's code and its own tests call it."""
    sym._get(to_ptr, from_ptr, to_rank, heap_bases, from_rank, mask=mask, other=other,
             load_cache_modifier=load_cache_modifier, store_cache_modifier=store_cache_modifier,
             hint=hint)


@triton.jit
def put(from_ptr, to_ptr, from_rank, to_rank, heap_bases, mask=None, other=None,
        load_cache_modifier=None, store_cache_modifier=None, hint: tl.constexpr = None):
    """to_rank's copy of to_ptr = from_ptr (local, from_rank is this rank)."""
    sym._put(to_ptr, from_ptr, to_rank, heap_bases, from_rank, mask=mask, other=other,
             load_cache_modifier=load_cache_modifier, store_cache_modifier=store_cache_modifier,
             hint=hint)


@triton.jit
def atomic_add(pointer, val, from_rank, to_rank, heap_bases, mask=None, sem=None, scope=None,
               hint: tl.constexpr = None):
    """Add val atomically on to_rank's copy of pointer; returns the old values."""
    return sym.atomic_add(pointer, val, to_rank, heap_bases, from_rank, mask=mask, sem=sem,
                          scope=scope, hint=hint)


@triton.jit
def atomic_sub(pointer, val, from_rank, to_rank, heap_bases, mask=None, sem=None, scope=None,
               hint: tl.constexpr = None):
    """Subtract val atomically on to_rank's copy of pointer; returns the old values."""
    return sym.atomic_sub(pointer, val, to_rank, heap_bases, from_rank, mask=mask, sem=sem,
                          scope=scope, hint=hint)


@triton.jit
def atomic_cas(pointer, cmp, val, from_rank, to_rank, heap_bases, sem=None, scope=None,
               hint: tl.constexpr = None):
    """Compare-and-swap on to_rank's copy of pointer; returns the old values."""
    return sym.atomic_cas(pointer, cmp, val, to_rank, heap_bases, from_rank, sem=sem,
                          scope=scope, hint=hint)


@triton.jit
def atomic_xchg(pointer, val, from_rank, to_rank, heap_bases, mask=None, sem=None, scope=None,
                hint: tl.constexpr = None):
    """Exchange on to_rank's copy of pointer; returns the old values."""
    return sym.atomic_xchg(pointer, val, to_rank, heap_bases, from_rank, mask=mask, sem=sem,
                           scope=scope, hint=hint)


@triton.jit
def atomic_xor(pointer, val, from_rank, to_rank, heap_bases, mask=None, sem=None, scope=None,
               hint: tl.constexpr = None):
    """Xor on to_rank's copy of pointer; returns the old values."""
    return sym.atomic_xor(pointer, val, to_rank, heap_bases, from_rank, mask=mask, sem=sem,
                          scope=scope, hint=hint)


@triton.jit
def atomic_and(pointer, val, from_rank, to_rank, heap_bases, mask=None, sem=None, scope=None,
               hint: tl.constexpr = None):
    """And on to_rank's copy of pointer; returns the old values."""
    return sym.atomic_and(pointer, val, to_rank, heap_bases, from_rank, mask=mask, sem=sem,
                          scope=scope, hint=hint)


@triton.jit
def atomic_or(pointer, val, from_rank, to_rank, heap_bases, mask=None, sem=None, scope=None,
              hint: tl.constexpr = None):
    """Or on to_rank's copy of pointer; returns the old values."""
    return sym.atomic_or(pointer, val, to_rank, heap_bases, from_rank, mask=mask, sem=sem,
                         scope=scope, hint=hint)


@triton.jit
def atomic_min(pointer, val, from_rank, to_rank, heap_bases, mask=None, sem=None, scope=None,
               hint: tl.constexpr = None):
    """Min on to_rank's copy of pointer; returns the old values."""
    return sym.atomic_min(pointer, val, to_rank, heap_bases, from_rank, mask=mask, sem=sem,
                          scope=scope, hint=hint)


@triton.jit
def atomic_max(pointer, val, from_rank, to_rank, heap_bases, mask=None, sem=None, scope=None,
               hint: tl.constexpr = None):
    """Max on to_rank's copy of pointer; returns the old values."""
    return sym.atomic_max(pointer, val, to_rank, heap_bases, from_rank, mask=mask, sem=sem,
                          scope=scope, hint=hint)


@triton.jit
def signal_set(pointer, value, from_rank, to_rank, heap_bases):
    """Set to_rank's copy of the flag pointer to value, after this rank's earlier stores."""
    sym.signal_set(pointer, value, to_rank, heap_bases, from_rank)


@triton.jit
def signal_add(pointer, value, from_rank, to_rank, heap_bases):
    """Add value to to_rank's copy of the flag pointer, after this rank's earlier stores."""
    sym.signal_add(pointer, value, to_rank, heap_bases, from_rank)


@triton.jit
def signal_wait_until(pointer, cmp, value, timeout_ns=sym.DEFAULT_TIMEOUT_NS):
    """Wait until this rank's flag compares to value as cmp says ("eq", "ne", "gt", "ge",
    "lt", "le"), at most timeout_ns: symaddr.triton.OK or TIMEOUT."""
    return sym.signal_wait_until(pointer, cmp, value, timeout_ns)


@triton.jit
def put_signal(from_ptr, to_ptr, sig, sig_value, from_rank, to_rank, heap_bases, mask=None,
               sig_op: tl.constexpr = None):
    """to_rank's copy of to_ptr = from_ptr (local), then its copy of the flag sig set to (or,
    sig_op "add", increased by) sig_value."""
    sym._put_signal(to_ptr, from_ptr, sig, sig_value, to_rank, heap_bases, from_rank,
                    mask=mask, sig_op=sig_op)


@triton.jit
def fence(heap_bases):
    """This program's earlier stores before its later ones, for every rank."""
    sym.fence(heap_bases)


@triton.jit
def quiet(heap_bases):
    """This program's earlier stores complete at every rank."""
    sym.quiet(heap_bases)


def aggregate(cls):
    """Triton's aggregate, with the members it skips under the interpreter (whose jit
    functions are not JITCallables) set on it as well, and every member documented."""
    agg = _aggregate(cls)
    for name, member in vars(cls).items():
        if name.startswith("__") or (hasattr(agg, name) and getattr(agg, name).__doc__):
            continue
        fn = member.__func__ if isinstance(member, staticmethod) else member
        doc = getattr(getattr(fn, "fn", fn), "__doc__", None)
        if isinstance(member, staticmethod):
            def plain(*a, _fn=fn, **k):
                return _fn(*a, **k)
            plain.__doc__ = doc
            call = staticmethod(plain)
        else:  # bound by hand: no descriptor of its own
            def call(self, *a, _fn=fn, **k):
                return _fn(self, *a, **k)
            call.__doc__ = doc
        setattr(agg, name, call)
    prop = vars(agg).get("type")
    if isinstance(prop, property) and not prop.__doc__:
        agg.type = property(prop.fget, prop.fset, prop.fdel, "Triton's type of the value.")
    return agg


@aggregate
class DeviceContext:
    """Iris's device object: this rank, the world size and a table, so that a kernel passes
    one context tensor instead of heap_bases to every call:

        ctx = DeviceContext.initialize(context_tensor, rank, world_size)
        x = ctx.load(buf + offs, from_rank=1, mask=m)
        ctx.store(buf + offs, x, to_rank=1, mask=m)

    context_tensor is Iris.get_device_context() (heap_bases: every heap allocation) or
    Iris.get_device_context(t) for any symmetric tensor t (that allocation's own peer_bases:
    ipc, vmm, an import). Its layout is Iris's, [cur_rank, num_ranks, bases...], followed by
    the address of symaddr's table itself, which the methods read: under SYMADDR_VALIDATE they
    are checked lane by lane as the explicit form is (a copy of the bases would be refused
    whole). Each method is the function of this module of the same name with this rank filled
    in: load(pointer, from_rank), store(pointer, value, to_rank), get(from_ptr, to_ptr,
    from_rank), put(from_ptr, to_ptr, to_rank), copy(src_ptr, dst_ptr, from_rank, to_rank) and
    the atomics (pointer, val, to_rank), with Iris's keywords. Iris's device tracing is not
    kept: initialize(..., tracing=True) fails to compile, saying so."""

    rank: tl.constexpr
    world_size: tl.constexpr
    heap_bases: tl.tensor

    @triton.constexpr_function
    def __init__(self, rank, world_size, heap_bases):
        self.rank = tl.constexpr(rank)
        self.world_size = tl.constexpr(world_size)
        self.heap_bases = heap_bases

    @staticmethod
    @triton.jit
    def initialize(context_tensor, rank, world_size, tracing: tl.constexpr = False):
        """The context of context_tensor (Iris.get_device_context()); rank and world_size are
        the kernel's constexpr arguments, as Iris takes them."""
        tl.static_assert(not tracing, "symaddr.iris: DeviceContext tracing is not supported; "
                         "profile with the GPU vendor's tools (nsys, rocprofv3)")
        table = tl.load(context_tensor + 2 + world_size).to(tl.pointer_type(tl.int64))
        return DeviceContext(rank, world_size, table)

    @triton.jit
    def _translate(self, ptr, from_rank, to_rank, hint: tl.constexpr = None):
        return translate(ptr, from_rank, to_rank, self.heap_bases, hint)

    @triton.jit
    def load(self, pointer, from_rank, mask=None, other=None, cache_modifier=None,
             volatile=False, hint: tl.constexpr = None):
        """from_rank's copy of pointer, loaded."""
        return load(pointer, self.rank, from_rank, self.heap_bases, mask=mask, other=other,
                    cache_modifier=cache_modifier, volatile=volatile, hint=hint)

    @triton.jit
    def store(self, pointer, value, to_rank, mask=None, cache_modifier=None,
              hint: tl.constexpr = None):
        """to_rank's copy of pointer = value."""
        store(pointer, value, self.rank, to_rank, self.heap_bases, mask=mask, hint=hint,
              cache_modifier=cache_modifier)

    @triton.jit
    def get(self, from_ptr, to_ptr, from_rank, mask=None, other=None, load_cache_modifier=None,
            store_cache_modifier=None, hint: tl.constexpr = None):
        """to_ptr (local) = from_rank's copy of from_ptr."""
        get(from_ptr, to_ptr, self.rank, from_rank, self.heap_bases, mask=mask, other=other,
            load_cache_modifier=load_cache_modifier, store_cache_modifier=store_cache_modifier,
            hint=hint)

    @triton.jit
    def put(self, from_ptr, to_ptr, to_rank, mask=None, other=None, load_cache_modifier=None,
            store_cache_modifier=None, hint: tl.constexpr = None):
        """to_rank's copy of to_ptr = from_ptr (local)."""
        put(from_ptr, to_ptr, self.rank, to_rank, self.heap_bases, mask=mask, other=other,
            load_cache_modifier=load_cache_modifier, store_cache_modifier=store_cache_modifier,
            hint=hint)

    @triton.jit
    def copy(self, src_ptr, dst_ptr, from_rank, to_rank, mask=None, other=None,
             load_cache_modifier=None, store_cache_modifier=None, hint: tl.constexpr = None):
        """to_rank's copy of dst_ptr = from_rank's copy of src_ptr (this rank is one of them)."""
        copy(src_ptr, dst_ptr, from_rank, to_rank, self.rank, self.heap_bases, mask=mask,
             other=other, load_cache_modifier=load_cache_modifier,
             store_cache_modifier=store_cache_modifier, hint=hint)

    @triton.jit
    def atomic_add(self, pointer, val, to_rank, mask=None, sem=None, scope=None,
                   hint: tl.constexpr = None):
        """Atomic add on to_rank's copy; the old values."""
        return atomic_add(pointer, val, self.rank, to_rank, self.heap_bases, mask=mask, sem=sem,
                          scope=scope, hint=hint)

    @triton.jit
    def atomic_sub(self, pointer, val, to_rank, mask=None, sem=None, scope=None,
                   hint: tl.constexpr = None):
        """Atomic subtract on to_rank's copy; the old values."""
        return atomic_sub(pointer, val, self.rank, to_rank, self.heap_bases, mask=mask, sem=sem,
                          scope=scope, hint=hint)

    @triton.jit
    def atomic_cas(self, pointer, cmp, val, to_rank, sem=None, scope=None,
                   hint: tl.constexpr = None):
        """Atomic compare-and-swap on to_rank's copy; the old values."""
        return atomic_cas(pointer, cmp, val, self.rank, to_rank, self.heap_bases, sem=sem,
                          scope=scope, hint=hint)

    @triton.jit
    def atomic_xchg(self, pointer, val, to_rank, mask=None, sem=None, scope=None,
                    hint: tl.constexpr = None):
        """Atomic exchange on to_rank's copy; the old values."""
        return atomic_xchg(pointer, val, self.rank, to_rank, self.heap_bases, mask=mask,
                           sem=sem, scope=scope, hint=hint)

    @triton.jit
    def atomic_xor(self, pointer, val, to_rank, mask=None, sem=None, scope=None,
                   hint: tl.constexpr = None):
        """Atomic xor on to_rank's copy; the old values."""
        return atomic_xor(pointer, val, self.rank, to_rank, self.heap_bases, mask=mask, sem=sem,
                          scope=scope, hint=hint)

    @triton.jit
    def atomic_and(self, pointer, val, to_rank, mask=None, sem=None, scope=None,
                   hint: tl.constexpr = None):
        """Atomic and on to_rank's copy; the old values."""
        return atomic_and(pointer, val, self.rank, to_rank, self.heap_bases, mask=mask, sem=sem,
                          scope=scope, hint=hint)

    @triton.jit
    def atomic_or(self, pointer, val, to_rank, mask=None, sem=None, scope=None,
                  hint: tl.constexpr = None):
        """Atomic or on to_rank's copy; the old values."""
        return atomic_or(pointer, val, self.rank, to_rank, self.heap_bases, mask=mask, sem=sem,
                         scope=scope, hint=hint)

    @triton.jit
    def atomic_min(self, pointer, val, to_rank, mask=None, sem=None, scope=None,
                   hint: tl.constexpr = None):
        """Atomic min on to_rank's copy; the old values."""
        return atomic_min(pointer, val, self.rank, to_rank, self.heap_bases, mask=mask, sem=sem,
                          scope=scope, hint=hint)

    @triton.jit
    def atomic_max(self, pointer, val, to_rank, mask=None, sem=None, scope=None,
                   hint: tl.constexpr = None):
        """Atomic max on to_rank's copy; the old values."""
        return atomic_max(pointer, val, self.rank, to_rank, self.heap_bases, mask=mask, sem=sem,
                          scope=scope, hint=hint)
