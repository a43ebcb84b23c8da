# SPDX-License-Identifier: MIT
"""Iris's host API on symaddr: `import symaddr.iris as iris`, then an Iris program's
`shmem = iris.iris(heap_size)`, its tensor creation on the symmetric heap, `barrier`,
`broadcast`, logging with the rank, and its device functions (`iris.load`, `iris.store`,
`iris.put`, `iris.get`, `iris.copy`, `iris.atomic_*`, over `heap_bases`), with Iris's names,
argument orders, keywords and defaults.

What symaddr does beyond Iris: the ranks come from MPI (mpiexec) or from torch.distributed
(torchrun, no MPI: symaddr.Context says how); allocate_symmetric (Iris's peer views, and
#546's peer_bases beside them) and the tensors' maps work with any provider, not only the
heap; zero-element tensors are allowed (symaddr
itself refuses 0-byte allocations: they take one element of the heap).

Collectives: shmem.ccl (symaddr.iris.ccl: all_reduce, reduce_scatter, all_gather, all_to_all,
broadcast, barrier, with Config and ReduceOp) on symaddr's collectives: any provider's
tensors, every op, captured by CUDA graphs. Fused ops: shmem.ops (symaddr.iris.ops:
matmul_all_reduce, all_gather_matmul, matmul_all_gather, matmul_reduce_scatter) on
symaddr.ops' kernels.

torch.compile: symaddr.iris.compile.functional_collectives (Iris's setup and
torch.ops.iris.all_reduce, all_gather, reduce_scatter) on torch.ops.symaddr's ops.

Device objects: Iris's DeviceContext, also named TritonContext (initialize(context_tensor, rank, world_size), then
ctx.load/store/get/put/copy/atomic_*), over get_device_context() (the heap) or
get_device_context(t) (any allocation's own table), validated as the explicit form."""
import logging
import math
import operator
import os
import pickle
import weakref
from typing import Any, Tuple

import numpy as np
import torch

import symaddr
from symaddr.iris.ccl import CCL
from symaddr.iris.ops import OpsNamespace
from symaddr.triton.heap import (DeviceContext, atomic_add, atomic_and,  # noqa: F401
                                 atomic_cas, atomic_max, atomic_min, atomic_or, atomic_sub,
                                 atomic_xchg, atomic_xor, copy, get, load, put, store, translate)

TritonContext = DeviceContext  # Iris's newer name of its Triton device object

_NO_TRACING = ("symaddr.iris has no device tracing (Iris's DeviceTracing, TraceEvent, "
               "shmem.tracing): profile with the GPU vendor's tools (nsys, rocprofv3)")


class TraceEvent:
    """Iris's trace event ids: not kept (symaddr.iris has no device tracing)."""

    def __init__(self) -> None:
        raise NotImplementedError(_NO_TRACING)

logger = logging.getLogger("symaddr.iris")

_FORMATS = (torch.contiguous_format, torch.preserve_format, torch.channels_last,
            torch.channels_last_3d)


def _shape(size) -> Tuple[int, ...]:
    """Shapes as torch takes them: ints, a tuple or list, one in another, a torch.Size."""
    while len(size) == 1 and isinstance(size[0], (tuple, list, torch.Size)):
        size = tuple(size[0])
    try:
        shape = tuple(operator.index(d) for d in size)
    except TypeError:
        raise TypeError("size must be ints, or one tuple, list or torch.Size of ints: got %r"
                        % (size,)) from None
    if any(d < 0 for d in shape):
        raise ValueError("negative dimension in size %r" % (shape,))
    return shape


