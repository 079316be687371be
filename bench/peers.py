"""Peers: the same turn through blitz, the raw openai SDK and pydantic-ai, interleaved.

    .venv/bin/python bench/peers.py [--reps 40] [--steps 3]

A turn is `steps` streamed model calls against the fake server in its own process (the script
of bench/overhead.py): each but the last asks for two parallel `read_file` calls, the last
answers in text. Every loop offers the model the one `read_file` tool, so every request carries
the same work:
  (a) blitz: `Workspace.run` with `tools=["read_file"]` (the direct OpenAI path, events,
      redaction, approvals, the store: a fresh session each turn),
  (c) a hand-written loop over the openai SDK (the baseline: the least a turn can cost),
  (p) a pydantic-ai Agent (`OpenAIChatModel` on the same endpoint, a `read_file` tool that
      reads the file the same way, every model request streamed to an event handler).
All three alternate within every repetition so machine noise hits them alike. Prints medians
(wall and this process's CPU) and the ratios a/c (goal ≤ 1.05) and a/p (goal ≤ 0.7: blitz
keeps a durable session, screens every call and redacts every event, and still costs less).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))

import overhead  # noqa: E402  - its fake-server script, files and hand-written loop

GOAL_RAW = 1.05
GOAL_PEER = 0.7


async def measure(reps: int, base_url: str, workspace: Path) -> dict[str, list[float]]:
    import openai
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    from blitz_kernel.engine.workspace import Workspace
    from blitz_kernel.models.openai_wire import to_openai_tools

    ws = Workspace.open(
        workspace, model=overhead.MODEL, overrides={"api_base": base_url}, environ={}, home=workspace / "home"
    )
    overhead.TOOLS[:] = to_openai_tools([ws.tools._tools["read_file"].spec()])  # (c) sends what (a) sends
    client = openai.AsyncOpenAI(base_url=base_url, api_key="sk-bench-not-a-real-key")
    agent = Agent(
        OpenAIChatModel("fake-model", provider=OpenAIProvider(openai_client=client)),
        instructions="You are a bench.",
    )

    @agent.tool_plain
    def read_file(path: str) -> str:
        """Read a file."""
        return overhead.read_tool_file(workspace, path)

    async def drain(_context: Any, events: Any) -> None:
        async for _event in events:  # every request streamed, its events consumed
            pass

    async def blitz(rep: int) -> None:
        result = await ws.run("Read both files.", session=f"peers-{rep}", tools=["read_file"])
        assert result.stop_reason == "end_turn", result.error

    create: Any = client.chat.completions.create

    async def raw(_rep: int) -> None:
        await overhead.hand_loop(
            lambda messages: create(
                model="fake-model",
                messages=messages,
                tools=overhead.TOOLS,
                stream=True,
                stream_options={"include_usage": True},
            ),
            workspace,
        )

    async def peer(_rep: int) -> None:
        result = await agent.run("Read both files.", event_stream_handler=drain)
        assert "Both files" in result.output

    runs = {"a: blitz": blitz, "c: openai SDK": raw, "p: pydantic-ai": peer}
    times = await overhead.interleaved(runs, reps)
    await client.close()
    ws.sessions.close()
    return times


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=40)
    parser.add_argument("--steps", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        workspace = Path(folder)
        for name in overhead.FILES:
            (workspace / name).write_text("".join(f"line {i} of {name}\n" for i in range(40)))
        server, base_url = overhead.start_server(args.steps, workspace, 0.0)
        try:
            times = asyncio.run(measure(args.reps, base_url, workspace))
        finally:
            server.terminate()
            server.wait()
    wall = {name: statistics.median(v) * 1000 for name, v in times.items() if not name.startswith("cpu ")}
    cpu = {name[4:]: statistics.median(v) * 1000 for name, v in times.items() if name.startswith("cpu ")}
    print(
        f"turn of {args.steps} streamed model calls ({2 * (args.steps - 1)} read_file calls), instant model, "
        f"{args.reps} interleaved repetitions, medians:"
    )
    for name, value in wall.items():
        print(f"  {name:<16} {value:8.2f} ms wall   {cpu[name]:8.2f} ms CPU of this process")
    a, c, p = wall.values()
    print(f"  blitz against the raw openai SDK loop: a/c = {a / c:.3f} (goal <= {GOAL_RAW})")
    print(f"  blitz against pydantic-ai: a/p = {a / p:.3f} (goal <= {GOAL_PEER})")


if __name__ == "__main__":
    main()
