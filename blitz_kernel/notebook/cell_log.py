"""What the kernel remembers about the cells it ran, for `@err`, `@cell:N` and `@fig`
(notebook/references.py).

IPython keeps each cell's source (`In`) and result (`Out`) but neither its error nor what it
displayed, and without a notebook front end (nbclient, papermill, terminal IPython) there is
nothing else to ask. So from `%load_ext` on, the log listens to `post_run_cell` for errors
(formatted the way the user saw them, colours removed) and watches the display publisher for
the last image shown (the inline backend's figures go through it).
"""

from __future__ import annotations

import contextlib
import re
import traceback
from dataclasses import dataclass, field
from typing import Any

IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")
MAX_ERRORS_KEPT = 200
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


@dataclass
class CellError:
    """A cell's exception as its traceback reads in the notebook."""

    execution_count: int | None
    ename: str
    evalue: str
    traceback: str


@dataclass
class ShownImage:
    """The last image any cell displayed."""

    media_type: str
    data_base64: str
    execution_count: int | None


@dataclass
class CellLog:
    """Errors by execution count and the last image shown, since the extension loaded."""

    shell: Any = field(default=None, repr=False)
    errors: dict[int, CellError] = field(default_factory=dict)
    last_error: CellError | None = None
    last_image: ShownImage | None = None

    def on_post_run_cell(self, result: Any) -> None:
        """IPython's `post_run_cell` event: remember the cell's error, if it raised."""
        error = result.error_in_exec or result.error_before_exec
        if error is None or type(error).__name__ == "UsageError":
            return  # a mistyped magic is not the error a user asks the agent about
        count = result.execution_count
        entry = CellError(count, type(error).__name__, str(error), format_error(self.shell, error))
        self.last_error = entry
        if isinstance(count, int):
            self.errors[count] = entry
            while len(self.errors) > MAX_ERRORS_KEPT:
                self.errors.pop(next(iter(self.errors)))

    def on_display(self, data: Any, count: int | None) -> None:
        if not isinstance(data, dict):
            return
        for media_type in IMAGE_TYPES:
            encoded = data.get(media_type)
            if isinstance(encoded, str) and encoded:
                self.last_image = ShownImage(media_type, encoded.replace("\n", ""), count)
                return


def format_error(shell: Any, error: BaseException) -> str:
    """The traceback as IPython showed it (`Cell In[3], line 2`), without colours; plain
    Python formatting when IPython's formatter is not there or fails."""
    formatter = getattr(shell, "InteractiveTB", None)
    if formatter is not None:
        try:
            lines = formatter.structured_traceback(type(error), error, error.__traceback__, tb_offset=1)
            return _ANSI.sub("", formatter.stb2text(lines)).strip("\n")
        except Exception:  # a formatter bug must not hide the error itself
            pass
    return "".join(traceback.format_exception(error)).rstrip()


_current: CellLog | None = None


def current() -> CellLog | None:
    """This kernel's log, once `%load_ext blitz_kernel` has run."""
    return _current


def install(shell: Any) -> CellLog:
    """Listen to `post_run_cell` and wrap the display publisher's `publish` (an instance
    attribute, so `uninstall` can take it away again and other wrappers keep working)."""
    global _current
    uninstall(shell)
    log = CellLog(shell)
    shell.events.register("post_run_cell", log.on_post_run_cell)
    publisher: Any = shell.display_pub
    had_own = "publish" in vars(publisher)
    original = publisher.publish

    def publish(data: Any, *args: Any, **kwargs: Any) -> Any:
        count = getattr(shell, "execution_count", None)  # the running cell is In[count - 1]
        log.on_display(data, count - 1 if isinstance(count, int) else None)
        return original(data, *args, **kwargs)

    publish.blitz_cell_log = True  # type: ignore[attr-defined]
    publish.wrapped = original  # type: ignore[attr-defined]
    publish.had_own = had_own  # type: ignore[attr-defined]
    publisher.publish = publish
    _current = log
    return log


def uninstall(shell: Any) -> None:
    """Undo `install` (`%unload_ext`, `%reload_ext`)."""
    global _current
    log, _current = _current, None
    if log is None:
        return
    with contextlib.suppress(ValueError):
        shell.events.unregister("post_run_cell", log.on_post_run_cell)
    publisher: Any = shell.display_pub
    publish: Any = vars(publisher).get("publish")
    if getattr(publish, "blitz_cell_log", False):
        wrapped = publish.wrapped
        if publish.had_own:
            publisher.publish = wrapped
        else:
            del publisher.publish  # back to the class's own method
