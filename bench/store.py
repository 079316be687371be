"""The durable session store (WS-02): appends, resume, search, size.

    .venv/bin/python bench/store.py [--appends 2000] [--events 10000] [--big-events 100000] [--turns 10000]

Goals (issue 9): an append ≤ 1 ms median for a typical unit; resuming a session of 10,000
events ≤ 0.2 s (and a figure for 100,000); a search over 10,000 turns ≤ 50 ms; the size on disk
per 1,000 turns. Each figure has a same-run baseline so the ratio means something on any
machine: an append against a bare INSERT + COMMIT of the same JSON into a one-table database,
resume against parsing the same history from one JSON document, FTS5 search against a LIKE
scan of the same transcript, and the size against the history's own JSON.

A turn here is three units (events): the prompt, a response calling run_python with its
result (~1 KB), and the answer. Words come from a seeded vocabulary, so search has real work.
"""

from __future__ import annotations

import argparse
import json
import random
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from blitz_kernel.core.history import (
    HISTORY_ADAPTER,
    AssistantMessage,
    Message,
    ToolCall,
    ToolResultMessage,
    user_prompt,
)
from blitz_kernel.engine.store.sqlite import Store

VOCABULARY = [f"{stem}{n}" for stem in ("data", "frame", "plot", "model", "merge", "column", "value", "outlier") for n in range(250)]


def turn_units(rng: random.Random, turn: int) -> list[list[Message]]:
    """The three units of one turn."""
    words = " ".join(rng.choices(VOCABULARY, k=25))
    call = ToolCall(id=f"call_{turn}", name="run_python", arguments=json.dumps({"code": f"df.groupby({rng.choice(VOCABULARY)!r}).mean()"}))
    result = "result:\n" + "\n".join(f"{rng.choice(VOCABULARY):<12} {rng.random():.6f} {rng.random():.6f}" for _ in range(30))
    return [
        [user_prompt(f"Turn {turn}: {words}?")],
        [AssistantMessage(text="Let me compute that.", tool_calls=[call], model="bench"),
         ToolResultMessage(call_id=call.id, name="run_python", output=result)],
        [AssistantMessage(text=f"The answer mentions {' '.join(rng.choices(VOCABULARY, k=40))}.", model="bench")],
    ]


def build(store: Store, name: str, events: int, seed: int = 7) -> tuple[int, list[Message]]:
    rng = random.Random(seed)
    session = store.open_session(name)
    history: list[Message] = []
    written = 0
    turn = 0
    while written < events:
        for unit in turn_units(rng, turn):
            if written == events:
                break
            store.append(session.id, unit, turn)
            history.extend(unit)
            written += 1
        turn += 1
    return session.id, history


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def time_calls(call: Callable[[], object], repeat: int) -> list[float]:
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        call()
        samples.append(time.perf_counter() - started)
    return samples


