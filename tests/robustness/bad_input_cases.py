"""The bad-input table: every case names the exact one-line error it expects.

`{root}` in an expected error stands for the case's temporary folder (the workspace is
`{root}/work`, the user's home `{root}/home`). Scripted-model files named in BAD_STEPS are
written into every workspace.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from blitz_kernel.config.settings import BlitzConfig

KNOWN_KEYS = ", ".join(BlitzConfig.model_fields)
"""The top-level keys an unknown-key error lists (the settings model's own order)."""


@dataclass(frozen=True)
class ShellCase:
    """A cell run in an IPython shell with the extension loaded."""

    id: str
    cell: str
    error: str
    """The error's first line, exactly (option errors add one `usage:` line after it)."""
    files: dict[str, str | bytes] = field(default_factory=dict)
    """Files of the workspace (relative path → content)."""
    env: dict[str, str] = field(default_factory=dict)
    home: str | None = None
    """The user's ~/.blitz/config.toml."""


@dataclass(frozen=True)
class CliCase:
    """`blitz run` with these arguments, in a folder holding `files`: exit 2 and this line."""

    id: str
    argv: list[str]
    error: str
    """The line after `blitz run: ` on stderr (argparse's own errors: after `blitz run: error: `)."""
    files: dict[str, str] = field(default_factory=dict)


NOTEBOOK = '{"cells": [], "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3"}}, "nbformat": 4, "nbformat_minor": 5}'
"""A notebook that would run: the cases break one thing at a time."""


@dataclass(frozen=True)
class ToolCase:
    """A tool call the model makes with these raw arguments: the error it reads."""

    id: str
    tool: str
    arguments: str
    error: str


BAD_STEPS: dict[str, str | bytes] = {
    "s_notjson.json": "[{",
    "s_obj.json": "{}",
    "s_num.json": '{"steps": 3}',
    "s_int.json": "[1]",
    "s_key.json": '[{"txt": "hi"}]',
    "s_text.json": '[{"text": 5}]',
    "s_noname.json": '[{"tool_calls": [{}]}]',
    "s_calls.json": '[{"tool_calls": {"name": "x"}}]',
    "s_usage.json": '[{"usage": {"prompt_tokens": -1}}]',
    "s_error.json": '[{"error": "melted"}]',
    "s_args.json": '[{"tool_calls": [{"name": "x", "arguments": 3}]}]',
    "s_latin.json": b'[{"text": "caf\xe9"}]',
    "s_deep.json": "[" * 100_000,
    "s_vision.json": '{"vision": "yes", "steps": [{"text": "hi"}]}',
}

SHELL_CASES: list[ShellCase] = [
    ShellCase("max-turns-0", "%%blitz --max-turns 0\nhi", "--max-turns must be positive, got 0"),
    ShellCase("max-turns--1", "%%blitz --max-turns -1\nhi", "--max-turns must be positive, got -1"),
    ShellCase("max-turns-abc", "%%blitz --max-turns abc\nhi", "--max-turns expects a number, got 'abc'"),
    ShellCase("max-turns-1.5", "%%blitz --max-turns 1.5\nhi", "--max-turns expects a number, got '1.5'"),
    ShellCase("max-turns-nan", "%%blitz --max-turns nan\nhi", "--max-turns expects a number, got 'nan'"),
    ShellCase("max-turns-inf", "%%blitz --max-turns inf\nhi", "--max-turns expects a number, got 'inf'"),
    ShellCase("max-turns-1e309", "%%blitz --max-turns 1e309\nhi", "--max-turns expects a number, got '1e309'"),
    ShellCase(
        "max-turns-99999999999",
        "%%blitz --max-turns 99999999999\nhi",
        "max_turns must be a finite number above 0 and at most 100000, got 99999999999",
    ),
    ShellCase("max-cost-0", "%%blitz --max-cost 0\nhi", "--max-cost must be positive, got 0"),
    ShellCase("max-cost--1", "%%blitz --max-cost -1\nhi", "--max-cost must be positive, got -1"),
    ShellCase("max-cost-abc", "%%blitz --max-cost abc\nhi", "--max-cost expects a number, got 'abc'"),
    ShellCase("max-cost-nan", "%%blitz --max-cost nan\nhi", "--max-cost must be a finite number, got nan"),
    ShellCase("max-cost-inf", "%%blitz --max-cost inf\nhi", "--max-cost must be a finite number, got inf"),
    ShellCase("max-cost--inf", "%%blitz --max-cost -inf\nhi", "argument --max-cost: expected one argument"),
    ShellCase("max-cost-1e309", "%%blitz --max-cost 1e309\nhi", "--max-cost must be a finite number, got 1e309"),
    ShellCase(
        "max-cost-1e12",
        "%%blitz --max-cost 1e12\nhi",
        "max_cost_usd must be a finite number above 0 and at most 1e+06, got 1000000000000.0",
    ),
    ShellCase("timeout-0", "%%blitz --timeout 0\nhi", "--timeout must be positive, got 0"),
    ShellCase("timeout--5", "%%blitz --timeout -5\nhi", "--timeout must be positive, got -5"),
    ShellCase("timeout-abc", "%%blitz --timeout abc\nhi", "--timeout expects a number, got 'abc'"),
    ShellCase("timeout-nan", "%%blitz --timeout nan\nhi", "--timeout must be a finite number, got nan"),
    ShellCase("timeout-inf", "%%blitz --timeout inf\nhi", "--timeout must be a finite number, got inf"),
    ShellCase("timeout-1e309", "%%blitz --timeout 1e309\nhi", "--timeout must be a finite number, got 1e309"),
    ShellCase(
        "timeout-1e12",
        "%%blitz --timeout 1e12\nhi",
        "timeout must be a finite number above 0 and at most 604800, got 1000000000000.0",
    ),
    ShellCase("tools-,,,", "%%blitz --tools ,,,\nhi", "the allowed tools list is empty: name at least one tool"),
    ShellCase(
        "tools-nosuch",
        "%%blitz --tools nosuch\nhi",
        "unknown tool(s) nosuch in the allowed tools; known: read_file, list_files, glob, grep, write_file, edit_file, run_python, list_variables, describe_variable, view_image, notebook_read, notebook_edit, notebook_run, search_session, web_fetch, load_skill, list_agents, invoke_agent, todo, enter_plan_mode, exit_plan_mode",
    ),
    ShellCase(
        "tools-read_file,nosuch",
        "%%blitz --tools read_file,nosuch\nhi",
        "unknown tool(s) nosuch in the allowed tools; known: read_file, list_files, glob, grep, write_file, edit_file, run_python, list_variables, describe_variable, view_image, notebook_read, notebook_edit, notebook_run, search_session, web_fetch, load_skill, list_agents, invoke_agent, todo, enter_plan_mode, exit_plan_mode",
    ),
    ShellCase(
        "tools-' '",
        "%%blitz --tools ' '\nhi",
        "unknown tool(s) ' ' in the allowed tools; known: read_file, list_files, glob, grep, write_file, edit_file, run_python, list_variables, describe_variable, view_image, notebook_read, notebook_edit, notebook_run, search_session, web_fetch, load_skill, list_agents, invoke_agent, todo, enter_plan_mode, exit_plan_mode",
    ),
    ShellCase("out-1bad", "%%blitz --out 1bad\nhi", "--out needs a Python variable name, got '1bad'"),
    ShellCase("out-'a b'", "%%blitz --out 'a b'\nhi", "--out needs a Python variable name, got 'a b'"),
    ShellCase("out-class", "%%blitz --out class\nhi", "--out needs a Python variable name, got 'class'"),
    ShellCase("out-''", "%%blitz --out ''\nhi", "--out needs a name, got an empty one"),
    ShellCase("out-a.b", "%%blitz --out a.b\nhi", "--out needs a Python variable name, got 'a.b'"),
    ShellCase("session-empty", "%%blitz --session ''\nhi", "--session needs a name, got an empty one"),
    ShellCase("session-quotes-only", '%%blitz -s ""\nhi', "--session needs a name, got an empty one"),
    ShellCase("agent-unknown", "%%blitz -a nosuch\nhi", "unknown agent 'nosuch' (known: blitz)"),
    ShellCase("agent-empty", "%%blitz -a ''\nhi", "--agent needs a name, got an empty one"),
    ShellCase("model-empty", "%%blitz -m ''\nhi", "--model needs a name, got an empty one"),
    ShellCase(
        "model-no-provider",
        "%%blitz -m nosuchprovider/x\nhi",
        "model 'nosuchprovider/x': litellm knows no provider for this name; write it as provider/model, e.g. openai/gpt-4.1-mini",
    ),
    ShellCase(
        "model-missing-script",
        "%%blitz -m scripted:/nonexistent/steps.json\nhi",
        "cannot load the scripted model 'scripted:/nonexistent/steps.json': no such file /nonexistent/steps.json",
    ),
    ShellCase(
        "model-broken-script",
        "%%blitz -m scripted:s_notjson.json\nhi",
        "cannot load the scripted model 'scripted:s_notjson.json': s_notjson.json is not JSON (Expecting property name enclosed in double quotes at line 1)",
    ),
    ShellCase(
        "approve-bogus",
        "%%blitz --approve sometimes\nhi",
        "argument --approve: invalid choice: 'sometimes' (choose from 'ask', 'allow', 'deny')",
    ),
    ShellCase("unknown-option", "%%blitz --frobnicate\nhi", "unrecognized arguments: --frobnicate"),
    ShellCase("unclosed-quote", '%%blitz -s "unclosed\nhi', "No closing quotation"),
    ShellCase("empty-body", "%%blitz\n   ", "the cell body is the prompt, and it is empty"),
    ShellCase("positional-args", "%%blitz extra words\nhi", "unrecognized arguments: extra words"),
    ShellCase(
        "scripted-file-s_notjson.json",
        "%blitz_model scripted:s_notjson.json",
        "bad configuration 'model' in %blitz_model: cannot load the scripted model 'scripted:s_notjson.json': s_notjson.json is not JSON (Expecting property name enclosed in double quotes at line 1)",
    ),
    ShellCase(
        "scripted-run-s_notjson.json",
        "%%blitz -m scripted:s_notjson.json\nhi",
        "cannot load the scripted model 'scripted:s_notjson.json': s_notjson.json is not JSON (Expecting property name enclosed in double quotes at line 1)",
    ),
    ShellCase(
        "scripted-file-s_obj.json",
        "%blitz_model scripted:s_obj.json",
        "bad configuration 'model' in %blitz_model: cannot load the scripted model 'scripted:s_obj.json': s_obj.json: an object needs a \"steps\" list",
    ),
    ShellCase(
        "scripted-run-s_obj.json",
        "%%blitz -m scripted:s_obj.json\nhi",
        "cannot load the scripted model 'scripted:s_obj.json': s_obj.json: an object needs a \"steps\" list",
    ),
    ShellCase(
        "scripted-file-s_num.json",
        "%blitz_model scripted:s_num.json",
        "bad configuration 'model' in %blitz_model: cannot load the scripted model 'scripted:s_num.json': s_num.json: a scripted model file holds a list of steps",
    ),
    ShellCase(
        "scripted-run-s_num.json",
        "%%blitz -m scripted:s_num.json\nhi",
        "cannot load the scripted model 'scripted:s_num.json': s_num.json: a scripted model file holds a list of steps",
    ),
    ShellCase(
        "scripted-file-s_int.json",
        "%blitz_model scripted:s_int.json",
        "bad configuration 'model' in %blitz_model: cannot load the scripted model 'scripted:s_int.json': s_int.json: step 1: expected an object, got int",
    ),
    ShellCase(
        "scripted-run-s_int.json",
        "%%blitz -m scripted:s_int.json\nhi",
        "cannot load the scripted model 'scripted:s_int.json': s_int.json: step 1: expected an object, got int",
    ),
    ShellCase(
        "scripted-file-s_key.json",
        "%blitz_model scripted:s_key.json",
        "bad configuration 'model' in %blitz_model: cannot load the scripted model 'scripted:s_key.json': s_key.json: step 1: unknown key 'txt' (known: error, message, text, thought, tool_calls, usage)",
    ),
    ShellCase(
        "scripted-run-s_key.json",
        "%%blitz -m scripted:s_key.json\nhi",
        "cannot load the scripted model 'scripted:s_key.json': s_key.json: step 1: unknown key 'txt' (known: error, message, text, thought, tool_calls, usage)",
    ),
    ShellCase(
        "scripted-file-s_text.json",
        "%blitz_model scripted:s_text.json",
        "bad configuration 'model' in %blitz_model: cannot load the scripted model 'scripted:s_text.json': s_text.json: step 1: 'text' must be a string",
    ),
    ShellCase(
        "scripted-run-s_text.json",
        "%%blitz -m scripted:s_text.json\nhi",
        "cannot load the scripted model 'scripted:s_text.json': s_text.json: step 1: 'text' must be a string",
    ),
    ShellCase(
        "scripted-file-s_noname.json",
        "%blitz_model scripted:s_noname.json",
        "bad configuration 'model' in %blitz_model: cannot load the scripted model 'scripted:s_noname.json': s_noname.json: step 1: tool call 1 needs a \"name\" string",
    ),
    ShellCase(
        "scripted-run-s_noname.json",
        "%%blitz -m scripted:s_noname.json\nhi",
        "cannot load the scripted model 'scripted:s_noname.json': s_noname.json: step 1: tool call 1 needs a \"name\" string",
    ),
    ShellCase(
        "scripted-file-s_calls.json",
        "%blitz_model scripted:s_calls.json",
        "bad configuration 'model' in %blitz_model: cannot load the scripted model 'scripted:s_calls.json': s_calls.json: step 1: 'tool_calls' must be a list",
    ),
    ShellCase(
        "scripted-run-s_calls.json",
        "%%blitz -m scripted:s_calls.json\nhi",
        "cannot load the scripted model 'scripted:s_calls.json': s_calls.json: step 1: 'tool_calls' must be a list",
    ),
    ShellCase(
        "scripted-file-s_usage.json",
        "%blitz_model scripted:s_usage.json",
        "bad configuration 'model' in %blitz_model: cannot load the scripted model 'scripted:s_usage.json': s_usage.json: step 1: 'usage' must map cache_write_tokens, cached_tokens, completion_tokens, prompt_tokens to whole numbers >= 0",
    ),
    ShellCase(
        "scripted-run-s_usage.json",
        "%%blitz -m scripted:s_usage.json\nhi",
        "cannot load the scripted model 'scripted:s_usage.json': s_usage.json: step 1: 'usage' must map cache_write_tokens, cached_tokens, completion_tokens, prompt_tokens to whole numbers >= 0",
    ),
    ShellCase(
        "scripted-file-s_error.json",
        "%blitz_model scripted:s_error.json",
        "bad configuration 'model' in %blitz_model: cannot load the scripted model 'scripted:s_error.json': s_error.json: step 1: unknown error 'melted' (known: rate_limit, unavailable, timeout, context_window, bad_request, auth)",
    ),
    ShellCase(
        "scripted-run-s_error.json",
        "%%blitz -m scripted:s_error.json\nhi",
        "cannot load the scripted model 'scripted:s_error.json': s_error.json: step 1: unknown error 'melted' (known: rate_limit, unavailable, timeout, context_window, bad_request, auth)",
    ),
    ShellCase(
        "scripted-file-s_args.json",
        "%blitz_model scripted:s_args.json",
        "bad configuration 'model' in %blitz_model: cannot load the scripted model 'scripted:s_args.json': s_args.json: step 1: tool call 1: \"arguments\" must be an object (or JSON text) and \"id\" a string",
    ),
    ShellCase(
        "scripted-run-s_args.json",
        "%%blitz -m scripted:s_args.json\nhi",
        'cannot load the scripted model \'scripted:s_args.json\': s_args.json: step 1: tool call 1: "arguments" must be an object (or JSON text) and "id" a string',
    ),
    ShellCase(
        "scripted-file-s_latin.json",
        "%blitz_model scripted:s_latin.json",
        "bad configuration 'model' in %blitz_model: cannot load the scripted model 'scripted:s_latin.json': s_latin.json is not UTF-8 text",
    ),
    ShellCase(
        "scripted-run-s_latin.json",
        "%%blitz -m scripted:s_latin.json\nhi",
        "cannot load the scripted model 'scripted:s_latin.json': s_latin.json is not UTF-8 text",
    ),
    ShellCase(
        "model-magic-missing",
        "%blitz_model scripted:/nonexistent.json",
        "bad configuration 'model' in %blitz_model: cannot load the scripted model 'scripted:/nonexistent.json': no such file /nonexistent.json",
    ),
    ShellCase(
        "model-magic-no-provider",
        "%blitz_model nosuchprovider/x",
        "bad configuration 'model' in %blitz_model: model 'nosuchprovider/x': litellm knows no provider for this name; write it as provider/model, e.g. openai/gpt-4.1-mini",
    ),
    ShellCase("model-magic-two-args", "%blitz_model a b", "unrecognized arguments: b"),
    ShellCase("agent-magic-unknown", "%blitz_agent nosuch", "unknown agent 'nosuch' (known: blitz)"),
    ShellCase("compact-keep-0", "%blitz_compact --keep 0", "--keep must be positive, got 0"),
    ShellCase("compact-keep-abc", "%blitz_compact --keep abc", "--keep expects a number, got 'abc'"),
    ShellCase(
        "compact-unknown-session", "%blitz_compact -s nosuch", "session 'nosuch' has no history yet: nothing to compact"
    ),
    ShellCase("usage-empty-session", "%blitz_usage -s ''", "--session needs a name, got an empty one"),
    ShellCase("usage-add-budget-nan", "%blitz_usage --add-budget nan", "--add-budget must be a finite number, got nan"),
    ShellCase("usage-add-budget-negative", "%blitz_usage --add-budget -1", "--add-budget must be positive, got -1"),
    ShellCase(
        "usage-add-budget-no-budget",
        "%blitz_usage --add-budget 1",
        "no session budget is set (limits.max_cost_usd_session); nothing to add to",
    ),
    ShellCase("session-use-no-name", "%blitz_session use", "%blitz_session use needs a name"),
    ShellCase(
        "session-bogus-action",
        "%blitz_session explode",
        "argument action: invalid choice: 'explode' (choose from 'list', 'new', 'use', 'show', 'snapshot', 'load', 'search', 'delete')",
    ),
    ShellCase("session-all-with-list", "%blitz_session list --all", "--session and --all go with search"),
    ShellCase(
        "session-search-both",
        "%blitz_session search x --session a --all",
        "search takes --session NAME or --all, not both",
    ),
    ShellCase("session-delete-unknown", "%blitz_session delete nosuch", "no session 'nosuch' (sessions: none)"),
    ShellCase("session-load-unknown", "%blitz_session load nosnap", "no snapshot 'nosnap' (snapshots: none)"),
    ShellCase("audit-last-0", "%blitz_audit --last 0", "--last must be positive, got 0"),
    ShellCase("audit-last-abc", "%blitz_audit --last abc", "--last expects a number, got 'abc'"),
    ShellCase("audit-tool-unknown", "%blitz_audit --tool nosuch", "--tool: no tool named 'nosuch'"),
    ShellCase("trust-bogus", "%blitz_trust --bogus", "unrecognized arguments: --bogus"),
    ShellCase("btw-empty", "%blitz_btw", "ask a question: %blitz_btw what did we decide about the outliers?"),
    ShellCase(
        "config-stop.grace_s=0",
        "%blitz_config stop.grace_s=0",
        "bad configuration 'stop.grace_s' in %blitz_config: Input should be greater than 0",
    ),
    ShellCase(
        "config-limits.max_concurrent_turns=0",
        "%blitz_config limits.max_concurrent_turns=0",
        "bad configuration 'limits.max_concurrent_turns' in %blitz_config: Input should be greater than or equal to 1",
    ),
    ShellCase("truncate-zero", "%blitz_truncate 0", "N must be a whole number of turns, 1 or more; got '0'"),
    ShellCase("truncate-abc", "%blitz_truncate abc", "N must be a whole number of turns, 1 or more; got 'abc'"),
    ShellCase("review-turn-zero", "%blitz_review 0", "TURN must be a turn number, 1 or more"),
    ShellCase("review-force-alone", "%blitz_review --force", "--force goes with --revert"),
    ShellCase("review-bad-id", "%blitz_review --revert x1", "'x1' is not a change id (like 2f1)"),
    ShellCase(
        "review-revert-and-keep-all",
        "%blitz_review --revert 1f1 --keep-all",
        "--revert and --keep-all exclude each other",
    ),
    ShellCase(
        "config-limits.max_turns=0",
        "%blitz_config limits.max_turns=0",
        "bad configuration 'limits.max_turns' in %blitz_config: Input should be greater than or equal to 1",
    ),
    ShellCase(
        "config-limits.max_turns=-1",
        "%blitz_config limits.max_turns=-1",
        "bad configuration 'limits.max_turns' in %blitz_config: Input should be greater than or equal to 1",
    ),
    ShellCase(
        "config-limits.max_turns=abc",
        "%blitz_config limits.max_turns=abc",
        "bad configuration 'limits.max_turns' in %blitz_config: Input should be a valid integer, unable to parse string as an integer",
    ),
    ShellCase(
        "config-limits.max_turns=nan",
        "%blitz_config limits.max_turns=nan",
        "bad configuration 'limits.max_turns' in %blitz_config: Input should be a finite number",
    ),
    ShellCase(
        "config-limits.max_cost_usd=nan",
        "%blitz_config limits.max_cost_usd=nan",
        "bad configuration 'limits.max_cost_usd' in %blitz_config: Input should be a finite number",
    ),
    ShellCase(
        "config-limits.max_cost_usd=inf",
        "%blitz_config limits.max_cost_usd=inf",
        "bad configuration 'limits.max_cost_usd' in %blitz_config: Input should be a finite number",
    ),
    ShellCase(
        "config-limits.max_cost_usd=-1",
        "%blitz_config limits.max_cost_usd=-1",
        "bad configuration 'limits.max_cost_usd' in %blitz_config: Input should be greater than or equal to 0",
    ),
    ShellCase(
        "config-limits.timeout_s=inf",
        "%blitz_config limits.timeout_s=inf",
        "bad configuration 'limits.timeout_s' in %blitz_config: Input should be a finite number",
    ),
    ShellCase(
        "config-limits.timeout_s=nan",
        "%blitz_config limits.timeout_s=nan",
        "bad configuration 'limits.timeout_s' in %blitz_config: Input should be a finite number",
    ),
    ShellCase(
        "config-limits.timeout_s=0",
        "%blitz_config limits.timeout_s=0",
        "bad configuration 'limits.timeout_s' in %blitz_config: Input should be greater than 0",
    ),
    ShellCase(
        "config-approval.tools.write_flie=deny",
        "%blitz_config approval.tools.write_flie=deny",
        "bad configuration 'approval.tools.write_flie' in %blitz_config: unknown tool 'write_flie'; did you mean 'write_file'?",
    ),
    ShellCase(
        "config-approval.tools.Write_File=deny",
        "%blitz_config approval.tools.Write_File=deny",
        "bad configuration 'approval.tools.Write_File' in %blitz_config: unknown tool 'Write_File'; did you mean 'write_file'?",
    ),
    ShellCase(
        "config-approval.headless=maybe",
        "%blitz_config approval.headless=maybe",
        "bad configuration 'approval.headless' in %blitz_config: Input should be 'deny' or 'allow'",
    ),
    ShellCase(
        "config-approval.tools.run_python=sometimes",
        "%blitz_config approval.tools.run_python=sometimes",
        "bad configuration 'approval.tools.run_python' in %blitz_config: Input should be 'allow', 'ask', 'deny' or 'ask-if-risky'",
    ),
    ShellCase("config-agent=nosuch", "%blitz_config agent=nosuch", "unknown agent 'nosuch' (known: blitz)"),
    ShellCase(
        "config-model=scripted:/nonexistent.json",
        "%blitz_config model=scripted:/nonexistent.json",
        "bad configuration 'model' in %blitz_config: cannot load the scripted model 'scripted:/nonexistent.json': no such file /nonexistent.json",
    ),
    ShellCase(
        "config-tools.max_parallel=0",
        "%blitz_config tools.max_parallel=0",
        "bad configuration 'tools.max_parallel' in %blitz_config: Input should be greater than or equal to 1",
    ),
    ShellCase(
        "config-context.token_threshold=-1",
        "%blitz_config context.token_threshold=-1",
        "bad configuration 'context.token_threshold' in %blitz_config: Input should be greater than or equal to 1",
    ),
    ShellCase(
        "config-context.retain_events=-1",
        "%blitz_config context.retain_events=-1",
        "bad configuration 'context.retain_events' in %blitz_config: Input should be greater than or equal to 0",
    ),
    ShellCase(
        "config-nosuch.key=1",
        "%blitz_config nosuch.key=1",
        "bad configuration 'nosuch' in %blitz_config: unknown key; known keys: " + KNOWN_KEYS,
    ),
    ShellCase(
        "config-limits.nosuch=1",
        "%blitz_config limits.nosuch=1",
        "bad configuration 'limits.nosuch' in %blitz_config: unknown key; known keys: max_turns, max_cost_usd, timeout_s, max_cost_usd_session, shared_budget_file, repeat_warn, repeat_stop, max_concurrent_turns",
    ),
    ShellCase(
        "config-telemetry.exporter=bogus",
        "%blitz_config telemetry.exporter=bogus",
        "bad configuration 'telemetry.exporter' in %blitz_config: Input should be 'console', 'otlp' or 'memory'",
    ),
    ShellCase(
        "config-privacy.variables=everything",
        "%blitz_config privacy.variables=everything",
        "bad configuration 'privacy.variables' in %blitz_config: Input should be 'full' or 'schema'",
    ),
    ShellCase(
        "config-temperature=nan",
        "%blitz_config temperature=nan",
        "bad configuration 'temperature' in %blitz_config: Input should be a finite number",
    ),
    ShellCase(
        "config-max_tokens=0",
        "%blitz_config max_tokens=0",
        "bad configuration 'max_tokens' in %blitz_config: Input should be greater than or equal to 1",
    ),
    ShellCase(
        "config-stall.first_byte_s=0",
        "%blitz_config stall.first_byte_s=0",
        "bad configuration 'stall.first_byte_s' in %blitz_config: Input should be greater than 0",
    ),
    ShellCase(
        "config-stall.first_byte_s=inf",
        "%blitz_config stall.first_byte_s=inf",
        "bad configuration 'stall.first_byte_s' in %blitz_config: Input should be a finite number",
    ),
    ShellCase(
        "config-prompt_cache.gemini_ttl_s=5",
        "%blitz_config prompt_cache.gemini_ttl_s=5",
        "bad configuration 'prompt_cache.gemini_ttl_s' in %blitz_config: Input should be greater than or equal to 60",
    ),
    ShellCase(
        "config-breaker.failures=0",
        "%blitz_config breaker.failures=0",
        "bad configuration 'breaker.failures' in %blitz_config: Input should be greater than or equal to 1",
    ),
    ShellCase(
        "config-hooks.pre_tool=3",
        "%blitz_config hooks.pre_tool=3",
        "bad configuration 'hooks.pre_tool' in %blitz_config: Input should be a valid list",
    ),
    ShellCase(
        "config-fallback_models=3",
        "%blitz_config fallback_models=3",
        "bad configuration 'fallback_models' in %blitz_config: Input should be a valid list",
    ),
    ShellCase(
        "config-=1",
        "%blitz_config =1",
        "bad configuration '=1' in %blitz_config: expected key=value, e.g. limits.max_turns=5",
    ),
    ShellCase(
        "config-noequals",
        "%blitz_config noequals",
        "bad configuration 'noequals' in %blitz_config: expected key=value, e.g. limits.max_turns=5",
    ),
    ShellCase(
        "config-limits.repeat_stop=0",
        "%blitz_config limits.repeat_stop=0",
        "bad configuration 'limits.repeat_stop' in %blitz_config: Input should be greater than or equal to 2",
    ),
    ShellCase(
        "config-models.x.temperature=inf",
        "%blitz_config models.x.temperature=inf",
        "bad configuration 'models.x.temperature' in %blitz_config: Input should be a finite number",
    ),
    ShellCase(
        "config-prices.x.input=-1",
        "%blitz_config prices.x.input=-1",
        "bad configuration 'prices.x.output' in %blitz_config: Field required",
    ),
    ShellCase(
        "config-prices.x.inptu=1",
        "%blitz_config prices.x.inptu=1",
        "bad configuration 'prices.x.inptu' in %blitz_config: unknown key; known keys: input, output, cached_input, cache_write",
    ),
    ShellCase(
        "config-language=''",
        "%blitz_config language=''",
        "bad configuration 'language' in %blitz_config: String should have at least 1 character",
    ),
    ShellCase(
        "file-not-toml",
        "%blitz_config",
        "bad configuration '(file)' in {root}/work/blitz.toml: Invalid value (at end of document)",
        files={"blitz.toml": "limits = ["},
    ),
    ShellCase(
        "file-bad-value",
        "%blitz_config",
        "bad configuration 'limits.max_turns' in {root}/work/blitz.toml: Input should be a valid integer, unable to parse string as an integer",
        files={"blitz.toml": '[limits]\nmax_turns = "x"\n'},
    ),
    ShellCase(
        "file-unknown-key",
        "%blitz_config",
        "bad configuration 'colour' in {root}/work/blitz.toml: unknown key; known keys: " + KNOWN_KEYS,
        files={"blitz.toml": "colour = 1\n"},
    ),
    ShellCase(
        "file-not-utf8",
        "%blitz_config",
        "bad configuration '(file)' in {root}/work/blitz.toml: not UTF-8 text: invalid continuation byte",
        files={"blitz.toml": b'model = "caf\xe9"\n'},
    ),
    ShellCase(
        "pyproject-bad-key",
        "%blitz_config",
        "bad configuration 'limits.max_turns' in {root}/work/pyproject.toml: Input should be greater than or equal to 1",
        files={"pyproject.toml": "[tool.blitz]\nlimits.max_turns = -3\n"},
    ),
    ShellCase(
        "home-config-bad",
        "%blitz_config",
        "bad configuration 'limits.max_cost_usd' in {root}/home/.blitz/config.toml: Input should be a valid number, unable to parse string as a number",
        home='[limits]\nmax_cost_usd = "lots"\n',
    ),
    ShellCase(
        "home-config-not-toml",
        "%blitz_config",
        "bad configuration '(file)' in {root}/home/.blitz/config.toml: Invalid statement (at line 1, column 1)",
        home="= =",
    ),
    ShellCase(
        "file-nan",
        "%blitz_config",
        "bad configuration 'limits.timeout_s' in {root}/work/blitz.toml: Input should be a finite number",
        files={"blitz.toml": "[limits]\ntimeout_s = nan\n"},
    ),
    ShellCase(
        "agent-file-not-utf8",
        "%%blitz -a latin\nhi",
        "agent 'latin' is not available: skipped agent file .blitz/agents/latin.md: not UTF-8 text",
        files={".blitz/agents/latin.md": b"---\ndescription: caf\xe9\n---\nhi"},
    ),
    ShellCase(
        "agent-file-directory",
        "%%blitz -a folder\nhi",
        "agent 'folder' is not available: skipped agent file .blitz/agents/folder.md: not a regular file",
        files={".blitz/agents/folder.md/x": "x"},
    ),
    ShellCase(
        "agent-file-unclosed",
        "%%blitz -a open\nhi",
        "agent 'open' is not available: skipped agent file .blitz/agents/open.md: front matter opened with --- is never closed",
        files={".blitz/agents/open.md": "---\nname: open\n"},
    ),
    ShellCase(
        "agent-file-bad-field",
        "%%blitz -a odd\nhi",
        "agent 'odd' is not available: skipped agent file .blitz/agents/odd.md: colour: unknown agent field (name, description, model, tools)",
        files={".blitz/agents/odd.md": "---\ncolour: red\n---\nhi"},
    ),
    ShellCase(
        "agent-file-bad-line",
        "%%blitz -a line\nhi",
        "agent 'line' is not available: skipped agent file .blitz/agents/line.md: expected `key: value`, got 'just words'",
        files={".blitz/agents/line.md": "---\njust words\n---\nhi"},
    ),
    ShellCase(
        "agent-file-unknown-tool",
        "%%blitz -a tooly\nhi",
        "agent 'tooly' names an unknown tool 'nosuch'",
        files={".blitz/agents/tooly.md": "---\ntools: read_file, nosuch\n---\nhi"},
    ),
    ShellCase(
        "agent-file-unbuildable-pin",
        "%%blitz -a pinned\nhi",
        "cannot load the scripted model 'scripted:nonexistent.json': no such file {root}/work/nonexistent.json (a relative path is read from the workspace, {root}/work)",
        files={".blitz/agents/pinned.md": "---\nmodel: scripted:nonexistent.json\n---\nhi"},
    ),
    ShellCase(
        "agent-file-pin-outside",
        "%%blitz -a pinned\nhi",
        "agent 'pinned' is not available: skipped agent file .blitz/agents/pinned.md: its model pin 'scripted:/nonexistent.json' names a file outside the workspace",
        files={".blitz/agents/pinned.md": "---\nmodel: scripted:/nonexistent.json\n---\nhi"},
    ),
    ShellCase(
        "agent-file-provider-pin",
        "%%blitz -a pinned2\nhi",
        "model 'nosuchprovider/x': litellm knows no provider for this name; write it as provider/model, e.g. openai/gpt-4.1-mini",
        files={".blitz/agents/pinned2.md": "---\nmodel: nosuchprovider/x\n---\nhi"},
        env={"BLITZ_TRUST_WORKSPACE": "{root}/work"},
    ),
    ShellCase(
        "env-BLITZ_APPROVAL_HEADLESS-sometimes",
        "%%blitz\nhi",
        "bad configuration 'approval.headless' in environment variable BLITZ_APPROVAL_HEADLESS: Input should be 'deny' or 'allow'",
        env={"BLITZ_APPROVAL_HEADLESS": "sometimes"},
    ),
    ShellCase(
        "env-BLITZ_TELEMETRY-bogus",
        "%%blitz\nhi",
        "bad configuration 'telemetry.enabled' in environment variable BLITZ_TELEMETRY: expected 1/true/yes/on, 0/false/no/off or an exporter name (console, otlp, memory), got 'bogus'",
        env={"BLITZ_TELEMETRY": "bogus"},
    ),
    ShellCase(
        "env-BLITZ_MODEL-scripted:/nonexistent.json",
        "%%blitz\nhi",
        "cannot load the scripted model 'scripted:/nonexistent.json': no such file /nonexistent.json",
        env={"BLITZ_MODEL": "scripted:/nonexistent.json"},
    ),
    ShellCase(
        "env-BLITZ_MODEL-nosuchprovider/x",
        "%%blitz\nhi",
        "model 'nosuchprovider/x': litellm knows no provider for this name; write it as provider/model, e.g. openai/gpt-4.1-mini",
        env={"BLITZ_MODEL": "nosuchprovider/x"},
    ),
    ShellCase(
        "env-BLITZ_MODEL-scripted:s_key.json",
        "%%blitz\nhi",
        "cannot load the scripted model 'scripted:s_key.json': s_key.json: step 1: unknown key 'txt' (known: error, message, text, thought, tool_calls, usage)",
        env={"BLITZ_MODEL": "scripted:s_key.json"},
    ),
    ShellCase(
        "env-then-config",
        "%blitz_config limits.max_turns=3",
        "bad configuration 'approval.headless' in environment variable BLITZ_APPROVAL_HEADLESS: Input should be 'deny' or 'allow'",
        env={"BLITZ_APPROVAL_HEADLESS": "sometimes"},
    ),
    # -- unclear inputs: each used to be accepted, or to fail later without saying why ------
    ShellCase(
        "scripted-file-s_deep.json",
        "%blitz_model scripted:s_deep.json",
        "bad configuration 'model' in %blitz_model: cannot load the scripted model 'scripted:s_deep.json': s_deep.json: nested too deeply to be a scripted model file",
    ),
    ShellCase(
        "scripted-run-s_deep.json",
        "%%blitz -m scripted:s_deep.json\nhi",
        "cannot load the scripted model 'scripted:s_deep.json': s_deep.json: nested too deeply to be a scripted model file",
    ),
    ShellCase(
        "scripted-file-s_vision.json",
        "%blitz_model scripted:s_vision.json",
        "bad configuration 'model' in %blitz_model: cannot load the scripted model 'scripted:s_vision.json': s_vision.json: \"vision\" must be true or false, got 'yes'",
    ),
    ShellCase(
        "scripted-run-s_vision.json",
        "%%blitz -m scripted:s_vision.json\nhi",
        "cannot load the scripted model 'scripted:s_vision.json': s_vision.json: \"vision\" must be true or false, got 'yes'",
    ),
    ShellCase(
        "config-api_base=not-a-url",
        "%blitz_config api_base=not-a-url",
        "bad configuration 'api_base' in %blitz_config: expected an http:// or https:// URL with a host, got 'not-a-url'",
    ),
    ShellCase(
        "config-api_base=file",
        "%blitz_config api_base=file:///etc/passwd",
        "bad configuration 'api_base' in %blitz_config: expected an http:// or https:// URL with a host, got 'file:///etc/passwd'",
    ),
    ShellCase(
        "config-api_base=ftp",
        "%blitz_config api_base=ftp://example.com",
        "bad configuration 'api_base' in %blitz_config: expected an http:// or https:// URL with a host, got 'ftp://example.com'",
    ),
    ShellCase(
        "config-api_base=no-host",
        "%blitz_config api_base=http://",
        "bad configuration 'api_base' in %blitz_config: expected an http:// or https:// URL with a host, got 'http://'",
    ),
    ShellCase(
        "config-api_base=host-port",
        "%blitz_config api_base=localhost:8000",
        "bad configuration 'api_base' in %blitz_config: expected an http:// or https:// URL with a host, got 'localhost:8000'",
    ),
    ShellCase(
        "env-BLITZ_API_BASE-not-a-url",
        "%%blitz\nhi",
        "bad configuration 'api_base' in environment variable BLITZ_API_BASE: expected an http:// or https:// URL with a host, got 'not-a-url'",
        env={"BLITZ_API_BASE": "not-a-url"},
    ),
    ShellCase(
        "home-api_base-javascript",
        "%blitz_config",
        "bad configuration 'api_base' in {root}/home/.blitz/config.toml: expected an http:// or https:// URL with a host, got 'javascript:alert(1)'",
        home='api_base = "javascript:alert(1)"\n',
    ),
    ShellCase(
        "config-model_retries=1000000",
        "%blitz_config model_retries=1000000",
        "bad configuration 'model_retries' in %blitz_config: Input should be less than or equal to 20",
    ),
    ShellCase(
        "config-model_retries=-1",
        "%blitz_config model_retries=-1",
        "bad configuration 'model_retries' in %blitz_config: Input should be greater than or equal to 0",
    ),
    ShellCase(
        "config-model_retries=nan",
        "%blitz_config model_retries=nan",
        "bad configuration 'model_retries' in %blitz_config: Input should be a finite number",
    ),
    ShellCase(
        "config-fallback_models-no-provider",
        '%blitz_config fallback_models=["nosuchprovider/x"]',
        "bad configuration 'fallback_models' in %blitz_config: model 'nosuchprovider/x': litellm knows no provider for this name; write it as provider/model, e.g. openai/gpt-4.1-mini",
    ),
    ShellCase(
        "config-fallback_models-missing-script",
        '%blitz_config fallback_models=["scripted:/nonexistent.json"]',
        "bad configuration 'fallback_models' in %blitz_config: cannot load the scripted model 'scripted:/nonexistent.json': no such file /nonexistent.json",
    ),
    ShellCase(
        "config-fallback_models-second",
        '%blitz_config fallback_models=["scripted:steps.json","nosuchprovider/y"]',
        "bad configuration 'fallback_models' in %blitz_config: model 'nosuchprovider/y': litellm knows no provider for this name; write it as provider/model, e.g. openai/gpt-4.1-mini",
    ),
    ShellCase(
        "env-BLITZ_AGENT-nosuch",
        "%%blitz\nhi",
        "bad configuration 'agent' in environment variable BLITZ_AGENT: unknown agent 'nosuch' (known: blitz)",
        env={"BLITZ_AGENT": "nosuch"},
    ),
    ShellCase(
        "env-BLITZ_TRUST_WORKSPACE-dot",
        "%%blitz\nhi",
        "bad configuration 'BLITZ_TRUST_WORKSPACE' in environment variable BLITZ_TRUST_WORKSPACE: must be an absolute path, got '.'",
        env={"BLITZ_TRUST_WORKSPACE": "."},
    ),
    ShellCase(
        "env-BLITZ_TRUST_WORKSPACE-relative",
        "%%blitz\nhi",
        "bad configuration 'BLITZ_TRUST_WORKSPACE' in environment variable BLITZ_TRUST_WORKSPACE: must be an absolute path, got 'work'",
        env={"BLITZ_TRUST_WORKSPACE": "work"},
    ),
    ShellCase(
        "agent-file-same-name",
        "%%blitz -a b\nhi",
        "agent 'b' is not available: skipped agent file .blitz/agents/b.md: the name 'twin' is taken by .blitz/agents/a.md",
        files={".blitz/agents/a.md": "---\nname: twin\n---\none", ".blitz/agents/b.md": "---\nname: twin\n---\nother"},
    ),
    ShellCase(
        "agent-file-builtin-name",
        "%%blitz -a mine\nhi",
        "agent 'mine' is not available: skipped agent file .blitz/agents/mine.md: the name 'blitz' is taken by the built-in agent",
        files={".blitz/agents/mine.md": "---\nname: blitz\n---\nhijack"},
    ),
    ShellCase(
        "agent-file-huge",
        "%%blitz -a huge\nhi",
        "agent 'huge' is not available: skipped agent file .blitz/agents/huge.md: 100,001 bytes, over 100,000",
        files={".blitz/agents/huge.md": "x" * 100_001},
    ),
    ShellCase(
        "reference-cell-word",
        "%%blitz\nfix @cell:abc",
        "@cell:abc: expected @cell, @cell:N or @cell:-N (N a number) (write @@ for a literal @; references: @name, @cell, @cell:N, @cell:-N, @err, @fig, @file:path, @var:name)",
    ),
    ShellCase(
        "reference-cell-count-and-word",
        "%%blitz\nfix @cell:3abc",
        "@cell:3abc: expected @cell, @cell:N or @cell:-N (N a number) (write @@ for a literal @; references: @name, @cell, @cell:N, @cell:-N, @err, @fig, @file:path, @var:name)",
    ),
    ShellCase(
        "reference-cell-double-colon",
        "%%blitz\nfix @cell::2",
        "@cell::2: expected @cell, @cell:N or @cell:-N (N a number) (write @@ for a literal @; references: @name, @cell, @cell:N, @cell:-N, @err, @fig, @file:path, @var:name)",
    ),
    ShellCase(
        "reference-file-missing",
        "%%blitz\nread @file:nosuch.csv",
        "@file:nosuch.csv: no such file: nosuch.csv (write @@ for a literal @; references: @name, @cell, @cell:N, @cell:-N, @err, @fig, @file:path, @var:name)",
    ),
    ShellCase(
        "reference-file-outside",
        "%%blitz\nread @file:../../etc/passwd",
        "@file:../../etc/passwd: ../../etc/passwd leads outside the workspace ({root}/work) through '..' (write @@ for a literal @; references: @name, @cell, @cell:N, @cell:-N, @err, @fig, @file:path, @var:name)",
    ),
    ShellCase(
        "reference-file-empty",
        "%%blitz\nread @file:",
        '@file:: give a path: @file:data/input.csv or @file:"name with spaces.txt" (write @@ for a literal @; references: @name, @cell, @cell:N, @cell:-N, @err, @fig, @file:path, @var:name)',
    ),
    ShellCase(
        "reference-err-none",
        "%%blitz\nwhy @err",
        "@err: no cell has raised an error in this kernel yet (write @@ for a literal @; references: @name, @cell, @cell:N, @cell:-N, @err, @fig, @file:path, @var:name)",
    ),
    ShellCase("out-_", "%%blitz --out _\nhi", "--out '_' would replace IPython's _; choose another name"),
    ShellCase("out-__", "%%blitz --out __\nhi", "--out '__' would replace IPython's __; choose another name"),
    ShellCase("out-_1", "%%blitz --out _1\nhi", "--out '_1' would replace IPython's _1; choose another name"),
    ShellCase("out-_i", "%%blitz --out _i\nhi", "--out '_i' would replace IPython's _i; choose another name"),
    ShellCase("out-In", "%%blitz --out In\nhi", "--out 'In' would replace IPython's In; choose another name"),
    ShellCase("out-Out", "%%blitz --out Out\nhi", "--out 'Out' would replace IPython's Out; choose another name"),
    ShellCase(
        "out-get_ipython",
        "%%blitz --out get_ipython\nhi",
        "--out 'get_ipython' would replace IPython's get_ipython; choose another name",
    ),
    ShellCase(
        "out-print", "%%blitz --out print\nhi", "--out 'print' would replace the builtin print; choose another name"
    ),
    ShellCase("out-len", "%%blitz --out len\nhi", "--out 'len' would replace the builtin len; choose another name"),
    ShellCase("out-None", "%%blitz --out None\nhi", "--out needs a Python variable name, got 'None'"),
    ShellCase(
        "help-extra", "%blitz_help extra", "%blitz_help takes no arguments, got 'extra'; for one magic: %blitz_config?"
    ),
    ShellCase(
        "help-two-words",
        "%blitz_help blitz config",
        "%blitz_help takes no arguments, got 'blitz config'; for one magic: %blitz_config?",
    ),
    ShellCase("timeout-0.0", "%%blitz --timeout 0.0\nhi", "--timeout must be positive, got 0.0"),
    ShellCase("timeout--inf", "%%blitz --timeout -inf\nhi", "argument --timeout: expected one argument"),
    ShellCase("max-cost-0.0", "%%blitz --max-cost 0.0\nhi", "--max-cost must be positive, got 0.0"),
    ShellCase("max-turns-+inf", "%%blitz --max-turns +inf\nhi", "--max-turns expects a number, got '+inf'"),
    ShellCase(
        "config-limits.max_turns=inf",
        "%blitz_config limits.max_turns=inf",
        "bad configuration 'limits.max_turns' in %blitz_config: Input should be a finite number",
    ),
    ShellCase(
        "config-limits.max_cost_usd_session=nan",
        "%blitz_config limits.max_cost_usd_session=nan",
        "bad configuration 'limits.max_cost_usd_session' in %blitz_config: Input should be a finite number",
    ),
    ShellCase(
        "config-tools.max_parallel=-1",
        "%blitz_config tools.max_parallel=-1",
        "bad configuration 'tools.max_parallel' in %blitz_config: Input should be greater than or equal to 1",
    ),
    ShellCase(
        "config-temperature=-1",
        "%blitz_config temperature=-1",
        "bad configuration 'temperature' in %blitz_config: Input should be greater than or equal to 0",
    ),
    ShellCase(
        "config-max_tokens=abc",
        "%blitz_config max_tokens=abc",
        "bad configuration 'max_tokens' in %blitz_config: Input should be a valid integer, unable to parse string as an integer",
    ),
    ShellCase(
        "config-stall.between_chunks_s=nan",
        "%blitz_config stall.between_chunks_s=nan",
        "bad configuration 'stall.between_chunks_s' in %blitz_config: Input should be a finite number",
    ),
    ShellCase(
        "config-breaker.cooldown_s=inf",
        "%blitz_config breaker.cooldown_s=inf",
        "bad configuration 'breaker.cooldown_s' in %blitz_config: Input should be a finite number",
    ),
    ShellCase(
        "config-api_key_env=1BAD",
        "%blitz_config api_key_env=1BAD",
        "bad configuration 'api_key_env' in %blitz_config: must be the name of an environment variable (e.g. OPENAI_API_KEY), not the key itself",
    ),
    ShellCase("replay-turn-x", "%blitz_replay --turn x", "--turn N must be a whole number, 1 or more; got 'x'"),
    ShellCase("replay-turn-0", "%blitz_replay --turn 0", "--turn N must be a whole number, 1 or more; got '0'"),
    ShellCase("replay-cell-and-turn", "%blitz_replay 3 --turn 1", "give a CELL or --turn N, not both"),
    ShellCase(
        "replay-cell-unknown",
        "%blitz_replay 99",
        "cell 99 ran no %%blitz turn in this kernel; the saved notebook is not known here: use --turn N, or --notebook PATH",
    ),
    ShellCase("replay-index-words", "%blitz_replay --index x", "--index must be a cell position, 0 or more; got 'x'"),
    ShellCase(
        "replay-index-and-turn", "%blitz_replay --index 1 --turn 1", "give --index I, CELL or --turn N, one of them"
    ),
    ShellCase(
        "replay-notebook-missing",
        "%blitz_replay 3 --notebook nosuch.ipynb",
        "no notebook at nosuch.ipynb",
    ),
    ShellCase("replay-cell-words", "%blitz_replay four", "CELL must be a whole number, 1 or more; got 'four'"),
    ShellCase("replay-out-bad", "%blitz_replay -o 1x", "--out needs a Python variable name, got '1x'"),
    ShellCase("replay-no-turns", "%blitz_replay -s empty", "session 'empty' has no recorded turns to replay"),
    ShellCase(
        "replay-approve-bad",
        "%blitz_replay --approve maybe",
        "argument --approve: invalid choice: 'maybe' (choose from 'ask', 'allow', 'deny')",
    ),
    ShellCase("skills-extra-argument", "%blitz_skills extra", "unrecognized arguments: extra"),
]

CLI_CASES: list[CliCase] = [
    CliCase("run-no-notebook", ["nope.ipynb"], "no notebook at nope.ipynb"),
    CliCase("run-not-ipynb", ["a.txt"], "a.txt is not a .ipynb notebook", files={"a.txt": "x"}),
    CliCase(
        "run-not-json",
        ["bad.ipynb"],
        "bad.ipynb is not a notebook nbformat can read: Notebook does not appear to be JSON: '{not json'",
        files={"bad.ipynb": "{not json"},
    ),
    CliCase(
        "run-empty-file",
        ["empty.ipynb"],
        "empty.ipynb is not a notebook nbformat can read: Notebook does not appear to be JSON: ''",
        files={"empty.ipynb": ""},
    ),
    CliCase(
        "run-json-list",
        ["list.ipynb"],
        "list.ipynb is not a notebook nbformat can read: 'list' object has no attribute 'get'",
        files={"list.ipynb": "[]"},
    ),
    CliCase(
        "run-no-kernelspec",
        ["nk.ipynb"],
        "nk.ipynb names no kernel (metadata.kernelspec); pass --kernel NAME, e.g. --kernel python3",
        files={"nk.ipynb": '{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}'},
    ),
    CliCase(
        "run-kernelspec-no-name",
        ["nk2.ipynb"],
        "nk2.ipynb names no kernel (metadata.kernelspec); pass --kernel NAME, e.g. --kernel python3",
        files={
            "nk2.ipynb": '{"cells": [], "metadata": {"kernelspec": {"display_name": "x"}}, "nbformat": 4, "nbformat_minor": 5}'
        },
    ),
    CliCase(
        "run-report-folder",
        ["nb.ipynb", "--report", "out"],
        "--report out is a folder; give a file name, e.g. out/report.json",
        files={"nb.ipynb": NOTEBOOK, "out/keep": ""},
    ),
    CliCase(
        "run-report-no-folder",
        ["nb.ipynb", "--report", "missing/r.json"],
        "--report missing/r.json: the folder missing does not exist",
        files={"nb.ipynb": NOTEBOOK},
    ),
    CliCase(
        "run-output-folder",
        ["nb.ipynb", "-o", "out"],
        "-o/--output out is a folder; give a file name, e.g. out/report.json",
        files={"nb.ipynb": NOTEBOOK, "out/keep": ""},
    ),
    CliCase(
        "run-output-no-folder",
        ["nb.ipynb", "-o", "missing/x.ipynb"],
        "-o/--output missing/x.ipynb: the folder missing does not exist",
        files={"nb.ipynb": NOTEBOOK},
    ),
    CliCase(
        "run-timeout-nan",
        ["nb.ipynb", "--timeout", "nan"],
        "--timeout must be a finite number of seconds, got nan",
        files={"nb.ipynb": NOTEBOOK},
    ),
    CliCase(
        "run-timeout-inf",
        ["nb.ipynb", "--timeout", "inf"],
        "--timeout must be a finite number of seconds, got inf",
        files={"nb.ipynb": NOTEBOOK},
    ),
    CliCase(
        "run-timeout-1e309",
        ["nb.ipynb", "--timeout", "1e309"],
        "--timeout must be a finite number of seconds, got inf",
        files={"nb.ipynb": NOTEBOOK},
    ),
    CliCase(
        "run-timeout-0",
        ["nb.ipynb", "--timeout", "0"],
        "--timeout must be positive, got 0 (leave it out for no limit)",
        files={"nb.ipynb": NOTEBOOK},
    ),
    CliCase(
        "run-timeout--1",
        ["nb.ipynb", "--timeout=-1"],
        "--timeout must be positive, got -1 (leave it out for no limit)",
        files={"nb.ipynb": NOTEBOOK},
    ),
    CliCase(
        "run-timeout-abc",
        ["nb.ipynb", "--timeout", "abc"],
        "argument --timeout: invalid float value: 'abc'",
        files={"nb.ipynb": NOTEBOOK},
    ),
    CliCase(
        "run-budget-inf",
        ["nb.ipynb", "--budget", "inf"],
        "--budget must be a finite, positive amount of USD, got inf",
        files={"nb.ipynb": NOTEBOOK},
    ),
    CliCase(
        "run-budget-nan",
        ["nb.ipynb", "--budget", "nan"],
        "--budget must be a finite, positive amount of USD, got nan",
        files={"nb.ipynb": NOTEBOOK},
    ),
    CliCase(
        "run-budget-0",
        ["nb.ipynb", "--budget", "0"],
        "--budget must be a finite, positive amount of USD, got 0",
        files={"nb.ipynb": NOTEBOOK},
    ),
    CliCase(
        "run-budget--5",
        ["nb.ipynb", "--budget=-5"],
        "--budget must be a finite, positive amount of USD, got -5",
        files={"nb.ipynb": NOTEBOOK},
    ),
    CliCase(
        "run-budget-abc",
        ["nb.ipynb", "--budget", "lots"],
        "argument --budget: invalid float value: 'lots'",
        files={"nb.ipynb": NOTEBOOK},
    ),
    CliCase(
        "run-parameter-code",
        ["nb.ipynb", "-p", 'x = 1; import os; os.system("id") #', "1"],
        "-p: a parameter name must be a Python identifier, got 'x = 1; import os; os.system(\"id\") #'",
        files={"nb.ipynb": NOTEBOOK},
    ),
    CliCase(
        "run-parameter-digit",
        ["nb.ipynb", "-p", "1x", "1"],
        "-p: a parameter name must be a Python identifier, got '1x'",
        files={"nb.ipynb": NOTEBOOK},
    ),
    CliCase(
        "run-parameter-keyword",
        ["nb.ipynb", "-p", "class", "1"],
        "-p: a parameter name must be a Python identifier, got 'class'",
        files={"nb.ipynb": NOTEBOOK},
    ),
    CliCase(
        "run-parameter-empty",
        ["nb.ipynb", "-p", "", "1"],
        "-p: a parameter name must be a Python identifier, got ''",
        files={"nb.ipynb": NOTEBOOK},
    ),
    CliCase(
        "run-parameter-dotted",
        ["nb.ipynb", "-p", "a.b", "1"],
        "-p: a parameter name must be a Python identifier, got 'a.b'",
        files={"nb.ipynb": NOTEBOOK},
    ),
    CliCase(
        "run-parameter-one-value",
        ["nb.ipynb", "-p", "x"],
        "argument -p/--parameter: expected 2 arguments",
        files={"nb.ipynb": NOTEBOOK},
    ),
    CliCase(
        "run-cwd-missing",
        ["nb.ipynb", "--cwd", "nowhere"],
        "--cwd nowhere is not a directory",
        files={"nb.ipynb": NOTEBOOK},
    ),
    CliCase(
        "run-approve-bogus",
        ["nb.ipynb", "--approve", "ask"],
        "argument --approve: invalid choice: 'ask' (choose from 'deny', 'allow')",
        files={"nb.ipynb": NOTEBOOK},
    ),
    CliCase(
        "run-unknown-option",
        ["nb.ipynb", "--frobnicate"],
        "unrecognized arguments: --frobnicate",
        files={"nb.ipynb": NOTEBOOK},
    ),
    CliCase("run-no-arguments", [], "the following arguments are required: notebook"),
]

TOOL_CASES: list[ToolCase] = [
    ToolCase(
        "read_file-path-number",
        "read_file",
        '{"path": 42}',
        "invalid arguments for read_file: path: Input should be a valid string",
    ),
    ToolCase("read_file-no-path", "read_file", "{}", "invalid arguments for read_file: path: Field required"),
    ToolCase(
        "read_file-negative-offset",
        "read_file",
        '{"path": "a.txt", "offset": -1}',
        "invalid arguments for read_file: offset: Input should be greater than or equal to 0",
    ),
    ToolCase(
        "read_file-zero-limit",
        "read_file",
        '{"path": "a.txt", "limit": 0}',
        "invalid arguments for read_file: limit: Input should be greater than or equal to 1",
    ),
    ToolCase(
        "read_file-limit-words",
        "read_file",
        '{"path": "a.txt", "limit": "many"}',
        "invalid arguments for read_file: limit: Input should be a valid integer, unable to parse string as an integer",
    ),
    ToolCase(
        "read_file-outside",
        "read_file",
        '{"path": "../../etc/passwd"}',
        "../../etc/passwd leads outside the workspace ({root}) through '..'",
    ),
    ToolCase(
        "read_file-absolute-outside",
        "read_file",
        '{"path": "/etc/passwd"}',
        "/etc/passwd is outside the workspace ({root}); use a path relative to the workspace",
    ),
    ToolCase("read_file-missing", "read_file", '{"path": "nosuch.txt"}', "no such file: nosuch.txt"),
    ToolCase("load_skill-unknown", "load_skill", '{"name": "nope"}', "no skill named 'nope'; available: none"),
    ToolCase("load_skill-no-name", "load_skill", "{}", "invalid arguments for load_skill: name: Field required"),
    ToolCase(
        "read_file-not-json",
        "read_file",
        "{not json",
        "arguments are not valid JSON (Expecting property name enclosed in double quotes); send a JSON object",
    ),
    ToolCase("read_file-array", "read_file", "[1, 2]", "arguments must be a JSON object"),
    ToolCase(
        "write_file-no-content",
        "write_file",
        '{"path": "b.txt"}',
        "invalid arguments for write_file: content: Field required",
    ),
    ToolCase(
        "write_file-outside",
        "write_file",
        '{"path": "../escape.txt", "content": "x"}',
        "../escape.txt leads outside the workspace ({root}) through '..'",
    ),
    ToolCase(
        "edit_file-no-match",
        "edit_file",
        '{"path": "a.txt", "old": "zzz", "new": "y"}',
        "old text not found in a.txt; read the file and copy the text exactly",
    ),
    ToolCase("grep-bad-regex", "grep", '{"pattern": "("}', "invalid regular expression '(': missing ) at position 1"),
    ToolCase("glob-outside", "glob", '{"pattern": "../*"}', "pattern must be relative to the workspace, without '..'"),
    ToolCase("list_files-missing", "list_files", '{"path": "nosuch"}', "no such file: nosuch"),
    ToolCase(
        "run_python-timeout-nan",
        "run_python",
        '{"code": "1", "timeout_s": NaN}',
        "invalid arguments for run_python: timeout_s: Input should be a finite number",
    ),
    ToolCase(
        "run_python-timeout-inf",
        "run_python",
        '{"code": "1", "timeout_s": 1e309}',
        "invalid arguments for run_python: timeout_s: Input should be a finite number",
    ),
    ToolCase(
        "run_python-timeout-negative",
        "run_python",
        '{"code": "1", "timeout_s": -1}',
        "invalid arguments for run_python: timeout_s: Input should be greater than 0",
    ),
    ToolCase("run_python-no-code", "run_python", "{}", "invalid arguments for run_python: code: Field required"),
    ToolCase(
        "describe_variable-empty", "describe_variable", '{"name": ""}', "no variable named ''; variables include: data"
    ),
    ToolCase(
        "describe_variable-module",
        "describe_variable",
        '{"name": "os"}',
        "os is the module os; describe_variable describes the user's variables, not modules or what they hold",
    ),
    ToolCase(
        "describe_variable-dunder",
        "describe_variable",
        '{"name": "data.__class__"}',
        "cannot get data.__class__: describe_variable follows public attributes only (no '_' names); use run_python to look further",
    ),
    ToolCase(
        "notebook_edit-bad-action",
        "notebook_edit",
        '{"action": "explode", "index": 0, "source": ""}',
        "invalid arguments for notebook_edit: action: Input should be 'insert', 'replace' or 'delete'",
    ),
    ToolCase(
        "notebook_run-no-cell",
        "notebook_run",
        "{}",
        "invalid arguments for notebook_run: (arguments): Value error, give either `cell` (an index or id) or `start` and `end`",
    ),
    ToolCase(
        "notebook_run-backwards-range",
        "notebook_run",
        '{"start": 4, "end": 2}',
        "invalid arguments for notebook_run: (arguments): Value error, `end` (2) is before `start` (4)",
    ),
    ToolCase(
        "notebook_edit-run-a-deleted-cell",
        "notebook_edit",
        '{"action": "delete", "index": 0, "run": true}',
        "run: true needs insert or replace; a deleted cell cannot be run",
    ),
    ToolCase(
        "todo-not-a-list", "todo", '{"items": 3}', "invalid arguments for todo: items: Input should be a valid list"
    ),
    ToolCase(
        "view_image-nothing",
        "view_image",
        "{}",
        "invalid arguments for view_image: (arguments): Value error, give exactly one of path or output",
    ),
    ToolCase(
        "invoke_agent-unknown",
        "invoke_agent",
        '{"agent": "nosuch", "prompt": "x"}',
        "unknown agent 'nosuch' (known: none)",
    ),
    ToolCase(
        "unknown-tool",
        "format_disk",
        "{}",
        "unknown tool 'format_disk'; available: read_file, list_files, glob, grep, write_file, edit_file, run_python, list_variables, describe_variable, view_image, notebook_read, notebook_edit, notebook_run, search_session, web_fetch, load_skill, list_agents, invoke_agent, todo, enter_plan_mode, exit_plan_mode",
    ),
    ToolCase(
        "grep-pattern-too-long",
        "grep",
        '{"pattern": "' + "a" * 1001 + '"}',
        "the pattern is 1,001 characters; the limit is 1,000: search for a shorter, distinctive part of it",
    ),
    ToolCase(
        "grep-pattern-5000",
        "grep",
        '{"pattern": "' + "ab" * 2500 + '"}',
        "the pattern is 5,000 characters; the limit is 1,000: search for a shorter, distinctive part of it",
    ),
    ToolCase(
        "grep-regex-too-long",
        "grep",
        '{"pattern": "' + "(a)" * 400 + '"}',
        "the pattern is 1,200 characters; the limit is 1,000: search for a shorter, distinctive part of it",
    ),
    ToolCase(
        "glob-pattern-too-long",
        "glob",
        '{"pattern": "' + "*" * 1001 + '"}',
        "the glob pattern is 1,001 characters; the limit is 1,000: search for a shorter, distinctive part of it",
    ),
    ToolCase("grep-no-pattern", "grep", "{}", "invalid arguments for grep: pattern: Field required"),
    ToolCase(
        "grep-pattern-number",
        "grep",
        '{"pattern": 5}',
        "invalid arguments for grep: pattern: Input should be a valid string",
    ),
    ToolCase(
        "grep-outside",
        "grep",
        '{"pattern": "x", "path": "../.."}',
        "../.. leads outside the workspace ({root}) through '..'",
    ),
    ToolCase("glob-empty", "glob", '{"pattern": ""}', "pattern is empty; try '**/*' to list everything"),
    ToolCase(
        "glob-absolute", "glob", '{"pattern": "/etc/*"}', "pattern must be relative to the workspace, without '..'"
    ),
    ToolCase(
        "edit_file-no-old",
        "edit_file",
        '{"path": "a.txt", "new": "y"}',
        "invalid arguments for edit_file: old: Field required",
    ),
    ToolCase(
        "list_files-number",
        "list_files",
        '{"path": 3}',
        "invalid arguments for list_files: path: Input should be a valid string",
    ),
    ToolCase("read_file-dir", "read_file", '{"path": "."}', ". is a directory; use list_files to see what it holds"),
    ToolCase(
        "run_python-code-number",
        "run_python",
        '{"code": 5}',
        "invalid arguments for run_python: code: Input should be a valid string",
    ),
    ToolCase(
        "describe_variable-missing",
        "describe_variable",
        '{"name": "nosuch"}',
        "no variable named 'nosuch'; variables include: data",
    ),
    ToolCase(
        "todo-item-number",
        "todo",
        '{"items": [3]}',
        "invalid arguments for todo: items.0: Input should be a valid dictionary or instance of TodoItem",
    ),
    ToolCase(
        "notebook_edit-no-index",
        "notebook_edit",
        '{"action": "delete"}',
        "invalid arguments for notebook_edit: index: Field required",
    ),
    ToolCase(
        "invoke_agent-no-prompt",
        "invoke_agent",
        '{"agent": "x"}',
        "invalid arguments for invoke_agent: prompt: Field required",
    ),
    ToolCase("arguments-null", "read_file", "null", "arguments must be a JSON object"),
    ToolCase("arguments-string", "read_file", '"a.txt"', "arguments must be a JSON object"),
]
