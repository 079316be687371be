"""Sub-agent tools: `list_agents` and `invoke_agent`.

Both are read-only tools: asking another agent changes nothing by itself, and whatever the
sub-agent then does goes through the same modes and approvals as the caller's own calls (the
engine's `Subagents` carries them over). They act through `ToolContext.turn`.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from .registry import Tool, ToolContext, ToolError, ToolKind, TurnAccess, tool


def _turn(ctx: ToolContext, name: str) -> TurnAccess:
    if ctx.turn is None:
        raise ToolError(f"{name} works only inside a running turn")
    return ctx.turn


class NoArgs(BaseModel):
    pass


@tool("list_agents", ToolKind.READ_ONLY, NoArgs)
async def list_agents(args: NoArgs, ctx: ToolContext) -> str:
    """List the other agents you can hand a task to with invoke_agent: name and what each is for."""
    agents = _turn(ctx, "list_agents").list_agents()
    if not agents:
        return "no other agents are defined (add one as .blitz/agents/NAME.md)"
    return "\n".join(f"{name}: {description or '(no description)'}" for name, description in agents)


class InvokeArgs(BaseModel):
    agent: str = Field(description="the agent's name, from list_agents")
    prompt: str = Field(description="the task, complete in itself: the agent sees nothing of this conversation")


@tool("invoke_agent", ToolKind.READ_ONLY, InvokeArgs)
async def invoke_agent(args: InvokeArgs, ctx: ToolContext) -> str:
    """Hand a self-contained task to another agent; it works in a fresh session with its own
    instructions and tools and returns its final answer. Several calls in one response run
    in parallel."""
    if not args.prompt.strip():
        raise ToolError("the prompt is empty; say what the agent should do")
    if ctx.call_id is None:
        raise ToolError("invoke_agent needs the id of its call")
    try:
        return await _turn(ctx, "invoke_agent").invoke_agent(args.agent, args.prompt, ctx.call_id)
    except ToolError:
        raise
    except Exception as exc:  # depth cap, unknown agent, a stopped sub-agent: the model reads it
        raise ToolError(str(exc)) from None


AGENT_TOOLS: list[Tool] = [list_agents, invoke_agent]
