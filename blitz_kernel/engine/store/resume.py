"""After a kernel restart: which user variables the conversation relied on.

A session that resumes in a new kernel remembers everything it said, but the kernel's variables
are gone. So each committed unit records the user variables its kernel tools touched
(`run_python` code, `list_variables` output, `describe_variable` names), and the first turn
after a restart tells the model which of them no longer exist, so it does not speak of dead
variables as if they were alive.
"""

from __future__ import annotations

import ast
import builtins
import re
from collections.abc import Container, Iterable, Sequence

from ...core.history import AssistantMessage, Message, ToolResultMessage

MAX_LISTED = 40
_LISTED_VARIABLE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*) \(", re.MULTILINE)
_BUILTINS = frozenset(dir(builtins))
VARIABLE_TOOLS = frozenset({"run_python", "describe_variable"})
"""The calls whose arguments name user variables (list_variables names them in its result)."""


def variable_names(messages: Sequence[Message]) -> list[str]:
    """User variables a unit's kernel tool calls created or read, sorted."""
    names: set[str] = set()
    for message in messages:
        if isinstance(message, AssistantMessage):
            for call in message.tool_calls:
                if call.name not in VARIABLE_TOOLS:  # the arguments of no other call are parsed
                    continue
                arguments = call.parsed_arguments()
                if call.name == "run_python" and isinstance(arguments.get("code"), str):
                    names |= code_names(arguments["code"])
                elif call.name == "describe_variable" and isinstance(arguments.get("name"), str):
                    names.add(arguments["name"].strip().split(".")[0])
        elif isinstance(message, ToolResultMessage) and message.name == "list_variables" and message.output:
            names |= set(_LISTED_VARIABLE.findall(message.output))
    return sorted(name for name in names if name.isidentifier() and not name.startswith("_"))


def code_names(code: str) -> set[str]:
    """Names the code binds at module level, plus names it reads that it does not bind itself
    (a loop variable inside a comprehension is neither). Unparsable code records nothing."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return set()
    bound_anywhere: set[str] = set()
    loaded: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (loaded if isinstance(node.ctx, ast.Load) else bound_anywhere).add(node.id)
        elif isinstance(node, ast.arg):
            bound_anywhere.add(node.arg)
    created = set(_module_level_bindings(tree.body))
    return created | {name for name in loaded - bound_anywhere if name not in _BUILTINS}


def _module_level_bindings(body: Iterable[ast.stmt]) -> Iterable[str]:
    for statement in body:
        if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            yield statement.name
        elif isinstance(statement, ast.Import | ast.ImportFrom):
            for alias in statement.names:
                if alias.name != "*":
                    yield (alias.asname or alias.name).split(".")[0]
        else:
            # assignments, for/with targets, walrus at the top: any Store outside a nested scope
            for node in _walk_outside_scopes(statement):
                if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
                    yield node.id


def _walk_outside_scopes(node: ast.AST) -> Iterable[ast.AST]:
    yield node
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda | ast.comprehension):
            continue
        yield from _walk_outside_scopes(child)


def resume_note(recorded: Iterable[str], namespace: Container[str] | None) -> str:
    """The note the first prompt after a restart carries. Only variables missing from the
    namespace now are named (the notebook may have re-created some)."""
    present = namespace if namespace is not None else ()
    missing = sorted(name for name in set(recorded) if name not in present)
    note = (
        "[Note from blitz_kernel: the Python kernel was restarted (or this session was reopened in "
        "another kernel) since the last turn of this conversation."
    )
    if missing:
        shown = ", ".join(missing[:MAX_LISTED]) + (
            f" and {len(missing) - MAX_LISTED} more" if len(missing) > MAX_LISTED else ""
        )
        note += (
            f" These variables that earlier turns created or read no longer exist: {shown}. "
            "Do not refer to them as if they were still defined; re-create them if you need them."
        )
    return note + "]"
