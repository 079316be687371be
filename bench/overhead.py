"""Engine overhead: the same turn several ways, interleaved, against a fake server in its own process.

    .venv/bin/python bench/overhead.py [--reps 60] [--steps 3] [--kernels 5]

A turn is `steps` streamed model calls: each but the last asks for two parallel `read_file`
calls, the last answers in text. It runs
  (a) through the blitz engine (`Workspace.run`: the direct OpenAI path, tools, events, store),
  (a0) the same with the store off (a workspace opened with `durable=False`),
  (aL) the same engine with the model sent through litellm (the adapter's `direct=False`),
  (b) as a hand-written loop of raw `litellm.acompletion` streaming calls doing the same work,
  (c) as a hand-written loop with the openai SDK directly (the baseline a turn should cost),
  (d) as a hand-written loop over our adapter alone on the direct path, so (a) - (d) is the
      engine's own cost,
  (dL) the same loop over the adapter through litellm, so (aL) - (dL) is the engine's cost there.
All alternate within every repetition, in a shuffled order, so machine noise hits them alike. Prints medians, the
ratios against (c) and (b), and the engine's own cost per step with the store on and off. It
runs twice: with an instant model, and with 4 ms between streamed events (a model streaming
~250 events/s). Then, in fresh kernels, it times `%load_ext blitz_kernel` against `%load_ext
autoreload` as the baseline, and reads the kernel's RSS after `%load_ext` (the warm-up done)
and after the first turn, on the direct path and through litellm.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
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
SETTLE_S = 5.0


def script(steps: int, chunk_delay_s: float) -> list[dict[str, Any]]:
    calls = [{"name": "read_file", "arguments": {"path": name}} for name in FILES]
    timing = {"delay_s": chunk_delay_s} if chunk_delay_s else {}
    middle = [
        {
            "text": f"Step {i}: reading both files.",
            "tool_calls": calls,
            "usage": {"prompt_tokens": 500, "completion_tokens": 40},
            **timing,
        }
        for i in range(steps - 1)
    ]
    return [
        *middle,
        {
            "text": "Both files hold short lines of text. " * 8,
            "usage": {"prompt_tokens": 700, "completion_tokens": 80},
            **timing,
        },
    ]


def start_server(steps: int, folder: Path, chunk_delay_s: float) -> tuple[subprocess.Popen[str], str]:
    path = folder / "script.json"
    path.write_text(json.dumps(script(steps, chunk_delay_s)))
    process = subprocess.Popen(
        [
            sys.executable,
            str(ROOT / "tests" / "fakeserver.py"),
            "--port",
            "0",
            "--script",
            str(path),
            "--loop",
            "--no-record",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    return process, process.stdout.readline().strip()


def read_tool_file(workspace: Path, name: str) -> str:
    """What (b) and (c) do for a tool call: the same file read the engine's read_file does."""
    lines = (workspace / name).read_text().splitlines()
    return "\n".join(f"{n:>6}\t{line}" for n, line in enumerate(lines, 1))


TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a file.",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
        },
    }
]


