"""Replay from a saved notebook: when the session's transcript is not there (another machine,
a new kernel, a store that is gone), the turn record a `%%blitz` cell keeps in its output
metadata is the source (docs/replay.md).

The record keeps each call's arguments (a value is cut at 2,000 characters) and the start of
its result (`RECORD_RESULT_CHARS`), not the whole output, so today's result is compared on the
part the notebook kept, cut the same way, and the report says so. What the record lacks to
replay a call is said, never guessed: a call whose arguments were cut is not run.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ...core.history import ToolCall, ToolResultMessage
from ...core.text import ELLIPSIS, shorten
from ...errors import BlitzError
from .replay import ReplayedCall, compare

RECORD_RESULT_CHARS = 200
"""How much of a result the turn record keeps (the start of its preview)."""
PREVIEW_CHARS = 300
"""How much of a result the turn's events carry (the preview the record is cut from)."""
ARG_CHARS = 2000
"""The longest argument value the record keeps whole."""


class RecordProblem(BlitzError):
    """The cell's metadata has no turn record replay can read."""


def record_calls(record: Mapping[str, Any]) -> tuple[list[ToolCall], dict[str, ToolResultMessage], dict[str, str]]:
    """The record's calls in order, their recorded results, and for each call that cannot be
    replayed from the record, why."""
    calls = record.get("tool_calls")
    if not isinstance(calls, list):
        raise RecordProblem("the cell's turn record lists no tool calls (not a blitz turn record)")
    found: list[ToolCall] = []
    results: dict[str, ToolResultMessage] = {}
    missing: dict[str, str] = {}
    for number, entry in enumerate(calls, 1):
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            raise RecordProblem(f"call {number} of the cell's turn record has no tool name")
        call_id = str(entry.get("id") or f"record-{number}")
        args = entry.get("args") if isinstance(entry.get("args"), dict) else {}
        call = ToolCall(id=call_id, name=entry["name"], arguments=json.dumps(args, ensure_ascii=False))
        found.append(call)
        if entry.get("args_cut") or _was_cut(args):
            missing[call_id] = (
                f"its arguments were cut in the notebook's record (a value over {ARG_CHARS:,} characters)"
            )
        if "result" not in entry or "status" not in entry:
            missing.setdefault(call_id, "the record has no result for it")
            continue
        text = str(entry.get("result") or "")
        ok = entry.get("status") == "done"
        results[call_id] = ToolResultMessage(
            call_id=call_id, name=call.name, output=text if ok else None, error=None if ok else text
        )
    return found, results, missing


def _was_cut(value: Any) -> bool:
    """A record made before `args_cut` existed: a value at the cut length ending in "…"."""
    if isinstance(value, str):
        return len(value) == ARG_CHARS and value.endswith(ELLIPSIS)
    if isinstance(value, dict):
        return any(_was_cut(item) for item in value.values())
    if isinstance(value, list):
        return any(_was_cut(item) for item in value)
    return False


def kept_part(result: ToolResultMessage) -> ToolResultMessage:
    """Today's result cut as the record cut the recorded one: what can be compared."""
    text = shorten(shorten((result.output if result.ok else result.error) or "", PREVIEW_CHARS), RECORD_RESULT_CHARS)
    if result.ok:
        return result.model_copy(update={"output": text, "images": []})
    return result.model_copy(update={"error": text})


def compare_kept(
    call: ToolCall, recorded: ToolResultMessage | None, now: ToolResultMessage, images_then: int | None = None
) -> ReplayedCall:
    """`compare` on the part of each result the record keeps; the whole of today's result
    stays in the report (`now`)."""
    verdict = compare(call, recorded, kept_part(now))
    whole = now.output or "" if now.ok else f"error: {now.error}"
    notes = [verdict.detail] if verdict.detail else []
    if images_then is not None and now.ok and images_then != len(now.images):
        notes.append(f"images: {images_then} then, {len(now.images)} now")
        if verdict.status == "same":
            verdict.status = "changed"
    if verdict.status == "same" and len(whole) > RECORD_RESULT_CHARS:
        notes.append(f"compared on the first {RECORD_RESULT_CHARS} characters the notebook kept")
    return verdict.model_copy(update={"detail": "\n".join(notes), "now": whole})
