# SPDX-License-Identifier: MIT
"""Arrays over symaddr memory, without a copy: NumPy on the host (the cpu backend), plain torch
tensors where torch is installed. Each is made over an exporter that NumPy or torch keeps
alive while any view of the memory exists (the lifetime model: symaddr._lifetime). NumPy
arrays also speak the part of torch's tensor protocol that Triton's interpreter uses
(data_ptr, untyped_storage, storage_offset, stride), so they go straight into a @triton.jit
kernel under TRITON_INTERPRET=1."""
import ctypes
import operator
import sys

from ._lib import SymaddrError, STATUS


def is_torch(a):
    t = sys.modules.get("torch")  # whoever holds a tensor imported torch already
    return t is not None and isinstance(a, t.Tensor)


def not_an_array(call, role, a):
    """The error for an argument that should have been an array or tensor, naming its type
    (int, array.array: "is a array" before; a type the program made, by its name)."""
    t = type(a)
    kind = t.__qualname__ if t.__module__ in ("builtins", "__main__") else "%s.%s" % (
        t.__module__, t.__qualname__)
    return SymaddrError(STATUS["SYMADDR_ERR_INVALID_ARG"], "%s: %s is of type %s, not a NumPy "
                        "array or a torch tensor: pass one" % (call, role, kind))


