"""`from iris.context import TritonContext` for ROCm/iris's own tests: symaddr.iris's."""
from symaddr.iris import DeviceContext, TritonContext  # noqa: F401
