"""The admin policy (docs/teams.md): locked values, disabled tools, the MCP allowlist, allowed
models; nothing a user, a cloned repository's blitz.toml, trust or a per-turn option does
loosens it; a policy file that cannot be parsed fails closed."""

from __future__ import annotations

from pathlib import Path

import pytest

from blitz_kernel.config.loading import config_sources, describe_config, load_config
from blitz_kernel.config.mcp_servers import McpServerConfig
from blitz_kernel.config.policy import load_policy, read_policy
from blitz_kernel.errors import ConfigError
from blitz_kernel.models.scripted import ScriptedModel
from tests.helpers.workspaces import open_workspace

from .conftest import ScriptedApprover, call, tool_results, tool_step

POLICY = """
[locked]
approval.tools.run_python = "ask"
approval.headless = "deny"
limits.max_cost_usd_session = 5.0
limits.max_turns = 4
api_base = "https://llm.example.org/v1"
telemetry.enabled = false

[tools]
disabled = ["write_file"]

[mcp]
commands = ["uvx mcp-server-fetch", "/opt/mcp/warehouse *"]
urls = ["https://mcp.example.org/*"]

[models]
allowed = ["scripted:*", "litellm_proxy/*"]
"""

LOOSE = """
api_base = "https://evil.example.com"
[approval]
headless = "allow"
[approval.tools]
run_python = "allow"
[limits]
max_cost_usd_session = 500
max_turns = 40
[telemetry]
enabled = true
"""


@pytest.fixture
def policy_file(tmp_path: Path) -> Path:
    path = tmp_path / "etc" / "policy.toml"
    path.parent.mkdir()
    path.write_text(POLICY)
    return path


def _environ(policy_file: Path) -> dict[str, str]:
    return {"BLITZ_ADMIN_POLICY": str(policy_file)}


def _locked_values_hold(config) -> None:
    assert config.approval.tools["run_python"] == "ask"
    assert config.approval.headless == "deny"
    assert config.limits.max_cost_usd_session == 5.0
    assert config.limits.max_turns == 4
    assert config.api_base == "https://llm.example.org/v1"
    assert config.telemetry.enabled is False


# -- locked values over every layer -------------------------------------------------------------


def test_locked_values_win_over_user_file_environment_and_overrides(tmp_path, policy_file):
    home = tmp_path / "home"
    (home / ".blitz").mkdir(parents=True)
    (home / ".blitz" / "config.toml").write_text(LOOSE)
    environ = {**_environ(policy_file), "BLITZ_API_BASE": "https://other.example.com", "BLITZ_BUDGET_USD": "900"}
    overrides = {"approval.tools.run_python": "allow", "limits.max_turns": 40, "telemetry.enabled": True}
    config = load_config(tmp_path / "ws", overrides=overrides, environ=environ, home=home)
    _locked_values_hold(config)


def test_a_trusted_cloned_repositorys_blitz_toml_does_not_loosen_it(tmp_path, policy_file):
    repo = tmp_path / "cloned"
    repo.mkdir()
    (repo / "blitz.toml").write_text(LOOSE)
    environ = {**_environ(policy_file), "BLITZ_TRUST_WORKSPACE": str(repo)}  # trusted, even
    workspace = open_workspace(repo, ScriptedModel([]), environ=environ)
    assert workspace.trust.trusted
    _locked_values_hold(workspace.config)
    # the keys the policy does not lock still come from the repository's file
    (repo / "blitz.toml").write_text(LOOSE + "\n[context]\nretain_events = 7\n")
    assert load_config(repo, environ=environ, home=repo / "home").context.retain_events == 7


def test_blitz_config_of_a_locked_key_is_one_line_naming_the_policy_file(tmp_path, policy_file):
    workspace = open_workspace(tmp_path, ScriptedModel([]), environ=_environ(policy_file))
    for key, value in [
        ("approval.tools.run_python", "allow"),
        ("approval", {"headless": "allow"}),  # the table above a locked key
        ("telemetry.enabled", True),
        ("api_base", "https://evil.example.com"),
    ]:
        with pytest.raises(ConfigError) as caught:
            workspace.configure(**{key: value})
        message = str(caught.value)
        assert "\n" not in message and str(policy_file) in message and repr(key) in message
        assert "locked" in message
    _locked_values_hold(workspace.config)
    assert workspace.configure(**{"context.retain_events": 3}).context.retain_events == 3  # free keys stay free


