# SPDX-License-Identifier: MIT
"""Arrays over symaddr memory: NumPy on the host (the cpu backend), torch tensors where torch
is installed. Each array of an allocation carries the allocation's Life: once the memory is
freed, or its context closed, using the array raises SymaddrError instead of reaching memory
that may be gone. NumPy arrays also speak the part of torch's tensor protocol that Triton's
interpreter uses (data_ptr, untyped_storage, storage_offset, stride), so they go straight into
a @triton.jit kernel under TRITON_INTERPRET=1."""
import ctypes
import sys

from ._lib import SymaddrError, STATUS


class Life:
    """Whether the memory behind some arrays and maps may still be used."""
    __slots__ = ("base", "nbytes", "why", "_what")

    def __init__(self, base, nbytes, what):
        # what: a text, or a format and its arguments (formatted only when a message needs it)
        self.base, self.nbytes, self._what, self.why = base, nbytes, what, None

    @property
    def what(self):
        return self._what if isinstance(self._what, str) else self._what[0] % self._what[1:]

    def end(self, why):
        if self.why is None:
            self.why = why

    @property
    def alive(self):
        return self.why is None

    def check(self):
        if self.why is not None:
            raise SymaddrError(STATUS["SYMADDR_ERR_INVALID_MAP"],
                               "%s was %s: it can no longer be used; keep the memory (or the "
                               "context) until its last use, or allocate anew" % (self.what,
                                                                                self.why))

    def holds(self, addr):
        return self.base <= addr < self.base + max(self.nbytes, 1)


def is_torch(a):
    t = sys.modules.get("torch")  # whoever holds a tensor imported torch already
    return t is not None and isinstance(a, t.Tensor)


def address(a):
    """The address of an array's first element (an int passes as is)."""
    if isinstance(a, int):
        return a
    if is_torch(a) or isinstance(a, HostArray):
        return a.data_ptr()
    return a.__array_interface__["data"][0]


def check_life(a):
    life = getattr(a, "_symaddr_life", None)
    if life is not None:
        life.check()


# ---- NumPy ---------------------------------------------------------------------------------

try:
    import numpy as np
except ImportError:  # torch-only installs
    np = None


class _Count(int):
    """ndarray.size (an int) that can also be called as torch's size() (the shape), which is
    what Triton's interpreter asks of an argument."""

    def __new__(cls, value, shape):
        n = int.__new__(cls, value)
        n.shape = shape
        return n

    def __call__(self, dim=None):
        return self.shape if dim is None else self.shape[dim]


class _Storage:
    """The whole allocation, as torch's untyped_storage() stands for it (Triton's interpreter
    copies a tensor's storage to the host and back: this memory is the host's already)."""

    def __init__(self, base, nbytes):
        self.base, self.nbytes = base, nbytes

    def data_ptr(self):
        return self.base

    def cpu(self):
        return self

    def copy_(self, other):
        if other.data_ptr() != self.base:
            ctypes.memmove(self.base, other.data_ptr(), min(self.nbytes, other.nbytes))
        return self


class _Placeholder:
    """What new_empty(0) and set_(storage, offset, size, stride) build in Triton's interpreter:
    an argument at an element offset into a storage."""

    def __init__(self, dtype):
        self.dtype, self._storage, self._ptr = dtype, None, 0

    def set_(self, storage, offset, size=None, stride=None):
        self._storage = storage
        self._ptr = storage.data_ptr() + offset * self.dtype.itemsize
        return self

    def data_ptr(self):
        return self._ptr

    def untyped_storage(self):
        return self._storage


