"""blitz_kernel's Jupyter server extension: what the front end asks of the server rather than
of a kernel, so it answers while the kernel is busy (docs/completion.md). Loaded by Jupyter
Server from jupyter-config/server-config/blitz_kernel.json, which `pip install` puts in
`<prefix>/etc/jupyter/jupyter_server_config.d/`."""

from __future__ import annotations

from typing import Any


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "blitz_kernel.server"}]


def _load_jupyter_server_extension(server_app: Any) -> None:
    from .handlers import install

    install(server_app)
