"""Engine overhead: the same turn three ways, interleaved, against a fake server in its own process.

    .venv/bin/python bench/overhead.py [--reps 60] [--steps 3]

A turn is `steps` streamed model calls: each but the last asks for two parallel `read_file`
calls, the last answers in text. It runs
  (a) through the blitz engine (`Workspace.run`, the litellm adapter, tools, events),
  (b) as a hand-written loop of raw `litellm.acompletion` streaming calls doing the same work,
  (c) as a hand-written loop with the openai SDK directly,
  (d) as a hand-written loop over our litellm adapter alone, so (a) - (d) is the engine's own cost.
The three alternate within every repetition so machine noise hits them alike. Prints medians,
the ratios a/b, a/c and a/d, and the engine's own overhead per step. It runs twice: with an
instant model, and with 4 ms between streamed events (a model streaming ~250 events/s). Then it times
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


def script(steps: int, chunk_delay_s: float) -> list[dict[str, Any]]:
    calls = [{"name": "read_file", "arguments": {"path": name}} for name in FILES]
    timing = {"delay_s": chunk_delay_s} if chunk_delay_s else {}
    middle = [{"text": f"Step {i}: reading both files.", "tool_calls": calls, "usage": {"prompt_tokens": 500, "completion_tokens": 40}, **timing} for i in range(steps - 1)]
    return [*middle, {"text": "Both files hold short lines of text. " * 8, "usage": {"prompt_tokens": 700, "completion_tokens": 80}, **timing}]


def start_server(steps: int, folder: Path, chunk_delay_s: float) -> tuple[subprocess.Popen[str], str]:
    path = folder / "script.json"
    path.write_text(json.dumps(script(steps, chunk_delay_s)))
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

    from blitz_kernel.core.history import ToolResultMessage, user_prompt
    from blitz_kernel.engine.workspace import Workspace
    from blitz_kernel.models.base import ModelRequest, ModelResponse
    from blitz_kernel.models.litellm_model import LiteLLMModel
    from blitz_kernel.models.openai_wire import to_openai_tools

    litellm.suppress_debug_info = True
    ws = Workspace.open(workspace, model=MODEL, overrides={"api_base": base_url}, environ={}, home=workspace / "home")
    client = openai.AsyncOpenAI(base_url=base_url, api_key="sk-bench-not-a-real-key")

    async def via_litellm(messages: list[dict[str, Any]]) -> Any:
        return await litellm.acompletion(model=MODEL, api_base=base_url, messages=messages, tools=TOOLS, stream=True, stream_options={"include_usage": True})

    async def via_openai(messages: list[dict[str, Any]]) -> Any:
        return await client.chat.completions.create(model="fake-model", messages=messages, tools=TOOLS, stream=True, stream_options={"include_usage": True})

    adapter = LiteLLMModel(MODEL, api_base=base_url)
    # Every loop sends the same tool list the engine sends (all built-in tools), so the wire
    # payloads match and (a) - (d) is the engine's own work.
    specs = [tool.spec() for tool in ws.tools._tools.values()]
    TOOLS[:] = to_openai_tools(specs)

    async def adapter_loop(rep: int) -> None:
        """(d): our litellm adapter without the engine, so (a) - (d) is the engine's own cost."""
        messages: list[Any] = [user_prompt("Read both files.")]
        while True:
            response = None
            async for item in adapter.stream(ModelRequest(system="You are a bench.", messages=messages, tools=specs)):
                if isinstance(item, ModelResponse):
                    response = item
            assert response is not None
            messages.append(response.to_message())
            if not response.tool_calls:
                return
            for call in response.tool_calls:
                output = read_tool_file(workspace, json.loads(call.arguments)["path"])
                messages.append(ToolResultMessage(call_id=call.id, name=call.name, output=output))

    async def engine(rep: int) -> None:
        result = await ws.run("Read both files.", session=f"bench-{rep}")
        assert result.stop_reason == "end_turn", result.error

    runs: dict[str, Any] = {
        "a: blitz engine": engine,
        "b: raw litellm": lambda rep: hand_loop(via_litellm, workspace),
        "c: openai SDK": lambda rep: hand_loop(via_openai, workspace),
        "d: adapter only": adapter_loop,
    }
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


def run_scenario(reps: int, steps: int, chunk_delay_s: float) -> None:
    with tempfile.TemporaryDirectory() as folder:
        workspace = Path(folder)
        for name in FILES:
            (workspace / name).write_text("".join(f"line {i} of {name}\n" for i in range(40)))
        server, base_url = start_server(steps, workspace, chunk_delay_s)
        try:
            times = asyncio.run(measure(reps, steps, base_url, workspace))
        finally:
            server.terminate()
            server.wait()
    medians = {name: statistics.median(values) * 1000 for name, values in times.items()}
    pace = f"{chunk_delay_s * 1000:g} ms between streamed events" if chunk_delay_s else "no model latency"
    print(f"turn of {steps} streamed model calls ({2 * (steps - 1)} tool calls), {pace}, {reps} interleaved repetitions, medians:")
    for name, value in medians.items():
        print(f"  {name:<16} {value:8.2f} ms")
    a, b, c, d = medians.values()
    print(
        f"  a/b = {a / b:.3f}   a/c = {a / c:.3f}   a/d = {a / d:.3f}   "
        f"engine's own overhead (a - d): {(a - d) / steps:+.2f} ms per step"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=60)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--kernels", type=int, default=5)
    parser.add_argument("--chunk-delays", default="0,0.004", help="seconds between streamed events, one run each")
    args = parser.parse_args()
    for chunk_delay_s in (float(value) for value in args.chunk_delays.split(",")):
        run_scenario(args.reps, args.steps, chunk_delay_s)
    blitz_s, baseline_s = time_load_ext(args.kernels)
    print(f"%load_ext blitz_kernel: {blitz_s * 1000:.1f} ms (median of {args.kernels} fresh kernels); %load_ext autoreload: {baseline_s * 1000:.1f} ms; ratio {blitz_s / baseline_s:.1f}x")


if __name__ == "__main__":
    main()
