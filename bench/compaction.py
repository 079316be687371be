"""Automatic compaction over a long session.

    .venv/bin/python bench/compaction.py [--turns 200] [--threshold 6000]

A 200-turn scripted session (every other turn calls two tools and gets sizeable results) runs
with `context.token_threshold` set, so the engine compacts automatically. It checks that the
largest prompt the model received stayed within the threshold, and reports the time spent per
compaction *excluding the model* (the summariser's own time is subtracted), against a baseline
measured in the same run: serialising the same history once with pydantic.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from blitz_kernel.core.history import HISTORY_ADAPTER
from blitz_kernel.engine.turn import compaction
from blitz_kernel.engine.turn.compaction import estimate_tokens
from blitz_kernel.engine.workspace import Workspace
from blitz_kernel.models.base import ModelRequest, StreamItem
from blitz_kernel.models.scripted import ScriptedModel


class TimedModel:
    """Answers like a chatty model, and times the summariser calls so they can be subtracted."""

    def __init__(self) -> None:
        self.name = "scripted-bench"
        self.largest_prompt = 0
        self.summariser_seconds = 0.0
        self.calls = 0

    def price(self, model: str) -> Any:
        return None

    def context_window(self) -> int | None:
        return None

    def supports_vision(self) -> bool:
        return False

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamItem]:
        started = time.perf_counter()
        summarising = request.system.startswith("You summarise")
        if not summarising:  # the agent's prompts; the summariser reads the window itself
            self.largest_prompt = max(self.largest_prompt, estimate_tokens(request.system, request.messages))
        step = self._step(request, summarising)
        async for item in ScriptedModel([step], name=self.name).stream(request):
            yield item
        if summarising:
            self.summariser_seconds += time.perf_counter() - started

    def _step(self, request: ModelRequest, summarising: bool) -> dict[str, Any]:
        self.calls += 1
        if summarising:
            return {"text": "Goals: explore the data. Decisions: use pandas. " * 20}
        last = request.messages[-1]
        if last.kind == "user" and self.calls % 2 == 0:
            return {
                "text": "Let me look.",
                "tool_calls": [
                    {"name": "list_files", "arguments": {}},
                    {"name": "read_file", "arguments": {"path": "notes.txt"}},
                ],
            }
        return {"text": "Here is what I found in the data, in detail. " * 15}


async def run(turns: int, threshold: int, folder: Path) -> None:
    (folder / "notes.txt").write_text("".join(f"note {i}: a line of observations\n" for i in range(120)))
    model = TimedModel()
    ws = Workspace.open(
        folder,
        model=model,
        overrides={"context.token_threshold": threshold, "context.retain_events": 20},
        environ={},
        home=folder / "home",
    )
    compaction_seconds: list[float] = []
    baseline_seconds: list[float] = []
    original = compaction.Compactor.summarise

    async def timed_compact(self: Any, history: Any, split: int, focus: Any) -> Any:
        started = time.perf_counter()
        summariser_before = model.summariser_seconds
        outcome = await original(self, history, split, focus)
        compaction_seconds.append(time.perf_counter() - started - (model.summariser_seconds - summariser_before))
        serialised = time.perf_counter()
        HISTORY_ADAPTER.dump_json(history)
        baseline_seconds.append(time.perf_counter() - serialised)
        return outcome

    compaction.Compactor.summarise = timed_compact  # type: ignore[method-assign]
    started = time.perf_counter()
    for turn in range(turns):
        result = await ws.run(f"Turn {turn}: look at the notes again and tell me more.", session="long")
        assert result.stop_reason == "end_turn", result.error
    total = time.perf_counter() - started
    compaction.Compactor.summarise = original  # type: ignore[method-assign]
    per = statistics.median(compaction_seconds) * 1000
    base = statistics.median(baseline_seconds) * 1000
    print(f"{turns} turns, {model.calls} model calls, {len(compaction_seconds)} automatic compactions in {total:.1f} s")
    print(
        f"largest agent prompt sent: ≈{model.largest_prompt:,} tokens (threshold {threshold:,}): {'OK' if model.largest_prompt <= threshold else 'OVER'}"
    )
    print(
        f"per compaction, excluding the model: median {per:.2f} ms; baseline (serialising that history once): {base:.2f} ms; ratio {per / base:.1f}x"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--threshold", type=int, default=6000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        asyncio.run(run(args.turns, args.threshold, Path(folder)))


if __name__ == "__main__":
    main()