def bench_appends(folder: Path, count: int) -> None:
    store = Store(folder / "appends.db")
    session = store.open_session("appends")
    rng = random.Random(1)
    units = [unit for turn in range(count // 3 + 1) for unit in turn_units(rng, turn)][:count]
    samples = []
    for index, unit in enumerate(units):
        started = time.perf_counter()
        store.append(session.id, unit, index // 3)
        samples.append(time.perf_counter() - started)
    store.close()
    bare = sqlite3.connect(folder / "bare.db", isolation_level=None)
    bare.execute("PRAGMA journal_mode=WAL")
    bare.execute("PRAGMA synchronous=NORMAL")
    bare.execute("CREATE TABLE events (id INTEGER PRIMARY KEY, body TEXT)")
    baseline = []
    for unit in units:
        started = time.perf_counter()
        body = HISTORY_ADAPTER.dump_json(unit).decode()
        bare.execute("BEGIN IMMEDIATE")
        bare.execute("INSERT INTO events (body) VALUES (?)", (body,))
        bare.execute("COMMIT")
        baseline.append(time.perf_counter() - started)
    bare.close()
    ours, floor = median_ms(samples), median_ms(baseline)
    print(f"append, median of {count} units:       {ours:.3f} ms (goal ≤ 1 ms); p95 {sorted(samples)[int(len(samples) * 0.95)] * 1000:.3f} ms")
    print(f"  baseline, bare INSERT + COMMIT of the JSON: {floor:.3f} ms → ratio {ours / floor:.1f}×")


def bench_resume(folder: Path, events: int, label: str, goal: str) -> None:
    path = folder / f"resume-{events}.db"
    store = Store(path)
    build(store, "s", events)
    store.close()
    reopened = Store(path)
    expected = reopened.open_session("s").history  # warm the OS cache once, as a second open would

    def resume() -> None:
        loaded = reopened.open_session("s")
        assert len(loaded.history) == len(expected)

    samples = time_calls(resume, 5)
    document = HISTORY_ADAPTER.dump_json(expected)
    baseline = time_calls(lambda: HISTORY_ADAPTER.validate_json(document), 5)
    reopened.close()
    ours, floor = median_ms(samples), median_ms(baseline)
    print(f"resume {label} ({len(expected):,} messages): {ours / 1000:.3f} s{goal}")
    print(f"  baseline, parsing the same history from one JSON document: {floor / 1000:.3f} s → ratio {ours / floor:.2f}×")


def bench_search_and_size(folder: Path, turns: int) -> None:
    path = folder / "search.db"
    store = Store(path)
    _, history = build(store, "big", turns * 3)
    store._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    size = path.stat().st_size
    json_size = len(HISTORY_ADAPTER.dump_json(history))
    rng = random.Random(3)
    queries = rng.sample(VOCABULARY, 30)
    samples = time_calls(lambda: [store.search(word, "big") for word in queries], 1)
    per_query = [s / len(queries) for s in samples]
    one = [time_calls(lambda word=word: store.search(word, "big"), 1)[0] for word in queries]  # type: ignore[misc]
    hits = len(store.search(queries[0], "big"))

    def like_scan(word: str) -> None:
        store._db.execute(
            "SELECT id FROM transcript WHERE text LIKE ? ORDER BY id LIMIT 20", (f"%{word} %",)
        ).fetchall()

    baseline = [time_calls(lambda word=word: like_scan(word), 1)[0] for word in queries]  # type: ignore[misc]
    store.close()
    ours, floor = median_ms(one), median_ms(baseline)
    print(f"search over {turns:,} turns, median of {len(queries)} one-word queries: {ours:.1f} ms (goal ≤ 50 ms); {hits} hits shown")
    print(f"  mean per query: {statistics.mean(per_query) * 1000:.1f} ms")
    print(f"  baseline, a LIKE scan of the same transcript (first 20 rows, unranked): {floor:.1f} ms → ratio {ours / floor:.2f}×")
    per_thousand = size / turns * 1000
    print(f"size on disk: {per_thousand / 1e6:.2f} MB per 1,000 turns ({size / 1e6:.1f} MB for {turns:,} turns)")
    print(f"  baseline, the history as JSON: {json_size / turns * 1000 / 1e6:.2f} MB per 1,000 turns → ratio {size / json_size:.2f}×"
          " (event log + transcript + FTS index)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--appends", type=int, default=2000)
    parser.add_argument("--events", type=int, default=10_000)
    parser.add_argument("--big-events", type=int, default=100_000)
    parser.add_argument("--turns", type=int, default=10_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        bench_appends(folder, args.appends)
        bench_resume(folder, args.events, f"{args.events:,} events", " (goal ≤ 0.2 s)")
        if args.big_events:
            bench_resume(folder, args.big_events, f"{args.big_events:,} events", "")
        bench_search_and_size(folder, args.turns)


if __name__ == "__main__":
    main()
