"""pytest plugin for ROCm/iris's own tests (scripts/iris-suite.sh passes -p
symaddr_iris_plugin): what Iris's runner (tests/run_tests_distributed.py) sets up, done
here so that no test is edited: torch.distributed initialised from torchrun's variables (NCCL
for CUDA tensors where every rank has a GPU of its own, else gloo, which serves several ranks
on one GPU but has no all_to_all), and this rank's GPU the current device."""
import os

import torch
import torch.distributed as dist


def pytest_configure(config):
    if "RANK" in os.environ and not dist.is_initialized():
        # NCCL for CUDA tensors where each rank has a GPU of its own (as Iris's runner; the
        # tests' references need its all_to_all), gloo where ranks share one (NCCL refuses)
        own = torch.cuda.is_available() and \
            int(os.environ.get("LOCAL_WORLD_SIZE", "1")) <= torch.cuda.device_count()
        dist.init_process_group("cpu:gloo,cuda:nccl" if own else "gloo")
    if torch.cuda.is_available():
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")) % torch.cuda.device_count())


def pytest_unconfigure(config):
    if dist.is_initialized():
        dist.barrier()


class _DeviceMap(torch.overrides.TorchFunctionMode):
    """The documented minimal device mapping of scripts/iris-suite.sh, for devices the tests
    name and this machine lacks: a device argument (keyword, or a "cuda..." string argument,
    as .to("cuda:1") passes it) of cuda:N is replaced by `target`, nothing else changes.
    SYMADDR_IRIS_ONE_GPU=1: ranks sharing one GPU (Iris's ccl tests put rank r on cuda:r);
    SYMADDR_IRIS_CUDA_AS_CPU=1: the cpu backend under Triton's interpreter (the tests compare
    against device="cuda" tensors; torch.cuda.synchronize becomes a no-op)."""

    def __init__(self, target):
        super().__init__()
        self.target = target

    def _map(self, d):
        if isinstance(d, str) and d.startswith("cuda"):
            return self.target
        if isinstance(d, torch.device) and d.type == "cuda":
            return self.target
        return d

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        if "device" in kwargs:
            kwargs["device"] = self._map(kwargs["device"])
        args = tuple(self._map(a) if isinstance(a, (str, torch.device)) else a for a in args)
        return func(*args, **kwargs)


_mode = None


def pytest_sessionstart(session):
    global _mode
    target = None
    if os.environ.get("SYMADDR_IRIS_ONE_GPU") == "1" and torch.cuda.is_available():
        target = torch.device("cuda", torch.cuda.current_device())
    elif os.environ.get("SYMADDR_IRIS_CUDA_AS_CPU") == "1":
        target = torch.device("cpu")
        torch.cuda.synchronize = lambda *a, **k: None
    if target is not None:
        _mode = _DeviceMap(target)
        _mode.__enter__()