def test_opening_with_a_locked_override_is_refused(tmp_path, policy_file):
    with pytest.raises(ConfigError, match="locked"):
        open_workspace(tmp_path, ScriptedModel([]), overrides={"limits.max_turns": 99}, environ=_environ(policy_file))


def test_blitz_config_lists_the_policy_and_marks_the_keys_it_holds(tmp_path, policy_file):
    workspace = open_workspace(tmp_path, ScriptedModel([]), environ=_environ(policy_file))
    policy = workspace.configuration.policy
    assert config_sources(tmp_path, tmp_path / "home", policy)[0] == f"admin policy {policy_file}"
    lines = describe_config(workspace.config, None, policy).splitlines()
    marked = {line.split(" = ")[0] for line in lines if line.endswith("# locked by the admin policy")}
    assert marked == {
        "approval.tools.run_python",
        "approval.headless",
        "limits.max_cost_usd_session",
        "limits.max_turns",
        "api_base",
        "telemetry.enabled",
    }


def test_the_session_budget_cannot_be_raised_past_a_locked_cap(tmp_path, policy_file):
    workspace = open_workspace(tmp_path, ScriptedModel([]), environ=_environ(policy_file))
    with pytest.raises(ConfigError, match="limits.max_cost_usd_session.*locked"):
        workspace.add_budget("default", 10)


async def test_budget_added_before_the_cap_was_locked_does_not_raise_it(tmp_path, policy_file):
    """`--add-budget` from before the policy is kept in the user's own store: under a locked
    cap it no longer counts."""
    from blitz_kernel.core.usage import Price

    model = ScriptedModel([{"text": "one", "usage": {"prompt_tokens": 1_000_000}}], price=Price(input=6.0, output=0.0))
    free = open_workspace(tmp_path, ScriptedModel([]), environ={}, overrides={"limits.max_cost_usd_session": 5})
    free.add_budget("s", 100)  # before the policy: the session may spend 105
    free.sessions.close()
    workspace = open_workspace(tmp_path, model, environ=_environ(policy_file))
    first = await workspace.run("spend", session="s")
    assert first.stop_reason in ("end_turn", "max_cost")
    second = await workspace.run("more", session="s")
    assert second.stop_reason == "max_cost"  # the locked 5 USD holds; the added 100 do not count


# -- tools --------------------------------------------------------------------------------------


async def test_a_locked_ask_is_asked_even_with_approve_allow_and_always(tmp_path, policy_file):
    model = ScriptedModel([tool_step(call("run_python", code="x = 1")), {"text": "done"}])
    workspace = open_workspace(tmp_path, model, environ=_environ(policy_file))
    workspace.session("s").always_allowed.add("run_python")
    approver = ScriptedApprover("deny", "not now")
    await workspace.run("go", session="s", approve="allow", approver=approver)
    assert [c.name for r in approver.requests for c in r.calls] == ["run_python"]
    assert tool_results(model.requests[1])[0].error is not None


async def test_a_locked_ask_without_anyone_to_ask_is_denied_by_the_locked_headless(tmp_path, policy_file):
    model = ScriptedModel([tool_step(call("run_python", code="x = 1")), {"text": "done"}])
    workspace = open_workspace(tmp_path, model, environ=_environ(policy_file))
    await workspace.run("go", session="s", approve="allow")
    [record] = workspace.audit("s")
    assert (record.tool, record.decision) == ("run_python", "denied")


async def test_a_disabled_tool_is_not_offered_and_a_call_is_refused_by_policy(tmp_path, policy_file):
    model = ScriptedModel([tool_step(call("write_file", path="a.txt", content="x")), {"text": "done"}])
    workspace = open_workspace(tmp_path, model, environ=_environ(policy_file))
    await workspace.run("go", session="s", approve="allow")
    assert "write_file" not in [spec.name for spec in model.requests[0].tools]
    assert "read_file" in [spec.name for spec in model.requests[0].tools]
    assert not (tmp_path / "a.txt").exists()
    error = tool_results(model.requests[1])[0].error
    assert error == f"write_file is disabled by the admin policy ({policy_file})"
    [record] = workspace.audit("s")
    assert (record.decision, record.decided_by) == ("denied", "policy")


