"""Approval (ENG-23..26): who may let a tool call run.

The policy says `allow`, `ask` or `deny` per call; `ask` calls of one batch go to the
`Approver` as one PermissionRequest. An Approver answers per call (allow once, always for this
session, deny with a reason). Anything without an answer is denied: fail-closed. With nobody
to ask (headless), the headless policy answers, default deny with a reason the model sees.
"""

from __future__ import annotations

import asyncio
import itertools
from typing import Literal, Protocol

from ..errors import ApprovalOverflowError
from .events import PendingCall, PermissionDecision, PermissionRequest

Policy = Literal["allow", "ask", "deny"]

HEADLESS_REASON = "approval needed but nobody can answer (headless)"
NO_DECISION_REASON = "no decision was given (denied: approvals fail closed)"
TIMEOUT_REASON = "the permission request expired (denied)"
CANCELLED_REASON = "the turn was stopped before a decision (denied)"


class Approver(Protocol):
    """Answers permission requests; a front end implements it (widget buttons, tests)."""

    @property
    def interactive(self) -> bool:
        """False when nobody can answer: the headless policy applies instead (ENG-25)."""
        ...

    async def decide(self, request: PermissionRequest) -> list[PermissionDecision]:
        """Return a decision per call; missing ones count as denials."""
        ...


class HeadlessApprover:
    """Nobody is there to click: `ask` resolves by the headless policy."""

    interactive = False

    async def decide(self, request: PermissionRequest) -> list[PermissionDecision]:
        raise RuntimeError("a headless approver is never asked")  # the gate answers for it


def resolve_policy(
    tool_name: str,
    mutating: bool,
    configured: dict[str, Policy],
    turn_override: Policy | None,
    always_allowed: set[str],
) -> Policy:
    """The policy for one call. A configured `deny` is absolute; then the turn's `--approve`
    (mutating tools only); then "always allow" answers of this session; then the configured
    policy; then the default: read-only allow, mutating ask (ENG-23)."""
    configured_policy = configured.get(tool_name)
    if configured_policy == "deny":
        return "deny"
    if mutating and turn_override is not None:
        return turn_override
    if tool_name in always_allowed:
        return "allow"
    if configured_policy is not None:
        return configured_policy
    return "ask" if mutating else "allow"


class ApprovalGate:
    """Sends `ask` calls to the approver, one request per batch, and enforces fail-closed,
    the headless policy, `max_pending` and the request timeout."""

    _request_ids = itertools.count(1)

    def __init__(
        self,
        approver: Approver,
        *,
        headless_policy: Literal["allow", "deny"] = "deny",
        max_pending: int = 4,
        timeout_s: float | None = None,
    ) -> None:
        self.approver = approver
        self.headless_policy = headless_policy
        self.max_pending = max_pending
        self.timeout_s = timeout_s
        self._pending = 0

    def new_request(self, calls: list[PendingCall]) -> PermissionRequest:
        return PermissionRequest(request_id=f"perm-{next(self._request_ids)}", calls=calls)

    async def decide(self, request: PermissionRequest) -> dict[str, PermissionDecision]:
        """A decision for every call of the request, keyed by call id."""
        if not self.approver.interactive:
            verdict: Literal["allow", "deny"] = self.headless_policy
            reason = None if verdict == "allow" else HEADLESS_REASON
            return {c.id: PermissionDecision(call_id=c.id, decision=verdict, reason=reason) for c in request.calls}
        if self._pending >= self.max_pending:
            raise ApprovalOverflowError(
                f"more than {self.max_pending} permission requests are waiting (approval.max_pending)"
            )
        self._pending += 1
        try:
            answers = await asyncio.wait_for(self.approver.decide(request), self.timeout_s)
        except TimeoutError:
            answers = [PermissionDecision(call_id=c.id, decision="deny", reason=TIMEOUT_REASON) for c in request.calls]
        finally:
            self._pending -= 1
        by_id = {a.call_id: a for a in answers}
        return {
            c.id: by_id.get(c.id) or PermissionDecision(call_id=c.id, decision="deny", reason=NO_DECISION_REASON)
            for c in request.calls
        }
