"""The cost of redaction, which runs on every tool result, event and stored message.

    .venv/bin/python bench/redaction.py [--rounds 200]

Texts of 1 KB, 10 KB and 100 KB (Python source with a few secret-named assignments, log lines
with URLs and ids, a CSV) are redacted by a workspace-like redactor: ten secrets from the
environment, each in its encoded forms, the assignment scan and the detect-secrets formats.
Baselines measured in the same run: serialising the same text as the tool result the model
receives (`json.dumps`, which every result pays anyway), and matching only the known values
(what redaction cost before formats and assignments). Prints the median time per text and the
ratios.
"""

from __future__ import annotations

import argparse
import functools
import json
import random
import statistics
import string
import time
from collections.abc import Callable

from blitz_kernel.core.redact import Redactor

random.seed(7)


def _word(n: int = 8) -> str:
    return "".join(random.choice(string.ascii_lowercase) for _ in range(n))


def sample(size: int) -> str:
    """Mixed workspace text of about `size` characters."""
    lines: list[str] = []
    while sum(len(line) + 1 for line in lines) < size:
        kind = random.random()
        if kind < 0.4:
            lines.append(f"    {_word()} = {_word(5)}({_word(6)}, max_tokens={random.randint(1, 999)})")
        elif kind < 0.7:
            lines.append(
                f"2026-01-0{random.randint(1, 9)} INFO GET https://api.example.com/{_word()}?id={random.randint(1, 10**9)}"
            )
        elif kind < 0.95:
            lines.append(",".join(str(random.randint(0, 10**6)) for _ in range(8)))
        else:
            lines.append(f"DB_PASSWORD={_word(12)}")
    return "\n".join(lines)[:size]


def median_seconds(work: Callable[[], object], rounds: int) -> float:
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        work()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def _fresh(redactor: Redactor, text: str) -> Callable[[], object]:
    """Redact `text` with a new last line each call (same size, never remembered)."""
    counter = iter(range(10**9))
    return lambda: redactor.redact(f"{text[:-12]}{next(counter):>12}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args()
    environ = {f"SERVICE_{i}_TOKEN": f"tok-{_word(20)}" for i in range(10)}
    redactor = Redactor.from_environment(environ)
    values_only = Redactor(environ.values(), patterns=False)  # no formats; assignments still scanned
    redactor.redact("warm up")  # loads the detect-secrets plugins once
    print(f"{'text':>8} {'redact':>10} {'json.dumps':>11} {'values only':>12} {'÷ dumps':>8} {'÷ values':>9}")
    for size in (1_000, 10_000, 100_000):
        text = sample(size)
        # A text not seen before each round: the redactor remembers what it redacted, and a
        # repeated text would time that look-up, not the redaction.
        full = median_seconds(_fresh(redactor, text), args.rounds)
        dumps = median_seconds(functools.partial(json.dumps, {"result": text}, ensure_ascii=False), args.rounds)
        values = median_seconds(_fresh(values_only, text), args.rounds)
        print(
            f"{size // 1000:>6} KB {full * 1e3:>8.3f} ms {dumps * 1e3:>9.3f} ms {values * 1e3:>10.3f} ms"
            f" {full / dumps:>7.1f}x {full / values:>8.1f}x"
        )


if __name__ == "__main__":
    main()
