# SPDX-License-Identifier: MIT
"""Iris's torch.compile support (`from iris.compile import functional_collectives`) on
symaddr's torch custom ops: see symaddr.iris.compile.functional_collectives."""
from symaddr.iris.compile import functional_collectives  # noqa: F401

__all__ = ["functional_collectives"]