async def hand_loop(create: Any, workspace: Path) -> str:
    """(b)/(c): stream, assemble tool calls, run them, send results, until a text answer."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a bench."},
        {"role": "user", "content": "Read both files."},
    ]
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
        messages.append(
            {
                "role": "assistant",
                "content": text,
                "tool_calls": [
                    {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
                    for c in calls.values()
                ],
            }
        )
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
    home = workspace / "home"
    ws = Workspace.open(workspace, model=MODEL, overrides={"api_base": base_url}, environ={}, home=home)
    ws_memory = Workspace.open(
        workspace, model=MODEL, overrides={"api_base": base_url}, environ={}, home=home, durable=False
    )
    ws_litellm = Workspace.open(
        workspace, model=LiteLLMModel(MODEL, api_base=base_url, direct=False), environ={}, home=home
    )
    client = openai.AsyncOpenAI(base_url=base_url, api_key="sk-bench-not-a-real-key")

    async def via_litellm(messages: list[dict[str, Any]]) -> Any:
        return await litellm.acompletion(
            model=MODEL,
            api_base=base_url,
            messages=messages,
            tools=TOOLS,
            stream=True,
            stream_options={"include_usage": True},
        )

    async def via_openai(messages: list[dict[str, Any]]) -> Any:
        return await client.chat.completions.create(
            model="fake-model", messages=messages, tools=TOOLS, stream=True, stream_options={"include_usage": True}
        )

    adapter = LiteLLMModel(MODEL, api_base=base_url, direct=True)
    adapter_litellm = LiteLLMModel(MODEL, api_base=base_url, direct=False)
    # Every loop sends the same tool list the engine sends (all built-in tools), so the wire
    # payloads match and (a) - (d) is the engine's own work.
    specs = [tool.spec() for tool in ws.tools._tools.values()]
    TOOLS[:] = to_openai_tools(specs)

    async def adapter_loop(adapter: LiteLLMModel) -> None:
        """(d)/(dL): our adapter without the engine, so (a) - (d) is the engine's own cost."""
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

    async def engine(workspace_: Workspace, session: str) -> None:
        result = await workspace_.run("Read both files.", session=session)
        assert result.stop_reason == "end_turn", result.error

    runs: dict[str, Any] = {
        "a: blitz engine": lambda rep: engine(ws, f"bench-{rep}"),
        "a0: store off": lambda rep: engine(ws_memory, f"bench-{rep}"),
        "aL: via litellm": lambda rep: engine(ws_litellm, f"bench-litellm-{rep}"),
        "b: raw litellm": lambda rep: hand_loop(via_litellm, workspace),
        "c: openai SDK": lambda rep: hand_loop(via_openai, workspace),
        "d: adapter only": lambda rep: adapter_loop(adapter),
        "dL: adapter/litellm": lambda rep: adapter_loop(adapter_litellm),
    }
    times = await interleaved(runs, reps)
    await client.close()
    for workspace_ in (ws, ws_memory, ws_litellm):
        workspace_.sessions.close()
    return times


async def interleaved(runs: dict[str, Any], reps: int) -> dict[str, list[float]]:
    """Each run once per repetition, in an order shuffled each repetition (three warm-up rounds
    not counted), so machine noise and whatever one run leaves behind hit them alike: wall
    seconds under each name, this process's CPU under "cpu NAME". A run's time includes the
    tasks it left on the loop (litellm logs and caches a stream in tasks of its own after the
    last chunk): those are awaited before the clock stops, not charged to the run after it."""
    times: dict[str, list[float]] = {name: [] for name in [*runs, *(f"cpu {name}" for name in runs)]}
    order = list(runs)
    shuffle = random.Random(0).shuffle
    for rep in range(-3, reps):
        shuffle(order)
        for name in order:
            started, cpu_started = time.perf_counter(), time.process_time()
            before = asyncio.all_tasks()
            await runs[name](rep)
            await settle(asyncio.all_tasks() - before)
            if rep >= 0:
                times[name].append(time.perf_counter() - started)
                times[f"cpu {name}"].append(time.process_time() - cpu_started)
    return times


async def settle(left: set[asyncio.Task[Any]]) -> None:
    """Await the tasks a run left behind; one still running after `SETTLE_S` is a worker that
    never ends (left to run, like any background task)."""
    if left:
        await asyncio.wait(left, timeout=SETTLE_S)


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
                reply = client.execute_interactive(
                    code.format(ext=ext),
                    output_hook=lambda m, s=sink: (
                        s.append(float(m["content"]["text"])) if m["msg_type"] == "stream" else None
                    ),
                    timeout=60,
                )
                assert reply["content"]["status"] == "ok"
        finally:
            client.stop_channels()
            manager.shutdown_kernel(now=True)
    return statistics.median(blitz), statistics.median(baseline)


RSS = "print(next(int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('VmRSS:')) / 1024)"
"""The kernel's resident memory in MB (`ru_maxrss` would not do: a child inherits its parent's)."""


