"""Prompt caching on a Claude and a Gemini turn: input cost with and without it, same run.

    .venv/bin/python bench/caching.py [--steps 10] [--reps 3]

A turn of `steps` model calls against the fake Anthropic Messages API (tests/fake_anthropic.py,
which simulates Anthropic's prompt cache and counts tokens as characters / 4): each step but
the last reads a 4,000-character file, so the history grows by about a thousand tokens a step;
the last answers in text. The same turn runs through the engine and litellm's Anthropic path
twice per repetition, alternating: with the breakpoints the adapter places
(blitz_kernel/models/cache_marks.py) and with `prompt_caching=False`. Input is priced at
litellm's rates for claude-sonnet-4-5 (plain, cache read, cache write). Prints the input cost
of each, their ratio (goal: at most 0.35), and what placing the marks costs per request next to
the median request time (goal: unmeasurable next to a request).

Then the same turn on gemini-2.5-flash against the fake Gemini API (tests/fake_gemini.py, with
its cachedContents), with Gemini's context cache (system prompt and tools, made once: the
history is not cached) and with `prompt_caching=False`, each turn on a fresh fake (a cold
cache). Prints both input costs at litellm's rates, their ratio, and the cache's storage for its
TTL at Google's listed $1.00 per million tokens per hour (not in litellm's map) on top.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("ANTHROPIC_API_KEY", "sk-ant-bench-not-a-real-key")
os.environ.setdefault("GEMINI_API_KEY", "gemini-bench-not-a-real-key")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from blitz_kernel import Workspace  # noqa: E402 - after the environment is set
from blitz_kernel.core.history import AssistantMessage, ToolCall, ToolResultMessage, user_prompt  # noqa: E402
from blitz_kernel.core.usage import Price, UsageTotals  # noqa: E402
from blitz_kernel.models import cache_marks  # noqa: E402
from blitz_kernel.models.litellm_model import LiteLLMModel  # noqa: E402
from blitz_kernel.models.openai_wire import to_openai_messages  # noqa: E402
from tests.fake_anthropic import FakeAnthropicServer, PromptCache  # noqa: E402
from tests.fake_gemini import FakeGeminiServer  # noqa: E402

MODEL = "anthropic/claude-sonnet-4-5"
GEMINI = "gemini/gemini-2.5-flash"
GEMINI_STORAGE_PER_M_HOUR = 1.00
"""USD per million cached tokens per hour on 2.5 Flash (Google's price list)."""
TTL_S = 300


def script(steps: int) -> list[dict[str, Any]]:
    reads = [
        {
            "text": f"Step {i}: reading part {i}.",
            "tool_calls": [{"name": "read_file", "arguments": {"path": f"part{i}.txt"}}],
        }
        for i in range(steps - 1)
    ]
    return [*reads, {"text": "All parts read; they hold the same paragraph."}]


def input_cost(usage: UsageTotals, price: Price) -> float:
    """USD of the input side only: plain, cache-read and cache-write tokens at their rates."""
    plain = usage.input_tokens - usage.cached_tokens - usage.cache_write_tokens
    cached = price.cached_input if price.cached_input is not None else price.input
    write = price.cache_write if price.cache_write is not None else price.input
    return (plain * price.input + usage.cached_tokens * cached + usage.cache_write_tokens * write) / 1e6


async def one_turn(root: Path, server: FakeAnthropicServer, steps: int, caching: bool) -> tuple[UsageTotals, float]:
    server.cache = PromptCache()  # every turn starts cold: nothing from the previous turn
    server.enqueue(*script(steps))
    model = LiteLLMModel(MODEL, api_base=server.base_url, retries=0, prompt_caching=caching)
    workspace = Workspace.open(root, model=model, environ={}, home=root / "home", durable=False)
    started = time.perf_counter()
    result = await workspace.run("read every part and tell me what they hold", session=f"s{time.monotonic_ns()}")
    elapsed = time.perf_counter() - started
    if result.stop_reason != "end_turn" or server.refusals:
        raise SystemExit(f"the turn failed: {result.error or server.refusals}")
    return result.usage, elapsed / steps


async def gemini_turn(root: Path, steps: int, caching: bool) -> tuple[UsageTotals, int]:
    """One cold turn on the Gemini fake: its usage and the tokens of the caches it made."""
    with FakeGeminiServer() as server:
        server.enqueue(*script(steps))
        model = LiteLLMModel(GEMINI, api_base=server.base_url, retries=0, prompt_caching=caching, cache_ttl_s=TTL_S)
        workspace = Workspace.open(root, model=model, environ={}, home=root / "home", durable=False)
        result = await workspace.run("read every part and tell me what they hold", session=f"g{time.monotonic_ns()}")
        if result.stop_reason != "end_turn" or server.refusals:
            raise SystemExit(f"the Gemini turn failed: {result.error or server.refusals}")
        if caching and len(server.cache.created) != 1:
            raise SystemExit(f"the Gemini turn made {len(server.cache.created)} caches, not one")
        return result.usage, sum(cache.tokens for cache in server.cache.created)


def marking_cost_us() -> float:
    """Median µs to place the marks on the last request's history (the longest of the turn)."""
    history: list[Any] = [user_prompt("read every part")]
    for i in range(9):
        history.append(
            AssistantMessage(text="reading", tool_calls=[ToolCall(id=f"t{i}", name="read_file", arguments="{}")])
        )
        history.append(ToolResultMessage(call_id=f"t{i}", name="read_file", output="x" * 4000))
    messages = to_openai_messages("system " * 500, history)
    timings = []
    for _ in range(2000):
        started = time.perf_counter_ns()
        cache_marks.mark_breakpoints(messages)
        timings.append(time.perf_counter_ns() - started)
    return statistics.median(timings) / 1000


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    price = LiteLLMModel(MODEL).price(MODEL)
    assert price is not None, "litellm's map has no price for the benchmark's model"
    costs: dict[bool, list[float]] = {True: [], False: []}
    per_request: list[float] = []
    last: dict[bool, UsageTotals] = {}
    gemini_price = LiteLLMModel(GEMINI).price(GEMINI)
    assert gemini_price is not None, "litellm's map has no price for gemini-2.5-flash"
    gemini_costs: dict[bool, list[float]] = {True: [], False: []}
    gemini_last: dict[bool, UsageTotals] = {}
    stored_tokens = 0
    with tempfile.TemporaryDirectory() as folder, FakeAnthropicServer(record=False) as server:
        root = Path(folder)
        for i in range(args.steps):
            (root / f"part{i}.txt").write_text(("The same paragraph of text, again and again. " * 90)[:4000])
        for _ in range(args.reps):
            for caching in (True, False):
                usage, seconds = await one_turn(root, server, args.steps, caching)
                costs[caching].append(input_cost(usage, price))
                per_request.append(seconds)
                last[caching] = usage
            for caching in (True, False):
                usage, stored = await gemini_turn(root, args.steps, caching)
                gemini_costs[caching].append(input_cost(usage, gemini_price))
                gemini_last[caching] = usage
                stored_tokens = stored or stored_tokens
    cached, plain = statistics.median(costs[True]), statistics.median(costs[False])
    marks_us = marking_cost_us()
    request_ms = statistics.median(per_request) * 1000
    print(f"{args.steps}-step turn on {MODEL} (fake API, {args.reps} repetitions, medians)")
    with_cache = last[True]
    print(
        f"  with breakpoints:    input ${cached:.5f}  ({with_cache.input_tokens:,} in: "
        f"{with_cache.cached_tokens:,} read from cache, {with_cache.cache_write_tokens:,} written)"
    )
    print(f"  without breakpoints: input ${plain:.5f}  ({last[False].input_tokens:,} in, none cached)")
    print(f"  ratio: {cached / plain:.3f}x (goal <= 0.35x); the usage line says: {with_cache.describe_saving()}")
    print(
        f"  placing the marks: {marks_us:.1f} us per request, next to {request_ms:.1f} ms per request (engine + fake)"
    )
    g_cached, g_plain = statistics.median(gemini_costs[True]), statistics.median(gemini_costs[False])
    storage = stored_tokens * GEMINI_STORAGE_PER_M_HOUR / 1e6 * TTL_S / 3600
    g_with = gemini_last[True]
    print(f"{args.steps}-step turn on {GEMINI} (fake API, {args.reps} repetitions, medians)")
    print(
        f"  with the context cache: input ${g_cached:.5f}  ({g_with.input_tokens:,} in: "
        f"{g_with.cached_tokens:,} read from cache, {g_with.cache_write_tokens:,} written)"
    )
    print(f"  without:                input ${g_plain:.5f}  ({gemini_last[False].input_tokens:,} in, none cached)")
    print(f"  ratio: {g_cached / g_plain:.3f}x; the usage line says: {g_with.describe_saving()}")
    print(
        f"  storage of the {stored_tokens:,}-token cache for its {TTL_S} s TTL: ${storage:.5f} "
        f"(ratio with it: {(g_cached + storage) / g_plain:.3f}x)"
    )


if __name__ == "__main__":
    asyncio.run(main())
