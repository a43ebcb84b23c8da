# SPDX-License-Identifier: MIT
"""Streams and staged receive buffers: the raw stream a call takes, and the workspace a
collective whose recv is not symmetric memory writes, recv then copied from it on the
collective's stream (a base class of Communication)."""
import ctypes

from ._arrays import is_torch
from ._lib import error as _err
from ._lib import int_of
from ._validation import _capturing


class Staging:
    """A call's stream, and the context's staging workspace: grown collectively, copied out
    on a stream."""

    def _workspace(self, nbytes):
        """The context's symmetric workspace for staged receive buffers, at least nbytes
        (collective when it grows: every rank stages the same calls)."""
        have = self._stage
        if have is not None and have[1] >= nbytes:
            return have[0]
        size = 1 << max(12, (nbytes - 1).bit_length())
        if self.backend != "cpu" and _capturing():  # an allocation would end the capture
            raise _err("SYMADDR_ERR_UNSUPPORTED", "the context's staging workspace would grow "
                       "to %d bytes inside a CUDA graph's capture, which cannot allocate: make "
                       "the same call once before the capture (torch.compile(mode=\"reduce-"
                       "overhead\") does, on its warm-up run), or pass symmetric memory" % size)
        if have is not None:
            # A CUDA graph that captured a staged call replays it into the old workspace, so
            # where any rank may have captured one it stays mapped until close (the ranks
            # agree: freeing is collective); sizes double, so what is kept is less than the
            # new workspace
            keep = self.backend != "cpu" and not self._lifetimes.agree(
                [0 if self._stage_captured else 1])[0]
            self._stage, self._stage_tensor = None, None
            if keep:
                self._stage_kept.append(have)
            else:
                self._lib.symaddr_symmetric_free(have[2], have[0])
        prov = ctypes.c_void_p()
        self._check(self._lib.symaddr_provider_get(self._h, self._lib.abi["provider"]["ipc"],
                                                   ctypes.byref(prov)))
        ptr, m = ctypes.c_void_p(), ctypes.c_void_p()
        self._check(self._lib.symaddr_symmetric_alloc(prov, size, ctypes.byref(ptr),
                                                      ctypes.byref(m)))
        self._registrations_changed()
        self._stage = (ptr.value, size, prov)
        return ptr.value

    def _capturing(self):
        """Whether torch's current CUDA stream is being captured into a graph (torch's own
        test, without is_current_stream_capturing()'s checks: a staged call of a CUDA tensor
        has made torch's CUDA state)."""
        test = self._is_capturing
        if test is None:
            import torch
            test = self._is_capturing = torch._C._cuda_isCurrentStreamCapturing
        return test()

    # A rooted call grows the workspace on every rank to this many bytes whether or not it
    # stages; past it, where some rank stages (one agreement)
    _rooted_grow = 16 << 20

    def _rooted_grows(self, staged, nbytes):
        """Whether this rank grows the workspace to nbytes for a rooted call (every rank
        calls this, and all answer alike). Each rank's recv there is its own, of either kind
        (MPI's idioms: a plain recv on the root, None or symmetric memory on the peers), so
        a rank that does not stage joins the collective allocation of one that does, which
        would otherwise wait for it until the timeout. To _rooted_grow bytes every rank
        grows; past it the ranks agree whether any stages, so that a large call between
        symmetric buffers does not double its memory. The workspace is the same size on
        every rank, so all take the same branch."""
        have = self._stage
        if have is not None and have[1] >= nbytes:
            return staged  # no allocation
        if nbytes <= self._rooted_grow:
            return True
        return not self._lifetimes.agree([0 if staged else 1])[0]

    def _stream_of(self, a, stream):
        """The raw stream symaddr takes: a torch.cuda.Stream, a raw handle (an int), or None
        (torch's current stream) for CUDA tensors; none for host memory."""
        if self.backend == "cpu":
            if stream is not None:  # refused here as on a GPU, though it goes nowhere
                self._stream_handle(stream)
            return None  # host memory: the calls complete on return
        if type(stream) is int and 0 <= stream < 1 << 64:
            return stream
        if a is not None and not (is_torch(a) and a.is_cuda):
            if stream is not None:
                self._stream_handle(stream)
            return None
        if stream is None:
            raw = self._raw_stream
            if raw is None:  # torch's current raw stream, without a Stream object
                import torch
                raw = self._raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", False)
            if a is not None and raw:  # a CUDA tensor: no is_available(), no device object
                return raw(a.get_device())
            import torch
            if not torch.cuda.is_available():
                return None
            if raw:
                return raw(torch.cuda.current_device())
            stream = torch.cuda.current_stream()
        return self._stream_handle(stream)

    @staticmethod
    def _stream_handle(stream):
        """A stream's raw handle: a torch.cuda.Stream's, or an int of 0 to 2^64 - 1 (NumPy's
        too; ctypes would wrap -1), else INVALID_ARG."""
        handle = getattr(stream, "cuda_stream", None)
        if handle is None:
            handle = int_of(stream, ctypes.c_void_p)
        if handle is None:
            raise _err("SYMADDR_ERR_INVALID_ARG", "stream=%r is neither a torch.cuda.Stream nor "
                       "a raw stream handle (an int, 0 to 2^64 - 1)" % (stream,))
        return handle

    def _torch_stream(self, handle, device):
        """torch's Stream of a raw handle, the stream itself: 0 is the legacy default stream.
        (torch.cuda.ExternalStream(0) is a new pooled stream instead, pytorch#182960: work on it
        is not ordered after the collective's.)"""
        import torch
        if not handle:
            return torch.cuda.default_stream(device)
        wrap = getattr(torch.cuda, "get_stream_from_external", None)  # torch >= 2.7
        return (wrap(handle, device) if wrap is not None
                else torch.cuda.ExternalStream(handle, device=device))

    def _copy_out(self, recv, addr, nbytes, st):
        """recv = nbytes at addr (the workspace), on the collective's stream st."""
        if is_torch(recv) and recv.is_cuda:
            import torch
            raw = self._stage_view(addr, nbytes)
            out = recv.view(-1).view(torch.uint8)
            current = self._raw_stream
            if current and st == current(recv.get_device()):  # torch's current stream already
                out.copy_(raw, non_blocking=True)
            else:
                with torch.cuda.stream(self._torch_stream(st, recv.device)):
                    out.copy_(raw, non_blocking=True)
        else:
            ctypes.memmove(recv.data_ptr() if is_torch(recv)
                           else recv.__array_interface__["data"][0], addr, nbytes)

    def _stage_view(self, addr, nbytes):
        """nbytes of the workspace at addr as a torch tensor: a slice of one view of the whole
        workspace, made when the workspace is (torch.as_tensor of a CUDA array costs tens of
        microseconds a call); dropped with the workspace."""
        base, size, _ = self._stage
        view = self._stage_tensor
        if view is None:
            from ._arrays import torch_tensor
            import torch
            view = self._stage_tensor = torch_tensor(base, (size,), torch.uint8,
                                                     self._device())[0]
        return view[addr - base:addr - base + nbytes]
