"""The static rendering of a finished turn and its record.

A saved notebook must show the answer without any widget state (GitHub, nbviewer, a reopened
JupyterLab), so the live widget is replaced at the end by a Markdown + text/plain output made
from the same TurnState. The output's metadata carries the turn record under `blitz`: prompt,
final text, tool calls with their arguments and short results, usage, stop reason. Nothing from
the configuration or the environment goes in, so no secret can. Images the tools showed follow
as image outputs of their own (`static_images`): JupyterLab, nbviewer and GitHub all show an
`image/png` output, while a data-URL image inside Markdown is at each renderer's discretion.
"""

from __future__ import annotations

import json
from typing import Any

from ...core.text import one_line, shorten
from ..lines import RESULT_CHARS, args_line, plan_heading_with_reason, usage_line
from ..markdown import escape_html, html_code_span
from .state import SteerStatus, ToolItem, ToolStatus, TurnState

RECORD_VERSION = 1
ARG_CHARS = 2000
"""Longest argument value kept in the record (a whole written file would bloat the notebook)."""
RECORD_RESULT_CHARS = 200
RECORD_TEXT_CHARS = 20_000
"""Longest prompt or answer kept in the record: a 1 MB prompt would make 1 MB of notebook per
cell. What was cut is said in the record (`<field>_chars`: the full length) and in the text."""


def _capped(record: dict[str, Any], key: str, text: str) -> None:
    if len(text) <= RECORD_TEXT_CHARS:
        record[key] = text
        return
    cut = len(text) - RECORD_TEXT_CHARS
    record[key] = text[:RECORD_TEXT_CHARS] + f"\n[… {cut:,} more characters not kept in the notebook]"
    record[f"{key}_chars"] = len(text)


STATUS_MARK: dict[ToolStatus, str] = {
    "done": "✓",
    "error": "✗",
    "denied": "⊘ denied",
    "cancelled": "⊘ cancelled",
    "blocked": "⊘ blocked",
}
STEER_WORDS: dict[SteerStatus, str] = {
    "queued": "queued",
    "delivered": "delivered",
    "next_prompt": "sent as the next prompt",
    "dropped": "dropped",
}


