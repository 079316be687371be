"""Per-turn checkpoints: what a checkpoint adds to a file write, and how long an undo takes.

    .venv/bin/python bench/checkpoints.py [--samples 200] [--files 100]

Goals: ≤ 1 ms extra for a write of a file ≤ 1 MB; undo of a turn that touched 100
files ≤ 0.5 s. Each figure has a same-run baseline, so the ratio means something on any
machine:
- a write: `write_file`'s own code overwriting an existing file of that size with the
  checkpoint (the old file moved aside into the checkpoint folder and a fresh file created in
  its place, the fingerprint of the new content, the record in the session's SQLite store),
  against the same code with no checkpoint (an overwrite in place). Every sample is a first
  change in its turn, the case that keeps the old content. Samples alternate, so load on the
  machine hits both.
- an undo: `Workspace.undo` of a real turn (ScriptedModel, 100 write_file calls) restoring
  100 files of 10 KB, against copying the same 100 files back with shutil.copyfile.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from blitz_kernel.engine.undo.recorder import TurnRecorder
from blitz_kernel.engine.workspace import Workspace
from blitz_kernel.models.scripted import ScriptedModel
from blitz_kernel.tools.files import WriteFileArgs, _write_file_sync

SIZES = [("1 KB", 1024), ("100 KB", 100 * 1024), ("1 MB", 1024 * 1024)]


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def bench_write(folder: Path, label: str, size: int, samples: int) -> None:
    root = folder / f"write-{size}"
    root.mkdir()
    workspace = Workspace.open(root, model=ScriptedModel([]), environ={}, home=folder / "home")
    session = workspace.session("bench")
    old = os.urandom(size // 2).hex().encode()[:size]
    new = WriteFileArgs(path="data.txt", content=os.urandom(size // 2).hex()[:size])
    ours, baseline = [], []
    for turn in range(samples):
        for checkpointed in (True, False):
            (root / "data.txt").write_bytes(old)
            recorder = TurnRecorder(session, turn, workspace.root, keep_turns=5) if checkpointed else None
            started = time.perf_counter()
            _write_file_sync(workspace.root, new, recorder)
            (ours if checkpointed else baseline).append(time.perf_counter() - started)
    workspace.sessions.close()
    with_cp, without = median_ms(ours), median_ms(baseline)
    print(
        f"write_file of a {label} file, median of {samples}: {with_cp:.3f} ms with the checkpoint, "
        f"+{with_cp - without:.3f} ms (goal ≤ 1 ms extra)"
    )
    print(f"  baseline, the same write with no checkpoint: {without:.3f} ms → ratio {with_cp / without:.2f}×")


def bench_undo(folder: Path, files: int) -> None:
    root = folder / "undo"
    (root / "data").mkdir(parents=True)
    content = "x" * 10_000
    for index in range(files):
        (root / "data" / f"f{index}.txt").write_text(content)
    calls = [
        {"name": "write_file", "arguments": {"path": f"data/f{i}.txt", "content": f"new {i}"}} for i in range(files)
    ]
    workspace = Workspace.open(
        root, model=ScriptedModel([{"tool_calls": calls}, {"text": "done"}]), environ={}, home=folder / "home"
    )

    async def turn_then_undo() -> tuple[float, int]:
        await workspace.run("rewrite them all", session="bench", approve="allow")
        started = time.perf_counter()
        report = await workspace.undo("bench")
        return time.perf_counter() - started, len(report.files)

    elapsed, restored = asyncio.run(turn_then_undo())
    assert restored == files and (root / "data" / "f0.txt").read_text() == content
    copies = sorted((root / ".blitz" / "checkpoints").rglob("*.bak"))
    started = time.perf_counter()
    for index, copy in enumerate(copies):
        shutil.copyfile(copy, root / "data" / f"g{index}.txt")
    baseline = time.perf_counter() - started
    workspace.sessions.close()
    print(f"undo of a turn that wrote {files} files of 10 KB: {elapsed:.3f} s (goal ≤ 0.5 s)")
    print(
        f"  baseline, shutil.copyfile of the same {files} copies: {baseline:.3f} s → ratio {elapsed / baseline:.1f}×"
        " (the undo also checks each file's fingerprint, records each item and rewinds the history)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--files", type=int, default=100)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        for label, size in SIZES:
            bench_write(folder, label, size, args.samples)
        bench_undo(folder, args.files)


if __name__ == "__main__":
    main()
