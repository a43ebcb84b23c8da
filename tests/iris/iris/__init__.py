"""`import iris` for ROCm/iris's own tests (scripts/iris-suite.sh): symaddr.iris itself."""
from symaddr.iris import *  # noqa: F401,F403