def _short_value(value: Any) -> Any:
    if isinstance(value, str):
        return shorten(value, ARG_CHARS)
    if isinstance(value, dict):
        return {key: _short_value(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_short_value(item) for item in value]
    return value


def _call_records(tools: list[ToolItem]) -> list[dict[str, Any]]:
    """The record's tool calls; an `invoke_agent` call carries its sub-agent's calls."""
    records = []
    for tool in tools:
        args = _short_value(tool["args"])
        record = {
            "id": tool["id"],
            "name": tool["name"],
            "args": args,
            "status": tool["status"],
            "decision": tool["decision"],
            "result": shorten(tool["error"] or tool["preview"] or "", RECORD_RESULT_CHARS),
            "images": tool["images"],
        }
        if args != tool["args"]:  # replay from the record must not run a cut argument
            record["args_cut"] = True
        nested = [item for item in tool["nested"] if item["kind"] == "tool"]
        if nested:
            record["subagent_calls"] = _call_records(nested)
        records.append(record)
    return records


def turn_record(state: TurnState, final_text: str) -> dict[str, Any]:
    """The `blitz` metadata of the static output (JSON-able); a long prompt or answer is
    capped at RECORD_TEXT_CHARS and says so."""
    record: dict[str, Any] = {
        "version": RECORD_VERSION,
        "session": state.session,
        "turn_index": state.turn_index,
        "agent": state.agent,
        "model": state.model,
    }
    _capped(record, "prompt", state.prompt)
    _capped(record, "text", final_text)
    return record | {
        "stop_reason": state.stop_reason,
        "error": state.error,
        "tool_calls": _call_records(state.tool_items()),
        "usage": state.usage.model_dump(),
        "elapsed_s": round(state.elapsed_s or 0.0, 3),
        "steering": [{"text": s["text"], "status": s["status"]} for s in state.steers],
        "attachments": [{"kind": c["kind"], "name": c["name"], "size": c["size"]} for c in state.attachments],
        "undone": bool(state.undone),
        "changes": [{k: c.get(k) for k in ("id", "kind", "summary", "status")} for c in state.changes],
    }


def tool_line(tool: ToolItem) -> str:
    """`⚙ name(args) → ✓ result`, one line, plain text."""
    result = tool["error"] or tool["preview"] or ""
    mark = STATUS_MARK.get(tool["status"], tool["status"])
    tail = f" → {mark}{images_note(tool)}" + (f" {one_line(result, RESULT_CHARS)}" if result else "")
    return f"⚙ {tool['name']}({args_line(tool['args'])}){tail}"


def images_note(tool: ToolItem) -> str:
    """` [2 images below]`, ` [4 images below, 1 more not shown]` or nothing."""
    shown, omitted = tool["images"], tool["images_omitted"]
    if not shown and not omitted:
        return ""
    words = [f"{shown} image{'s' if shown != 1 else ''} below"] if shown else []
    if omitted:
        words.append(f"{omitted} more not shown")
    return f" [{', '.join(words)}]"


def static_images(state: TurnState) -> list[dict[str, str]]:
    """One MIME bundle per image the tools showed, in the order of their cards."""
    bundles = []
    for tool in state.tool_items():
        images = state.images.get(tool["id"], [])
        for number, image in enumerate(images, start=1):
            label = f"image {number} of {len(images)} from {tool['name']}"
            bundles.append({image["media_type"]: image["data"], "text/plain": f"<{label}>"})
    return bundles


def code_span(text: str) -> str:
    """Inline Markdown code that survives any backticks inside; as inline HTML when the text
    holds a `<`, so no `<` of the model's is left raw whatever a renderer makes of the span."""
    if "<" in text:
        return html_code_span(text)
    longest = run = 0
    for char in text:
        run = run + 1 if char == "`" else 0
        longest = max(longest, run)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def nested_lines(tool: ToolItem, depth: int = 1) -> list[str]:
    """A sub-agent's turn under its `invoke_agent` call, as plain lines, each indented one
    level deeper than the call; its own calls nest again."""
    lines: list[str] = []
    indent = "  " * depth
    for item in tool["nested"]:
        if item["kind"] == "tool":
            lines.append(f"{indent}{tool_line(item)}")
            lines.extend(nested_lines(item, depth + 1))
        elif item["kind"] == "text" and item["text"]:
            lines.append(f"{indent}» {tool['args'].get('agent', 'sub-agent')}: {one_line(item['text'], 300)}")
        elif item["kind"] == "error":
            lines.append(f"{indent}✗ {one_line(item['message'], 300)}")
    return lines


def fenced(text: str, language: str = "") -> str:
    """A fenced code block that no backtick run inside `text` can close: its lines kept as
    they are (a file excerpt stays one line per line), never read as Markdown or HTML."""
    longest = run = 0
    for char in text:
        run = run + 1 if char == "`" else 0
        longest = max(longest, run)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{language}\n{text.rstrip(chr(10))}\n{fence}"


def _html(text: str) -> str:
    """Text for raw HTML (a card's summary line): an HTML block is not read as Markdown, so
    only HTML's own characters are escaped."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def tool_card(tool: ToolItem) -> str:
    """One call as the live widget's card: a summary line (`⚙ name(args)` → mark, first
    result line) and, folded under it, the code as code, the other arguments, a sub-agent's
    turn and the whole result, each kept on its own lines. `<details>` is HTML that JupyterLab,
    nbviewer and GitHub all fold; the blank lines around each part let Markdown render the
    parts between the tags."""
    result = tool["error"] or tool["preview"] or ""
    mark = STATUS_MARK.get(tool["status"], tool["status"])
    call = f"⚙ {tool['name']}({args_line(tool['args'])})"
    lines = result.strip("\n").splitlines()
    first = f" {one_line(lines[0], RESULT_CHARS)}{' …' if len(lines) > 1 else ''}" if lines else ""
    summary = f"<code>{_html(call)}</code> → {_html(mark + images_note(tool) + first)}"
    parts = [f"<details><summary>{summary}</summary>"]
    args = dict(tool["args"])
    # text of many lines (run_python's code, a file written, an edit's old and new text) is
    # shown as it is, each in its own block; what is left, as JSON unless the summary has it all
    for key, value in list(args.items()):
        if isinstance(value, str) and "\n" in value:
            del args[key]
            language = "python" if tool["presentation"].get("code_arg") == key else ""
            parts.append(f"*{escape_html(key)}*\n\n{fenced(shorten(value, ARG_CHARS), language)}")
    if args and not _whole_on_one_line(args):
        shown = json.dumps(_short_value(args), ensure_ascii=False, indent=2)
        parts.append(f"*arguments*\n\n{fenced(shown, 'json')}")
    if tool["nested"]:
        parts.append(_nested_turn(tool))
    if result:
        label = "blocked" if tool["status"] == "blocked" else "error" if tool["error"] else "result"
        parts.append(f"*{label}*\n\n{fenced(shorten(result, ARG_CHARS))}")
    parts.append("</details>")
    return "\n\n".join(parts)


def _whole_on_one_line(args: dict[str, Any]) -> bool:
    """Whether the summary's `name(args)` already shows every argument whole."""
    whole = ", ".join(f"{key}={json.dumps(value, ensure_ascii=False)}" for key, value in args.items())
    return "\\n" not in whole and args_line(args) == whole


def _nested_turn(tool: ToolItem) -> str:
    """A sub-agent's turn inside its `invoke_agent` card: its text and its own cards."""
    agent = str(tool["args"].get("agent", "sub-agent"))
    pieces: list[str] = []
    for item in tool["nested"]:
        if item["kind"] == "tool":
            pieces.append(tool_card(item))
        elif item["kind"] == "text" and item["text"]:
            pieces.append(f"» *{escape_html(agent)}:* {escape_html(item['text'])}")
        elif item["kind"] == "error":
            pieces.append(f"**✗** {code_span(one_line(item['message'], 300))}")
    return "\n\n".join(pieces)


