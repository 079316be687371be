"""Built-in tools (INTERFACE.md "Built-in tools")."""

from __future__ import annotations

from .registry import Tool


def builtin_tools() -> list[Tool]:
    """Every built-in tool, in the order the model sees them."""
    from .agents import AGENT_TOOLS
    from .files import FILE_TOOLS
    from .images import IMAGE_TOOLS
    from .kernel import KERNEL_TOOLS
    from .notebook import NOTEBOOK_TOOLS
    from .session_search import SESSION_TOOLS
    from .workflow import WORKFLOW_TOOLS

    return [*FILE_TOOLS, *KERNEL_TOOLS, *IMAGE_TOOLS, *NOTEBOOK_TOOLS, *SESSION_TOOLS, *AGENT_TOOLS, *WORKFLOW_TOOLS]
