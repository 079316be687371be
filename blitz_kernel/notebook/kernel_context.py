"""The KernelContext the front end hands to kernel tools: the live IPython user namespace,
and, optionally, the cell to show images in and the notebook bridge."""

from __future__ import annotations

import base64
import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .bridge import NotebookBridge


class IPythonKernelContext:
    """Wraps the shell so tools see the user's variables without importing IPython."""

    def __init__(self, shell: Any) -> None:
        self._shell = shell
        self.images_in_cell = True
        """False while a live widget shows the turn (live.py sets it): the tool's card shows
        its images then (`ToolResultEvent.images`), so they are not also cell outputs. Plain
        rendering (nbclient, papermill, terminal) leaves it True: images are cell outputs."""

    @property
    def user_ns(self) -> dict[str, Any]:
        namespace: dict[str, Any] = self._shell.user_ns
        return namespace

    @property
    def hidden_names(self) -> dict[str, Any]:
        hidden: dict[str, Any] = self._shell.user_ns_hidden
        return hidden

    @property
    def notebook(self) -> NotebookBridge | None:
        """The bridge to the notebook front end (tools/notebook.py), when in ipykernel."""
        from .bridge import current

        return current()

    def show_image(self, data: bytes, media_type: str, label: str) -> None:
        """Show an image in the running cell, as the inline backend would show a figure."""
        if not self.images_in_cell:
            return
        from IPython.display import display

        display({media_type: base64.b64encode(data).decode("ascii"), "text/plain": label}, raw=True)

    @contextlib.contextmanager
    def capture_displays(self) -> Iterator[list[dict[str, Any]]]:
        """Record every MIME bundle displayed meanwhile (e.g. `plt.show()` under the inline
        backend) while still publishing it to the cell — except, while the widget shows the
        turn, the PNGs that the tool's card will show (FigureCapture takes those)."""
        publisher = self._shell.display_pub
        captured: list[dict[str, Any]] = []
        had_own = "publish" in vars(publisher)
        original = publisher.publish

        def publish(data: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
            if isinstance(data, dict):
                captured.append(dict(data))
                if not self.images_in_cell and "image/png" in data:
                    return None
            return original(data, *args, **kwargs)

        publisher.publish = publish
        try:
            yield captured
        finally:
            if had_own:
                publisher.publish = original
            else:
                del publisher.publish
