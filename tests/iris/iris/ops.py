"""`import iris.ops` for ROCm/iris's own tests: symaddr.iris.ops itself."""
from symaddr.iris.ops import *  # noqa: F401,F403
