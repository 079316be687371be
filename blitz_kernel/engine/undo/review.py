"""Reviewing a turn: list its changes, revert some, keep the others (docs/undo.md).

A partial revert is the undo of chosen items of one turn (undo.py's `Undoer`, limited to
them): the others stay as they are, the conversation stays, and a change in conflict (edited,
deleted or rebound since the turn) is skipped and named unless forced. Keeping is a decision
recorded with the turn (a `kept` row), so the review reads the same in a reopened notebook.
Every review, keep and revert goes into the audit trail, with who decided and through what
(the panel, `%blitz_review`, the Python API).
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from pydantic import BaseModel, Field

from ...errors import BlitzError, SessionBusyError
from ...tools.notebook import NotebookAccess
from ..safety.audit import AuditRecord
from ..store.session import Session
from .changes import ReviewedChange, TurnChanges, parse_id, turn_changes
from .undo import Undoer, UndoReport


class RevertReport(BaseModel):
    """What `Workspace.revert` did; `text()` is what `%blitz_review --revert` prints."""

    session: str
    reverted: list[str] = Field(default_factory=list)
    """The ids put back."""
    skipped: dict[str, str] = Field(default_factory=dict)
    """Id → why it was left as it is (a conflict: --force reverts it)."""
    details: list[str] = Field(default_factory=list)
    """What was put back, as undo says it ("restored data.csv")."""

    def text(self) -> str:
        lines = [f"reverted {', '.join(self.reverted)}" if self.reverted else "reverted nothing"]
        lines[0] += f" in session {self.session!r}"
        lines.extend(f"  {line}" for line in self.details)
        lines.extend(f"  skipped {change_id}: {reason}" for change_id, reason in self.skipped.items())
        return "\n".join(lines)


def reviewed_turn(state: Session, turn: int | None) -> int | None:
    """The turn to review (0-based): `turn`, or the newest one that changed something."""
    if turn is not None:
        if turn < 0 or turn >= state.turns:
            raise BlitzError(f"session {state.name!r} has no turn {turn + 1} (it has {state.turns})")
        return turn
    changed = [t for t, c in state.checkpoints.turns.items() if c.changed and t < state.turns]
    return max(changed) if changed else None


def list_changes(root: Path, state: Session, turn: int | None, by: str | None) -> TurnChanges:
    """The change list of `turn` (None: the newest turn that changed something); `by` (who
    looks: the panel, the magic) records the review in the audit trail."""
    chosen = reviewed_turn(state, turn)
    if chosen is None:
        return TurnChanges(session=state.name, turn=None)
    changes = turn_changes(root, state.name, state.checkpoints.get(chosen))
    if by is not None and changes.changes:
        _audit(state, chosen, [c.id for c in changes.changes], "reviewed", by)
    return changes


def _chosen(root: Path, state: Session, change_ids: list[str]) -> dict[int, list[ReviewedChange]]:
    """The changes the ids name, by turn; BlitzError naming every unknown id, before
    anything is touched."""
    if not change_ids:
        raise BlitzError("name the changes to revert (their ids, as %blitz_review lists them)")
    lists: dict[int, TurnChanges] = {}
    chosen: dict[int, list[ReviewedChange]] = {}
    unknown: list[str] = []
    for change_id in dict.fromkeys(i.strip() for i in change_ids):
        turn = parse_id(change_id)
        if turn is None or turn >= state.turns:
            unknown.append(change_id)
            continue
        if turn not in lists:
            lists[turn] = turn_changes(root, state.name, state.checkpoints.get(turn))
        found = next((c for c in lists[turn].changes if c.id == change_id), None)
        if found is None:
            unknown.append(change_id)
        else:
            chosen.setdefault(turn, []).append(found)
    if unknown:
        raise BlitzError(
            f"no change {', '.join(repr(u) for u in unknown)} in session {state.name!r} "
            "(%blitz_review lists the ids); nothing was reverted"
        )
    return chosen


async def revert_changes(
    root: Path, state: Session, bridge: NotebookAccess | None, change_ids: list[str], force: bool, by: str
) -> RevertReport:
    """Put back the chosen changes, newest turn first; the turn's other changes stay."""
    if state.running is not None:
        raise SessionBusyError(f"session {state.name!r} has a running turn; revert after the turn ends")
    if state.compacting:
        raise SessionBusyError(f"session {state.name!r} is being compacted; revert after it finishes")
    chosen = _chosen(root, state, change_ids)
    result = RevertReport(session=state.name)
    for turn in sorted(chosen, reverse=True):
        changes = chosen[turn]
        for change in changes:
            if change.status == "reverted":
                result.skipped[change.id] = "already reverted"
        keys = {c.key for c in changes if c.status != "reverted"}
        if not keys:
            continue
        undoer = Undoer(root, state, bridge, force=force)
        report = await undoer.revert_items(state.checkpoints.get(turn), keys)
        result.details.extend(_details(report))
        for change in changes:
            outcome = undoer.outcomes.get(change.key)
            if change.key not in keys:
                continue
            if outcome == "reverted":
                result.reverted.append(change.id)
                _audit(state, turn, [change.id], "reverted", by, forced=force)
            else:
                result.skipped[change.id] = outcome or "nothing to put back"
                _audit(state, turn, [change.id], "conflict", by, reason=result.skipped[change.id])
    return result


def keep_changes(root: Path, state: Session, change_ids: list[str] | None, turn: int | None, by: str) -> TurnChanges:
    """Keep the chosen changes (None: every open change of `turn`, which closes its review);
    a kept change stays as the agent left it. Returns the turn's list as it is now."""
    if change_ids is None:
        current = list_changes(root, state, turn, None)
        targets = {current.turn: current.open} if current.turn is not None else {}
    else:
        targets = _chosen(root, state, change_ids)
    for index, changes in targets.items():
        assert index is not None
        kept = [c for c in changes if c.status in ("pending", "conflict")]
        for change in kept:
            state.mark_item_kept(index, change.key)
        if kept:
            _audit(state, index, [c.id for c in kept], "kept", by)
    last = max((t for t in targets if t is not None), default=turn)
    return list_changes(root, state, last, None)


def _details(report: UndoReport) -> list[str]:
    return [*report.files, *(f"{c}" for c in report.cells), *report.variables, *report.not_undone]


def _audit(
    state: Session,
    turn: int,
    ids: list[str],
    decision: str,
    by: str,
    *,
    forced: bool = False,
    reason: str | None = None,
) -> None:
    """One row of the audit trail: what was decided about which changes, by the user, and
    through what (`by`: the panel, the magic, the API)."""
    state.record_audit(
        AuditRecord(
            session=state.name,
            turn=turn,
            call_id=f"review-{uuid.uuid4().hex[:8]}",
            tool="review",
            arguments=json.dumps({"changes": ids, **({"force": True} if forced else {})}),
            decision=decision,
            decided_by="user",
            reason=f"{by}: {reason}" if reason else by,
            status="error" if decision == "conflict" else "ok",
        )
    )