async def test_a_per_turn_option_only_tightens_a_locked_limit(tmp_path, policy_file):
    steps = [tool_step(call("list_files", path=".")) for _ in range(10)]
    model = ScriptedModel(steps)
    workspace = open_workspace(tmp_path, model, environ=_environ(policy_file))
    result = await workspace.run("go", session="s", max_turns=40)
    assert result.stop_reason == "max_turns" and len(model.requests) == 4
    model2 = ScriptedModel([tool_step(call("list_files", path=".")) for _ in range(10)])
    workspace.model = model2
    await workspace.run("go", session="t", max_turns=2)
    assert len(model2.requests) == 2


# -- models -------------------------------------------------------------------------------------


async def test_a_model_the_policy_does_not_allow_is_refused_naming_the_file(tmp_path, policy_file):
    workspace = open_workspace(tmp_path, ScriptedModel([{"text": "hi"}]), environ=_environ(policy_file))
    with pytest.raises(ConfigError, match=r"'openai/gpt-4o' is not allowed by the admin policy \(.*policy.toml\)"):
        workspace.configure(model="openai/gpt-4o")
    result = await workspace.run("go", session="s", model="openai/gpt-4o")
    assert result.stop_reason == "error" and str(policy_file) in (result.error or "")
    with pytest.raises(ConfigError, match="not allowed by the admin policy"):
        workspace.configure(fallback_models=["anthropic/claude-sonnet-4-5"])


# -- MCP allowlist ------------------------------------------------------------------------------


def test_mcp_servers_off_the_allowlist_are_refused_with_the_reason(policy_file):
    policy = read_policy(policy_file)
    assert policy.mcp_refusal("fetch", McpServerConfig(command="uvx", args=["mcp-server-fetch"])) is None
    assert policy.mcp_refusal("wh", McpServerConfig(command="/opt/mcp/warehouse", args=["--ro"])) is None
    assert policy.mcp_refusal("docs", McpServerConfig(url="https://mcp.example.org/docs")) is None
    refused = policy.mcp_refusal("evil", McpServerConfig(command="npx", args=["-y", "evil-server"]))
    assert refused is not None and "'evil' (npx -y evil-server) is not on the admin policy's allowlist" in refused
    assert str(policy_file) in refused
    assert policy.mcp_refusal("web", McpServerConfig(url="https://elsewhere.example.com/mcp")) is not None


async def test_the_mcp_manager_refuses_a_server_the_policy_does_not_allow(tmp_path, policy_file):
    workspace = open_workspace(
        tmp_path,
        ScriptedModel([]),
        environ=_environ(policy_file),
        overrides={"mcp.servers.evil": {"command": "npx", "args": ["-y", "evil-server"]}},
    )
    manager = workspace.mcp_servers()
    problems = await manager.ensure(["evil"])
    assert "not on the admin policy's allowlist" in problems["evil"]
    assert manager.connections["evil"].status == "refused"
    assert manager.connections["evil"].pid is None  # nothing was started


# -- where the policy comes from, and failing closed ------------------------------------------


def test_the_environments_own_file_holds_and_the_variable_cannot_replace_it(tmp_path, policy_file):
    system = tmp_path / "prefix" / "etc" / "blitz" / "policy.toml"
    assert load_policy({}, system) is None
    assert load_policy(_environ(policy_file), system).path == str(policy_file)  # no file: the variable's
    system.parent.mkdir(parents=True)
    system.write_text('[tools]\ndisabled = ["run_python"]\n')
    assert load_policy({}, system).disabled_tools == ("run_python",)
    empty = tmp_path / "empty.toml"
    empty.write_text("")
    # a user's variable (a kernelspec's env, %env) pointing at an empty file changes nothing
    assert load_policy({"BLITZ_ADMIN_POLICY": str(empty)}, system).disabled_tools == ("run_python",)
    assert load_policy({"BLITZ_ADMIN_POLICY": "/dev/null"}, system).path == str(system)


