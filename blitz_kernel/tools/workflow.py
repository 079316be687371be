"""Workflow tools (the root agent always has them): `todo`, `enter_plan_mode`,
`exit_plan_mode`. They act on the running turn through `ToolContext.turn`."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from .registry import Tool, ToolContext, ToolError, ToolKind, TurnAccess, tool


def _turn(ctx: ToolContext, name: str) -> TurnAccess:
    if ctx.turn is None:
        raise ToolError(f"{name} works only inside a running turn")
    return ctx.turn


class TodoItem(BaseModel):
    content: str = Field(description="what to do, one short line")
    status: Literal["pending", "in_progress", "done"] = Field(default="pending", description="progress")


class TodoArgs(BaseModel):
    items: list[TodoItem] = Field(description="the whole list, replacing the previous one")


_MARKS = {"pending": "[ ]", "in_progress": "[~]", "done": "[x]"}


@tool("todo", ToolKind.WORKFLOW, TodoArgs)
async def todo(args: TodoArgs, ctx: ToolContext) -> str:
    """Keep a short todo list for a multi-step task; send the whole list each time, marking
    items pending, in_progress or done. The user sees it."""
    _turn(ctx, "todo").set_todos([item.model_dump() for item in args.items])
    if not args.items:
        return "todo list cleared"
    return "\n".join(f"{_MARKS[item.status]} {item.content}" for item in args.items)


class NoArgs(BaseModel):
    pass


@tool("enter_plan_mode", ToolKind.WORKFLOW, NoArgs)
async def enter_plan_mode(args: NoArgs, ctx: ToolContext) -> str:
    """Switch to plan mode before a risky or many-step change: from your next tool call only
    read-only tools run. Investigate, then present the plan with exit_plan_mode."""
    _turn(ctx, "enter_plan_mode").enter_plan_mode()
    return "plan mode is on: only read-only tools run from now on; finish with exit_plan_mode(plan)"


class ExitPlanArgs(BaseModel):
    plan: str = Field(
        description="the plan in Markdown: objective; numbered steps naming files, cells and "
        "functions; risks and unknowns; how to verify; questions only if blocking"
    )


@tool("exit_plan_mode", ToolKind.WORKFLOW, ExitPlanArgs)
async def exit_plan_mode(args: ExitPlanArgs, ctx: ToolContext) -> str:
    """Present your plan for the user's review and leave plan mode. The result says whether the
    user approved it (then carry it out) or rejected it (then revise it)."""
    if not args.plan.strip():
        raise ToolError("the plan is empty; write the plan in Markdown")
    return await _turn(ctx, "exit_plan_mode").submit_plan(args.plan)


WORKFLOW_TOOLS: list[Tool] = [todo, enter_plan_mode, exit_plan_mode]