def address(a, call="this call", role="the array", checked=True):
    """The address of a's first element: an int passes as is, then a torch tensor or anything
    with __array_interface__; anything else raises not_an_array(call, role, a). checked: a
    HostArray of freed memory raises SymaddrError (free() passes False, to say DOUBLE_FREE)."""
    if isinstance(a, int):
        return a
    if is_torch(a) or (checked and HostArray is not None and isinstance(a, HostArray)):
        return a.data_ptr()
    face = getattr(a, "__array_interface__", None)
    if face is None:
        raise not_an_array(call, role, a)
    return face["data"][0]


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
        """A NumPy array over symaddr memory (symaddr's own, an import's, another library's):
        a plain ndarray for NumPy code, whose memory stays mapped while it or any view of it
        exists (symaddr._lifetime). It also speaks the part of torch's tensor protocol that
        Triton's interpreter uses, so it passes to a kernel as a pointer to its first element;
        a launch with an array of a freed registration raises SymaddrError."""

        _symaddr_life = None

        def __array_finalize__(self, obj):
            # a view of the registration's memory keeps its life; an array of its own memory
            # (a copy, a result) has none. Called for every view: kept cheap.
            life = getattr(obj, "_symaddr_life", None)
            self._symaddr_life = life if life is not None and self.base is not None else None

        def __repr__(self):
            life = self._symaddr_life
            text = np.ndarray.__repr__(self.view(np.ndarray))
            if life is not None and not life.alive:
                return "%s  # symaddr: %s was %s" % (text, life.what, life.why)
            return text

        # -- the part of torch's tensor protocol that Triton's interpreter uses --

        @property
        def size(self):
            """The element count, which torch's size() (the shape) can also be called as."""
            return _Count(np.ndarray.size.__get__(self), tuple(self.shape))

        def data_ptr(self):
            """The address of the first element (SymaddrError once its registration was freed)."""
            life = self._symaddr_life
            if life is not None and life.why is not None:
                life.check()
            return self.__array_interface__["data"][0]

        def element_size(self):
            """Bytes of one element, as torch's element_size()."""
            return self.itemsize

        def untyped_storage(self):
            """The memory from the first element on, as torch's untyped_storage()."""
            # the memory from this array's first element on: Triton's interpreter rebuilds the
            # argument as storage + storage_offset(), so offset 0 keeps any view exact
            return _Storage(self.data_ptr(), self.nbytes)

        def storage_offset(self):
            """0: the storage starts at the first element."""
            return 0

        def stride(self, dim=None):
            """Strides in elements, as torch's stride()."""
            s = tuple(x // self.itemsize for x in self.strides)
            return s if dim is None else s[dim]

        def new_empty(self, *args, **kwargs):
            """What Triton's interpreter rebuilds an argument into."""
            return _Placeholder(self.dtype)

        def is_contiguous(self):
            """Whether the array is C-contiguous, as torch's is_contiguous()."""
            return bool(self.flags["C_CONTIGUOUS"])
else:
    HostArray = None


def shape_tuple(shape):
    """An allocation's shape argument (an int or a sequence of ints) as a tuple of ints, or a
    SymaddrError saying what to pass."""
    if type(shape) is int and shape >= 0:  # the common case, first
        return (shape,)
    if type(shape) is tuple and all(type(n) is int and n >= 0 for n in shape):
        return shape
    try:  # integers only (operator.index: NumPy's too, no float, no str of digits, no bool)
        if isinstance(shape, (str, bytes, bool)):
            raise TypeError
        items = tuple(shape) if hasattr(shape, "__iter__") else None
        if items is None:
            shape = (operator.index(shape),)
        elif any(isinstance(n, bool) for n in items):
            raise TypeError
        else:
            shape = tuple(operator.index(n) for n in items)
    except TypeError:
        raise SymaddrError(STATUS["SYMADDR_ERR_INVALID_ARG"], "shape must be an int or a tuple "
                           "of ints, not %r" % (shape,)) from None
    if any(n < 0 for n in shape):
        raise SymaddrError(STATUS["SYMADDR_ERR_INVALID_SIZE"], "shape %s has a negative extent"
                           % (shape,))
    return shape


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
        dt = np.dtype(dtype)
    except TypeError as e:
        raise SymaddrError(STATUS["SYMADDR_ERR_INVALID_ARG"], "%r is not a dtype (%s)" %
                           (dtype, e))
    if dt.hasobject:  # an array over memory it did not fill would follow its bytes as pointers
        raise SymaddrError(STATUS["SYMADDR_ERR_INVALID_ARG"], "dtype %s holds Python objects, "
                           "whose pointers mean nothing in memory another process or an "
                           "earlier allocation wrote: pass a numeric dtype" % (dt,))
    return dt


_np_dtypes = {}


def host_array(addr, shape, dtype, life):
    """shape elements of dtype at addr, as a HostArray without a copy, and its exporter: the
    buffer object that the array and every view of it keep alive."""
    dt = _np_dtypes.get(dtype)
    if dt is None:
        dt = _np_dtypes[dtype] = numpy_dtype(dtype)
    count = 1
    for n in shape:
        count *= n
    buf = (ctypes.c_char * max(count * dt.itemsize, 1)).from_address(addr)
    a = np.ndarray.__new__(HostArray, shape, dt, buffer=buf)  # its base keeps buf
    a._symaddr_life = life
    return a, buf


# ---- torch -----------------------------------------------------------------------------------

def torch_dtype_of(dtype):
    """dtype when it is a torch dtype, else None (torch is not imported for NumPy users)."""
    if type(dtype).__module__ == "torch" and type(dtype).__name__ == "dtype":
        return dtype
    return None


class _CudaMemory:
    """nbytes of device memory at addr, as torch.as_tensor takes it (no copy); torch keeps it
    alive for as long as any tensor of that memory exists."""
    __slots__ = ("__cuda_array_interface__", "__weakref__")

    def __init__(self, addr, nbytes):
        self.__cuda_array_interface__ = {"shape": (nbytes,), "typestr": "|u1",
                                         "data": (addr, False), "version": 3}


_torch_itemsize = {}


def torch_tensor(addr, shape, dtype, device):
    """shape elements of the torch dtype at addr, on device ("cuda:N" or "cpu"), without a
    copy: a plain torch.Tensor, and its exporter (what torch keeps alive for the tensor, its
    views and its storage)."""
    import torch
    itemsize = _torch_itemsize.get(dtype)
    if itemsize is None:
        itemsize = _torch_itemsize[dtype] = torch.empty(0, dtype=dtype).element_size()
    count = 1
    for n in shape:
        count *= n
    nbytes = count * itemsize
    if device == "cpu":
        exporter = (ctypes.c_char * max(nbytes, 1)).from_address(addr)
        raw = torch.frombuffer(exporter, dtype=torch.uint8, count=max(nbytes, 1))[:nbytes]
    else:
        exporter = _CudaMemory(addr, nbytes)
        raw = torch.as_tensor(exporter, device=device)
    t = raw.view(dtype)
    if len(shape) != 1:
        t = t.view(shape)
    return t, exporter