if np is not None:
    class HostArray(np.ndarray):
        """A NumPy array over symaddr memory (symaddr's own, an import's, another library's).
        It is a plain ndarray for NumPy code, refuses use once its memory was freed, and passes
        to a Triton kernel as a pointer to its first element."""

        _symaddr_life = None

        def __array_finalize__(self, obj):
            if type(obj) is not HostArray:  # made from a buffer (host_array): no life yet
                return
            life = obj._symaddr_life
            # a view of the allocation keeps its life; a new result of an operation is the
            # caller's own memory
            if life is not None and life.holds(self.__array_interface__["data"][0]):
                self._symaddr_life = life
            else:
                self._symaddr_life = None

        def _check(self):
            if self._symaddr_life is not None:
                self._symaddr_life.check()

        def __getitem__(self, key):
            self._check()
            return super().__getitem__(key)

        def __setitem__(self, key, value):
            self._check()
            super().__setitem__(key, value)

        def __iter__(self):
            self._check()
            return super().__iter__()

        def __repr__(self):
            if self._symaddr_life is not None and not self._symaddr_life.alive:
                return "<symaddr array of %s: %s>" % (self._symaddr_life.what,
                                                     self._symaddr_life.why)
            return super().__repr__()

        def __str__(self):
            self._check()
            return super().__str__()

        def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
            for x in inputs + tuple(kwargs.get("out", ()) or ()):
                check_life(x)
            plain = tuple(x.view(np.ndarray) if isinstance(x, HostArray) else x for x in inputs)
            out = kwargs.get("out")
            if out:
                kwargs["out"] = tuple(x.view(np.ndarray) if isinstance(x, HostArray) else x
                                      for x in out)
            result = getattr(ufunc, method)(*plain, **kwargs)
            if out:  # in place (a += 1): the caller keeps its own arrays
                return out[0] if len(out) == 1 else out
            return result

        def __array_function__(self, func, types, args, kwargs):
            for x in _leaves(args, kwargs):
                check_life(x)
            return super().__array_function__(func, types, args, kwargs)

        def tobytes(self, *a, **k):
            self._check()
            return super().tobytes(*a, **k)

        def tolist(self):
            self._check()
            return super().tolist()

        def copy(self, *a, **k):
            self._check()
            return super().copy(*a, **k).view(np.ndarray)

        # -- the part of torch's tensor protocol that Triton's interpreter uses --

        @property
        def size(self):
            return _Count(np.ndarray.size.__get__(self), tuple(self.shape))

        def data_ptr(self):
            self._check()
            return self.__array_interface__["data"][0]

        def element_size(self):
            return self.itemsize

        def untyped_storage(self):
            # the memory from this array's first element on: Triton's interpreter rebuilds the
            # argument as storage + storage_offset(), so offset 0 keeps any view exact
            self._check()
            return _Storage(self.__array_interface__["data"][0], self.nbytes)

        def storage_offset(self):
            return 0

        def stride(self, dim=None):
            s = tuple(x // self.itemsize for x in self.strides)
            return s if dim is None else s[dim]

        def new_empty(self, *args, **kwargs):
            return _Placeholder(self.dtype)

        def is_contiguous(self):
            return bool(self.flags["C_CONTIGUOUS"])
else:
    HostArray = None


def _leaves(args, kwargs):
    for x in list(args) + list(kwargs.values()):
        if isinstance(x, (list, tuple)):
            yield from _leaves(x, {})
        else:
            yield x


def numpy_dtype(dtype):
    """A NumPy dtype from what a user passes: a NumPy dtype or type, or a name; bfloat16 needs
    ml_dtypes."""
    if np is None:
        raise SymaddrError(STATUS["SYMADDR_ERR_INVALID_ARG"], "NumPy is not installed: "
                           "pip install numpy, or pass a torch dtype")
    if str(dtype) == "bfloat16":
        try:
            import ml_dtypes
        except ImportError:
            raise SymaddrError(STATUS["SYMADDR_ERR_INVALID_ARG"], "bfloat16 arrays need "
                               "ml_dtypes on NumPy (pip install ml_dtypes), or a torch dtype")
        return np.dtype(ml_dtypes.bfloat16)
    try:
        return np.dtype(dtype)
    except TypeError as e:
        raise SymaddrError(STATUS["SYMADDR_ERR_INVALID_ARG"], "%r is not a dtype (%s)" %
                           (dtype, e))


_np_dtypes = {}


def host_array(addr, shape, dtype, life):
    """shape elements of dtype at addr, as a HostArray without a copy."""
    dt = _np_dtypes.get(dtype)
    if dt is None:
        dt = _np_dtypes[dtype] = numpy_dtype(dtype)
    count = 1
    for n in shape:
        count *= n
    buf = (ctypes.c_char * max(count * dt.itemsize, 1)).from_address(addr)
    a = np.ndarray.__new__(HostArray, shape, dt, buffer=buf)
    a._symaddr_life = life
    return a


# ---- torch -----------------------------------------------------------------------------------

_tensor_class = None
# attributes a freed tensor still answers (so that it can be printed, compared and dropped)
_QUIET = frozenset(("_symaddr_life", "__class__", "__repr__", "__dict__", "__del__",
                    "__reduce_ex__", "_typed_storage"))


def tensor_class():
    """SymmetricTensor, a torch.Tensor that refuses use once its memory was freed (made on
    first use, so that torch is imported only by those who use it)."""
    global _tensor_class
    if _tensor_class is not None:
        return _tensor_class
    import torch

    class SymmetricTensor(torch.Tensor):
        _symaddr_life = None

        # A freed tensor refuses use in Python, before torch's C++ runs: an exception raised
        # from inside torch's dispatch can reach Python as an internal torch error instead.
        def __getattribute__(self, name):
            life = torch.Tensor.__getattribute__(self, "_symaddr_life")
            if life is not None and life.why is not None and name not in _QUIET:
                life.check()
            return torch.Tensor.__getattribute__(self, name)

        def __repr__(self, **kw):
            life = torch.Tensor.__getattribute__(self, "_symaddr_life")
            if life is not None and life.why is not None:
                return "<symaddr tensor of %s: %s>" % (life.what, life.why)
            return torch.Tensor.__repr__(self, **kw)

        def __getitem__(self, key):
            check_life(self)
            return torch.Tensor.__getitem__(self, key)

        def __setitem__(self, key, value):
            check_life(self)
            torch.Tensor.__setitem__(self, key, value)

        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            lives = []
            for x in _leaves(args, kwargs):
                life = getattr(x, "_symaddr_life", None) if isinstance(x, torch.Tensor) else None
                if life is not None:
                    life.check()
                    lives.append(life)
            with torch._C.DisableTorchFunctionSubclass():
                out = func(*args, **kwargs)
            return _keep_life(out, lives, cls)

        def data_ptr(self):
            life = torch.Tensor.__getattribute__(self, "_symaddr_life")
            if life is not None and life.why is not None:
                life.check()
            with _plain():  # the address alone: no dispatch through __torch_function__
                return _data_ptr(self)

    def _keep_life(out, lives, cls):
        if isinstance(out, (tuple, list)):
            return type(out)(_keep_life(o, lives, cls) for o in out)
        if not isinstance(out, torch.Tensor) or not lives:
            return out
        with torch._C.DisableTorchFunctionSubclass():
            addr = torch.Tensor.data_ptr(out)
        for life in lives:
            if life.holds(addr):  # a view of the allocation: it keeps its life
                t = out.as_subclass(cls)
                t._symaddr_life = life
                return t
        return out

    _plain = torch._C.DisableTorchFunctionSubclass
    _data_ptr = torch._C.TensorBase.data_ptr
    _tensor_class = SymmetricTensor
    return SymmetricTensor


def torch_dtype_of(dtype):
    """dtype when it is a torch dtype, else None (torch is not imported for NumPy users)."""
    if type(dtype).__module__ == "torch" and type(dtype).__name__ == "dtype":
        return dtype
    return None


class _CudaMemory:
    """nbytes of device memory at addr, as torch.as_tensor takes it (no copy)."""
    __slots__ = ("__cuda_array_interface__",)

    def __init__(self, addr, nbytes):
        self.__cuda_array_interface__ = {"shape": (nbytes,), "typestr": "|u1",
                                         "data": (addr, False), "version": 3}


_raw_tensors = {}  # (addr, nbytes, device) -> a uint8 tensor over that memory
_torch_itemsize = {}


def torch_tensor(addr, shape, dtype, device, life):
    """shape elements of the torch dtype at addr, on device ("cuda" or "cpu"), without a copy."""
    import torch
    itemsize = _torch_itemsize.get(dtype)
    if itemsize is None:
        itemsize = _torch_itemsize[dtype] = torch.empty(0, dtype=dtype).element_size()
    count = 1
    for n in shape:
        count *= n
    nbytes = count * itemsize
    # A retained allocation comes back at the same address: its bytes tensor is made once (a
    # tensor over memory torch does not own is only a view; the new life guards the new one).
    key = (addr, nbytes, device)
    raw = _raw_tensors.get(key)
    if raw is None:
        if device == "cpu":
            buf = (ctypes.c_char * max(nbytes, 1)).from_address(addr)
            raw = torch.frombuffer(buf, dtype=torch.uint8, count=max(nbytes, 1))[:nbytes]
        else:
            raw = torch.as_tensor(_CudaMemory(addr, nbytes), device=device)
        if len(_raw_tensors) >= 1024:
            _raw_tensors.clear()
        _raw_tensors[key] = raw
    t = raw.view(dtype)
    if len(shape) != 1:
        t = t.view(shape)
    t = t.as_subclass(tensor_class())
    t._symaddr_life = life
    return t
