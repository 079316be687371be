"""Safety rules (hooks, audit, redaction, ask-if-risky, policy patterns)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from blitz_kernel.core.redact import Redactor
from blitz_kernel.engine.safety.approval import resolve_policy
from blitz_kernel.engine.safety.risk import risky_reasons
from blitz_kernel.engine.workspace import Workspace
from blitz_kernel.errors import ConfigError
from blitz_kernel.models.scripted import ScriptedModel
from tests.helpers.workspaces import scripted_workspace

from .conftest import ScriptedApprover, call, tool_results, tool_step

HOOK_MODULE = "blitz_test_hooks"


@pytest.fixture
def hook_module(tmp_path, monkeypatch):
    """A real importable module of hook callables."""
    (tmp_path / "mods").mkdir()
    (tmp_path / "mods" / f"{HOOK_MODULE}.py").write_text(
        "seen = []\n"
        "def no_writes(event):\n"
        "    seen.append(event)\n"
        "    if event.get('tool') == 'write_file':\n"
        "        return 'writes are reviewed first'\n"
        "async def no_secrets(event):\n"
        "    return 'mentions a password' if 'password' in event['prompt'] else None\n"
        "def broken(event):\n"
        "    raise RuntimeError('boom')\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path / "mods"))
    yield
    sys.modules.pop(HOOK_MODULE, None)


def _ws(root: Path, steps, **overrides) -> tuple[Workspace, ScriptedModel]:
    return scripted_workspace(root, steps, **overrides)


# -- hooks --------------------------------------------------------------------------------


async def test_WS04_pre_tool_callable_blocks_and_the_model_reads_why(tmp_path, hook_module):
    ws, model = _ws(
        tmp_path,
        [tool_step(call("write_file", path="a.txt", content="x"), call("read_file", path="a.txt")), {"text": "ok"}],
        **{"hooks.pre_tool": [{"callable": f"{HOOK_MODULE}:no_writes"}]},
    )
    result = await ws.run("go", session="s", approve="allow")
    assert not (tmp_path / "a.txt").exists()
    write, read = tool_results(model.requests[1])
    assert write.error == "blocked by pre_tool hook: writes are reviewed first"
    statuses = [e.status for e in result.events if e.type == "tool_result"]
    assert statuses[0] == "blocked"
    [audit] = [r for r in ws.audit("s") if r.tool == "write_file"]
    assert (audit.decision, audit.decided_by, audit.status) == ("blocked", "hook", "blocked")


async def test_WS04_pre_tool_command_exit_2_blocks_with_stderr_and_gets_json(tmp_path):
    log = tmp_path / "payload.json"
    command = f"cat > {log}; echo 'no code today' >&2; exit 2"
    ws, model = _ws(
        tmp_path,
        [tool_step(call("write_file", path="a.txt", content="x")), {"text": "ok"}],
        **{"hooks.pre_tool": [{"command": command, "match": "write_*"}]},
    )
    await ws.run("go", session="s", approve="allow")
    assert tool_results(model.requests[1])[0].error == "blocked by pre_tool hook: no code today"
    import json

    payload = json.loads(log.read_text())
    assert (
        payload["event"] == "pre_tool" and payload["tool"] == "write_file" and payload["arguments"]["path"] == "a.txt"
    )


async def test_WS04_a_hook_that_times_out_or_fails_blocks(tmp_path, hook_module):
    ws, model = _ws(
        tmp_path,
        [
            tool_step(call("write_file", path="a.txt", content="x"), call("write_file", path="b.txt", content="y")),
            {"text": "ok"},
        ],
        **{"hooks.pre_tool": [{"command": "sleep 30", "timeout_s": 0.3, "match": "write_file"}]},
    )
    await ws.run("go", session="s", approve="allow")
    errors = [r.error for r in tool_results(model.requests[1])]
    assert errors == ["blocked by pre_tool hook: hook failed: timed out after 0.3 s"] * 2
    ws2, model2 = _ws(
        tmp_path,
        [tool_step(call("write_file", path="c.txt", content="x")), {"text": "ok"}],
        **{"hooks.pre_tool": [{"callable": f"{HOOK_MODULE}:broken"}]},
    )
    await ws2.run("go", session="s2", approve="allow")
    assert tool_results(model2.requests[1])[0].error == "blocked by pre_tool hook: hook failed: RuntimeError: boom"
    assert not (tmp_path / "c.txt").exists()


async def test_WS04_prompt_submit_blocks_and_nothing_is_recorded(tmp_path, hook_module):
    ws, model = _ws(
        tmp_path, [{"text": "fine"}], **{"hooks.prompt_submit": [{"callable": f"{HOOK_MODULE}:no_secrets"}]}
    )
    result = await ws.run("my password is hunter2", session="s")
    assert result.stop_reason == "blocked"
    assert result.error == "blocked by prompt_submit hook: mentions a password"
    assert ws.session("s").history == [] and ws.session("s").turns == 0 and model.requests == []
    assert (await ws.run("hello", session="s")).text == "fine"


async def test_WS04_post_tool_observes_without_delaying(tmp_path):
    marker = tmp_path / "seen.txt"
    ws, _ = _ws(
        tmp_path,
        [tool_step(call("list_files")), {"text": "ok"}],
        **{"hooks.post_tool": [{"command": f"cat > {marker}"}]},
    )
    await ws.run("go", session="s")
    await ws.hooks.close()
    assert '"status": "ok"' in marker.read_text() and '"tool": "list_files"' in marker.read_text()


def test_WS04_hook_config_needs_exactly_one_kind(tmp_path):
    with pytest.raises(ConfigError, match="exactly one of `command` or `callable`"):
        _ws(tmp_path, [], **{"hooks.pre_tool": [{"match": "x"}]})


# -- audit ----------------------------------------------------------------------------------


async def test_WS07_audit_records_every_decision_and_who_made_it(tmp_path):
    ws, _ = _ws(
        tmp_path,
        [
            tool_step(
                call("list_files"),
                call("write_file", path="a.txt", content="x"),
                call("write_file", path="b.txt", content="y"),
                call("nosuch"),
            ),
            {"text": "ok"},
        ],
        **{"approval.tools.edit_file": "deny"},
    )
    approver = ScriptedApprover(
        lambda r: [_verdict(c.id, "allow" if c.args["path"] == "a.txt" else "deny") for c in r.calls]
    )
    await ws.run("go", session="s", approver=approver)
    rows = [(r.tool, r.decision, r.decided_by, r.status) for r in ws.audit("s")]
    assert sorted(rows) == sorted(
        [
            ("list_files", "allowed", "policy", "ok"),
            ("write_file", "allowed", "user", "ok"),
            ("write_file", "denied", "user", "denied"),
            ("nosuch", "refused", "policy", "error"),
        ]
    )
    headless, _ = _ws(tmp_path, [tool_step(call("write_file", path="c.txt", content="x")), {"text": "ok"}])
    await headless.run("go", session="h")
    [row] = headless.audit("h")
    assert (row.decision, row.decided_by) == ("denied", "headless default")


def _verdict(call_id, decision):
    from blitz_kernel.engine.events import PermissionDecision

    return PermissionDecision(call_id=call_id, decision=decision)


# -- ask-if-risky -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "flag"),
    [
        ("import os", "imports os"),
        ("from subprocess import run", "imports from subprocess"),
        ("df.to_csv('out.csv')", "writes a file: df.to_csv('out.csv')"),
        ("open('x', 'w').write('1')", "writes a file"),
        ("eval('1+1')", "runs dynamic code (eval)"),
        ("!ls", "runs a shell command: !ls"),
        ("%pip install x", "runs a magic: %pip install x"),
        ("del sales", "deletes a variable"),
        ("Path('a').write_text('x')", "changes the file system"),
        ("plt.savefig('a.png')", "writes a file"),
        ("x = (", "does not parse"),
    ],
)
def test_ask_if_risky_flags(code, flag):
    reasons = risky_reasons(code)
    assert reasons and reasons[0].startswith(flag)


@pytest.mark.parametrize(
    "code", ["df.groupby('a').sum()", "x = [i * 2 for i in range(3)]", "open('a.csv').read()", "df.head()"]
)
def test_ask_if_risky_lets_clean_code_through(code):
    assert risky_reasons(code) == []


async def test_ask_if_risky_runs_clean_code_and_asks_for_a_writer(tmp_path):
    steps = [
        tool_step(call("run_python", code="1 + 1")),
        tool_step(call("run_python", code="df.to_csv('o.csv')")),
        {"text": "ok"},
    ]
    ws, _ = _ws(tmp_path, steps, **{"approval.tools.run_python": "ask-if-risky"})
    approver = ScriptedApprover("deny")
    await ws.run("go", session="s", approver=approver)
    [request] = approver.requests
    assert request.calls[0].reason == "writes a file: df.to_csv('o.csv')"
    decisions = [(r.decision, r.decided_by) for r in ws.audit("s")]
    assert decisions == [("allowed", "policy"), ("denied", "user")]


def test_ask_if_risky_is_for_run_python_only(tmp_path):
    with pytest.raises(ConfigError, match="ask-if-risky is for run_python only"):
        _ws(tmp_path, [], **{"approval.tools.write_file": "ask-if-risky"})


# -- policy patterns --------------------------------------------------------------------------


def test_policy_patterns_most_specific_wins_and_deny_is_absolute():
    configured = {"mcp__*": "ask", "mcp__warehouse__*": "allow", "mcp__warehouse__drop": "deny"}
    assert resolve_policy("mcp__warehouse__query", True, configured, None, set()) == ("allow", "policy")
    assert resolve_policy("mcp__docs__search", True, configured, None, set()) == ("ask", "policy")
    assert resolve_policy("mcp__warehouse__drop", True, configured, "allow", {"mcp__warehouse__drop"}) == (
        "deny",
        "policy",
    )
    assert resolve_policy("write_file", True, {}, None, {"write_file"}) == ("allow", "always")


# -- redaction --------------------------------------------------------------------------------


def test_WS08_redactor_takes_secret_looking_variables_and_named_keys():
    environ = {
        "OPENAI_API_KEY": "sk-abcdef123456",
        "MY_DB_PASSWORD": "correct horse",
        "HOME": "/root",
        "SHORT_TOKEN": "abc",
        "CUSTOM": "zz-secret-value",
    }
    redactor = Redactor.from_environment(environ, ["CUSTOM"])
    text = "key sk-abcdef123456 pw correct horse home /root short abc custom zz-secret-value"
    assert redactor.redact(text) == "key [redacted] pw [redacted] home /root short abc custom [redacted]"


async def test_WS08_a_secret_printed_by_a_tool_reaches_the_model_redacted(tmp_path):
    (tmp_path / "notes.txt").write_text("token: tok-1234567890\n")
    model = ScriptedModel([tool_step(call("read_file", path="notes.txt")), {"text": "ok"}])
    ws = Workspace.open(tmp_path, model=model, environ={"SERVICE_TOKEN": "tok-1234567890"}, home=tmp_path / "home")
    result = await ws.run("read it", session="s")
    [read] = tool_results(model.requests[1])
    assert "tok-1234567890" not in (read.output or "") and "[redacted]" in (read.output or "")
    previews = [e.preview for e in result.events if e.type == "tool_result"]
    assert all("tok-1234567890" not in p for p in previews)


async def test_WS06_an_agent_files_model_pin_is_held_back_until_trusted(tmp_path):
    """A cloned repository's agent file must not send prompts to a provider the user did
    not choose: its pin is unused (the user's model answers) until the workspace is trusted."""
    from blitz_kernel.config.trust import TrustStore

    agents = tmp_path / ".blitz" / "agents"
    agents.mkdir(parents=True)
    (agents / "elsewhere.md").write_text("---\nname: elsewhere\nmodel: ollama/llama3\n---\nHelp.\n")
    (agents / "offline.md").write_text("---\nname: offline\nmodel: scripted:x.json\n---\nHelp.\n")
    ws, model = _ws(tmp_path, [{"text": "answered by the user's model"}])
    assert ws.trust.held == {"agents.elsewhere.model": "ollama/llama3"}  # scripted pins send nothing
    result = await ws.run("hi", agent="elsewhere", session="s")
    assert result.text == "answered by the user's model" and len(model.requests) == 1
    [notice] = [e for e in result.events if e.type == "notice" and e.kind == "untrusted_workspace"]
    assert "agents.elsewhere.model" in notice.message and "%blitz_trust" in notice.message
    TrustStore(tmp_path / "home").trust(tmp_path, ws.trust.held)
    assert ws.resolver.model_for(None, ws.agents.get("elsewhere")).name == "ollama/llama3"
    (agents / "elsewhere.md").write_text("---\nname: elsewhere\nmodel: openai/other\n---\nHelp.\n")
    ws.reload_agents()
    assert ws.resolver.model_for(None, ws.agents.get("elsewhere")) is ws.model  # changed: trust again
