"""Approval: who may let a tool call run.

The policy says `allow`, `ask` or `deny` per call; `ask` calls of one batch go to the
`Approver` as one PermissionRequest. An Approver answers per call (allow once, always for this
session, deny with a reason). Anything without an answer is denied: fail-closed. With nobody
to ask (headless), the headless policy answers, default deny with a reason the model sees.
"""

from __future__ import annotations

import asyncio
import fnmatch
import itertools
from typing import Any, Protocol

from ...core.terms import DecidedBy, HeadlessPolicy, Policy, ToolPolicy
from ...errors import ApprovalOverflowError
from ..events import PendingCall, PermissionDecision, PermissionRequest

HEADLESS_REASON = "approval needed but nobody can answer (headless)"
NO_DECISION_REASON = "no decision was given (denied: approvals fail closed)"
TIMEOUT_REASON = "the permission request expired (denied)"
CANCELLED_REASON = "the turn was stopped before a decision (denied)"


class Approver(Protocol):
    """Answers permission requests; a front end implements it (widget buttons, tests)."""

    @property
    def interactive(self) -> bool:
        """False when nobody can answer: the headless policy applies instead."""
        ...

    async def decide(self, request: PermissionRequest) -> list[PermissionDecision]:
        """Return a decision per call; missing ones count as denials."""
        ...


# An approver may set `expires_to_headless = True`: a request it leaves unanswered past
# approval.timeout_s is then decided by the headless policy rather than denied (an outside
# client's call asked in the notebook, where nobody may be looking).


class HeadlessApprover:
    """Nobody is there to click: `ask` resolves by the headless policy."""

    interactive = False

    async def decide(self, request: PermissionRequest) -> list[PermissionDecision]:
        raise RuntimeError("a headless approver is never asked")  # the gate answers for it


def configured_policy(tool_name: str, configured: dict[str, ToolPolicy]) -> ToolPolicy | None:
    """The configured policy for `tool_name`: its exact name, else the most specific (longest)
    `*` pattern that matches it (`mcp__warehouse__*`)."""
    if tool_name in configured:
        return configured[tool_name]
    patterns = [key for key in configured if "*" in key or "?" in key]
    matching = [key for key in patterns if fnmatch.fnmatchcase(tool_name, key)]
    return configured[max(matching, key=len)] if matching else None


def resolve_policy(
    tool_name: str,
    mutating: bool,
    configured: dict[str, ToolPolicy],
    turn_override: Policy | None,
    always_allowed: set[str],
    locked: dict[str, ToolPolicy] | None = None,
) -> tuple[ToolPolicy, DecidedBy]:
    """The policy for one call and who set it. The admin policy's (`locked`) is absolute, so
    neither `--approve` nor an "always allow" answer loosens it; then a configured `deny`;
    then the turn's `--approve` (mutating tools only); then "always allow" answers of this
    session; then the configured policy; then the default: read-only allow, mutating ask."""
    locked_value = configured_policy(tool_name, locked or {})
    if locked_value is not None:
        return locked_value, "policy"
    configured_value = configured_policy(tool_name, configured)
    if configured_value == "deny":
        return "deny", "policy"
    if mutating and turn_override is not None:
        return turn_override, "policy"
    if tool_name in always_allowed:
        return "allow", "always"
    if configured_value is not None:
        return configured_value, "policy"
    return ("ask" if mutating else "allow"), "policy"


class ApprovalGate:
    """Sends `ask` calls to the approver, one request per batch, and enforces fail-closed,
    the headless policy, `max_pending` and the request timeout."""

    _request_ids = itertools.count(1)

    def __init__(
        self,
        approver: Approver,
        *,
        headless_policy: HeadlessPolicy = "deny",
        max_pending: int = 4,
        timeout_s: float | None = None,
        waiting: PendingApprovals | None = None,
    ) -> None:
        self.approver = approver
        self.headless_policy = headless_policy
        self.max_pending = max_pending
        self.timeout_s = timeout_s
        self.waiting = waiting or PendingApprovals()
        """Shared by every gate of a workspace: the limit spans the kernel's turns, asides and
        API turns (one session only ever has one request open at a time)."""

    def new_request(self, calls: list[PendingCall]) -> PermissionRequest:
        return PermissionRequest(request_id=f"perm-{next(self._request_ids)}", calls=calls)

    async def decide(
        self, request: PermissionRequest, control: StopSignal | None = None
    ) -> dict[str, PermissionDecision]:
        """A decision for every call of the request, keyed by call id. `control` ends the wait
        when the turn is stopped; at most `max_pending` requests wait at once."""
        if not self.approver.interactive:
            verdict: HeadlessPolicy = self.headless_policy
            return _uniform(request, verdict, None if verdict == "allow" else HEADLESS_REASON, "headless default")
        counter = self.waiting
        if counter.pending_approvals >= self.max_pending:
            raise ApprovalOverflowError(
                f"more than {self.max_pending} permission requests are waiting (approval.max_pending)"
            )
        counter.pending_approvals += 1
        try:
            answers = await self._wait(request, control)
        finally:
            counter.pending_approvals -= 1
        by_id = {a.call_id: a for a in answers}
        return {
            c.id: by_id.get(c.id) or PermissionDecision(call_id=c.id, decision="deny", reason=NO_DECISION_REASON)
            for c in request.calls
        }

    async def _wait(self, request: PermissionRequest, control: StopSignal | None) -> list[PermissionDecision]:
        """The approver's answers, or denials when the request expires or the turn stops."""
        answer = asyncio.ensure_future(self.approver.decide(request))
        waits: set[asyncio.Future[Any]] = {answer}
        stopped = asyncio.ensure_future(control.wait_for_stop()) if control is not None else None
        if stopped is not None:
            waits.add(stopped)
        try:
            done, _ = await asyncio.wait(waits, timeout=self.timeout_s, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for future in waits:
                future.cancel()
        if answer in done and not answer.cancelled():
            return answer.result()
        if stopped is not None and stopped in done:
            return list(_uniform(request, "deny", CANCELLED_REASON, "stop").values())
        if getattr(self.approver, "expires_to_headless", False):
            return list(expired_to_headless(request, self.headless_policy, self.timeout_s).values())
        return list(_uniform(request, "deny", TIMEOUT_REASON, "timeout").values())


class StopSignal(Protocol):
    """The running turn's control, as far as the gate needs it."""

    async def wait_for_stop(self) -> None: ...


class PendingApprovals:
    """How many permission requests wait for an answer now, across a workspace."""

    def __init__(self) -> None:
        self.pending_approvals = 0


def expired_to_headless(
    request: PermissionRequest, verdict: HeadlessPolicy, timeout_s: float | None
) -> dict[str, PermissionDecision]:
    """Nobody answered in time where an outside client's call was asked (the notebook): the
    headless policy decides, as if nobody had been there to ask."""
    waited = f" within {timeout_s:g} s" if timeout_s is not None else ""
    reason = None if verdict == "allow" else f"nobody answered in the notebook{waited}; {HEADLESS_REASON}"
    return _uniform(request, verdict, reason, "timeout")


def _uniform(
    request: PermissionRequest, verdict: HeadlessPolicy, reason: str | None, decided_by: DecidedBy
) -> dict[str, PermissionDecision]:
    return {
        c.id: PermissionDecision(call_id=c.id, decision=verdict, reason=reason, decided_by=decided_by)
        for c in request.calls
    }