def attachments_line(state: TurnState) -> tuple[str, str] | None:
    """The prompt's attachments as the chips' words, or None when there are none."""
    if not state.attachments:
        return None
    labels = [chip["label"] for chip in state.attachments]
    return ("*Attached:* " + ", ".join(code_span(label) for label in labels), "Attached: " + ", ".join(labels))


def _blocks(state: TurnState, final_text: str) -> list[tuple[str, str]]:
    """(markdown, plain) pieces in the order the turn produced them."""
    pieces: list[tuple[str, str]] = []
    if state.label:
        pieces.append((f"*{escape_html(state.label)}*", state.label))
    attached = attachments_line(state)
    if attached:
        pieces.append(attached)
    # A plan that ended the turn is its answer: shown once, as the plan.
    plans = {item["plan"] for item in state.items if item["kind"] == "plan"}
    answer = "" if final_text in plans else final_text
    texts = [i for i, item in enumerate(state.items) if item["kind"] == "text"]
    last_text = texts[-1] if texts else None
    for index, item in enumerate(state.items):
        if item["kind"] == "text":
            text = answer if index == last_text and answer else item["text"]
            pieces.append((escape_html(text), text))
        elif item["kind"] == "tool":
            if item["presentation"]["plan_review"] and item["status"] == "done":
                continue  # the plan item below shows it, and what became of it
            pieces.append((tool_card(item), "\n".join([tool_line(item), *nested_lines(item)])))
        elif item["kind"] == "plan":
            heading = plan_heading_with_reason(item["status"], item["reason"])
            pieces.append((f"**{escape_html(heading)}**\n\n{escape_html(item['plan'])}", f"{heading}\n{item['plan']}"))
        elif item["kind"] == "compaction":
            pieces.append((f"*{item['line']}*", item["line"]))
        elif item["kind"] == "error":
            pieces.append((f"**Stopped:** {code_span(one_line(item['message'], 300))}", f"Stopped: {item['message']}"))
    if last_text is None and answer:
        pieces.append((escape_html(answer), answer))
    return pieces


def changes_block(changes: list[dict[str, Any]]) -> tuple[str, str]:
    """The turn's change list as the saved notebook keeps it: what changed and its status, and
    how to revert one (it needs a running kernel: a reopened notebook shows no controls)."""
    title, how = "Changes in this turn", "%blitz_review --revert ID"
    rows = [(str(c.get("id", "")), str(c.get("summary", "")), str(c.get("status", ""))) for c in changes]
    needs = f"revert one with Review changes or {how} while a kernel runs"
    markdown = [f"**{title}** (revert one with Review changes or {code_span(how)} while a kernel runs)"]
    markdown.extend(f"- {code_span(i)} {escape_html(what)} — *{escape_html(status)}*" for i, what, status in rows)
    plain = [f"{title} ({needs})", *(f"  {i}  {what}  [{status}]" for i, what, status in rows)]
    return "\n".join(markdown), "\n".join(plain)


def static_bundle(state: TurnState, final_text: str) -> tuple[dict[str, str], dict[str, Any]]:
    """(data, metadata) of the output that replaces the widget when the turn ends."""
    markdown: list[str] = []
    plain: list[str] = []
    for md, text in _blocks(state, final_text):
        markdown.append(f"\n\n{md}" if markdown else md)
        plain.append(text)
    for steer in state.steers:
        words = STEER_WORDS[steer["status"]]
        line = f"↪ steer {json.dumps(steer['text'], ensure_ascii=False)}: {words} {steer['detail']}".rstrip()
        markdown.append(f"\n\n*{code_span(line)}*")
        plain.append(line)
    for aside in state.asides:
        # a cancelled or failed aside says so (with what it had said so far): it is no answer
        answer = "\n\n".join(part for part in (aside["answer"], aside["error"] and f"({aside['error']})") if part)
        answer = answer or aside["status"]
        quoted = "\n".join(f"> {line}" for line in escape_html(answer).splitlines())
        question = code_span(one_line(aside["question"], 300))
        markdown.append(f"\n\n> **Aside** (not part of the session): {question}\n>\n{quoted}")
        plain.append(f"Aside (not part of the session): {aside['question']}\n{answer}")
    for notice in state.notices:
        markdown.append(f"\n\n*{code_span('⚠ ' + one_line(notice, 300))}*")
        plain.append(f"⚠ {notice}")
    if state.undone:
        markdown.append(f"\n\n**{escape_html(state.undone)}**")
        plain.append(state.undone)
    if state.changes:
        md, text = changes_block(state.changes)
        markdown.append(f"\n\n{md}")
        plain.append(text)
    footer = usage_line(state)
    small = f"<sub>{escape_html(footer)}</sub>"
    markdown.append(f"\n\n{small}" if markdown else small)
    plain.append(footer)
    data = {"text/markdown": "".join(markdown), "text/plain": "\n".join(plain)}
    return data, {"blitz": turn_record(state, final_text)}
