"""How one `blitz acp` prompt shows in the ACP client (docs/acp.md): the blitz events of the
turn, in order, as ACP session updates; permission requests and a plan's review as
`session/request_permission`, whose answers go back into the turn as controls.

Tool calls keep their blitz ids (a sub-agent's are prefixed with its `invoke_agent` call's id),
so a `tool_call_update` finds its `tool_call`. File and cell edits carry `diff` content.
"""

from __future__ import annotations

import asyncio
from typing import Any

from pydantic import ValidationError

from ..core.outside_wire import OutsideControl, OutsideDecision, OutsideEvent
from ..engine.events import (
    EVENT_ADAPTER,
    ErrorEvent,
    PermissionRequest,
    PlanEvent,
    SubagentEvent,
    TextEvent,
    ToolCallEvent,
    ToolResultEvent,
)

NOT_ASKED = "the ACP client could not be asked (it went away or failed): denied"
TOOL_KINDS = {
    "read_file": "read",
    "list_files": "read",
    "view_image": "read",
    "notebook_read": "read",
    "list_variables": "read",
    "describe_variable": "read",
    "glob": "search",
    "grep": "search",
    "search_session": "search",
    "write_file": "edit",
    "edit_file": "edit",
    "notebook_edit": "edit",
    "run_python": "execute",
    "notebook_run": "execute",
    "web_fetch": "fetch",
    "enter_plan_mode": "switch_mode",
    "exit_plan_mode": "switch_mode",
}


class EventMapper:
    """Turns one prompt's blitz events into ACP session updates, in order."""

    def __init__(self, agent: Any, session_id: str) -> None:
        """`agent`: the BlitzAgent, for its client connection and its kernel link."""
        self.agent = agent
        self.session_id = session_id
        self.streamed = False
        self.shown = 0
        """How many of the turn's events reached the client."""
        self.asking: dict[str, asyncio.Task[list[OutsideDecision]]] = {}
        """The permission requests being asked in the client, by request id."""
        self.settled: set[str] = set()
        """Requests answered in the notebook before the client was asked."""

    async def update(self, update: Any) -> None:
        await self.agent.conn.session_update(session_id=self.session_id, update=update)

    async def show(self, payload: OutsideEvent) -> None:
        self.shown += 1
        if payload.plan_review is not None:
            approved = await self.review_plan(payload.plan_review.request_id, payload.plan_review.plan)
            self.control(
                OutsideControl(
                    stream=payload.stream, kind="plan", request_id=payload.plan_review.request_id, approved=approved
                )
            )
            return
        try:
            event = EVENT_ADAPTER.validate_python(payload.event or {})
        except ValidationError:
            return  # an event of a newer kernel: nothing to show
        await self.show_event(event, payload.stream, "")

    async def show_event(self, event: Any, stream: str, prefix: str) -> None:
        from acp import update_agent_message_text, update_agent_thought_text, update_plan

        if isinstance(event, TextEvent):
            if event.repeat and self.streamed:
                self.streamed = False
                return
            self.streamed = self.streamed or event.delta
            thought = event.thought or bool(prefix)
            await self.update(
                update_agent_thought_text(event.text) if thought else update_agent_message_text(event.text)
            )
        elif isinstance(event, ToolCallEvent):
            await self.update(tool_start(event, prefix))
        elif isinstance(event, ToolResultEvent):
            await self.update(tool_end(event, prefix))
        elif isinstance(event, PermissionRequest):
            if event.request_id in self.settled:
                return
            asking = asyncio.ensure_future(self.ask_all(event.calls, prefix))
            self.asking[event.request_id] = asking
            try:
                decisions = await asking
            except asyncio.CancelledError:
                if event.request_id not in self.settled:
                    raise
                return  # the notebook answered first: the kernel decided already
            finally:
                self.asking.pop(event.request_id, None)
            self.control(OutsideControl(stream=stream, kind="answer", request_id=event.request_id, decisions=decisions))
        elif isinstance(event, PlanEvent):
            await self.update(update_plan(plan_entries(event.plan)))
        elif isinstance(event, ErrorEvent):
            await self.update(update_agent_message_text(f"\n\nerror: {event.message}"))
        elif isinstance(event, SubagentEvent):
            await self.show_event(event.event, stream, f"{prefix}{event.call_id}/")

    async def ask_all(self, calls: list[Any], prefix: str) -> list[OutsideDecision]:
        return [await self.ask(call, prefix) for call in calls]

    def settle(self, request_id: str) -> None:
        """The notebook answered `request_id` first: stop waiting for the client's answer (ACP
        cannot withdraw a `session/request_permission`; a late answer is ignored)."""
        self.settled.add(request_id)
        asking = self.asking.get(request_id)
        if asking is not None:
            asking.cancel()

    async def ask(self, call: Any, prefix: str) -> OutsideDecision:
        """One call of a permission request, as `session/request_permission`."""
        from acp.schema import PermissionOption, ToolCallUpdate

        content = edit_content(call.name, call.args) or []
        if call.preview:
            content.append(text_content(call.preview))
        options = [
            PermissionOption(option_id="allow", name="Allow", kind="allow_once"),
            PermissionOption(option_id="always", name="Always allow in this session", kind="allow_always"),
            PermissionOption(option_id="deny", name="Deny", kind="reject_once"),
        ]
        tool_call = ToolCallUpdate(
            tool_call_id=f"{prefix}{call.id}",
            title=title(call.name, call.args),
            kind=TOOL_KINDS.get(call.name, "other"),  # type: ignore[arg-type]
            status="pending",
            content=content or None,
            raw_input=call.args,
        )
        response = await self.agent.conn.request_permission(
            session_id=self.session_id, tool_call=tool_call, options=options
        )
        chosen = getattr(response.outcome, "option_id", None)
        if chosen in ("allow", "always"):
            return OutsideDecision(call_id=call.id, decision=chosen)
        reason = "denied in the ACP client" if chosen == "deny" else "the ACP client cancelled the request"
        return OutsideDecision(call_id=call.id, decision="deny", reason=reason)

    async def review_plan(self, request_id: str, plan: str) -> bool:
        from acp.schema import PermissionOption, ToolCallUpdate

        options = [
            PermissionOption(option_id="approve", name="Approve plan", kind="allow_once"),
            PermissionOption(option_id="reject", name="Keep planning", kind="reject_once"),
        ]
        tool_call = ToolCallUpdate(
            tool_call_id=request_id, title="Carry out this plan?", kind="switch_mode", content=[text_content(plan)]
        )
        response = await self.agent.conn.request_permission(
            session_id=self.session_id, tool_call=tool_call, options=options
        )
        return getattr(response.outcome, "option_id", None) == "approve"

    def control(self, control: OutsideControl) -> None:
        self.agent.link.control(control)

    def fail_open_request(self, payload: OutsideEvent) -> None:
        """An answer that could not be asked for is a denial (approvals fail closed)."""
        if payload.plan_review is not None:
            self.control(OutsideControl(stream=payload.stream, kind="plan", request_id=payload.plan_review.request_id))
        elif (event := payload.event or {}).get("type") == "permission_request":
            calls = [call.get("id") for call in event.get("calls") or [] if isinstance(call, dict)]
            denials = [OutsideDecision(call_id=str(c), decision="deny", reason=NOT_ASKED) for c in calls if c]
            request_id = str(event.get("request_id"))
            self.control(OutsideControl(stream=payload.stream, kind="answer", request_id=request_id, decisions=denials))


