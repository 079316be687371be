"""Images the agent can look at: figures its own code drew this turn, and image files.

`run_python` draws; `view_image` looks. Figures are captured as PNG when the code finishes
(matplotlib figures it left open, and any image the code displayed, e.g. with the inline
backend's `plt.show()`), shown in the cell, and kept for the rest of the turn under names
like `fig-1`, so the model can ask to see one. They are per turn on purpose: a later turn
may not assume an earlier turn's pixels still describe the variables.

Only `view_image` sends pixels to the model, and only when the model can see them (the
engine checks; a blind model gets a clear error instead). Nothing here imports IPython or
matplotlib: matplotlib is looked up in `sys.modules` (a figure implies it is loaded), and
showing or capturing displays is the front end's business, reached through the optional
`ImageDisplay` methods of the kernel context.
"""

from __future__ import annotations

import base64
import contextlib
import io
import os
import re
import sys
from collections.abc import Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, Field, model_validator

from ..core.history import ImagePart
from .captured import CapturedImage
from .io import run_io
from .media import sniff_media_type
from .notebook import cell_image
from .paths import open_in_workspace, resolve_in_workspace
from .registry import Tool, ToolContext, ToolError, ToolKind, ToolOutput, tool

__all__ = ["IMAGE_TOOLS", "CapturedImage", "FigureCapture", "ImageDisplay", "turn_images", "view_image"]

MAX_IMAGE_BYTES = 5 * 1024 * 1024
"""The smallest per-image limit among the big providers (Anthropic: 5 MB)."""
FIGURE_PREFIX = "fig-"


@runtime_checkable
class ImageDisplay(Protocol):
    """Optional methods of a KernelContext that has a cell to show images in."""

    def show_image(self, data: bytes, media_type: str, label: str) -> None:
        """Show an image in the running cell's output."""
        ...

    def capture_displays(self) -> AbstractContextManager[list[dict[str, Any]]]:
        """Record the MIME bundles displayed while the context is open (they still show)."""
        ...


def turn_images(ctx: ToolContext) -> dict[str, CapturedImage]:
    """The images of this turn by name (the ToolContext lives exactly one turn)."""
    return ctx.images


# -- capturing what run_python drew ---------------------------------------------------------


class FigureCapture:
    """Around one run of user code: afterwards, `images` holds a PNG of every matplotlib
    figure the code left open and of every image it displayed.

    While the code runs, `pyplot.show` (when pyplot is already imported) does nothing: under
    the inline backend it would display and close the figure, and a closed figure cannot be
    captured. The figures are shown in the cell afterwards instead, then closed, which is
    what the inline backend would have done at the end of the cell. Code that imports pyplot
    itself and calls `plt.show()` still works: its display is captured.
    """

    def __init__(self, display: ImageDisplay | None) -> None:
        self._display = display
        self.images: list[tuple[bytes, str]] = []
        """(PNG bytes, label) in the order they were drawn."""

    @contextlib.contextmanager
    def running(self) -> Iterator[None]:
        pyplot = sys.modules.get("matplotlib.pyplot")
        before = set(pyplot.get_fignums()) if pyplot is not None else set()
        displays = self._display.capture_displays() if self._display is not None else contextlib.nullcontext([])
        with displays as shown, _show_disabled(pyplot):
            try:
                yield
            finally:
                self.images.extend(_displayed_images(shown))
        self.images.extend(self._open_figures(before))

    def _open_figures(self, before: set[int]) -> list[tuple[bytes, str]]:
        pyplot = sys.modules.get("matplotlib.pyplot")
        if pyplot is None:
            return []
        captured = []
        for number in pyplot.get_fignums():
            if number in before:
                continue
            figure = pyplot.figure(number)
            label = repr(figure)
            try:
                buffer = io.BytesIO()
                figure.savefig(buffer, format="png", bbox_inches="tight")
            except Exception:  # a figure that cannot draw is the code's error, shown in its output
                continue
            finally:
                pyplot.close(figure)
            png = buffer.getvalue()
            if self._display is not None:
                self._display.show_image(png, "image/png", label)
            captured.append((png, label))
        return captured


@contextlib.contextmanager
def _show_disabled(pyplot: Any) -> Iterator[None]:
    if pyplot is None:
        yield
        return
    original = pyplot.show
    pyplot.show = lambda *args, **kwargs: None
    try:
        yield
    finally:
        pyplot.show = original


def _displayed_images(bundles: list[dict[str, Any]]) -> list[tuple[bytes, str]]:
    images = []
    for bundle in bundles:
        encoded = bundle.get("image/png")
        if not isinstance(encoded, str | bytes):
            continue
        try:
            png = base64.b64decode(encoded) if isinstance(encoded, str) else bytes(encoded)
        except ValueError:
            continue
        label = bundle.get("text/plain")
        images.append((png, label if isinstance(label, str) else "displayed image"))
    return images


