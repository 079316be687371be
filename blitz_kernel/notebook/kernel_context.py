"""The KernelContext the front end hands to kernel tools: the live IPython user namespace."""

from __future__ import annotations

from typing import Any


class IPythonKernelContext:
    """Wraps the shell so tools see the user's variables without importing IPython."""

    def __init__(self, shell: Any) -> None:
        self._shell = shell

    @property
    def user_ns(self) -> dict[str, Any]:
        namespace: dict[str, Any] = self._shell.user_ns
        return namespace

    @property
    def hidden_names(self) -> dict[str, Any]:
        hidden: dict[str, Any] = self._shell.user_ns_hidden
        return hidden
