"""The session store on PostgreSQL (docs/store.md): the same workload as bench/store.py —
appends, a fresh session, resume, search — against the Postgres backend.

    .venv/bin/python bench/store.py --backend postgres [--url postgresql://…] [--appends 2000]
        [--fresh 500] [--events 10000] [--turns 10000]

With no `--url` a throw-away server is started on a free loopback port (the one the tests use,
tests/helpers/postgres.py; Debian's `postgresql` package must be installed: scripts/postgres.sh)
and run with `fsync=off`, as the tests run it: the figures are the backend's own cost plus the
round trips, not the disk's. The search figures are taken after an `ANALYZE`, as a database in
use has its statistics from autovacuum. Each figure has a same-run baseline on the same server: an append
against a bare INSERT + COMMIT of the same JSON, a fresh session against a bare INSERT + COMMIT
of one row (the advisory lock included in ours), resume against parsing the same history from
one JSON document, and the ranked `tsvector` search against an unranked ILIKE scan.
"""

from __future__ import annotations

import contextlib
import random
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg

from blitz_kernel.core.history import HISTORY_ADAPTER
from blitz_kernel.engine.store.postgres.store import PostgresStore
from blitz_kernel.engine.store.sessions import SessionBook

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root: tests.helpers

from store import COMMON, RARE_EVERY, VOCABULARY, build, median_ms, p95_ms, time_calls, time_calls_named, turn_units  # noqa: E402


@contextlib.contextmanager
def server(url: str | None) -> Iterator[str]:
    """`url`, or a throw-away server's for the length of the run."""
    if url is not None:
        yield url
        return
    from tests.helpers.postgres import PostgresServer

    started = PostgresServer().start()
    try:
        print(f"(a throw-away PostgreSQL server on 127.0.0.1:{started.port}, fsync=off)")
        yield started.url
    finally:
        started.stop()


def store_for(url: str) -> PostgresStore:
    """A store of its own workspace identity, so runs never see each other's sessions."""
    return PostgresStore(url, owner="bench", workspace=f"/bench/{uuid.uuid4().hex}")


