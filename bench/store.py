"""The durable session store (docs/store.md): appends, a fresh session, resume, search, size.

    .venv/bin/python bench/store.py [--appends 2000] [--fresh 500] [--events 10000]
        [--big-events 100000] [--turns 10000] [--dir DIR] [--backend sqlite|postgres [--url URL]]

`--backend postgres` runs the same workload on the PostgreSQL backend (bench/store_postgres.py).

Goals: an append ≤ 1 ms median for a typical unit; a fresh session's row and lock ≤ 0.1 ms;
resuming a session of 10,000 events ≤ 0.2 s (and a figure for 100,000); a search over 10,000
turns ≤ 50 ms (aim ≤ 5 ms), median and p95, for common and for rare words; the size on disk per
1,000 turns. Each figure has a same-run baseline so the ratio means something on any machine:
an append against a bare INSERT + COMMIT of the same JSON into a one-table database, a fresh
session against one bare INSERT + COMMIT of its row, resume against parsing
the same history from one JSON document, FTS5 search against a LIKE scan of the same
transcript, and the size against the history's own JSON. `--dir` puts the databases on the
file system to measure (file creation costs differ a lot between file systems).

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
from blitz_kernel.engine.store.sessions import SessionBook
from blitz_kernel.engine.store.sqlite import Store

VOCABULARY = [
    f"{stem}{n}"
    for stem in ("data", "frame", "plot", "model", "merge", "column", "value", "outlier")
    for n in range(250)
]
COMMON = ["turn", "let", "compute", "answer", "result", "mentions"]
"""Words in (nearly) every turn: the most matches to rank."""
RARE_EVERY = 400
"""Every this many turns a prompt carries one rare word (`rare<n>`): a handful of matches."""


def turn_units(rng: random.Random, turn: int) -> list[list[Message]]:
    """The three units of one turn."""
    words = " ".join(rng.choices(VOCABULARY, k=25)) + (f" rare{turn // RARE_EVERY}" if turn % RARE_EVERY == 7 else "")
    call = ToolCall(
        id=f"call_{turn}",
        name="run_python",
        arguments=json.dumps({"code": f"df.groupby({rng.choice(VOCABULARY)!r}).mean()"}),
    )
    result = "result:\n" + "\n".join(
        f"{rng.choice(VOCABULARY):<12} {rng.random():.6f} {rng.random():.6f}" for _ in range(30)
    )
    return [
        [user_prompt(f"Turn {turn}: {words}?")],
        [
            AssistantMessage(text="Let me compute that.", tool_calls=[call], model="bench"),
            ToolResultMessage(call_id=call.id, name="run_python", output=result),
        ],
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
    print(
        f"append, median of {count} units:       {ours:.3f} ms (goal ≤ 1 ms); p95 {sorted(samples)[int(len(samples) * 0.95)] * 1000:.3f} ms"
    )
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
    print(
        f"  baseline, parsing the same history from one JSON document: {floor / 1000:.3f} s → ratio {ours / floor:.2f}×"
    )


def bench_fresh(folder: Path, count: int) -> None:
    """A fresh session's row and lock (SessionBook.get of a new name) against one bare
    INSERT + COMMIT of a row (the row alone: on Linux the lock is a byte of one file, no file
    of its own)."""
    root = folder / "fresh"
    root.mkdir()
    book = SessionBook.for_workspace(root, home=folder / "home")
    book.get("warm")
    samples = time_calls_named(book.get, [f"s{n}" for n in range(count)])
    book.close()
    bare = sqlite3.connect(folder / "fresh-bare.db", isolation_level=None)
    bare.execute("PRAGMA journal_mode=WAL")
    bare.execute("PRAGMA synchronous=NORMAL")
    bare.execute("CREATE TABLE sessions (id INTEGER PRIMARY KEY, name TEXT UNIQUE)")

    def floor(name: str) -> None:
        bare.execute("BEGIN IMMEDIATE")
        bare.execute("INSERT INTO sessions (name) VALUES (?)", (name,))
        bare.execute("COMMIT")

    baseline = time_calls_named(floor, [f"s{n}" for n in range(count)])
    bare.close()
    ours, base = median_ms(samples), median_ms(baseline)
    print(f"fresh session (row + lock), median of {count}: {ours:.3f} ms (goal ≤ 0.1 ms); p95 {p95_ms(samples):.3f} ms")
    print(f"  baseline, a bare INSERT + COMMIT of the row: {base:.3f} ms → ratio {ours / base:.1f}×")


def time_calls_named(call: Callable[[str], object], names: list[str]) -> list[float]:
    samples = []
    for name in names:
        started = time.perf_counter()
        call(name)
        samples.append(time.perf_counter() - started)
    return samples


def p95_ms(samples: list[float]) -> float:
    return sorted(samples)[min(len(samples) - 1, int(len(samples) * 0.95))] * 1000


def bench_search_and_size(folder: Path, turns: int) -> None:
    path = folder / "search.db"
    store = Store(path)
    _, history = build(store, "big", turns * 3)
    store.close()
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    size = path.stat().st_size
    json_size = len(HISTORY_ADAPTER.dump_json(history))
    store = Store(path)
    rng = random.Random(3)
    groups = {
        "one-word queries (vocabulary)": rng.sample(VOCABULARY, 30),
        "common words (every turn)": COMMON * 5,
        "rare words (a few turns)": [f"rare{n}" for n in range(max(1, turns // RARE_EVERY))][:30],
    }
    like = sqlite3.connect(path)

    def like_scan(word: str) -> None:
        like.execute("SELECT id FROM transcript WHERE text LIKE ? ORDER BY id LIMIT 20", (f"%{word}%",)).fetchall()

    print(f"search over {turns:,} turns ({len(history):,} messages):")
    for label, words in groups.items():
        store.search(words[0], "big")  # warm
        ours = [time_calls(lambda word=word: store.search(word, "big"), 1)[0] for word in words]  # type: ignore[misc]
        everywhere = [time_calls(lambda word=word: store.search(word), 1)[0] for word in words]  # type: ignore[misc]
        baseline = [time_calls(lambda word=word: like_scan(word), 1)[0] for word in words]  # type: ignore[misc]
        hits = len(store.search(words[0], "big"))
        print(
            f"  {label}, {len(words)} queries: median {median_ms(ours):.2f} ms, p95 {p95_ms(ours):.2f} ms"
            f" (goal ≤ 50 ms, aim ≤ 5); all sessions: median {median_ms(everywhere):.2f} ms; {hits} hits shown"
        )
        print(
            f"    baseline, a LIKE scan (first 20 rows, unranked): median {median_ms(baseline):.2f} ms"
            f" → ratio {median_ms(ours) / median_ms(baseline):.2f}×"
        )
    like.close()
    store.close()
    per_thousand = size / turns * 1000
    print(f"size on disk: {per_thousand / 1e6:.2f} MB per 1,000 turns ({size / 1e6:.1f} MB for {turns:,} turns)")
    print(
        f"  baseline, the history as JSON: {json_size / turns * 1000 / 1e6:.2f} MB per 1,000 turns → ratio {size / json_size:.2f}×"
        " (event log + transcript + FTS index)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--appends", type=int, default=2000)
    parser.add_argument("--fresh", type=int, default=500)
    parser.add_argument("--dir", default=None, help="where the databases go (default: the system's temp folder)")
    parser.add_argument("--events", type=int, default=10_000)
    parser.add_argument("--big-events", type=int, default=100_000)
    parser.add_argument("--turns", type=int, default=10_000)
    parser.add_argument("--backend", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--url", default=None, help="postgres: a server to use (default: a throw-away one)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as name:
        folder = Path(name)
        if args.backend == "postgres":
            from store_postgres import run  # bench/ is on sys.path when this runs as a script

            run(args.url, folder, args.appends, args.fresh, args.events, args.turns)
            return
        bench_appends(folder, args.appends)
        if args.fresh:
            bench_fresh(folder, args.fresh)
        bench_resume(folder, args.events, f"{args.events:,} events", " (goal ≤ 0.2 s)")
        if args.big_events:
            bench_resume(folder, args.big_events, f"{args.big_events:,} events", "")
        bench_search_and_size(folder, args.turns)


if __name__ == "__main__":
    main()
