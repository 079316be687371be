"""Images a tool produced, in a real kernel: inside the tool's card while the widget shows the
turn (and as image outputs after its static rendering), never also as outputs of their own
meanwhile; as ordinary image outputs of the cell in plain mode. The model is the fake server;
the figures are real matplotlib (the kernel's inline backend) and IPython displays."""

from __future__ import annotations

import base64
import json
from typing import Any

from tests.fakeserver import FakeOpenAIServer

from .driver import CellRun, KernelDriver, WidgetFrontEnd
from .test_widget_comm import WIDGET_MIME, assert_clean, static_outputs, tool_messages

# A figure left open and an image the code displays itself: both paths FigureCapture takes.
PLOT_CODE = """\
import io
import matplotlib.pyplot as plt
from IPython.display import Image, display
fig, ax = plt.subplots(figsize=(3, 2))
ax.plot([1, 3, 2])
buffer = io.BytesIO()
fig.savefig(buffer, format="png")
display(Image(data=buffer.getvalue()))
"""


def plot_call(call_id: str = "call_plot") -> dict[str, Any]:
    return {"tool_calls": [{"name": "run_python", "arguments": {"code": PLOT_CODE}, "id": call_id}]}


def image_outputs(outputs: list[tuple[str, dict[str, Any]]]) -> list[int]:
    """Indexes of the outputs that show a PNG."""
    return [i for i, (kind, content) in enumerate(outputs) if kind == "display_data" and "image/png" in content["data"]]


def is_png(encoded: str) -> bool:
    return base64.b64decode(encoded).startswith(b"\x89PNG\r\n\x1a\n")


def test_widget_shows_the_figures_in_the_tool_card_and_not_as_outputs_of_their_own(
    kernel: KernelDriver, server: FakeOpenAIServer
) -> None:
    server.enqueue(plot_call(), {"text": "Plotted."})
    front = WidgetFrontEnd(kernel, kernel.submit("%%blitz -s images --approve allow\nPlot it.", browser=True))
    cell = front.finish()
    assert_clean(cell, front)
    [tool] = [item for item in front.state["items"] if item["kind"] == "tool"]
    assert (tool["name"], tool["status"], tool["images"], tool["images_omitted"]) == ("run_python", "done", 2, 0)
    shown = front.state["images"]["call_plot"]
    assert [image["media_type"] for image in shown] == ["image/png", "image/png"]
    assert all(is_png(image["data"]) for image in shown)
    # the model still reads text only, with the "figures:" note
    [result] = tool_messages(server.requests[1].body)
    assert "figures:\nfig-1:" in json.loads(result["content"])["result"]
    assert "image_url" not in json.dumps(server.requests[1].body)
    # no image output while the widget showed the turn: only after its static rendering
    [(data, metadata)] = static_outputs(cell)
    assert WIDGET_MIME not in data and "→ ✓ [2 images below] " in data["text/plain"]
    assert metadata["blitz"]["tool_calls"][0]["images"] == 2
    static_update = max(i for i, (kind, _) in enumerate(cell.outputs) if kind == "update_display_data")
    images = image_outputs(cell.outputs)
    assert len(images) == 2 and min(images) > static_update
    assert [cell.outputs[i][1]["data"]["image/png"] for i in images] == [image["data"] for image in shown]


def test_plain_mode_shows_the_figures_as_image_outputs_once(kernel: KernelDriver, server: FakeOpenAIServer) -> None:
    server.enqueue(plot_call(), {"text": "Plotted."})
    cell: CellRun = kernel.run("%%blitz -s images-plain --plain --approve allow\nPlot it.")
    assert cell.status == "ok", cell.reply
    images = image_outputs(cell.outputs)
    assert len(images) == 2  # the displayed image and the open figure, each once
    assert all(is_png(cell.outputs[i][1]["data"]["image/png"]) for i in images)
    assert WIDGET_MIME not in json.dumps(cell.outputs)
    assert "Plotted." in cell.displays.values()
