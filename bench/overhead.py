"""Engine overhead: the same turn three ways, interleaved, against a fake server in its own process.

    .venv/bin/python bench/overhead.py [--reps 60] [--steps 3]

A turn is `steps` streamed model calls: each but the last asks for two parallel `read_file`
calls, the last answers in text. It runs
  (a) through the blitz engine (`Workspace.run`, the litellm adapter, tools, events),
  (b) as a hand-written loop of raw `litellm.acompletion` streaming calls doing the same work,
  (c) as a hand-written loop with the openai SDK directly.
The three alternate within every repetition so machine noise hits them alike. Prints medians,
the ratios a/b and a/c, and the engine's overhead per step over (b). Then it times
`%load_ext blitz_kernel` in fresh kernels against `%load_ext autoreload` as the baseline.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("OPENAI_API_KEY", "sk-bench-not-a-real-key")
ROOT = Path(__file__).resolve().parent.parent
MODEL = "openai/fake-model"
FILES = ("alpha.txt", "beta.txt")


def script(steps: int) -> list[dict[str, Any]]:
    calls = [{"name": "read_file", "arguments": {"path": name}} for name in FILES]
    middle = [{"text": f"Step {i}: reading both files.", "tool_calls": calls, "usage": {"prompt_tokens": 500, "completion_tokens": 40}} for i in range(steps - 1)]
    return [*middle, {"text": "Both files hold short lines of text. " * 8, "usage": {"prompt_tokens": 700, "completion_tokens": 80}}]


def start_server(steps: int, folder: Path) -> tuple[subprocess.Popen[str], str]:
    path = folder / "script.json"
    path.write_text(json.dumps(script(steps)))
    process = subprocess.Popen(
        [sys.executable, str(ROOT / "tests" / "fakeserver.py"), "--port", "0", "--script", str(path), "--loop", "--no-record"],
        stdout=subprocess.PIPE, text=True,
    )
    assert process.stdout is not None
    return process, process.stdout.readline().strip()


def read_tool_file(workspace: Path, name: str) -> str:
    """What (b) and (c) do for a tool call: the same file read the engine's read_file does."""
    lines = (workspace / name).read_text().splitlines()
    return "\n".join(f"{n:>6}\t{line}" for n, line in enumerate(lines, 1))


TOOLS = [{"type": "function", "function": {"name": "read_file", "description": "Read a file.", "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}}]


async def hand_loop(create: Any, workspace: Path) -> str:
    """(b)/(c): stream, assemble tool calls, run them, send results, until a text answer."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are a bench."}, {"role": "user", "content": "Read both files."}]
    while True:
        stream = await create(messages)
        text, calls = "", {}
        async for chunk in stream:
            if not chunk.choices:
                continue
            delta = chunk.choices[0].delta
            text += delta.content or ""
            for piece in delta.tool_calls or []:
                call = calls.setdefault(piece.index, {"id": "", "name": "", "arguments": ""})
                call["id"] = piece.id or call["id"]
                if piece.function is not None:
                    call["name"] += piece.function.name or ""
                    call["arguments"] += piece.function.arguments or ""
        if not calls:
            return text
        messages.append({"role": "assistant", "content": text, "tool_calls": [{"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}} for c in calls.values()]})
        for call in calls.values():
            result = read_tool_file(workspace, json.loads(call["arguments"])["path"])
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": json.dumps({"result": result})})


async def measure(reps: int, steps: int, base_url: str, workspace: Path) -> dict[str, list[float]]:
    import litellm
    import openai

    from blitz_kernel.engine.workspace import Workspace

    litellm.suppress_debug_info = True
    ws = Workspace.open(workspace, model=MODEL, overrides={"api_base": base_url}, environ={}, home=workspace / "home")
    client = openai.AsyncOpenAI(base_url=base_url, api_key="sk-bench-not-a-real-key")

    async def via_litellm(messages: list[dict[str, Any]]) -> Any:
        return await litellm.acompletion(model=MODEL, api_base=base_url, messages=messages, tools=TOOLS, stream=True, stream_options={"include_usage": True})

    async def via_openai(messages: list[dict[str, Any]]) -> Any:
        return await client.chat.completions.create(model="fake-model", messages=messages, tools=TOOLS, stream=True, stream_options={"include_usage": True})

    async def engine(rep: int) -> None:
        result = await ws.run("Read both files.", session=f"bench-{rep}")
        assert result.stop_reason == "end_turn", result.error

    runs: dict[str, Any] = {"a: blitz engine": engine, "b: raw litellm": lambda rep: hand_loop(via_litellm, workspace), "c: openai SDK": lambda rep: hand_loop(via_openai, workspace)}
    times: dict[str, list[float]] = {name: [] for name in runs}
    for rep in range(-3, reps):  # three warm-up rounds, not counted
        for name, run in runs.items():
            started = time.perf_counter()
            await run(rep)
            if rep >= 0:
                times[name].append(time.perf_counter() - started)
    await client.close()
    return times


def time_load_ext(kernels: int) -> tuple[float, float]:
    from jupyter_client.manager import start_new_kernel

    code = (
        "import time as _t\n_s=_t.perf_counter()\nget_ipython().run_line_magic('load_ext', {ext!r})\n"
        "print(_t.perf_counter()-_s)"
    )
    blitz, baseline = [], []
    for _ in range(kernels):
        manager, client = start_new_kernel(kernel_name="python3")
        try:
            for ext, sink in (("autoreload", baseline), ("blitz_kernel", blitz)):
                reply = client.execute_interactive(code.format(ext=ext), output_hook=lambda m, s=sink: s.append(float(m["content"]["text"])) if m["msg_type"] == "stream" else None, timeout=60)
                assert reply["content"]["status"] == "ok"
        finally:
            client.stop_channels()
            manager.shutdown_kernel(now=True)
    return statistics.median(blitz), statistics.median(baseline)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=60)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--kernels", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        workspace = Path(folder)
        for name in FILES:
            (workspace / name).write_text("".join(f"line {i} of {name}\n" for i in range(40)))
        server, base_url = start_server(args.steps, workspace)
        try:
            times = asyncio.run(measure(args.reps, args.steps, base_url, workspace))
        finally:
            server.terminate()
            server.wait()
    medians = {name: statistics.median(values) * 1000 for name, values in times.items()}
    print(f"turn of {args.steps} streamed model calls ({2 * (args.steps - 1)} tool calls), {args.reps} interleaved repetitions, medians:")
    for name, value in medians.items():
        print(f"  {name:<16} {value:8.2f} ms")
    a, b, c = medians.values()
    print(f"  a/b = {a / b:.3f}   a/c = {a / c:.3f}   engine overhead over raw litellm: {(a - b) / args.steps:+.2f} ms per step")
    blitz_s, baseline_s = time_load_ext(args.kernels)
    print(f"%load_ext blitz_kernel: {blitz_s * 1000:.1f} ms (median of {args.kernels} fresh kernels); %load_ext autoreload: {baseline_s * 1000:.1f} ms; ratio {blitz_s / baseline_s:.1f}x")


if __name__ == "__main__":
    main()