class Iris:
    """Iris's host object over a symaddr.Context with a heap of heap_size bytes (Iris's
    iris.iris(heap_size)). Every tensor it creates lives on that heap, is symmetric (each rank
    makes the same calls in the same order), and its heap_bases serve Iris's device functions.
    Settings of symaddr.Context (backend=, timeout_ms=, group=, comm=, ...) pass through.
    allocator_type: Iris's "torch", "vmem" or "vmem_chunked" (default $IRIS_ALLOCATOR, else
    "torch") are taken and kept (self.allocator_type); symaddr's heap serves each alike, as
    they differ in how Iris reserves its heap, not in what a program sees of it."""

    def __init__(self, heap_size: int = 1 << 30, allocator_type: str = None,
                 **config: Any) -> None:
        allocator_type = allocator_type or os.environ.get("IRIS_ALLOCATOR", "torch")
        if allocator_type not in _ALLOCATORS:
            raise ValueError("allocator_type=%r: pass one of %s" % (
                allocator_type, ", ".join(_ALLOCATORS)))
        self.allocator_type = allocator_type
        _close_dropped()
        self._ctx = symaddr.Context(heap_bytes=heap_size, **config)
        _made.append((self._ctx, weakref.ref(self)))
        ctx = self._ctx
        self.cur_rank, self.num_ranks = ctx.rank, ctx.size
        self.heap_size = heap_size
        self.gpu_id = ctx.device
        self.device = "cuda:%d" % ctx.device if ctx.device >= 0 else "cpu"
        self._device = torch.device(self.device)
        self._empty = {}  # id -> weakref of the zero-element tensors made (data_ptr() is 0)
        self.ccl = CCL(self)
        self.ops = OpsNamespace(self)

    # -- ranks and the heap --------------------------------------------------------------
    def get_rank(self) -> int:
        """This rank."""
        return self.cur_rank

    def get_num_ranks(self) -> int:
        """The number of ranks."""
        return self.num_ranks

    def get_heap_bases(self) -> Any:
        """The heap's table, a torch int64 tensor on this rank's device (zero-copy: the
        library's own table): Iris's heap_bases."""
        hb = self._ctx.heap_bases
        return hb if torch.is_tensor(hb) else torch.from_numpy(hb)

    @property
    def heap_bases(self) -> Any:
        """Iris's attribute: the heap's table, as get_heap_bases()."""
        return self.get_heap_bases()

    def get_device_context(self, tensor: Any = None) -> Any:
        """The context tensor of DeviceContext.initialize(context_tensor, rank, world_size):
        int64 on this rank's device, Iris's layout [cur_rank, num_ranks, bases...] and then
        the address of the table the device methods read. tensor None: the heap's table
        (heap_bases, every tensor this object makes); a symmetric tensor of any provider
        (ipc, vmm, an import): that allocation's own peer_bases, which Iris has no form of.
        The tensor holds the table (and its allocation) alive."""
        if tensor is None:
            if getattr(self, "_heap_context", None) is None:
                self._heap_context = self._context_of(self.get_heap_bases(), None)
            return self._heap_context
        amap = self._ctx.get_symmetric_address_map(tensor)
        return self._context_of(amap.peer_bases, amap)

    def _context_of(self, table: Any, holder: Any) -> Any:
        table = table if torch.is_tensor(table) else torch.from_numpy(table)
        words = [self.cur_rank, self.num_ranks] + table.cpu().tolist() + [table.data_ptr()]
        t = torch.tensor(words, dtype=torch.int64, device=self._device)
        t._symaddr_table = (table, holder)  # the table lives while the context tensor does
        return t

    @property
    def tracing(self) -> Any:
        """Iris's device tracing: not kept; raises NotImplementedError saying what to use."""
        raise NotImplementedError(_NO_TRACING)

    def get_device(self) -> torch.device:
        """The torch device this rank's tensors are on ("cuda:N"; "cpu" on the cpu backend)."""
        return self._device

    def get_cu_count(self) -> int:
        """Compute units (multiprocessors) of this rank's GPU; the CPUs it may run on for the
        cpu backend."""
        if self._device.type == "cuda":
            return torch.cuda.get_device_properties(self._device).multi_processor_count
        return len(os.sched_getaffinity(0))

    @property
    def context(self) -> "symaddr.Context":
        """The symaddr.Context underneath (its collectives, maps and providers)."""
        return self._ctx

    def barrier(self, stream: Any = None, group: Any = None) -> None:
        """Every rank's work so far is done and visible everywhere, as Iris's: the device (or
        only stream, a torch.cuda.Stream) synchronised, then the ranks' barrier. group: None
        or a torch.distributed group of every rank of this object (for a subgroup make an
        Iris object over it, iris.iris(heap_size, group=pg))."""
        self.ccl._group(group, "symaddr.iris.barrier")
        cuda = self._device.type == "cuda"
        if cuda:
            stream.synchronize() if stream is not None else torch.cuda.synchronize(self._device)
        self._ctx.barrier()
        if cuda:
            torch.cuda.synchronize(self._device)

    def device_barrier(self, group: Any = None) -> None:
        """Iris's device-side barrier: on torch's current stream, no rank's stream passes it
        before every rank's stream reached it; no host synchronisation, so a CUDA graph
        captures it. group as barrier's."""
        self.ccl._group(group, "symaddr.iris.device_barrier")
        self._ctx.barrier()

    def broadcast(self, value: Any, source_rank: int = 0) -> Any:
        """source_rank's value on every rank (other ranks may pass None), as Iris returns it:
        a tensor or a NumPy array comes back as a NumPy array (on the host; a bfloat16 tensor,
        which NumPy lacks, raises TypeError: use broadcast_tensor), a scalar or any picklable
        object as itself. Collective."""
        got, was_array = self._broadcast(value, source_rank)
        if not was_array:
            return got
        if got.dtype == torch.bfloat16:
            raise TypeError("broadcast: NumPy has no bfloat16, and Iris returns arrays as NumPy "
                            "arrays: use broadcast_tensor (a tensor on this rank's device)")
        return got.cpu().numpy()

    def broadcast_tensor(self, value: Any, source_rank: int = 0) -> Any:
        """source_rank's tensor (or NumPy array) on every rank as a new torch tensor on this
        rank's device, any dtype (other ranks may pass None). Collective."""
        got, was_array = self._broadcast(value, source_rank)
        if not was_array:
            raise TypeError("broadcast_tensor: source_rank %d passed %s, not a tensor or array: "
                            "use broadcast" % (source_rank, type(got).__name__))
        return got

    def _broadcast(self, value: Any, source_rank: int) -> Tuple[Any, bool]:
        """(source_rank's value, whether it was a tensor or array): an array as a torch
        tensor on this rank's device, anything else unpickled."""
        self._rank_ok(source_rank, "source_rank")
        if self.cur_rank == source_rank:
            if isinstance(value, np.ndarray):
                value = torch.from_numpy(np.ascontiguousarray(value))
            meta = (("tensor", tuple(value.shape), str(value.dtype).replace("torch.", ""))
                    if torch.is_tensor(value) else ("object", pickle.dumps(value)))
            blob = pickle.dumps(meta)
        else:
            blob = b""
        blob = self._bcast_bytes(blob, source_rank)
        meta = pickle.loads(blob)
        if meta[0] == "object":
            return pickle.loads(meta[1]), False
        shape, dtype = meta[1], getattr(torch, meta[2])
        result = torch.empty(shape, dtype=dtype, device=self._device)
        raw = result.reshape(-1).view(torch.uint8)
        if self.cur_rank == source_rank:
            raw.copy_(value.detach().contiguous().reshape(-1).view(torch.uint8))
        raw.copy_(self._bcast_raw(raw, source_rank))
        return result, True

    def _bcast_raw(self, raw: Any, root: int) -> Any:
        """root's bytes (a uint8 tensor of the same length on every rank), moved as int32
        words by the context's broadcast on the heap."""
        words = max((raw.numel() + 3) // 4, 1)
        buf, bmap = self._ctx.allocate_symmetric((words,), torch.int32, provider="heap")
        as_bytes = buf.view(torch.uint8)
        if self.cur_rank == root:
            as_bytes[:raw.numel()].copy_(raw.to(buf.device))
        self._ctx.broadcast(buf, buf, root=root)
        self.barrier()
        got = as_bytes[:raw.numel()].clone()
        self._ctx.free(bmap)
        return got.to(raw.device)

    def _bcast_bytes(self, blob: bytes, root: int) -> bytes:
        n = torch.tensor([len(blob)], dtype=torch.int64).view(torch.uint8)
        size = int(self._bcast_raw(n, root).view(torch.int64)[0])
        data = torch.zeros(size, dtype=torch.uint8)
        if self.cur_rank == root and size:
            data.copy_(torch.frombuffer(bytearray(blob), dtype=torch.uint8))
        return bytes(self._bcast_raw(data, root).cpu().numpy().tobytes())

    # -- logging with the rank -----------------------------------------------------------
    def _log(self, level: int, message: str) -> None:
        if logger.isEnabledFor(level):
            logger.log(level, "[rank %d/%d] %s", self.cur_rank, self.num_ranks, message,
                       extra={"iris_rank": self.cur_rank, "iris_num_ranks": self.num_ranks})

    def debug(self, message: str) -> None:
        """Log at DEBUG, with this rank and the number of ranks (logger "symaddr.iris")."""
        self._log(logging.DEBUG, message)

    def info(self, message: str) -> None:
        """Log at INFO, with the rank."""
        self._log(logging.INFO, message)

    def warning(self, message: str) -> None:
        """Log at WARNING, with the rank."""
        self._log(logging.WARNING, message)

    def error(self, message: str) -> None:
        """Log at ERROR, with the rank."""
        self._log(logging.ERROR, message)

    # -- symmetric tensors ---------------------------------------------------------------
    def _rank_ok(self, r: int, what: str) -> None:
        if not isinstance(r, int) or not 0 <= r < self.num_ranks:
            raise ValueError("%s=%r: pass a rank from 0 to %d" % (what, r, self.num_ranks - 1))

    def _alloc(self, numel: int, dtype: torch.dtype) -> Any:
        """numel elements on the heap, 1-D; a zero-element tensor takes one element."""
        t, _ = self._ctx.allocate_symmetric((max(numel, 1),), dtype, provider="heap")
        if numel == 0:
            t = t[:0]
            self._remember_empty(t)
        return t

    def allocate(self, num_elements: int, dtype: torch.dtype) -> Any:
        """Iris's allocate: num_elements of dtype on the heap, 1-D, uninitialised (as
        empty((num_elements,), dtype=dtype))."""
        return self._alloc(operator.index(num_elements), dtype)

    def __allocate(self, num_elements: int, dtype: torch.dtype) -> Any:
        # Iris's private allocator, which its tests call (shmem._Iris__allocate(n, dtype))
        return self.allocate(num_elements, dtype)

    def __on_symmetric_heap(self, tensor: Any) -> bool:
        # Iris's private check, which its tests call (shmem._Iris__on_symmetric_heap(t))
        return self.is_symmetric(tensor)

    def _check_device(self, device: Any) -> None:
        if device is None:
            return
        d = torch.device(device)
        if d.type != self._device.type or (d.index is not None and d.index != self._device.index):
            raise RuntimeError("Device mismatch: requested device %s but Iris instance is on "
                               "device %s. Iris only supports tensors on its own device: pass "
                               "device=None or %s" % (device, self.device, self.device))

    def _make(self, shape, dtype, out, layout, device, memory_format=torch.contiguous_format,
              like=None):
        """A tensor of shape on the heap (or out, checked), laid out as memory_format."""
        if layout not in (None, torch.strided):
            raise ValueError("layout=%s: symmetric tensors are strided (torch.strided)" % layout)
        if memory_format not in _FORMATS:
            raise ValueError("memory_format=%s: pass one of torch.contiguous_format, "
                             "preserve_format, channels_last, channels_last_3d" % memory_format)
        self._check_device(device)
        numel = math.prod(shape)
        if out is not None:  # Iris's checks, in its order and words
            if out.numel() != numel:
                raise RuntimeError("The output tensor has %d elements, but %d are required"
                                   % (out.numel(), numel))
            if out.dtype != dtype:
                raise RuntimeError("The output tensor has dtype %s, but %s is required"
                                   % (out.dtype, dtype))
            if not self.is_symmetric(out):
                raise RuntimeError("The output tensor is not on the symmetric heap: make it "
                                   "with this object's tensor creation (or allocate)")
            return out if tuple(out.shape) == shape else out.view(shape)  # torch's: out itself
        flat = self._alloc(numel, dtype)
        if memory_format is torch.preserve_format and like is not None:
            if like.is_contiguous():
                memory_format = torch.contiguous_format
            elif like.dim() == 4 and like.is_contiguous(memory_format=torch.channels_last):
                memory_format = torch.channels_last
            elif like.dim() == 5 and like.is_contiguous(memory_format=torch.channels_last_3d):
                memory_format = torch.channels_last_3d
            elif _dense(like):
                return flat.as_strided(shape, like.stride())
            else:
                memory_format = torch.contiguous_format
        if memory_format in (torch.contiguous_format, torch.preserve_format):
            t = flat.view(shape)
        else:
            strides = torch.empty(shape, device="meta", memory_format=memory_format).stride()
            t = flat.as_strided(shape, strides)
        if numel == 0:
            self._remember_empty(t)
        return t

    def _remember_empty(self, t):
        key = id(t)
        self._empty[key] = weakref.ref(t, lambda _r, k=key, d=self._empty: d.pop(k, None))

    def _done(self, t, requires_grad):
        if requires_grad:
            t.requires_grad_()
        return t

    def empty(self, *size, out=None, dtype=None, layout=torch.strided, device=None,
              requires_grad=False, memory_format=torch.contiguous_format):
        """torch.empty on the symmetric heap: contents as the heap left them."""
        t = self._make(_shape(size), dtype or torch.get_default_dtype(), out, layout, device,
                       memory_format)
        return self._done(t, requires_grad)

    def zeros(self, *size, out=None, dtype=None, layout=torch.strided, device=None,
              requires_grad=False):
        """torch.zeros on the symmetric heap (dtype None: torch's default dtype)."""
        t = self._make(_shape(size), dtype or torch.get_default_dtype(), out, layout, device)
        return self._done(t.zero_(), requires_grad)

    def ones(self, *size, out=None, dtype=None, layout=torch.strided, device=None,
             requires_grad=False):
        """torch.ones on the symmetric heap."""
        t = self._make(_shape(size), dtype or torch.get_default_dtype(), out, layout, device)
        return self._done(t.fill_(1), requires_grad)

    def full(self, size, fill_value, *, out=None, dtype=None, layout=torch.strided, device=None,
             requires_grad=False):
        """torch.full on the symmetric heap: dtype None infers it from fill_value as torch does
        (bool, int64, the default float dtype, or its complex counterpart)."""
        if dtype is None:
            dtype = torch.full((), fill_value, device="meta").dtype
        t = self._make(_shape((size,) if isinstance(size, int) else tuple(size)), dtype, out,
                       layout, device)
        return self._done(t.fill_(fill_value), requires_grad)

    def arange(self, start=0, end=None, step=1, *, out=None, dtype=None, layout=torch.strided,
               device=None, requires_grad=False):
        """torch.arange on the symmetric heap (one argument is end; dtype as torch infers it)."""
        if end is None:
            start, end = 0, start
        if step == 0:  # Iris's checks and words (torch raises RuntimeError)
            raise ValueError("step must be non-zero")
        if (end - start) * step < 0:
            raise ValueError("arange(%s, %s, %s): the range is empty in the step's direction: "
                             "upper bound and larger bound inconsistent with step sign"
                             % (start, end, step))
        ref = torch.arange(start, end, step, dtype=dtype, device="meta")
        t = self._make(tuple(ref.shape), ref.dtype, out, layout, device)
        t.copy_(torch.arange(start, end, step, dtype=ref.dtype, device=t.device))
        return self._done(t, requires_grad)

    def linspace(self, start, end, steps, *, out=None, dtype=None, layout=torch.strided,
                 device=None, requires_grad=False):
        """torch.linspace on the symmetric heap."""
        dtype = dtype or torch.get_default_dtype()
        t = self._make((operator.index(steps),), dtype, out, layout, device)
        t.copy_(torch.linspace(start, end, steps, dtype=dtype, device=t.device))
        return self._done(t, requires_grad)

    def _draw(self, t, fn, generator, requires_grad, *args):
        """t filled with fn's draw (torch.rand, randn, or randint after its args) of t's shape,
        dtype and device from generator: torch's own values for the same seed."""
        t.copy_(fn(*args, t.shape, generator=generator, dtype=t.dtype, device=t.device))
        return self._done(t, requires_grad)

    def _random(self, fn, shape, generator, out, dtype, layout, device, requires_grad, *args):
        return self._draw(self._make(shape, dtype, out, layout, device), fn, generator,
                          requires_grad, *args)

    def rand(self, *size, generator=None, out=None, dtype=None, layout=torch.strided,
             device=None, requires_grad=False):
        """torch.rand on the symmetric heap (generator: torch's, on this rank's device)."""
        return self._random(torch.rand, _shape(size), generator, out,
                            dtype or torch.get_default_dtype(), layout, device, requires_grad)

    def randn(self, *size, generator=None, out=None, dtype=None, layout=torch.strided,
              device=None, requires_grad=False):
        """torch.randn on the symmetric heap."""
        return self._random(torch.randn, _shape(size), generator, out,
                            dtype or torch.get_default_dtype(), layout, device, requires_grad)

    def randint(self, *args, generator=None, out=None, dtype=None, layout=torch.strided,
                device=None, requires_grad=False):
        """torch.randint on the symmetric heap: randint(high, size) or randint(low, high,
        size); dtype None: int64."""
        if len(args) == 2:
            low, (high, size) = 0, args
        elif len(args) == 3:
            low, high, size = args
        else:
            raise TypeError("randint(high, size) or randint(low, high, size): got %d "
                            "positional arguments" % len(args))
        return self._random(torch.randint, _shape(tuple(size)), generator, out,
                            dtype or torch.int64, layout, device, requires_grad, low, high)

    def uniform(self, size, low=0.0, high=1.0, dtype=torch.float):
        """Iris's uniform(size, low, high, dtype): values drawn uniformly from [low, high)."""
        shape = _shape((size,) if isinstance(size, int) else tuple(size))
        t = self._make(shape, dtype, None, torch.strided, None)
        return t.uniform_(low, high)

    def empty_like(self, input, *, dtype=None, layout=None, device=None, requires_grad=False,
                   memory_format=torch.preserve_format):
        """torch.empty_like on the symmetric heap (preserve_format keeps input's layout).
        memory_format follows torch, as every _like form here: channels_last and
        channels_last_3d keep input's shape and lay the strides out channels-last, where Iris
        returns the shape permuted to (N, H, W, C) (its tests check that; symaddr does not)."""
        t = self._make(tuple(input.shape), dtype or input.dtype, None, layout or input.layout,
                       device, memory_format, input)
        return self._done(t, requires_grad)

    def zeros_like(self, input, *, dtype=None, layout=None, device=None, requires_grad=False,
                   memory_format=torch.preserve_format):
        """torch.zeros_like on the symmetric heap."""
        t = self.empty_like(input, dtype=dtype, layout=layout, device=device,
                            memory_format=memory_format)
        return self._done(t.zero_(), requires_grad)

    def ones_like(self, input, *, dtype=None, layout=None, device=None, requires_grad=False,
                  memory_format=torch.preserve_format):
        """torch.ones_like on the symmetric heap."""
        t = self.empty_like(input, dtype=dtype, layout=layout, device=device,
                            memory_format=memory_format)
        return self._done(t.fill_(1), requires_grad)

    def full_like(self, input, fill_value, *, dtype=None, layout=None, device=None,
                  requires_grad=False, memory_format=torch.preserve_format):
        """torch.full_like on the symmetric heap."""
        t = self.empty_like(input, dtype=dtype, layout=layout, device=device,
                            memory_format=memory_format)
        return self._done(t.fill_(fill_value), requires_grad)

    def rand_like(self, input, *, generator=None, dtype=None, layout=None, device=None,
                  requires_grad=False, memory_format=torch.preserve_format):
        """torch.rand_like on the symmetric heap."""
        t = self.empty_like(input, dtype=dtype, layout=layout, device=device,
                            memory_format=memory_format)
        return self._draw(t, torch.rand, generator, requires_grad)

    def randn_like(self, input, *, generator=None, dtype=None, layout=None, device=None,
                   requires_grad=False, memory_format=torch.preserve_format):
        """torch.randn_like on the symmetric heap."""
        t = self.empty_like(input, dtype=dtype, layout=layout, device=device,
                            memory_format=memory_format)
        return self._draw(t, torch.randn, generator, requires_grad)

    def randint_like(self, input, low=0, high=None, *, generator=None, dtype=None, layout=None,
                     device=None, requires_grad=False, memory_format=torch.preserve_format):
        """torch.randint_like on the symmetric heap: randint_like(input, high) or
        randint_like(input, low, high)."""
        if high is None:
            low, high = 0, low
        t = self.empty_like(input, dtype=dtype, layout=layout, device=device,
                            memory_format=memory_format)
        return self._draw(t, torch.randint, generator, requires_grad, low, high)

    def is_symmetric(self, tensor: Any) -> bool:
        """Whether tensor's memory (its first element) is an allocation of this context, so
        that its address translates to every rank's copy. Never raises."""
        try:
            if not torch.is_tensor(tensor):
                return False
            if tensor.numel() == 0:  # torch gives it no address: one of those made here
                ref = self._empty.get(id(tensor))
                return ref is not None and ref() is tensor
            # its address: a zero-element tensor's too (the element of the heap it took)
            self._ctx.get_symmetric_address_map(tensor.data_ptr())
            return True
        except Exception:  # noqa: BLE001  introspection never raises
            return False

    def as_symmetric(self, tensor: Any) -> Any:
        """A symmetric tensor holding tensor's values: tensor itself when it is symmetric,
        else a copy on the heap (collective: every rank calls it with the same shape and
        dtype)."""
        if self.is_symmetric(tensor):
            return tensor
        t = self._make(tuple(tensor.shape), tensor.dtype, None, torch.strided, None)
        return t.copy_(tensor)

    def allocate_symmetric(self, size: Any, dtype: Any = None,
                           provider: str = "heap") -> Tuple[Any, "PeerViews"]:
        """Iris's call: a tensor of size (an int or a shape) and dtype (None: torch's default)
        and its peer views, peer_views(tensor): one tensor per rank, rank r's copy as this
        process reaches it, which a kernel takes as a tuple of pointers (Iris: "translation
        happened on the host, once per allocation"). Beyond Iris: provider "heap" (Iris's
        heap), "ipc" or "vmm" (an allocation of its own), and the views' peer_bases, the
        allocation's own table, for kernels written against #546's (tensor, peer_bases)."""
        shape = (operator.index(size),) if not isinstance(size, (tuple, list, torch.Size)) \
            else _shape((size,))
        t, _ = self._ctx.allocate_symmetric(shape, dtype or torch.get_default_dtype(),
                                            provider=provider)
        return t, self.peer_views(t)

    def peer_views(self, tensor: Any) -> "PeerViews":
        """Iris's: world_size tensors of tensor's shape, strides and dtype, one per rank, in
        rank order: rank r's copy of tensor's memory (a view of a symmetric allocation at any
        offset) as this process reaches it, this rank's being tensor itself. They keep the
        allocation mapped while they live, as its own tensors do. A tensor that is not
        symmetric raises SymaddrError (SYMADDR_ERR_NOT_FOUND); a rank this process does not
        reach by loads and stores (another node), SYMADDR_ERR_UNSUPPORTED."""
        ctx = self._ctx
        m = ctx.get_symmetric_address_map(tensor)
        table, me = m._host_table(), m.local_rank
        off = tensor.data_ptr() - table[me]
        span = 1 + sum((d - 1) * st for d, st in zip(tensor.shape, tensor.stride())) \
            if tensor.numel() else 0
        views = []
        for r in range(m.world_size):
            if r == me:
                views.append(tensor)
                continue
            if not table[r]:
                raise symaddr.SymaddrError(
                    symaddr.STATUS["SYMADDR_ERR_UNSUPPORTED"],
                    "peer_views: rank %d's copy is not reachable from this process (another "
                    "node): pass peer_views(t).peer_bases or get_heap_bases() to a kernel that "
                    "translates, and reach that rank through symaddr's RMA" % r)
            flat = ctx._array(table[r] + off, (span,), tensor.dtype, m._reg, True)
            views.append(flat.as_strided(tuple(tensor.shape), tuple(tensor.stride())))
        return PeerViews(views, m)


class PeerViews(tuple):
    """peer_views' tensors, one per rank (a tuple: what Iris returns and a Triton kernel
    takes), and the allocation's map: .peer_bases, its table."""

    def __new__(cls, views, amap=None):  # (Triton remakes a tuple argument by its type)
        self = super().__new__(cls, views)
        self._map = amap
        return self

    @property
    def peer_bases(self) -> Any:
        """The allocation's peer_bases (int64, on the device), as #546's kernels take it."""
        return self._map.peer_bases


_ALLOCATORS = ("torch", "vmem", "vmem_chunked")  # Iris's names
_made = []  # (context, weak reference to its Iris object), in the order every rank made them


def _close_dropped() -> None:
    """Close the contexts of Iris objects every rank has dropped (del shmem, as Iris's tests
    do between cases: Iris frees its heap then), agreed over the ranks of the last one made so
    that no rank closes alone; at the next iris.iris() of the same ranks, so that a program
    that makes one object per test does not hold every heap at once."""
    live = [(c, r) for c, r in _made if c._h]
    _made[:] = live
    if not live:
        return
    ranks = live[-1][0]._ranks
    if getattr(ranks, "group", None) is not None and ranks._gone():
        return
    flags = ranks.agree_min([int(r() is None) for _, r in live], live[-1][0].timeout_ms / 1e3,
                            lambda why: why)
    for (c, _), dropped in zip(live, flags):
        if dropped:
            c.close()
    _made[:] = [(c, r) for c, r in live if c._h]


def iris(heap_size: int = 1 << 30, allocator_type: str = None, **config: Any) -> Iris:
    """Iris's constructor: an Iris host object with a symmetric heap of heap_size bytes."""
    return Iris(heap_size, allocator_type, **config)


def _dense(t: Any) -> bool:
    """Whether t's strides cover exactly its elements (a permutation of a contiguous
    layout), as torch's preserve_format keeps them."""
    dims = sorted((s, n) for s, n in zip(t.stride(), t.shape) if n != 1)
    expect = 1
    for s, n in dims:
        if s != expect:
            return False
        expect *= n
    return True


__all__ = ["Iris", "iris", "DeviceContext", "TritonContext", "TraceEvent", "load", "store", "get", "put", "copy", "translate", "atomic_add",
           "atomic_sub", "atomic_cas", "atomic_xchg", "atomic_xor", "atomic_and", "atomic_or",
           "atomic_min", "atomic_max"]
