"""The widget path under a fast stream: comm messages per second and the final-render delay.

    .venv/bin/python bench/render.py [--deltas 5000] [--seconds 3] [--reps 3]

A model that streams `deltas` text pieces over about `seconds` runs a real turn through the
engine (`Workspace.run`); every event goes through the TurnController into a TurnView whose comm
records what it would send to the browser (the comm is the boundary: `comm.create_comm`
replaced, as ipykernel itself replaces it). Prints, per repetition and as medians:
  - comm messages sent and messages per second (average over the stream, and the busiest
    one-second window), against the ~30/s budget;
  - the delay from the last delta leaving the model to the message that carries the exact
    final text;
  - the handler's cost per event;
  - the whole turn against the same turn with no front end (no handler), run right after it.
Each repetition opens the workspace afresh and closes its sessions at the end, so the next
one can take the session's lock again. Runs in well under a minute.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import comm  # noqa: E402
from comm.base_comm import BaseComm  # noqa: E402

from blitz_kernel.core.usage import Price, TokenUsage  # noqa: E402
from blitz_kernel.engine.workspace import Workspace  # noqa: E402
from blitz_kernel.models.base import ModelRequest, ModelResponse, StreamItem, TextDelta  # noqa: E402
from blitz_kernel.notebook.widgets.controller import TurnController  # noqa: E402

SENT: list[tuple[float, dict[str, Any]]] = []


class RecordingComm(BaseComm):
    """Keeps what a widget would send to the browser, with the time it was sent."""

    def publish_msg(
        self, msg_type: str, data: Any = None, metadata: Any = None, buffers: Any = None, **keys: Any
    ) -> None:
        if msg_type == "comm_msg":
            SENT.append((time.perf_counter(), data or {}))


class StreamingModel:
    """Streams `deltas` pieces over about `seconds`, then the whole text (the Model protocol)."""

    name = "bench/stream"

    def __init__(self, deltas: int, seconds: float) -> None:
        self.pieces = [f"w{i} " if i % 12 else f"w{i}\n\n" for i in range(deltas)]
        self.seconds = seconds
        self.last_delta_at = 0.0

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamItem]:
        per_sleep = max(1, len(self.pieces) // max(1, int(self.seconds * 1000)))
        started = time.perf_counter()
        for index, piece in enumerate(self.pieces):
            yield TextDelta(text=piece)
            if index % per_sleep == 0:
                # pace the stream: at most one sleep per millisecond of the target duration
                target = started + self.seconds * index / len(self.pieces)
                await asyncio.sleep(max(0.0, target - time.perf_counter()))
        self.last_delta_at = time.perf_counter()
        yield ModelResponse(
            text="".join(self.pieces),
            usage=TokenUsage(input_tokens=10, output_tokens=len(self.pieces)),
            model=self.name,
        )

    def price(self, model: str) -> Price | None:
        return None

    def context_window(self) -> int | None:
        return None


def busiest_second(times: list[float]) -> int:
    best, start = 0, 0
    for end, moment in enumerate(times):
        while moment - times[start] > 1.0:
            start += 1
        best = max(best, end - start + 1)
    return best


async def one_run(deltas: int, seconds: float, folder: Path) -> dict[str, float]:
    model = StreamingModel(deltas, seconds)
    workspace = Workspace.open(folder, model=model)
    controller = TurnController(workspace, "bench", "stream")
    controller.create_view()
    SENT.clear()
    spent = 0.0
    events = 0

    def handle(event: Any) -> None:
        nonlocal spent, events
        started = time.perf_counter()
        controller.apply(event)
        spent += time.perf_counter() - started
        events += 1

    began = time.perf_counter()
    result = await workspace.run("stream", session="bench", on_event=handle)
    text = "".join(model.pieces)
    assert result.text == text
    view = controller.view
    assert view is not None and view.items[-1] == {"kind": "text", "text": text}, "final text not exact"
    final_at = next(t for t, data in SENT if any(i.get("text") == text for i in data.get("state", {}).get("items", [])))
    stream_times = [t for t, _ in SENT if t <= model.last_delta_at]
    duration = model.last_delta_at - began
    controller.close()
    bare = StreamingModel(deltas, seconds)
    bare_workspace = Workspace.open(folder, model=bare)
    bare_began = time.perf_counter()
    await bare_workspace.run("stream", session="bench-bare")
    bare_s = bare.last_delta_at - bare_began
    for opened in (workspace, bare_workspace):  # the next repetition takes the sessions' locks again
        opened.sessions.close()
    return {
        "vs_bare": duration / bare_s,
        "messages": len(SENT),
        "stream_s": duration,
        "per_s": len(stream_times) / duration,
        "busiest_1s": busiest_second([t for t, _ in SENT]),
        "final_delay_ms": (final_at - model.last_delta_at) * 1000,
        "handler_us": spent / events * 1e6,
        "events": events,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--deltas", type=int, default=5000)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    comm.create_comm = RecordingComm  # what a kernel does too: widgets open their comms through it
    runs = []
    with tempfile.TemporaryDirectory() as folder:
        for rep in range(args.reps):
            figures = asyncio.run(one_run(args.deltas, args.seconds, Path(folder)))
            runs.append(figures)
            print(
                f"run {rep + 1}: {args.deltas} deltas in {figures['stream_s']:.2f} s → {figures['messages']} comm messages, "
                f"{figures['per_s']:.1f}/s while streaming (busiest second {figures['busiest_1s']}), "
                f"final text {figures['final_delay_ms']:.1f} ms after the last delta, "
                f"{figures['handler_us']:.0f} µs per event, turn {figures['vs_bare']:.3f}x the same turn without a front end"
            )
    median = {key: statistics.median(run[key] for run in runs) for key in runs[0]}
    print(
        f"median: {median['per_s']:.1f} comm messages/s while streaming (budget ~30), busiest second "
        f"{median['busiest_1s']:.0f}, last delta → exact final text {median['final_delay_ms']:.1f} ms, "
        f"{median['handler_us']:.0f} µs per event over {median['events']:.0f} events; "
        f"turn with the widget / without a front end: {median['vs_bare']:.3f}"
    )


if __name__ == "__main__":
    main()
