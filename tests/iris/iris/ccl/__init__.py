"""`from iris.ccl import Config` for ROCm/iris's own tests: symaddr.iris.ccl itself."""
from symaddr.iris.ccl import *  # noqa: F401,F403