def png_part(png: bytes) -> ImagePart:
    """A captured figure as an image part (for the tool's card: `ToolOutput.display_images`)."""
    return ImagePart(media_type="image/png", data_base64=base64.b64encode(png).decode("ascii"))


def keep_figures(ctx: ToolContext, images: list[tuple[bytes, str]]) -> list[str]:
    """Store run_python's figures for view_image; returns the lines the model reads."""
    store = turn_images(ctx)
    lines = []
    for png, label in images:
        name = f"{FIGURE_PREFIX}{sum(n.startswith(FIGURE_PREFIX) for n in store) + 1}"
        store[name] = CapturedImage(name=name, data=png, media_type="image/png", origin=f"run_python: {label}")
        lines.append(
            f"{name}: {label}, {store[name].size_text()}; shown in the cell; "
            f'look at it with view_image(output="{name}")'
        )
    return lines


def display_of(ctx: ToolContext) -> ImageDisplay | None:
    """The kernel context's display methods, when it has a cell to show images in."""
    kernel = ctx.kernel
    return kernel if isinstance(kernel, ImageDisplay) else None


# -- view_image ----------------------------------------------------------------------------

_CELL_OUTPUT = re.compile(r"^cell[\s:#-]*(\d+)(?:[\s:#.-]+(\d+))?$", re.IGNORECASE)


class ViewImageArgs(BaseModel):
    path: str | None = Field(default=None, description="An image file in the workspace (PNG, JPEG, GIF or WebP).")
    output: str | None = Field(
        default=None,
        description=(
            'An image produced in this turn, by name: "fig-1" for the first figure run_python '
            'drew; or a notebook cell\'s image output: "cell:3" (its first image) or "cell:3:2" '
            "(its second), as notebook_read lists them."
        ),
    )

    @model_validator(mode="after")
    def _exactly_one(self) -> ViewImageArgs:
        if (self.path is None) == (self.output is None):
            raise ValueError("give exactly one of path or output")
        return self


@tool("view_image", ToolKind.READ_ONLY, ViewImageArgs)
async def view_image(args: ViewImageArgs, ctx: ToolContext) -> ToolOutput:
    """Look at an image: a figure run_python drew in this turn (output="fig-1"), a notebook
    cell's image output (output="cell:3"), or an image file (path="plots/a.png"). Use it to
    check that a plot shows what you meant before describing it to the user."""
    if args.path is not None:
        image = await run_io(_image_file, ctx.workspace, args.path)
    else:
        image = await _named_output(ctx, (args.output or "").strip())
    return ToolOutput(
        text=f"{image.name}: {image.size_text()} ({image.origin}); the image follows",
        images=[image.part()],
    )


def _image_file(workspace: Path, given: str) -> CapturedImage:
    """Read an image file the way read_file does: the checked path is the opened path, and
    only a regular file (a pipe named plot.png must not hang the tool)."""
    if not resolve_in_workspace(workspace, given).exists():  # the checked open decides; this words it
        raise ToolError(f"{given}: no such file in the workspace")
    fd, _path = open_in_workspace(workspace, given)
    with os.fdopen(fd, "rb") as handle:
        size = os.fstat(fd).st_size
        if size > MAX_IMAGE_BYTES:
            raise ToolError(
                f"{given} is {size // 1024} KB; images over {MAX_IMAGE_BYTES // 1024 // 1024} MB cannot be sent"
            )
        data = handle.read(MAX_IMAGE_BYTES + 1)
    media_type = sniff_media_type(data)
    if media_type is None:
        raise ToolError(
            f"{given} is not a PNG, JPEG, GIF or WebP image; convert it first (e.g. save an SVG "
            "plot as PNG with run_python)"
        )
    return CapturedImage(name=given, data=data, media_type=media_type, origin="file")


async def _named_output(ctx: ToolContext, name: str) -> CapturedImage:
    store = turn_images(ctx)
    if name in store:
        return store[name]
    cell = _CELL_OUTPUT.match(name)
    if cell is not None:
        index, number = int(cell.group(1)), int(cell.group(2) or 1)
        data, media_type = await cell_image(ctx, index, number)
        return CapturedImage(
            name=f"cell:{index}:{number}", data=data, media_type=media_type, origin=f"output of notebook cell {index}"
        )
    known = ", ".join(store) or "none yet"
    raise ToolError(
        f"no image named {name!r} in this turn (images so far: {known}). Figures drawn by "
        'run_python are named "fig-1", "fig-2"… in this turn only; earlier turns\' figures are '
        'gone (run the plotting code again); a notebook cell\'s image is "cell:N"'
    )


IMAGE_TOOLS: list[Tool] = [view_image]
