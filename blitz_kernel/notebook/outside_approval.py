"""Asking in the notebook about an outside client's calls (docs/mcp-server.md, docs/acp.md).

When the notebook's widget front end is connected (the bridge had its hello), a mutating call
from `blitz mcp` or `blitz acp` is asked there: the bridge op `ask_permission` shows a card
naming the client, answered Allow / Always / Deny. Nobody answering within approval.timeout_s
(or OUTSIDE_ASK_TIMEOUT_S when that is unset), or the front end going away, leaves the call to
the headless policy, as if nobody had been there; a card whose question is settled another way
(the ACP client answered first, the call was cancelled) is taken back with `close_permission`.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

from ..core.terms import HeadlessPolicy
from ..engine.events import PendingCall, PermissionDecision, PermissionRequest
from ..engine.safety.approval import expired_to_headless

OUTSIDE_ASK_TIMEOUT_S = 300.0
"""How long a card waits for its answer when approval.timeout_s is unset."""
MAX_PREVIEW_CHARS = 4000


class NotebookApprover:
    """An Approver that asks the person at the notebook through the bridge."""

    interactive = True
    expires_to_headless = True

    def __init__(self, bridge: Any, client: str, timeout_s: float | None, headless: HeadlessPolicy) -> None:
        self.bridge = bridge
        self.client = client
        self.timeout_s = timeout_s if timeout_s is not None else OUTSIDE_ASK_TIMEOUT_S
        self.headless = headless

    async def decide(self, request: PermissionRequest) -> list[PermissionDecision]:
        answers = await self.ask(request)
        if answers is None:  # expired, or the tab went away: as if nobody had been there
            return list(expired_to_headless(request, self.headless, self.timeout_s).values())
        return answers

    async def ask(self, request: PermissionRequest) -> list[PermissionDecision] | None:
        """The person's answers, or None when none came (expired, the front end went away)."""
        from ..tools.notebook import NotebookNoAnswerError, NotebookRequestError, NotebookUnavailableError

        question = f"{request.request_id}-{uuid.uuid4().hex[:8]}"
        params = {
            "question": question,
            "client": self.client,
            "calls": [{"id": c.id, "name": c.name, "preview": preview(c)} for c in request.calls],
            "timeout_s": self.timeout_s,
        }
        answered = False
        try:
            reply = await self.bridge.request("ask_permission", params, timeout_s=self.timeout_s)
            answered = True
        except (NotebookNoAnswerError, NotebookUnavailableError):
            return None
        except NotebookRequestError as error:  # an answer that is an error: never "nobody there"
            problem = f"the notebook could not ask: {error}"
            return [
                PermissionDecision(call_id=c.id, decision="deny", reason=problem, decided_by="user")
                for c in request.calls
            ]
        finally:
            if not answered:
                self.take_back(question)
        reason = reply.get("reason") or ("denied in the notebook" if reply["answer"] == "deny" else None)
        return [
            PermissionDecision(call_id=c.id, decision=reply["answer"], reason=reason, decided_by="user")
            for c in request.calls
        ]

    def take_back(self, question: str) -> None:
        """Close the card (best effort: the front end may be gone already)."""
        task = asyncio.ensure_future(self.bridge.request("close_permission", {"question": question}))
        task.add_done_callback(lambda done: done.cancelled() or done.exception())


class EitherApprover:
    """Asks the ACP client and the notebook at once (`blitz acp`): the first answer wins and
    the other side's question is taken back (the notebook's card closes; the client is told
    through `settle`, since ACP cannot withdraw a request). The notebook giving no answer is
    no answer: the client's still counts, and the gate's approval.timeout_s still applies."""

    interactive = True

    def __init__(self, client_side: Any, notebook: NotebookApprover, settle: Any) -> None:
        self.client_side = client_side
        self.notebook = notebook
        self.settle = settle
        """Called with the request id when the notebook answered first."""

    async def decide(self, request: PermissionRequest) -> list[PermissionDecision]:
        client = asyncio.ensure_future(self.client_side.decide(request))
        notebook = asyncio.ensure_future(self.notebook.ask(request))
        try:
            done, _ = await asyncio.wait({client, notebook}, return_when=asyncio.FIRST_COMPLETED)
            answered = notebook.result() if notebook in done else None
            if answered is not None:
                self.settle(request.request_id)
                return answered
            return await client
        finally:
            for side in (client, notebook):
                side.cancel()


def preview(call: PendingCall) -> str:
    """What the card shows of a call: its preview (diff, code), else its arguments."""
    text = call.preview or json.dumps(call.args, indent=2, ensure_ascii=False, default=str)
    if len(text) > MAX_PREVIEW_CHARS:
        text = f"{text[:MAX_PREVIEW_CHARS]}\n[... {len(text) - MAX_PREVIEW_CHARS} more characters]"
    return text


def notebook_approver(workspace: Any, client: str) -> NotebookApprover | None:
    """The approver for `client`'s calls when a notebook front end is connected, else None
    (the headless policy decides, unchanged)."""
    from .bridge import current

    bridge = current()
    if bridge is None or not bridge.connected:
        return None
    approval = workspace.configuration.config.approval
    return NotebookApprover(bridge, client, approval.timeout_s, approval.headless)
