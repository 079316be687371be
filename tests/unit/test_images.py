"""Images: run_python's figures become viewable, view_image sends them to a model that can see,
and the litellm conversion puts them where chat APIs accept images.

Real matplotlib (Agg, headless) draws real figures; the only fake is the scripted model.
"""

from __future__ import annotations

import base64
import contextlib
import json
import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import matplotlib
import pytest

from blitz_kernel.core.history import (
    AssistantMessage,
    ImagePart,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    check_history,
)
from blitz_kernel.engine.events import (
    MAX_SHOWN_IMAGE_BYTES,
    MAX_SHOWN_IMAGES,
    ToolResultEvent,
    shown_images,
)
from blitz_kernel.engine.turn.batch import blind_model_text
from blitz_kernel.engine.workspace import Workspace
from blitz_kernel.models.base import supports_vision
from blitz_kernel.models.openai_wire import to_openai_messages
from blitz_kernel.models.placeholder import PlaceholderModel
from blitz_kernel.models.scripted import ScriptedModel
from blitz_kernel.tools import builtin_tools
from blitz_kernel.tools.images import view_image
from blitz_kernel.tools.media import image_dimensions, sniff_media_type
from blitz_kernel.tools.registry import ToolContext, ToolError, ToolKind, ToolOutput
from blitz_kernel.tools.run_python import run_python
from tests.helpers.workspaces import open_workspace

from .conftest import call, tool_results, tool_step

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after choosing the headless backend)


def tiny_png(width: int = 3, height: int = 2) -> bytes:
    """A valid PNG of the given size, built by hand (no imaging library needed)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(b"\x00" + b"\xff\x00\x00" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


@dataclass
class DisplayKernel:
    """A KernelContext with a cell: records what is shown and lets tests display bundles."""

    user_ns: dict[str, Any] = field(default_factory=dict)
    shown: list[tuple[bytes, str, str]] = field(default_factory=list)
    _capturing: list[list[dict[str, Any]]] = field(default_factory=list)

    def show_image(self, data: bytes, media_type: str, label: str) -> None:
        self.shown.append((data, media_type, label))

    @contextlib.contextmanager
    def capture_displays(self) -> Iterator[list[dict[str, Any]]]:
        captured: list[dict[str, Any]] = []
        self._capturing.append(captured)
        try:
            yield captured
        finally:
            self._capturing.pop()

    def display(self, bundle: dict[str, Any]) -> None:
        """What IPython's display() would publish (the user code calls it via the namespace)."""
        for captured in self._capturing:
            captured.append(bundle)


@pytest.fixture(autouse=True)
def no_figures_left() -> Iterator[None]:
    plt.close("all")
    yield
    plt.close("all")


@pytest.fixture
def kernel() -> DisplayKernel:
    return DisplayKernel()


@pytest.fixture
def ctx(tmp_path: Path, kernel: DisplayKernel) -> ToolContext:
    return ToolContext(workspace=tmp_path, kernel=kernel)


async def run_output(ctx: ToolContext, code: str) -> str | ToolOutput:
    return await run_python.func(run_python.parse_arguments(json.dumps({"code": code})), ctx)


async def run(ctx: ToolContext, code: str) -> str:
    """The text the model reads; run_python never sends the model images itself."""
    output = await run_output(ctx, code)
    if isinstance(output, ToolOutput):
        assert output.images == [] and output.display_images
        return output.text
    return output


async def view(ctx: ToolContext, **arguments: Any) -> ToolOutput:
    output = await view_image.func(view_image.parse_arguments(json.dumps(arguments)), ctx)
    assert isinstance(output, ToolOutput)
    return output


PLOT = "import matplotlib.pyplot as plt\nfig, ax = plt.subplots()\nax.plot([1, 2, 3], [3, 1, 2])\n"


def test_view_image_is_a_read_only_builtin() -> None:
    tools = {t.name: t for t in builtin_tools()}
    assert tools["view_image"].kind is ToolKind.READ_ONLY
    assert set(tools["view_image"].spec().parameters["properties"]) == {"path", "output"}


# -- run_python captures figures -------------------------------------------------------------


