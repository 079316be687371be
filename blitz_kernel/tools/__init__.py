"""Built-in tools (docs/tools.md)."""

from __future__ import annotations

from .registry import Tool


def builtin_tools() -> list[Tool]:
    """Every built-in tool, in the order the model sees them."""
    from .agents import AGENT_TOOLS
    from .files import edit_file, list_files, read_file, write_file
    from .images import IMAGE_TOOLS
    from .notebook import NOTEBOOK_TOOLS
    from .notebook_run import NOTEBOOK_RUN_TOOLS
    from .previews import with_previews
    from .run_python import RUN_PYTHON_TOOLS
    from .search import glob_files, grep
    from .session_search import SESSION_TOOLS
    from .skills import SKILL_TOOLS
    from .variables import VARIABLE_TOOLS
    from .web import WEB_TOOLS
    from .workflow import WORKFLOW_TOOLS

    file_tools = [read_file, list_files, glob_files, grep, write_file, edit_file]
    return with_previews(
        [  # approval previews: a diff, the cell, the code
            *file_tools,
            *RUN_PYTHON_TOOLS,
            *VARIABLE_TOOLS,
            *IMAGE_TOOLS,
            *NOTEBOOK_TOOLS,
            *NOTEBOOK_RUN_TOOLS,
            *SESSION_TOOLS,
            *WEB_TOOLS,
            *SKILL_TOOLS,
            *AGENT_TOOLS,
            *WORKFLOW_TOOLS,
        ]
    )