def test_a_tool_locked_on_ask_is_never_answered_by_a_headless_default(tmp_path):
    path = tmp_path / "policy.toml"
    path.write_text('[locked]\napproval.tools.run_python = "ask"\n')
    policy = load_policy({"BLITZ_ADMIN_POLICY": str(path)}, tmp_path / "absent.toml")
    assert policy is not None and policy.locked["approval"]["headless"] == "deny"
    assert policy.holds("approval.headless") is not None  # `blitz run --approve allow` cannot loosen it
    path.write_text('[locked]\napproval.tools.run_python = "ask"\napproval.headless = "allow"\n')
    chosen = load_policy({"BLITZ_ADMIN_POLICY": str(path)}, tmp_path / "absent.toml")
    assert chosen is not None and chosen.locked["approval"]["headless"] == "allow"  # the admin's own choice


def test_an_unparsable_policy_fails_closed_naming_file_and_line(tmp_path, policy_file):
    policy_file.write_text('[locked]\napproval.headless = "deny"\nlimits.max_turns = = 3\n')
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path, environ=_environ(policy_file), home=tmp_path / "home")
    assert str(policy_file) in str(caught.value) and "line 3" in str(caught.value)
    with pytest.raises(ConfigError, match="line 3"):
        open_workspace(tmp_path, ScriptedModel([]), environ=_environ(policy_file))


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("[locked]\nlimits.max_turnz = 3\n", "locked.limits.max_turnz"),
        ('[locked]\napproval.headless = "sometimes"\n', "locked.approval.headless"),
        ("[allowlist]\nx = 1\n", "unknown key"),
        ("[tools]\ndisabled = 3\n", "tools.disabled"),
    ],
)
def test_a_policy_with_a_wrong_value_fails_closed_naming_it(tmp_path, policy_file, text, problem):
    policy_file.write_text(text)
    with pytest.raises(ConfigError, match=problem) as caught:
        load_policy(_environ(policy_file))
    assert str(policy_file) in str(caught.value)


def test_a_named_policy_file_that_is_missing_fails_closed(tmp_path):
    with pytest.raises(ConfigError, match="cannot be read"):
        load_policy({"BLITZ_ADMIN_POLICY": str(tmp_path / "nope.toml")})


def test_a_locked_store_url_wins_over_the_environment_and_cannot_be_changed(tmp_path, policy_file):
    policy_file.write_text(f'[locked]\nstore.url = "sqlite:///{tmp_path}/team.db"\n')
    environ = {**_environ(policy_file), "BLITZ_STORE_URL": f"sqlite:///{tmp_path}/mine.db"}
    workspace = open_workspace(tmp_path / "ws", ScriptedModel([]), environ=environ)
    assert workspace.config.store.url == f"sqlite:///{tmp_path}/team.db"
    assert (tmp_path / "team.db").exists() and not (tmp_path / "mine.db").exists()
    with pytest.raises(ConfigError, match="'store.path' in admin policy .*locked"):
        workspace.configure(**{"store.path": "/tmp/elsewhere.db"})
    # the other spelling from a lower layer neither redirects nor breaks it
    home = tmp_path / "home"
    (home / ".blitz").mkdir(parents=True)
    (home / ".blitz" / "config.toml").write_text('[store]\npath = "/tmp/elsewhere.db"\n')
    config = load_config(tmp_path / "ws", environ=_environ(policy_file), home=home)
    assert (config.store.url, config.store.path) == (f"sqlite:///{tmp_path}/team.db", None)


def test_a_misspelled_tool_in_the_policy_is_reported_against_the_policy(tmp_path, policy_file):
    policy_file.write_text('[locked]\napproval.tools.run_pyhton = "deny"\n')
    with pytest.raises(ConfigError, match=r"'approval.tools.run_pyhton' in admin policy .*did you mean 'run_python'"):
        open_workspace(tmp_path, ScriptedModel([]), environ=_environ(policy_file))


def test_the_policy_describes_its_rules_besides_the_locked_keys(policy_file):
    assert read_policy(policy_file).describe() == (
        "tools disabled: write_file; MCP commands allowed: uvx mcp-server-fetch, /opt/mcp/warehouse *; "
        "MCP URLs allowed: https://mcp.example.org/*; models allowed: scripted:*, litellm_proxy/*"
    )
