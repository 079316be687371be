"""The bad-input table (issue 15): every case names the exact one-line error it expects.

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
class ToolCase:
    """A tool call the model makes with these raw arguments: the error it reads."""

    id: str
    tool: str
    arguments: str
    error: str


BAD_STEPS: dict[str, str | bytes] = {
    's_notjson.json': '[{',
    's_obj.json': '{}',
    's_num.json': '{"steps": 3}',
    's_int.json': '[1]',
    's_key.json': '[{"txt": "hi"}]',
    's_text.json': '[{"text": 5}]',
    's_noname.json': '[{"tool_calls": [{}]}]',
    's_calls.json': '[{"tool_calls": {"name": "x"}}]',
    's_usage.json': '[{"usage": {"prompt_tokens": -1}}]',
    's_error.json': '[{"error": "melted"}]',
    's_args.json': '[{"tool_calls": [{"name": "x", "arguments": 3}]}]',
    's_latin.json': b'[{"text": "caf\xe9"}]',
}

SHELL_CASES: list[ShellCase] = [
    ShellCase('max-turns-0', '%%blitz --max-turns 0\nhi', '--max-turns must be positive, got 0'),
    ShellCase('max-turns--1', '%%blitz --max-turns -1\nhi', '--max-turns must be positive, got -1'),
    ShellCase('max-turns-abc', '%%blitz --max-turns abc\nhi', "--max-turns expects a number, got 'abc'"),
    ShellCase('max-turns-1.5', '%%blitz --max-turns 1.5\nhi', "--max-turns expects a number, got '1.5'"),
    ShellCase('max-turns-nan', '%%blitz --max-turns nan\nhi', "--max-turns expects a number, got 'nan'"),
    ShellCase('max-turns-inf', '%%blitz --max-turns inf\nhi', "--max-turns expects a number, got 'inf'"),
    ShellCase('max-turns-1e309', '%%blitz --max-turns 1e309\nhi', "--max-turns expects a number, got '1e309'"),
    ShellCase('max-turns-99999999999', '%%blitz --max-turns 99999999999\nhi', 'max_turns must be a finite number above 0 and at most 100000, got 99999999999'),
    ShellCase('max-cost-0', '%%blitz --max-cost 0\nhi', '--max-cost must be positive, got 0'),
    ShellCase('max-cost--1', '%%blitz --max-cost -1\nhi', '--max-cost must be positive, got -1'),
    ShellCase('max-cost-abc', '%%blitz --max-cost abc\nhi', "--max-cost expects a number, got 'abc'"),
    ShellCase('max-cost-nan', '%%blitz --max-cost nan\nhi', '--max-cost must be a finite number, got nan'),
    ShellCase('max-cost-inf', '%%blitz --max-cost inf\nhi', '--max-cost must be a finite number, got inf'),
    ShellCase('max-cost--inf', '%%blitz --max-cost -inf\nhi', 'argument --max-cost: expected one argument'),
    ShellCase('max-cost-1e309', '%%blitz --max-cost 1e309\nhi', '--max-cost must be a finite number, got 1e309'),
    ShellCase('max-cost-1e12', '%%blitz --max-cost 1e12\nhi', 'max_cost_usd must be a finite number above 0 and at most 1e+06, got 1000000000000.0'),
    ShellCase('timeout-0', '%%blitz --timeout 0\nhi', '--timeout must be positive, got 0'),
    ShellCase('timeout--5', '%%blitz --timeout -5\nhi', '--timeout must be positive, got -5'),
    ShellCase('timeout-abc', '%%blitz --timeout abc\nhi', "--timeout expects a number, got 'abc'"),
    ShellCase('timeout-nan', '%%blitz --timeout nan\nhi', '--timeout must be a finite number, got nan'),
    ShellCase('timeout-inf', '%%blitz --timeout inf\nhi', '--timeout must be a finite number, got inf'),
    ShellCase('timeout-1e309', '%%blitz --timeout 1e309\nhi', '--timeout must be a finite number, got 1e309'),
    ShellCase('timeout-1e12', '%%blitz --timeout 1e12\nhi', 'timeout must be a finite number above 0 and at most 604800, got 1000000000000.0'),
    ShellCase('tools-,,,', '%%blitz --tools ,,,\nhi', 'the allowed tools list is empty: name at least one tool'),
    ShellCase('tools-nosuch', '%%blitz --tools nosuch\nhi', 'unknown tool(s) nosuch in the allowed tools; known: read_file, list_files, glob, grep, write_file, edit_file, run_python, list_variables, describe_variable, view_image, notebook_read, notebook_edit, search_session, list_agents, invoke_agent, todo, enter_plan_mode, exit_plan_mode'),
    ShellCase('tools-read_file,nosuch', '%%blitz --tools read_file,nosuch\nhi', 'unknown tool(s) nosuch in the allowed tools; known: read_file, list_files, glob, grep, write_file, edit_file, run_python, list_variables, describe_variable, view_image, notebook_read, notebook_edit, search_session, list_agents, invoke_agent, todo, enter_plan_mode, exit_plan_mode'),
    ShellCase("tools-' '", "%%blitz --tools ' '\nhi", "unknown tool(s) ' ' in the allowed tools; known: read_file, list_files, glob, grep, write_file, edit_file, run_python, list_variables, describe_variable, view_image, notebook_read, notebook_edit, search_session, list_agents, invoke_agent, todo, enter_plan_mode, exit_plan_mode"),
    ShellCase('out-1bad', '%%blitz --out 1bad\nhi', "--out needs a Python variable name, got '1bad'"),
    ShellCase("out-'a b'", "%%blitz --out 'a b'\nhi", "--out needs a Python variable name, got 'a b'"),
    ShellCase('out-class', '%%blitz --out class\nhi', "--out needs a Python variable name, got 'class'"),
    ShellCase("out-''", "%%blitz --out ''\nhi", '--out needs a name, got an empty one'),
    ShellCase('out-a.b', '%%blitz --out a.b\nhi', "--out needs a Python variable name, got 'a.b'"),
    ShellCase('session-empty', "%%blitz --session ''\nhi", '--session needs a name, got an empty one'),
    ShellCase('session-quotes-only', '%%blitz -s ""\nhi', '--session needs a name, got an empty one'),
    ShellCase('agent-unknown', '%%blitz -a nosuch\nhi', "unknown agent 'nosuch' (known: blitz)"),
    ShellCase('agent-empty', "%%blitz -a ''\nhi", '--agent needs a name, got an empty one'),
    ShellCase('model-empty', "%%blitz -m ''\nhi", '--model needs a name, got an empty one'),
    ShellCase('model-no-provider', '%%blitz -m nosuchprovider/x\nhi', "model 'nosuchprovider/x': litellm knows no provider for this name; write it as provider/model, e.g. openai/gpt-4.1-mini"),
    ShellCase('model-missing-script', '%%blitz -m scripted:/nonexistent/steps.json\nhi', "cannot load the scripted model 'scripted:/nonexistent/steps.json': [Errno 2] No such file or directory: '/nonexistent/steps.json'"),
    ShellCase('model-broken-script', '%%blitz -m scripted:s_notjson.json\nhi', "cannot load the scripted model 'scripted:s_notjson.json': s_notjson.json is not JSON (Expecting property name enclosed in double quotes at line 1)"),
    ShellCase('approve-bogus', '%%blitz --approve sometimes\nhi', "argument --approve: invalid choice: 'sometimes' (choose from 'ask', 'allow', 'deny')"),
    ShellCase('unknown-option', '%%blitz --frobnicate\nhi', 'unrecognized arguments: --frobnicate'),
    ShellCase('unclosed-quote', '%%blitz -s "unclosed\nhi', 'No closing quotation'),
    ShellCase('empty-body', '%%blitz\n   ', 'the cell body is the prompt, and it is empty'),
    ShellCase('positional-args', '%%blitz extra words\nhi', 'unrecognized arguments: extra words'),
    ShellCase('scripted-file-s_notjson.json', '%blitz_model scripted:s_notjson.json', "bad configuration 'model' in %blitz_config: cannot load the scripted model 'scripted:s_notjson.json': s_notjson.json is not JSON (Expecting property name enclosed in double quotes at line 1)"),
    ShellCase('scripted-run-s_notjson.json', '%%blitz -m scripted:s_notjson.json\nhi', "cannot load the scripted model 'scripted:s_notjson.json': s_notjson.json is not JSON (Expecting property name enclosed in double quotes at line 1)"),
    ShellCase('scripted-file-s_obj.json', '%blitz_model scripted:s_obj.json', 'bad configuration \'model\' in %blitz_config: cannot load the scripted model \'scripted:s_obj.json\': s_obj.json: an object needs a "steps" list'),
    ShellCase('scripted-run-s_obj.json', '%%blitz -m scripted:s_obj.json\nhi', 'cannot load the scripted model \'scripted:s_obj.json\': s_obj.json: an object needs a "steps" list'),
    ShellCase('scripted-file-s_num.json', '%blitz_model scripted:s_num.json', "bad configuration 'model' in %blitz_config: cannot load the scripted model 'scripted:s_num.json': s_num.json: a scripted model file holds a list of steps"),
    ShellCase('scripted-run-s_num.json', '%%blitz -m scripted:s_num.json\nhi', "cannot load the scripted model 'scripted:s_num.json': s_num.json: a scripted model file holds a list of steps"),
    ShellCase('scripted-file-s_int.json', '%blitz_model scripted:s_int.json', "bad configuration 'model' in %blitz_config: cannot load the scripted model 'scripted:s_int.json': s_int.json: step 1: expected an object, got int"),
    ShellCase('scripted-run-s_int.json', '%%blitz -m scripted:s_int.json\nhi', "cannot load the scripted model 'scripted:s_int.json': s_int.json: step 1: expected an object, got int"),
    ShellCase('scripted-file-s_key.json', '%blitz_model scripted:s_key.json', "bad configuration 'model' in %blitz_config: cannot load the scripted model 'scripted:s_key.json': s_key.json: step 1: unknown key 'txt' (known: error, message, text, thought, tool_calls, usage)"),
    ShellCase('scripted-run-s_key.json', '%%blitz -m scripted:s_key.json\nhi', "cannot load the scripted model 'scripted:s_key.json': s_key.json: step 1: unknown key 'txt' (known: error, message, text, thought, tool_calls, usage)"),
    ShellCase('scripted-file-s_text.json', '%blitz_model scripted:s_text.json', "bad configuration 'model' in %blitz_config: cannot load the scripted model 'scripted:s_text.json': s_text.json: step 1: 'text' must be a string"),
    ShellCase('scripted-run-s_text.json', '%%blitz -m scripted:s_text.json\nhi', "cannot load the scripted model 'scripted:s_text.json': s_text.json: step 1: 'text' must be a string"),
    ShellCase('scripted-file-s_noname.json', '%blitz_model scripted:s_noname.json', 'bad configuration \'model\' in %blitz_config: cannot load the scripted model \'scripted:s_noname.json\': s_noname.json: step 1: tool call 1 needs a "name" string'),
    ShellCase('scripted-run-s_noname.json', '%%blitz -m scripted:s_noname.json\nhi', 'cannot load the scripted model \'scripted:s_noname.json\': s_noname.json: step 1: tool call 1 needs a "name" string'),
    ShellCase('scripted-file-s_calls.json', '%blitz_model scripted:s_calls.json', "bad configuration 'model' in %blitz_config: cannot load the scripted model 'scripted:s_calls.json': s_calls.json: step 1: 'tool_calls' must be a list"),
    ShellCase('scripted-run-s_calls.json', '%%blitz -m scripted:s_calls.json\nhi', "cannot load the scripted model 'scripted:s_calls.json': s_calls.json: step 1: 'tool_calls' must be a list"),
    ShellCase('scripted-file-s_usage.json', '%blitz_model scripted:s_usage.json', "bad configuration 'model' in %blitz_config: cannot load the scripted model 'scripted:s_usage.json': s_usage.json: step 1: 'usage' must map cache_write_tokens, cached_tokens, completion_tokens, prompt_tokens to whole numbers >= 0"),
    ShellCase('scripted-run-s_usage.json', '%%blitz -m scripted:s_usage.json\nhi', "cannot load the scripted model 'scripted:s_usage.json': s_usage.json: step 1: 'usage' must map cache_write_tokens, cached_tokens, completion_tokens, prompt_tokens to whole numbers >= 0"),
    ShellCase('scripted-file-s_error.json', '%blitz_model scripted:s_error.json', "bad configuration 'model' in %blitz_config: cannot load the scripted model 'scripted:s_error.json': s_error.json: step 1: unknown error 'melted' (known: rate_limit, unavailable, timeout, context_window, bad_request, auth)"),
    ShellCase('scripted-run-s_error.json', '%%blitz -m scripted:s_error.json\nhi', "cannot load the scripted model 'scripted:s_error.json': s_error.json: step 1: unknown error 'melted' (known: rate_limit, unavailable, timeout, context_window, bad_request, auth)"),
    ShellCase('scripted-file-s_args.json', '%blitz_model scripted:s_args.json', 'bad configuration \'model\' in %blitz_config: cannot load the scripted model \'scripted:s_args.json\': s_args.json: step 1: tool call 1: "arguments" must be an object (or JSON text) and "id" a string'),
    ShellCase('scripted-run-s_args.json', '%%blitz -m scripted:s_args.json\nhi', 'cannot load the scripted model \'scripted:s_args.json\': s_args.json: step 1: tool call 1: "arguments" must be an object (or JSON text) and "id" a string'),
    ShellCase('scripted-file-s_latin.json', '%blitz_model scripted:s_latin.json', "bad configuration 'model' in %blitz_config: cannot load the scripted model 'scripted:s_latin.json': s_latin.json is not UTF-8 text"),
    ShellCase('scripted-run-s_latin.json', '%%blitz -m scripted:s_latin.json\nhi', "cannot load the scripted model 'scripted:s_latin.json': s_latin.json is not UTF-8 text"),
    ShellCase('model-magic-missing', '%blitz_model scripted:/nonexistent.json', "bad configuration 'model' in %blitz_config: cannot load the scripted model 'scripted:/nonexistent.json': [Errno 2] No such file or directory: '/nonexistent.json'"),
    ShellCase('model-magic-no-provider', '%blitz_model nosuchprovider/x', "bad configuration 'model' in %blitz_config: model 'nosuchprovider/x': litellm knows no provider for this name; write it as provider/model, e.g. openai/gpt-4.1-mini"),
    ShellCase('model-magic-two-args', '%blitz_model a b', 'unrecognized arguments: b'),
    ShellCase('agent-magic-unknown', '%blitz_agent nosuch', "unknown agent 'nosuch' (known: blitz)"),
    ShellCase('compact-keep-0', '%blitz_compact --keep 0', '--keep must be positive, got 0'),
    ShellCase('compact-keep-abc', '%blitz_compact --keep abc', "--keep expects a number, got 'abc'"),
    ShellCase('compact-unknown-session', '%blitz_compact -s nosuch', "session 'nosuch' has no history yet: nothing to compact"),
    ShellCase('usage-empty-session', "%blitz_usage -s ''", '--session needs a name, got an empty one'),
    ShellCase('usage-add-budget-nan', '%blitz_usage --add-budget nan', '--add-budget must be a finite number, got nan'),
    ShellCase('usage-add-budget-negative', '%blitz_usage --add-budget -1', '--add-budget must be positive, got -1'),
    ShellCase('usage-add-budget-no-budget', '%blitz_usage --add-budget 1', 'no session budget is set (limits.max_cost_usd_session); nothing to add to'),
    ShellCase('session-use-no-name', '%blitz_session use', '%blitz_session use needs a name'),
    ShellCase('session-bogus-action', '%blitz_session explode', "argument action: invalid choice: 'explode' (choose from 'list', 'new', 'use', 'show', 'snapshot', 'load', 'search', 'delete')"),
    ShellCase('session-all-with-list', '%blitz_session list --all', '--session and --all go with search'),
    ShellCase('session-search-both', '%blitz_session search x --session a --all', 'search takes --session NAME or --all, not both'),
    ShellCase('session-delete-unknown', '%blitz_session delete nosuch', "no session 'nosuch' (sessions: none)"),
    ShellCase('session-load-unknown', '%blitz_session load nosnap', "no snapshot 'nosnap' (snapshots: none)"),
    ShellCase('audit-last-0', '%blitz_audit --last 0', '--last must be positive, got 0'),
    ShellCase('audit-last-abc', '%blitz_audit --last abc', "--last expects a number, got 'abc'"),
    ShellCase('audit-tool-unknown', '%blitz_audit --tool nosuch', "--tool: no tool named 'nosuch'"),
    ShellCase('trust-bogus', '%blitz_trust --bogus', 'unrecognized arguments: --bogus'),
    ShellCase('btw-empty', '%blitz_btw', 'ask a question: %blitz_btw what did we decide about the outliers?'),
    ShellCase('config-limits.max_turns=0', '%blitz_config limits.max_turns=0', "bad configuration 'limits.max_turns' in %blitz_config: Input should be greater than or equal to 1"),
    ShellCase('config-limits.max_turns=-1', '%blitz_config limits.max_turns=-1', "bad configuration 'limits.max_turns' in %blitz_config: Input should be greater than or equal to 1"),
    ShellCase('config-limits.max_turns=abc', '%blitz_config limits.max_turns=abc', "bad configuration 'limits.max_turns' in %blitz_config: Input should be a valid integer, unable to parse string as an integer"),
    ShellCase('config-limits.max_turns=nan', '%blitz_config limits.max_turns=nan', "bad configuration 'limits.max_turns' in %blitz_config: Input should be a finite number"),
    ShellCase('config-limits.max_cost_usd=nan', '%blitz_config limits.max_cost_usd=nan', "bad configuration 'limits.max_cost_usd' in %blitz_config: Input should be a finite number"),
    ShellCase('config-limits.max_cost_usd=inf', '%blitz_config limits.max_cost_usd=inf', "bad configuration 'limits.max_cost_usd' in %blitz_config: Input should be a finite number"),
    ShellCase('config-limits.max_cost_usd=-1', '%blitz_config limits.max_cost_usd=-1', "bad configuration 'limits.max_cost_usd' in %blitz_config: Input should be greater than or equal to 0"),
    ShellCase('config-limits.timeout_s=inf', '%blitz_config limits.timeout_s=inf', "bad configuration 'limits.timeout_s' in %blitz_config: Input should be a finite number"),
    ShellCase('config-limits.timeout_s=nan', '%blitz_config limits.timeout_s=nan', "bad configuration 'limits.timeout_s' in %blitz_config: Input should be a finite number"),
    ShellCase('config-limits.timeout_s=0', '%blitz_config limits.timeout_s=0', "bad configuration 'limits.timeout_s' in %blitz_config: Input should be greater than 0"),
    ShellCase('config-approval.tools.write_flie=deny', '%blitz_config approval.tools.write_flie=deny', "bad configuration 'approval.tools.write_flie' in %blitz_config: unknown tool 'write_flie'; did you mean 'write_file'?"),
    ShellCase('config-approval.tools.Write_File=deny', '%blitz_config approval.tools.Write_File=deny', "bad configuration 'approval.tools.Write_File' in %blitz_config: unknown tool 'Write_File'; did you mean 'write_file'?"),
    ShellCase('config-approval.headless=maybe', '%blitz_config approval.headless=maybe', "bad configuration 'approval.headless' in %blitz_config: Input should be 'deny' or 'allow'"),
    ShellCase('config-approval.tools.run_python=sometimes', '%blitz_config approval.tools.run_python=sometimes', "bad configuration 'approval.tools.run_python' in %blitz_config: Input should be 'allow', 'ask', 'deny' or 'ask-if-risky'"),
    ShellCase('config-agent=nosuch', '%blitz_config agent=nosuch', "unknown agent 'nosuch' (known: blitz)"),
    ShellCase('config-model=scripted:/nonexistent.json', '%blitz_config model=scripted:/nonexistent.json', "bad configuration 'model' in %blitz_config: cannot load the scripted model 'scripted:/nonexistent.json': [Errno 2] No such file or directory: '/nonexistent.json'"),
    ShellCase('config-tools.max_parallel=0', '%blitz_config tools.max_parallel=0', "bad configuration 'tools.max_parallel' in %blitz_config: Input should be greater than or equal to 1"),
    ShellCase('config-context.token_threshold=-1', '%blitz_config context.token_threshold=-1', "bad configuration 'context.token_threshold' in %blitz_config: Input should be greater than or equal to 1"),
    ShellCase('config-context.retain_events=-1', '%blitz_config context.retain_events=-1', "bad configuration 'context.retain_events' in %blitz_config: Input should be greater than or equal to 0"),
    ShellCase('config-nosuch.key=1', '%blitz_config nosuch.key=1', "bad configuration 'nosuch' in %blitz_config: unknown key; known keys: " + KNOWN_KEYS),
    ShellCase('config-limits.nosuch=1', '%blitz_config limits.nosuch=1', "bad configuration 'limits.nosuch' in %blitz_config: unknown key; known keys: max_turns, max_cost_usd, timeout_s, max_cost_usd_session, repeat_warn, repeat_stop"),
    ShellCase('config-telemetry.exporter=bogus', '%blitz_config telemetry.exporter=bogus', "bad configuration 'telemetry.exporter' in %blitz_config: Input should be 'console', 'otlp' or 'memory'"),
    ShellCase('config-privacy.variables=everything', '%blitz_config privacy.variables=everything', "bad configuration 'privacy.variables' in %blitz_config: Input should be 'full' or 'schema'"),
    ShellCase('config-temperature=nan', '%blitz_config temperature=nan', "bad configuration 'temperature' in %blitz_config: Input should be a finite number"),
    ShellCase('config-max_tokens=0', '%blitz_config max_tokens=0', "bad configuration 'max_tokens' in %blitz_config: Input should be greater than or equal to 1"),
    ShellCase('config-stall.first_byte_s=0', '%blitz_config stall.first_byte_s=0', "bad configuration 'stall.first_byte_s' in %blitz_config: Input should be greater than 0"),
    ShellCase('config-stall.first_byte_s=inf', '%blitz_config stall.first_byte_s=inf', "bad configuration 'stall.first_byte_s' in %blitz_config: Input should be a finite number"),
    ShellCase('config-breaker.failures=0', '%blitz_config breaker.failures=0', "bad configuration 'breaker.failures' in %blitz_config: Input should be greater than or equal to 1"),
    ShellCase('config-hooks.pre_tool=3', '%blitz_config hooks.pre_tool=3', "bad configuration 'hooks.pre_tool' in %blitz_config: Input should be a valid list"),
    ShellCase('config-fallback_models=3', '%blitz_config fallback_models=3', "bad configuration 'fallback_models' in %blitz_config: Input should be a valid list"),
    ShellCase('config-=1', '%blitz_config =1', "bad configuration '=1' in %blitz_config: expected key=value, e.g. limits.max_turns=5"),
    ShellCase('config-noequals', '%blitz_config noequals', "bad configuration 'noequals' in %blitz_config: expected key=value, e.g. limits.max_turns=5"),
    ShellCase('config-limits.repeat_stop=0', '%blitz_config limits.repeat_stop=0', "bad configuration 'limits.repeat_stop' in %blitz_config: Input should be greater than or equal to 2"),
    ShellCase('config-models.x.temperature=inf', '%blitz_config models.x.temperature=inf', "bad configuration 'models.x.temperature' in %blitz_config: Input should be a finite number"),
    ShellCase('config-prices.x.input=-1', '%blitz_config prices.x.input=-1', "bad configuration 'prices.x.output' in %blitz_config: Field required"),
    ShellCase('config-prices.x.inptu=1', '%blitz_config prices.x.inptu=1', "bad configuration 'prices.x.inptu' in %blitz_config: unknown key; known keys: input, output, cached_input, cache_write"),
    ShellCase("config-language=''", "%blitz_config language=''", "bad configuration 'language' in %blitz_config: String should have at least 1 character"),
    ShellCase('file-not-toml', '%blitz_config', "bad configuration '(file)' in {root}/work/blitz.toml: Invalid value (at end of document)", files={'blitz.toml': 'limits = ['}),
    ShellCase('file-bad-value', '%blitz_config', "bad configuration 'limits.max_turns' in {root}/work/blitz.toml: Input should be a valid integer, unable to parse string as an integer", files={'blitz.toml': '[limits]\nmax_turns = "x"\n'}),
    ShellCase('file-unknown-key', '%blitz_config', "bad configuration 'colour' in {root}/work/blitz.toml: unknown key; known keys: " + KNOWN_KEYS, files={'blitz.toml': 'colour = 1\n'}),
    ShellCase('file-not-utf8', '%blitz_config', "bad configuration '(file)' in {root}/work/blitz.toml: not UTF-8 text: invalid continuation byte", files={'blitz.toml': b'model = "caf\xe9"\n'}),
    ShellCase('pyproject-bad-key', '%blitz_config', "bad configuration 'limits.max_turns' in {root}/work/pyproject.toml: Input should be greater than or equal to 1", files={'pyproject.toml': '[tool.blitz]\nlimits.max_turns = -3\n'}),
    ShellCase('home-config-bad', '%blitz_config', "bad configuration 'limits.max_cost_usd' in {root}/home/.blitz/config.toml: Input should be a valid number, unable to parse string as a number", home='[limits]\nmax_cost_usd = "lots"\n'),
    ShellCase('home-config-not-toml', '%blitz_config', "bad configuration '(file)' in {root}/home/.blitz/config.toml: Invalid statement (at line 1, column 1)", home='= ='),
    ShellCase('file-nan', '%blitz_config', "bad configuration 'limits.timeout_s' in {root}/work/blitz.toml: Input should be a finite number", files={'blitz.toml': '[limits]\ntimeout_s = nan\n'}),
    ShellCase('agent-file-not-utf8', '%%blitz -a latin\nhi', "agent 'latin' is not available: skipped agent file .blitz/agents/latin.md: not UTF-8 text", files={'.blitz/agents/latin.md': b'---\ndescription: caf\xe9\n---\nhi'}),
    ShellCase('agent-file-directory', '%%blitz -a folder\nhi', "agent 'folder' is not available: skipped agent file .blitz/agents/folder.md: not a regular file", files={'.blitz/agents/folder.md/x': 'x'}),
    ShellCase('agent-file-unclosed', '%%blitz -a open\nhi', "agent 'open' is not available: skipped agent file .blitz/agents/open.md: front matter opened with --- is never closed", files={'.blitz/agents/open.md': '---\nname: open\n'}),
    ShellCase('agent-file-bad-field', '%%blitz -a odd\nhi', "agent 'odd' is not available: skipped agent file .blitz/agents/odd.md: colour: unknown agent field (name, description, model, tools)", files={'.blitz/agents/odd.md': '---\ncolour: red\n---\nhi'}),
    ShellCase('agent-file-bad-line', '%%blitz -a line\nhi', "agent 'line' is not available: skipped agent file .blitz/agents/line.md: expected `key: value`, got 'just words'", files={'.blitz/agents/line.md': '---\njust words\n---\nhi'}),
    ShellCase('agent-file-unknown-tool', '%%blitz -a tooly\nhi', "agent 'tooly' names an unknown tool 'nosuch'", files={'.blitz/agents/tooly.md': '---\ntools: read_file, nosuch\n---\nhi'}),
    ShellCase('agent-file-unbuildable-pin', '%%blitz -a pinned\nhi', "cannot load the scripted model 'scripted:/nonexistent.json': [Errno 2] No such file or directory: '/nonexistent.json'", files={'.blitz/agents/pinned.md': '---\nmodel: scripted:/nonexistent.json\n---\nhi'}),
    ShellCase('agent-file-provider-pin', '%%blitz -a pinned2\nhi', "model 'nosuchprovider/x': litellm knows no provider for this name; write it as provider/model, e.g. openai/gpt-4.1-mini", files={'.blitz/agents/pinned2.md': '---\nmodel: nosuchprovider/x\n---\nhi'}, env={'BLITZ_TRUST_WORKSPACE': '{root}/work'}),
    ShellCase('env-BLITZ_APPROVAL_HEADLESS-sometimes', '%%blitz\nhi', "bad configuration 'approval.headless' in environment variable BLITZ_APPROVAL_HEADLESS: Input should be 'deny' or 'allow'", env={'BLITZ_APPROVAL_HEADLESS': 'sometimes'}),
    ShellCase('env-BLITZ_TELEMETRY-bogus', '%%blitz\nhi', "bad configuration 'telemetry.enabled' in environment variable BLITZ_TELEMETRY: expected 1/true/yes/on, 0/false/no/off or an exporter name (console, otlp, memory), got 'bogus'", env={'BLITZ_TELEMETRY': 'bogus'}),
    ShellCase('env-BLITZ_MODEL-scripted:/nonexistent.json', '%%blitz\nhi', "cannot load the scripted model 'scripted:/nonexistent.json': [Errno 2] No such file or directory: '/nonexistent.json'", env={'BLITZ_MODEL': 'scripted:/nonexistent.json'}),
    ShellCase('env-BLITZ_MODEL-nosuchprovider/x', '%%blitz\nhi', "model 'nosuchprovider/x': litellm knows no provider for this name; write it as provider/model, e.g. openai/gpt-4.1-mini", env={'BLITZ_MODEL': 'nosuchprovider/x'}),
    ShellCase('env-BLITZ_MODEL-scripted:s_key.json', '%%blitz\nhi', "cannot load the scripted model 'scripted:s_key.json': s_key.json: step 1: unknown key 'txt' (known: error, message, text, thought, tool_calls, usage)", env={'BLITZ_MODEL': 'scripted:s_key.json'}),
    ShellCase('env-then-config', '%blitz_config limits.max_turns=3', "bad configuration 'approval.headless' in environment variable BLITZ_APPROVAL_HEADLESS: Input should be 'deny' or 'allow'", env={'BLITZ_APPROVAL_HEADLESS': 'sometimes'}),
]

TOOL_CASES: list[ToolCase] = [
    ToolCase('read_file-path-number', 'read_file', '{"path": 42}', 'invalid arguments for read_file: path: Input should be a valid string'),
    ToolCase('read_file-no-path', 'read_file', '{}', 'invalid arguments for read_file: path: Field required'),
    ToolCase('read_file-negative-offset', 'read_file', '{"path": "a.txt", "offset": -1}', 'invalid arguments for read_file: offset: Input should be greater than or equal to 0'),
    ToolCase('read_file-zero-limit', 'read_file', '{"path": "a.txt", "limit": 0}', 'invalid arguments for read_file: limit: Input should be greater than or equal to 1'),
    ToolCase('read_file-limit-words', 'read_file', '{"path": "a.txt", "limit": "many"}', 'invalid arguments for read_file: limit: Input should be a valid integer, unable to parse string as an integer'),
    ToolCase('read_file-outside', 'read_file', '{"path": "../../etc/passwd"}', "../../etc/passwd leads outside the workspace ({root}) through '..'"),
    ToolCase('read_file-absolute-outside', 'read_file', '{"path": "/etc/passwd"}', '/etc/passwd is outside the workspace ({root}); use a path relative to the workspace'),
    ToolCase('read_file-missing', 'read_file', '{"path": "nosuch.txt"}', 'no such file: nosuch.txt'),
    ToolCase('read_file-not-json', 'read_file', '{not json', 'arguments are not valid JSON (Expecting property name enclosed in double quotes); send a JSON object'),
    ToolCase('read_file-array', 'read_file', '[1, 2]', 'arguments must be a JSON object'),
    ToolCase('write_file-no-content', 'write_file', '{"path": "b.txt"}', 'invalid arguments for write_file: content: Field required'),
    ToolCase('write_file-outside', 'write_file', '{"path": "../escape.txt", "content": "x"}', "../escape.txt leads outside the workspace ({root}) through '..'"),
    ToolCase('edit_file-no-match', 'edit_file', '{"path": "a.txt", "old": "zzz", "new": "y"}', 'old text not found in a.txt; read the file and copy the text exactly'),
    ToolCase('grep-bad-regex', 'grep', '{"pattern": "("}', "invalid regular expression '(': missing ) at position 1"),
    ToolCase('glob-outside', 'glob', '{"pattern": "../*"}', "pattern must be relative to the workspace, without '..'"),
    ToolCase('list_files-missing', 'list_files', '{"path": "nosuch"}', 'no such file: nosuch'),
    ToolCase('run_python-timeout-nan', 'run_python', '{"code": "1", "timeout_s": NaN}', 'invalid arguments for run_python: timeout_s: Input should be a finite number'),
    ToolCase('run_python-timeout-inf', 'run_python', '{"code": "1", "timeout_s": 1e309}', 'invalid arguments for run_python: timeout_s: Input should be a finite number'),
    ToolCase('run_python-timeout-negative', 'run_python', '{"code": "1", "timeout_s": -1}', 'invalid arguments for run_python: timeout_s: Input should be greater than 0'),
    ToolCase('run_python-no-code', 'run_python', '{}', 'invalid arguments for run_python: code: Field required'),
    ToolCase('describe_variable-empty', 'describe_variable', '{"name": ""}', "no variable named ''; variables include: data"),
    ToolCase('describe_variable-module', 'describe_variable', '{"name": "os"}', "os is the module os; describe_variable describes the user's variables, not modules or what they hold"),
    ToolCase('describe_variable-dunder', 'describe_variable', '{"name": "data.__class__"}', "cannot get data.__class__: describe_variable follows public attributes only (no '_' names); use run_python to look further"),
    ToolCase('notebook_edit-bad-action', 'notebook_edit', '{"action": "explode", "index": 0, "source": ""}', "invalid arguments for notebook_edit: action: Input should be 'insert', 'replace' or 'delete'"),
    ToolCase('todo-not-a-list', 'todo', '{"items": 3}', 'invalid arguments for todo: items: Input should be a valid list'),
    ToolCase('view_image-nothing', 'view_image', '{}', 'invalid arguments for view_image: (arguments): Value error, give exactly one of path or output'),
    ToolCase('invoke_agent-unknown', 'invoke_agent', '{"agent": "nosuch", "prompt": "x"}', "unknown agent 'nosuch' (known: none)"),
    ToolCase('unknown-tool', 'format_disk', '{}', "unknown tool 'format_disk'; available: read_file, list_files, glob, grep, write_file, edit_file, run_python, list_variables, describe_variable, view_image, notebook_read, notebook_edit, search_session, list_agents, invoke_agent, todo, enter_plan_mode, exit_plan_mode"),
]
