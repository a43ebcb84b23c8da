"""`from iris.ccl.utils import extract_group_info` for ROCm/iris's own tests: symaddr.iris's."""
from symaddr.iris.ccl.utils import *  # noqa: F401,F403