async def test_a_figure_left_open_is_shown_in_the_cell_named_and_closed(
    ctx: ToolContext, kernel: DisplayKernel
) -> None:
    text = await run(ctx, PLOT + "plt.show()")  # show() must not lose the figure
    assert "figures:\nfig-1: <Figure size 640x480 with 1 Axes>, PNG " in text
    assert 'view_image(output="fig-1")' in text
    assert plt.get_fignums() == []  # closed, so the inline backend does not show it twice
    [(png, media_type, label)] = kernel.shown
    assert media_type == "image/png" and png.startswith(b"\x89PNG") and label.startswith("<Figure")
    assert plt.show is not None and plt.show.__module__ == "matplotlib.pyplot"  # show() restored


async def test_figures_are_numbered_across_the_turn_and_viewable(ctx: ToolContext, kernel: DisplayKernel) -> None:
    await run(ctx, PLOT)
    second = await run(ctx, PLOT + "plt.figure()\nplt.bar([1], [2])\n")
    assert "fig-2:" in second and "fig-3:" in second
    output = await view(ctx, output="fig-3")
    assert output.text.startswith("fig-3: PNG ") and "the image follows" in output.text
    [image] = output.images
    assert image.media_type == "image/png"
    assert base64.b64decode(image.data_base64) == kernel.shown[2][0]


async def test_figures_drawn_before_the_run_are_left_alone(ctx: ToolContext, kernel: DisplayKernel) -> None:
    existing = plt.figure()
    assert await run(ctx, "x = 1") == "(no output)"
    assert plt.fignum_exists(existing.number) and kernel.shown == []


async def test_an_image_the_code_displays_is_viewable_too(ctx: ToolContext, kernel: DisplayKernel) -> None:
    png = tiny_png()
    kernel.user_ns["show"] = kernel.display
    kernel.user_ns["encoded"] = base64.b64encode(png).decode()
    text = await run(ctx, "show({'image/png': encoded, 'text/plain': '<a picture>'})")
    assert "fig-1: <a picture>, PNG 3×2" in text
    assert base64.b64decode((await view(ctx, output="fig-1")).images[0].data_base64) == png
    assert kernel.shown == []  # it was already shown by the display itself


async def test_a_failing_run_still_reports_its_figure(ctx: ToolContext) -> None:
    with pytest.raises(ToolError) as caught:
        await run(ctx, PLOT + "1 / 0")
    assert "ZeroDivisionError" in str(caught.value) and "fig-1:" in str(caught.value)
    [shown] = caught.value.display_images  # its card still shows the figure
    assert base64.b64decode(shown.data_base64).startswith(b"\x89PNG")


async def test_run_python_gives_its_figures_to_the_user_not_the_model(ctx: ToolContext, kernel: DisplayKernel) -> None:
    output = await run_output(ctx, PLOT + "plt.figure()\nplt.bar([1], [2])\n")
    assert isinstance(output, ToolOutput)
    assert output.images == []  # the model reads the "figures:" lines; view_image shows pixels
    assert [base64.b64decode(part.data_base64) for part in output.display_images] == [png for png, _, _ in kernel.shown]
    assert all(part.media_type == "image/png" for part in output.display_images)
    assert await run_output(ctx, "x = 2") == "(no output)"  # no figures: text alone, as before


async def test_without_a_display_figures_are_still_captured(tmp_path: Path) -> None:
    @dataclass
    class PlainKernel:
        user_ns: dict[str, Any] = field(default_factory=dict)

    ctx = ToolContext(workspace=tmp_path, kernel=PlainKernel())
    assert "fig-1:" in await run(ctx, PLOT)
    assert (await view(ctx, output="fig-1")).images


# -- view_image ------------------------------------------------------------------------------


async def test_view_image_reads_an_image_file(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "plots").mkdir()
    (tmp_path / "plots" / "a.png").write_bytes(tiny_png(5, 4))
    output = await view(ctx, path="plots/a.png")
    assert output.text == "plots/a.png: PNG 5×4, 1 KB (file); the image follows"
    assert output.images[0].media_type == "image/png"


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"path": "missing.png"}, "missing.png: no such file in the workspace"),
        ({"path": "notes.txt"}, "notes.txt is not a PNG, JPEG, GIF or WebP image"),
        ({"path": "../outside.png"}, "leads outside the workspace"),
        ({"output": "fig-9"}, "no image named 'fig-9' in this turn (images so far: none yet)"),
    ],
)
async def test_view_image_errors_say_what_to_do(
    ctx: ToolContext, tmp_path: Path, arguments: dict[str, str], message: str
) -> None:
    (tmp_path / "notes.txt").write_text("not an image")
    with pytest.raises(ToolError, match=message.replace("(", r"\(").replace(")", r"\)")):
        await view(ctx, **arguments)


