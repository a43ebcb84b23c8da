"""`from iris.compile import functional_collectives` for ROCm/iris's own tests: symaddr.iris's."""
from symaddr.iris.compile import *  # noqa: F401,F403
from symaddr.iris.compile import functional_collectives  # noqa: F401
