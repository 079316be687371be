"""The KernelContext the front end hands to kernel tools: the live IPython user namespace,
and, optionally, the cell to show images in and the notebook bridge."""

from __future__ import annotations

import base64
import contextlib
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .bridge import NotebookBridge


class IPythonKernelContext:
    """Wraps the shell so tools see the user's variables without importing IPython."""

    def __init__(self, shell: Any) -> None:
        self._shell = shell
        self._count_bump_registered = False
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

    # -- running cells for notebook_run (tools/cell_run.py's CellHost) ------------------------

    def transform_source(self, source: str) -> str:
        transformed: str = self._shell.transform_cell(source)
        return transformed

    @contextlib.contextmanager
    def cell_displays(self, sink: Callable[..., None], clear: Callable[[], None]) -> Iterator[None]:
        """Displays go to `sink` (and `clear_output()` to `clear`), not to the running %%blitz
        cell: they belong to the cell being run."""
        publisher = self._shell.display_pub
        had_publish, had_clear = "publish" in vars(publisher), "clear_output" in vars(publisher)
        original_publish, original_clear = publisher.publish, publisher.clear_output

        def publish(
            data: dict[str, Any],
            metadata: dict[str, Any] | None = None,
            *args: Any,
            transient: dict[str, Any] | None = None,
            update: bool = False,
            **kwargs: Any,
        ) -> None:
            if isinstance(data, dict):
                display_id = (transient or {}).get("display_id")
                sink(data, metadata or {}, display_id=display_id, update=update)

        def clear_output(wait: bool = False) -> None:
            clear()

        publisher.publish, publisher.clear_output = publish, clear_output
        try:
            yield
        finally:
            for name, had, original in (
                ("publish", had_publish, original_publish),
                ("clear_output", had_clear, original_clear),
            ):
                if had:
                    setattr(publisher, name, original)
                else:
                    delattr(publisher, name)

    def rich_result(self, value: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        data, metadata = self._shell.display_formatter.format(value)
        return dict(data), dict(metadata)

    def error_lines(self, error: BaseException) -> list[str]:
        try:
            lines: list[str] = self._shell.InteractiveTB.structured_traceback(
                type(error), error, error.__traceback__, tb_offset=1
            )
        except Exception:  # the formatter failing must not hide the user's error
            return []
        return lines

    def take_execution_count(self, source: str, cell_id: str | None = None) -> int:
        """The next count, as if the user ran the cell: it goes into the input history, and
        the running %%blitz cell's own reply (ipykernel reports the counter minus one) moves
        past the cells it ran instead of repeating the last one's number."""
        shell = self._shell
        count: int = shell.execution_count
        shell.execution_count = count + 1
        bridge = self.notebook
        if bridge is not None and cell_id:
            bridge.cell_ids[count] = cell_id
        history = getattr(shell, "history_manager", None)
        if history is not None:
            with contextlib.suppress(Exception):
                history.store_inputs(count, source, source)
        if not self._count_bump_registered:
            self._count_bump_registered = True
            shell.events.register("post_run_cell", self._bump_after_cell)
        return count

    def _bump_after_cell(self, result: Any = None) -> None:
        """The %%blitz cell takes the number after its cells; its source is In[that number]
        too, so the input history stays indexed by execution count."""
        shell = self._shell
        count = shell.execution_count
        shell.execution_count = count + 1
        raw = getattr(getattr(result, "info", None), "raw_cell", None)
        history = getattr(shell, "history_manager", None)
        if history is not None and isinstance(raw, str):
            with contextlib.suppress(Exception):
                history.store_inputs(count, raw, raw)
        self._count_bump_registered = False
        with contextlib.suppress(ValueError):
            self._shell.events.unregister("post_run_cell", self._bump_after_cell)

    def executed_cell(self, count: int) -> tuple[str | None, str] | None:
        """(the notebook cell's id, when known; the source) of In[count] in this kernel."""
        history = getattr(self._shell, "history_manager", None)
        raw = getattr(history, "input_hist_raw", None)
        if not isinstance(raw, list) or not 0 < count < len(raw) or not isinstance(raw[count], str):
            return None
        bridge = self.notebook
        return (bridge.cell_ids.get(count) if bridge is not None else None), raw[count]
