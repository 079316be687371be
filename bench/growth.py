"""Growth: does a step cost more late in a long session? One session, 1,000 turns, store on.

    .venv/bin/python bench/growth.py [--turns 1000] [--window 50]

Each turn is two steps of an instant in-process model (no I/O, no tokens to wait for): the
first asks for one `read_file`, the second answers in text, so a turn commits four messages
and the 1,000th turn's requests carry about 4,000. Compaction is off (a threshold no session
reaches), so nothing shrinks the history. For the `window` turns ending at turn 10, 100, 500
and 1,000 it prints the median CPU time per step (all of it is the engine's own: the model
answers at once; CPU time, since wall time on a shared machine measures the neighbours) and the process's resident memory (after five warm-up turns elsewhere); then the ratio of the last mark
against the first, measured in the same run — flat is 1.0. A second session with the store
off runs the same turns for comparison.
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

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from blitz_kernel.core.history import ToolCall, UserMessage  # noqa: E402
from blitz_kernel.core.usage import Price, TokenUsage  # noqa: E402
from blitz_kernel.engine.workspace import Workspace  # noqa: E402
from blitz_kernel.models.base import ModelRequest, ModelResponse, StreamItem  # noqa: E402

MARKS = (10, 100, 500, 1000)
GOAL_MS = 1.0


class InstantModel:
    """Answers at once: a read_file call after a prompt, a short text after a tool result."""

    name = "bench/instant"

    def __init__(self) -> None:
        self.calls = 0

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamItem]:
        self.calls += 1
        usage = TokenUsage(input_tokens=100, output_tokens=10)
        if isinstance(request.messages[-1], UserMessage):
            call = ToolCall(id=f"call_{self.calls}", name="read_file", arguments='{"path": "notes.txt"}')
            yield ModelResponse(text="Reading.", tool_calls=[call], usage=usage, model=self.name)
        else:
            yield ModelResponse(text="The notes say hello.", usage=usage, model=self.name)

    def price(self, model: str) -> Price | None:
        return None

    def context_window(self) -> int | None:
        return None


def resident_mb() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


async def grow(folder: Path, turns: int, window: int, durable: bool) -> dict[int, tuple[float, float]]:
    """Per mark: (median ms per step over the window ending there, RSS in MB)."""
    workspace = Workspace.open(
        folder,
        model=InstantModel(),
        overrides={"context.token_threshold": 10**9},
        environ={},
        home=folder / "home",
        durable=durable,
    )
    session = "growth" if durable else "growth-memory"
    for turn in range(5):  # warm-up in a session of its own: imports, the store's first writes
        await workspace.run(f"warm-up {turn}", session=f"{session}-warm-up")
    marks: dict[int, tuple[float, float]] = {}
    recent: list[float] = []
    for turn in range(1, turns + 1):
        started = time.process_time()
        result = await workspace.run(f"What do the notes say? ({turn})", session=session)
        recent.append((time.process_time() - started) / 2 * 1000)
        assert result.stop_reason == "end_turn", result.error
        recent = recent[-window:]
        if turn in MARKS:
            marks[turn] = (statistics.median(recent), resident_mb())
    assert len(workspace.session(session).history) == 4 * turns
    workspace.sessions.close()
    return marks


def report(title: str, marks: dict[int, tuple[float, float]]) -> None:
    print(title)
    for turn, (ms, rss) in marks.items():
        print(f"  turn {turn:>5} ({4 * turn:>5} messages): {ms:6.2f} ms CPU per step   RSS {rss:6.0f} MB")
    first, last = min(marks), max(marks)
    ratio = marks[last][0] / marks[first][0]
    print(
        f"  per step at turn {last} / at turn {first}: {ratio:.2f} (flat: 1.0)   "
        f"goal: <= {GOAL_MS:g} ms per step, flat; now {marks[last][0]:.2f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=1000)
    parser.add_argument("--window", type=int, default=50, help="turns per median (the first mark has only 10)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "notes.txt").write_text("hello\n")
        on = asyncio.run(grow(Path(folder), args.turns, args.window, durable=True))
        off = asyncio.run(grow(Path(folder), args.turns, args.window, durable=False))
    report(f"one session of {args.turns} turns, 2 steps a turn, instant model, store on:", on)
    report("the same with the store off:", off)


if __name__ == "__main__":
    main()
