"""`iris.compile.functional_collectives` for ROCm/iris's own tests: symaddr.iris's."""
from symaddr.iris.compile.functional_collectives import *  # noqa: F401,F403
