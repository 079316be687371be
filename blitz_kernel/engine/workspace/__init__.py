"""The composition root: `Workspace` builds the engine's services for one directory and is the
one front door the notebook, `blitz run` and scripts use (docs/architecture.md)."""

from .facade import Workspace

__all__ = ["Workspace"]