@pytest.mark.parametrize("arguments", [{}, {"path": "a.png", "output": "fig-1"}])
def test_view_image_takes_exactly_one_of_path_and_output(arguments: dict[str, str]) -> None:
    with pytest.raises(ToolError, match="give exactly one of path or output"):
        view_image.parse_arguments(json.dumps(arguments))


async def test_view_image_refuses_huge_files(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "big.png").write_bytes(tiny_png() + b"\0" * (5 * 1024 * 1024))
    with pytest.raises(ToolError, match="images over 5 MB cannot be sent"):
        await view(ctx, path="big.png")


def test_media_types_come_from_the_bytes() -> None:
    assert sniff_media_type(tiny_png()) == "image/png"
    assert sniff_media_type(b"\xff\xd8\xff\xe0rest") == "image/jpeg"
    assert sniff_media_type(b"GIF89a\x02\x00\x01\x00") == "image/gif"
    assert sniff_media_type(b"RIFF\0\0\0\0WEBPVP8 ") == "image/webp"
    assert sniff_media_type(b"<svg") is None
    assert image_dimensions(b"GIF89a\x02\x00\x01\x00") == (2, 1)


# -- through the engine: vision or a clear refusal -------------------------------------------


def workspace(tmp_path: Path, model: ScriptedModel, kernel: DisplayKernel) -> Workspace:
    return open_workspace(tmp_path, model, kernel=kernel)


async def test_a_vision_model_receives_the_figure_as_an_image(tmp_path: Path, kernel: DisplayKernel) -> None:
    steps = [
        tool_step(call("run_python", code=PLOT)),
        tool_step(call("view_image", output="fig-1")),
        {"text": "A line that dips in the middle."},
    ]
    model = ScriptedModel(steps)
    result = await workspace(tmp_path, model, kernel).run("plot it", approve="allow")
    assert result.stop_reason == "end_turn"
    viewed = model.requests[2].messages[-1]
    assert isinstance(viewed, ToolResultMessage) and viewed.ok
    [image] = viewed.images
    assert base64.b64decode(image.data_base64) == kernel.shown[0][0]
    model.assert_complete()


async def test_a_blind_model_gets_a_clear_error_and_no_image(tmp_path: Path, kernel: DisplayKernel) -> None:
    steps = [
        tool_step(call("run_python", code=PLOT)),
        tool_step(call("view_image", output="fig-1")),
        {"text": "I cannot look at it."},
    ]
    model = ScriptedModel(steps, name="blind", vision=False)
    await workspace(tmp_path, model, kernel).run("plot it", approve="allow")
    viewed = model.requests[2].messages[-1]
    assert isinstance(viewed, ToolResultMessage)
    assert viewed.error == blind_model_text("blind") and viewed.images == []
    assert "cannot see images" in viewed.error


async def test_run_pythons_figures_ride_on_its_result_event_not_in_the_history(
    tmp_path: Path, kernel: DisplayKernel
) -> None:
    steps = [
        tool_step(call("run_python", code=PLOT)),
        tool_step(call("run_python", code=PLOT + "1 / 0")),
        {"text": "Two plots."},
    ]
    model = ScriptedModel(steps)
    result = await workspace(tmp_path, model, kernel).run("plot it", approve="allow")
    first, failed = [event for event in result.events if isinstance(event, ToolResultEvent)]
    assert first.ok and not failed.ok and "ZeroDivisionError" in (failed.error or "")
    shown = [png for png, _, _ in kernel.shown]
    assert [base64.b64decode(image.data_base64) for image in first.images + failed.images] == shown
    assert first.images_omitted == failed.images_omitted == 0
    # what the model receives is unchanged: text (with the "figures:" note), no pixels
    results = tool_results(model.requests[2])
    assert [bool(r.images) for r in results] == [False, False]
    assert "figures:\nfig-1:" in (results[0].output or "") and "fig-2:" in (results[1].error or "")
    assert all("data_base64" not in json.dumps(m.model_dump()) for m in model.requests[2].messages[1:])