def kernel_memory(direct: bool) -> tuple[float, float, float, bool]:
    """Resident memory of a fresh kernel (MB): bare, after `%load_ext` with its warm-up finished, after the
    first turn; and whether litellm got imported. Through litellm (`direct=False`) the warm-up
    is what a non-OpenAI model's kernel does: `load_litellm()`."""
    from jupyter_client.manager import start_new_kernel

    with tempfile.TemporaryDirectory() as folder:
        workspace = Path(folder)
        (workspace / "alpha.txt").write_text("alpha\n")
        (workspace / "beta.txt").write_text("beta\n")
        server, base_url = start_server(2, workspace, 0)
        env = {**os.environ, "BLITZ_MODEL": MODEL, "BLITZ_API_BASE": base_url, "HOME": str(workspace)}
        manager, client = start_new_kernel(kernel_name="python3", cwd=folder, env=env)
        try:

            def run(code: str) -> str:
                printed: list[str] = []
                reply = client.execute_interactive(
                    code,
                    output_hook=lambda m: printed.append(m["content"]["text"]) if m["msg_type"] == "stream" else None,
                    timeout=120,
                )
                assert reply["content"]["status"] == "ok", reply["content"]
                return "".join(printed)

            bare = float(run(RSS))
            warm = (
                ""
                if direct
                else "import blitz_kernel.models.litellm_model as m; m.DIRECT_PATH = False; m.load_litellm()\n"
            )
            loaded = float(
                run(
                    "%load_ext blitz_kernel\nfrom blitz_kernel.notebook import extension\nextension._state['warm_up'].join()\n"
                    + warm
                    + RSS
                )
            )
            assert "end_turn" in run("%%blitz -s rss --approve allow --plain\nRead both files.")
            turned, litellm_loaded = run(RSS + "\nimport sys; print('litellm' in sys.modules)").split()
        finally:
            client.stop_channels()
            manager.shutdown_kernel(now=True)
            server.terminate()
            server.wait()
    return bare, loaded, float(turned), litellm_loaded == "True"


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
    medians = {name: statistics.median(values) * 1000 for name, values in times.items() if not name.startswith("cpu ")}
    cpu = {name[4:]: statistics.median(values) * 1000 for name, values in times.items() if name.startswith("cpu ")}
    pace = f"{chunk_delay_s * 1000:g} ms between streamed events" if chunk_delay_s else "no model latency"
    print(
        f"turn of {steps} streamed model calls ({2 * (steps - 1)} tool calls), {pace}, {reps} interleaved repetitions, medians:"
    )
    for name, value in medians.items():
        print(f"  {name:<20} {value:8.2f} ms wall   {cpu[name]:8.2f} ms CPU of this process")
    ca, ca0, ca_litellm, _, cc, cd, cd_litellm = cpu.values()
    print(
        f"  CPU (robust on a busy machine; the fake server runs in its own process): a/c = {ca / cc:.3f}   "
        f"engine's own CPU per step: store on {(ca - cd) / steps:+.2f} ms, store off {(ca0 - cd) / steps:+.2f} ms, "
        f"through litellm {(ca_litellm - cd_litellm) / steps:+.2f} ms"
    )
    a, a0, a_litellm, b, c, d, d_litellm = medians.values()
    print(
        f"  against the raw openai SDK loop (c): a/c = {a / c:.3f} (goal <= 1.05)   a0/c = {a0 / c:.3f}   aL/c = {a_litellm / c:.3f}"
    )
    print(f"  against raw litellm (b): a/b = {a / b:.3f}   aL/b = {a_litellm / b:.3f}")
    print(
        f"  engine's own cost per step (goal <= 1 ms): store on (a - d) {(a - d) / steps:+.2f} ms, "
        f"store off (a0 - d) {(a0 - d) / steps:+.2f} ms, through litellm (aL - dL) {(a_litellm - d_litellm) / steps:+.2f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=60)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument(
        "--kernels", type=int, default=5, help="fresh kernels for the %%load_ext and RSS figures; 0 leaves them out"
    )
    parser.add_argument("--chunk-delays", default="0,0.004", help="seconds between streamed events, one run each")
    args = parser.parse_args()
    for chunk_delay_s in (float(value) for value in args.chunk_delays.split(",")):
        run_scenario(args.reps, args.steps, chunk_delay_s)
    if args.kernels < 1:
        print("%load_ext and kernel RSS: not measured (--kernels 0)")
        return
    blitz_s, baseline_s = time_load_ext(args.kernels)
    print(
        f"%load_ext blitz_kernel: {blitz_s * 1000:.1f} ms (median of {args.kernels} fresh kernels); %load_ext autoreload: {baseline_s * 1000:.1f} ms; ratio {blitz_s / baseline_s:.1f}x"
    )
    for direct in (True, False):
        bare, loaded, turned, litellm_loaded = kernel_memory(direct)
        path = "direct OpenAI path" if direct else "through litellm"
        print(
            f"kernel RSS, {path}: bare {bare:.0f} MB; after %load_ext +{loaded - bare:.0f} MB; after the first turn "
            f"+{turned - bare:.0f} MB (goal <= +100 MB); litellm imported: {litellm_loaded}"
        )


if __name__ == "__main__":
    main()