def title(name: str, args: dict[str, Any]) -> str:
    target = args.get("path") or args.get("name") or args.get("pattern")
    if name == "notebook_edit" and "index" in args:
        target = f"{args.get('action', 'edit')} cell {args['index']}"
    return f"{name} {target}" if isinstance(target, (str, int)) else name


def text_content(text: str) -> Any:
    from acp import text_block, tool_content

    return tool_content(text_block(text))


def edit_content(name: str, args: dict[str, Any]) -> list[Any] | None:
    """A diff for file and cell edits: the new file, the replaced text, the cell's new source."""
    from acp import tool_diff_content

    path = args.get("path")
    if name == "write_file" and isinstance(path, str) and isinstance(args.get("content"), str):
        return [tool_diff_content(path, args["content"])]
    if name == "edit_file" and isinstance(path, str) and isinstance(args.get("new"), str):
        return [tool_diff_content(path, args["new"], args.get("old") if isinstance(args.get("old"), str) else None)]
    if name == "notebook_edit" and isinstance(args.get("index"), int):
        cell = f"notebook cell {args['index']}"
        return [tool_diff_content(cell, args.get("source") or "", None)]
    return None


def tool_start(event: ToolCallEvent, prefix: str) -> Any:
    from acp import start_tool_call
    from acp.schema import ToolCallLocation

    path = event.args.get("path")
    return start_tool_call(
        f"{prefix}{event.id}",
        title(event.name, event.args),
        kind=TOOL_KINDS.get(event.name, "other"),  # type: ignore[arg-type]
        status="in_progress",
        content=edit_content(event.name, event.args),
        locations=[ToolCallLocation(path=path)] if isinstance(path, str) else None,
        raw_input=event.args,
    )


def tool_end(event: ToolResultEvent, prefix: str) -> Any:
    from acp import update_tool_call

    text = event.preview if event.ok else (event.error or event.status)
    return update_tool_call(
        f"{prefix}{event.id}",
        status="completed" if event.ok else "failed",
        content=[text_content(text)] if text else None,
        raw_output={"status": event.status, "text": text},
    )


def plan_entries(plan: str) -> list[Any]:
    """A plan's steps (its list items, else its lines) as ACP plan entries, all pending: an
    approved plan is carried out by the turn that follows, step by step."""
    from acp import plan_entry

    lines = [line.strip() for line in plan.splitlines() if line.strip()]
    items = [line.lstrip("-*0123456789.) ").strip() for line in lines if line[:1] in "-*" or line[:1].isdigit()]
    return [plan_entry(item) for item in (items or lines)]