def bench_appends(url: str, count: int) -> None:
    store = store_for(url)
    session = store.open_session("appends")
    rng = random.Random(1)
    units = [unit for turn in range(count // 3 + 1) for unit in turn_units(rng, turn)][:count]
    samples = []
    for index, unit in enumerate(units):
        samples.extend(time_calls(lambda unit=unit, index=index: store.append(session.id, unit, index // 3), 1))  # type: ignore[misc]
    store.close()
    with psycopg.connect(url, autocommit=True) as bare:
        bare.execute("CREATE TEMP TABLE bare_events (id BIGSERIAL PRIMARY KEY, body TEXT)")

        def insert(unit: list[object]) -> None:
            body = HISTORY_ADAPTER.dump_json(unit).decode()  # type: ignore[arg-type]
            with bare.transaction():
                bare.execute("INSERT INTO bare_events (body) VALUES (%s)", (body,))

        baseline = [time_calls(lambda unit=unit: insert(unit), 1)[0] for unit in units]  # type: ignore[misc]
    ours, floor = median_ms(samples), median_ms(baseline)
    print(f"append, median of {count} units:       {ours:.3f} ms (goal ≤ 1 ms); p95 {p95_ms(samples):.3f} ms")
    print(f"  baseline, bare INSERT + COMMIT of the JSON: {floor:.3f} ms → ratio {ours / floor:.1f}×")


def bench_fresh(url: str, folder: Path, count: int) -> None:
    """A fresh session's row and its advisory lock (SessionBook.get of a new name)."""
    root = folder / f"fresh-{uuid.uuid4().hex[:8]}"
    root.mkdir()
    book = SessionBook.for_workspace(root, url=url, home=folder / "home")
    if book.store_problem is not None:
        raise SystemExit(f"the Postgres store did not open: {book.store_problem}")
    book.get("warm")
    samples = time_calls_named(book.get, [f"s{n}" for n in range(count)])
    book.close()
    with psycopg.connect(url, autocommit=True) as bare:
        bare.execute("CREATE TEMP TABLE bare_sessions (id BIGSERIAL PRIMARY KEY, name TEXT UNIQUE)")

        def floor(name: str) -> None:
            with bare.transaction():
                bare.execute("INSERT INTO bare_sessions (name) VALUES (%s)", (name,))

        baseline = time_calls_named(floor, [f"s{n}" for n in range(count)])
    ours, base = median_ms(samples), median_ms(baseline)
    print(f"fresh session (row + lock), median of {count}: {ours:.3f} ms (goal ≤ 0.1 ms); p95 {p95_ms(samples):.3f} ms")
    print(f"  baseline, a bare INSERT + COMMIT of one row: {base:.3f} ms → ratio {ours / base:.1f}×")


def bench_resume(url: str, events: int) -> None:
    store = store_for(url)
    build(store, "s", events)  # type: ignore[arg-type]
    expected = store.open_session("s").history

    def resume() -> None:
        assert len(store.open_session("s").history) == len(expected)

    samples = time_calls(resume, 5)
    document = HISTORY_ADAPTER.dump_json(expected)
    baseline = time_calls(lambda: HISTORY_ADAPTER.validate_json(document), 5)
    store.close()
    ours, floor = median_ms(samples), median_ms(baseline)
    print(f"resume {events:,} events ({len(expected):,} messages): {ours / 1000:.3f} s (goal ≤ 0.2 s)")
    print(
        f"  baseline, parsing the same history from one JSON document: {floor / 1000:.3f} s → ratio {ours / floor:.2f}×"
    )


def bench_search(url: str, turns: int) -> None:
    store = store_for(url)
    session_id, history = build(store, "big", turns * 3)  # type: ignore[arg-type]
    with psycopg.connect(url, autocommit=True) as settle:
        # a database in use has its statistics from autovacuum; one loaded a moment ago may not
        # yet, and the planner then guesses (about 10× slower): measure the settled state
        settle.execute("ANALYZE")
    rng = random.Random(3)
    groups = {
        "one-word queries (vocabulary)": rng.sample(VOCABULARY, 30),
        "common words (every turn)": COMMON * 5,
        "rare words (a few turns)": [f"rare{n}" for n in range(max(1, turns // RARE_EVERY))][:30],
    }
    with psycopg.connect(url, autocommit=True) as bare:

        def ilike_scan(word: str) -> None:
            bare.execute(
                "SELECT id FROM transcript WHERE session_id = %s AND text ILIKE %s ORDER BY id LIMIT 20",
                (session_id, f"%{word}%"),
            ).fetchall()

        print(f"search over {turns:,} turns ({len(history):,} messages):")
        for label, words in groups.items():
            store.search(words[0], "big")  # warm
            ours = [time_calls(lambda word=word: store.search(word, "big"), 1)[0] for word in words]  # type: ignore[misc]
            baseline = [time_calls(lambda word=word: ilike_scan(word), 1)[0] for word in words]  # type: ignore[misc]
            hits = len(store.search(words[0], "big"))
            print(
                f"  {label}, {len(words)} queries: median {median_ms(ours):.2f} ms, p95 {p95_ms(ours):.2f} ms"
                f" (goal ≤ 50 ms, aim ≤ 5); {hits} hits shown"
            )
            print(
                f"    baseline, an ILIKE scan (first 20 rows, unranked): median {median_ms(baseline):.2f} ms"
                f" → ratio {median_ms(ours) / median_ms(baseline):.2f}×"
            )
    store.close()


def run(url: str | None, folder: Path, appends: int, fresh: int, events: int, turns: int) -> None:
    with server(url) as reached:
        bench_appends(reached, appends)
        if fresh:
            bench_fresh(reached, folder, fresh)
        bench_resume(reached, events)
        bench_search(reached, turns)
