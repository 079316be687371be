"""Where a widget goes: the cell's own outputs through IPython's display, or a test's record.
A protocol of its own so the undo control and the presenters can share it without importing
each other."""

from __future__ import annotations

from typing import Any, Protocol


class WidgetOutput(Protocol):
    """Where the widget goes: the cell (IPython's display), or a test's record."""

    def show(self, view: Any) -> Any:
        """Display the widget; returns a handle that can replace it."""

    def replace(self, handle: Any, data: dict[str, str], metadata: dict[str, Any] | None = None) -> None:
        """Replace what `handle` shows by a raw MIME bundle."""

    def append(self, data: dict[str, str]) -> None:
        """One more output after it (a raw MIME bundle)."""


class IPythonWidgetOutput:
    """The cell's own outputs."""

    def show(self, view: Any) -> Any:
        from IPython.display import display

        return display(view, display_id=True)

    def replace(self, handle: Any, data: dict[str, str], metadata: dict[str, Any] | None = None) -> None:
        handle.update(data, raw=True, metadata=metadata)

    def append(self, data: dict[str, str]) -> None:
        from IPython.display import display

        display(data, raw=True)