def test_a_result_event_carries_at_most_four_images_of_at_most_2_mb() -> None:
    small = ImagePart(data_base64=base64.b64encode(tiny_png()).decode())
    big = ImagePart(data_base64=base64.b64encode(b"\0" * (MAX_SHOWN_IMAGE_BYTES + 1)).decode())
    just_fits = ImagePart(data_base64=base64.b64encode(b"\0" * MAX_SHOWN_IMAGE_BYTES).decode())
    assert shown_images([]) == ([], 0)
    assert shown_images([small, big, just_fits]) == ([small, just_fits], 1)
    kept, omitted = shown_images([small] * 6)
    assert (len(kept), omitted) == (MAX_SHOWN_IMAGES, 2) and MAX_SHOWN_IMAGES == 4


async def test_a_result_event_counts_the_figures_it_leaves_out(tmp_path: Path, kernel: DisplayKernel) -> None:
    six = "import matplotlib.pyplot as plt\nfor i in range(6):\n    plt.figure(); plt.plot([i, 1])\n"
    model = ScriptedModel([tool_step(call("run_python", code=six)), {"text": "six"}])
    result = await workspace(tmp_path, model, kernel).run("plot", approve="allow")
    [event] = [e for e in result.events if isinstance(e, ToolResultEvent)]
    assert (len(event.images), event.images_omitted) == (4, 2)
    assert len(kernel.shown) == 6  # the cell (plain mode) still shows all six


def test_models_that_do_not_say_are_taken_to_be_blind() -> None:
    class Unspoken:
        name = "x"

    assert supports_vision(Unspoken()) is False  # type: ignore[arg-type]
    assert supports_vision(PlaceholderModel()) is False
    assert supports_vision(ScriptedModel([])) is True


def test_scripted_file_can_play_a_blind_model(tmp_path: Path) -> None:
    script = tmp_path / "s.json"
    script.write_text(json.dumps({"steps": [], "vision": False}))
    assert ScriptedModel.from_file(script).supports_vision() is False


# -- the litellm conversion ----------------------------------------------------------------


def test_tool_images_follow_the_step_results_as_one_user_message() -> None:
    part = ImagePart(data_base64=base64.b64encode(tiny_png()).decode())
    history = [
        UserMessage(parts=[{"part_kind": "text", "text": "plot"}]),  # type: ignore[list-item]
        AssistantMessage(
            tool_calls=[
                ToolCall(id="a", name="view_image", arguments="{}"),
                ToolCall(id="b", name="list_variables", arguments="{}"),
            ]
        ),
        ToolResultMessage(call_id="a", name="view_image", output="fig-1: PNG", images=[part]),
        ToolResultMessage(call_id="b", name="list_variables", output="df"),
        AssistantMessage(text="done"),
    ]
    check_history(history)
    converted = to_openai_messages("sys", history)
    assert [m["role"] for m in converted] == ["system", "user", "assistant", "tool", "tool", "user", "assistant"]
    images = converted[5]["content"]
    assert images[0] == {"type": "text", "text": "[images returned by the tool calls above]"}
    assert images[1] == {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{part.data_base64}"}}
    assert json.loads(converted[3]["content"]) == {"result": "fig-1: PNG"}


def test_images_at_the_end_of_the_history_are_sent_too() -> None:
    part = ImagePart(data_base64="AAAA")
    history = [
        AssistantMessage(tool_calls=[ToolCall(id="a", name="view_image", arguments="{}")]),
        ToolResultMessage(call_id="a", name="view_image", output="x", images=[part]),
    ]
    converted = to_openai_messages("", history)
    assert [m["role"] for m in converted] == ["assistant", "tool", "user"]
    assert converted[-1]["content"][1]["image_url"]["url"] == "data:image/png;base64,AAAA"


def test_results_without_images_convert_as_before() -> None:
    history = [
        AssistantMessage(tool_calls=[ToolCall(id="a", name="x", arguments="{}")]),
        ToolResultMessage(call_id="a", name="x", output="y"),
    ]
    assert [m["role"] for m in to_openai_messages("", history)] == ["assistant", "tool"]
