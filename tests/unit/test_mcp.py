"""MCP toolsets against a real MCP server
(tests/mcp_server.py, the SDK's server side) over stdio and streamable HTTP."""

from __future__ import annotations

import asyncio
import base64
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from blitz_kernel.config.loading import load_config
from blitz_kernel.engine.events import Event, NoticeEvent, ProgressEvent, ToolResultEvent
from blitz_kernel.engine.safety.approval import HEADLESS_REASON
from blitz_kernel.engine.workspace import Workspace
from blitz_kernel.errors import ConfigError
from blitz_kernel.models.scripted import ScriptedModel, Step
from tests.helpers.workspaces import open_workspace

from .conftest import ScriptedApprover, call, result_of, tool_results, tool_step

SERVER = str(Path(__file__).resolve().parents[1] / "mcp_server.py")
README = "The warehouse holds 3 tables: orders, customers, items."


def stdio_server(*extra: str, timeout_s: float = 20, **keys: Any) -> dict[str, Any]:
    return {"command": sys.executable, "args": [SERVER, *extra], "timeout_s": timeout_s, **keys}


MakeMcp = Callable[..., tuple[Workspace, ScriptedModel]]


@pytest.fixture
async def mcp_workspace(tmp_path: Path) -> AsyncIterator[MakeMcp]:
    """A workspace on a ScriptedModel with MCP servers from the overrides (the user's own
    settings, so trusted); every server is closed after the test."""
    opened: list[Workspace] = []

    def make(
        steps: list[Step],
        servers: dict[str, dict[str, Any]] | None = None,
        *,
        vision: bool = True,
        environ: dict[str, str] | None = None,
        **overrides: Any,
    ) -> tuple[Workspace, ScriptedModel]:
        model = ScriptedModel(steps, vision=vision)
        for name, server in (servers if servers is not None else {"t": stdio_server()}).items():
            overrides[f"mcp.servers.{name}"] = server
        workspace = open_workspace(tmp_path, model, overrides=overrides, environ=environ, durable=False)
        opened.append(workspace)
        return workspace, model

    yield make
    for workspace in opened:
        await workspace.mcp.aclose()


def gone(pid: int) -> bool:
    """Exited (a zombie not yet reaped counts as gone)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except FileNotFoundError:
        return True


def tool_names(model: ScriptedModel, request: int = 0) -> list[str]:
    return [spec.name for spec in model.requests[request].tools]


async def test_ENG04_names_schemas_and_descriptions_reach_the_model(mcp_workspace: MakeMcp):
    ws, model = mcp_workspace([{"text": "ok"}])
    result = await ws.run("hi")
    assert result.stop_reason == "end_turn"
    specs = {spec.name: spec for spec in model.requests[0].tools}
    for name in (
        "mcp__t__echo",
        "mcp__t__slow",
        "mcp__t__fail",
        "mcp__t__image",
        "list_mcp_resources",
        "read_mcp_resource",
    ):
        assert name in specs
    echo = specs["mcp__t__echo"]
    assert echo.parameters["properties"]["text"]["type"] == "string"
    assert echo.parameters["required"] == ["text"]
    assert echo.description.startswith("Echo the text back")
    # the server's read-only claim is shown, not obeyed
    assert "MCP server t" in echo.description and "says it is read-only" in echo.description
    assert "read_file" in specs  # the built-in tools are still there


async def test_a_call_result_returns_to_the_model(mcp_workspace: MakeMcp):
    ws, model = mcp_workspace([tool_step(call("mcp__t__echo", text="hi", times=2)), {"text": "done"}])
    result = await ws.run("echo", approver=ScriptedApprover("allow"))
    assert result.stop_reason == "end_turn"
    assert result_of(model).output == "hi hi"
    model.assert_complete()


async def test_ENG90_the_tool_span_names_the_server_and_tool(mcp_workspace: MakeMcp):
    ws, _ = mcp_workspace(
        [tool_step(call("mcp__t__echo", text="hi")), {"text": "done"}],
        **{"telemetry.enabled": True, "telemetry.exporter": "memory"},
    )
    await ws.run("echo", approve="allow")
    assert ws.telemetry.memory is not None
    [span] = [s for s in ws.telemetry.memory.get_finished_spans() if s.name == "blitz.tool_call"]
    attributes = dict(span.attributes or {})
    assert attributes["blitz.tool"] == "mcp__t__echo"
    assert attributes["blitz.mcp.server"] == "t" and attributes["blitz.mcp.tool"] == "echo"


async def test_structured_content_becomes_the_result(mcp_workspace: MakeMcp):
    ws, model = mcp_workspace([tool_step(call("mcp__t__structured", city="Oslo")), {"text": "done"}])
    await ws.run("weather", approve="allow")
    assert '"celsius": 21.5' in (result_of(model).output or "")


async def test_structured_content_that_only_repeats_the_text_is_sent_once(mcp_workspace: MakeMcp):
    """The reference filesystem server answers a read with the file as text and again as
    `structuredContent` `{"content": <the same text>}`: the model reads the text once."""
    text = 'line one\nline two: {braces} and "quotes"'
    ws, model = mcp_workspace([tool_step(call("mcp__t__read_text", text=text)), {"text": "done"}])
    await ws.run("read", approve="allow")
    assert result_of(model).output == text


async def test_ENG23_mcp_tools_ask_by_default_even_when_the_server_says_read_only(mcp_workspace: MakeMcp):
    ws, model = mcp_workspace([tool_step(call("mcp__t__echo", text="hi")), {"text": "done"}])
    approver = ScriptedApprover("deny", reason="not now")
    await ws.run("echo", approver=approver)
    assert [[c.name for c in r.calls] for r in approver.requests] == [["mcp__t__echo"]]
    assert result_of(model).error == "mcp__t__echo was denied: not now"


async def test_ENG25_headless_runs_deny_mcp_tools(mcp_workspace: MakeMcp):
    ws, model = mcp_workspace([tool_step(call("mcp__t__echo", text="hi")), {"text": "done"}])
    result = await ws.run("echo")
    assert HEADLESS_REASON in (result_of(model).error or "")
    statuses = [e.status for e in result.events if isinstance(e, ToolResultEvent)]
    assert statuses == ["denied"]


async def test_policy_by_tool_name_allows_without_asking(mcp_workspace: MakeMcp):
    ws, model = mcp_workspace(
        [tool_step(call("mcp__t__echo", text="policy")), {"text": "done"}],
        **{'approval.tools."mcp__t__echo"': "allow"},
    )
    approver = ScriptedApprover("deny")
    await ws.run("echo", approver=approver)
    assert approver.requests == []
    assert result_of(model).output == "policy"


async def test_ENG30_plan_mode_refuses_mcp_tools_but_reads_resources(mcp_workspace: MakeMcp):
    ws, model = mcp_workspace(
        [
            tool_step(
                call("mcp__t__echo", text="hi"),
                call("list_mcp_resources"),
                call("read_mcp_resource", server="t", uri="notes://readme"),
            ),
            {"text": "the plan"},
        ]
    )
    await ws.run("plan it", plan=True, approver=ScriptedApprover("allow"))
    refused, listed, read = tool_results(model.requests[-1])
    assert refused.error == (
        "plan mode: mcp__t__echo is disabled because it could change something. Describe this step in the plan instead."
    )
    assert "notes://readme" in (listed.output or "")
    assert read.output == README


async def test_ENG31_read_only_aside_refuses_mcp_tools(mcp_workspace: MakeMcp):
    ws, model = mcp_workspace([tool_step(call("mcp__t__echo", text="hi")), {"text": "answer"}])
    await ws.aside("default", "quick question")
    assert result_of(model).error == "btw is read-only: mcp__t__echo is disabled because it could change something."


async def test_images_reach_models_that_see_and_only_the_card_otherwise(mcp_workspace: MakeMcp):
    ws, model = mcp_workspace([tool_step(call("mcp__t__image")), {"text": "a dot"}])
    result = await ws.run("image", approve="allow")
    seen = result_of(model)
    assert seen.images and base64.b64decode(seen.images[0].data_base64).startswith(b"\x89PNG")
    [event] = [e for e in result.events if isinstance(e, ToolResultEvent)]
    assert len(event.images) == 1

    blind, blind_model = mcp_workspace([tool_step(call("mcp__t__image")), {"text": "?"}], vision=False)
    result = await blind.run("image", approve="allow")
    seen = result_of(blind_model)
    assert seen.ok and not seen.images and "cannot see images" in (seen.output or "")
    [event] = [e for e in result.events if isinstance(e, ToolResultEvent)]
    assert len(event.images) == 1  # the card still shows it


async def test_a_failing_tool_is_an_error_result(mcp_workspace: MakeMcp):
    ws, model = mcp_workspace([tool_step(call("mcp__t__fail", reason="nope")), {"text": "sorry"}])
    result = await ws.run("fail", approve="allow")
    assert result.stop_reason == "end_turn"
    assert result_of(model).error


async def test_a_crash_mid_call_is_an_error_and_the_next_turn_restarts_the_server(mcp_workspace: MakeMcp):
    ws, model = mcp_workspace(
        [
            tool_step(call("mcp__t__crash")),
            {"text": "it crashed"},
            tool_step(call("mcp__t__echo", text="back")),
            {"text": "fine"},
        ]
    )
    first = await ws.run("crash", approve="allow")
    assert first.stop_reason == "end_turn"
    error = result_of(model, request=1).error or ""
    assert "MCP server 't' stopped" in error and "started again" in error
    second = await ws.run("again", approve="allow")
    assert second.stop_reason == "end_turn"
    assert tool_results(model.requests[-1])[-1].output == "back"
    assert ws.mcp.connections["t"].starts == 2
    model.assert_complete()


async def test_a_server_that_never_answers_times_out_and_the_turn_goes_on(mcp_workspace: MakeMcp):
    ws, model = mcp_workspace([{"text": "without it"}], {"mute": stdio_server("--mute", timeout_s=0.5)})
    result = await ws.run("hi")
    assert result.stop_reason == "end_turn"
    [notice] = [e for e in result.events if isinstance(e, NoticeEvent) and e.kind == "mcp_server"]
    assert notice.message.startswith("MCP server 'mute' failed to start: it did not answer within 0.5 s")
    assert not [name for name in tool_names(model) if name.startswith("mcp__") or "mcp_resource" in name]
    assert "MCP servers not available" in model.requests[0].system and "- mute" in model.requests[0].system
    assert ws.mcp.connections["mute"].status == "failed"


async def test_a_command_that_does_not_exist_is_one_clear_message(mcp_workspace: MakeMcp):
    ws, _ = mcp_workspace([{"text": "ok"}], {"nope": {"command": "/nonexistent/blitz-mcp-server"}})
    result = await ws.run("hi")
    [notice] = [e for e in result.events if isinstance(e, NoticeEvent) and e.kind == "mcp_server"]
    assert "MCP server 'nope' failed to start" in notice.message and "No such file" in notice.message


async def test_a_call_the_server_does_not_answer_in_time_is_an_error(mcp_workspace: MakeMcp):
    ws, model = mcp_workspace(
        [tool_step(call("mcp__t__slow", seconds=60)), {"text": "too slow"}], {"t": stdio_server(timeout_s=5)}
    )
    result = await ws.run("slow", approve="allow")
    assert result.stop_reason == "end_turn"
    assert result_of(model).error == "MCP server 't' did not answer within 5 s"


async def test_the_turn_timeout_cuts_an_mcp_call_short(mcp_workspace: MakeMcp):
    ws, _ = mcp_workspace([tool_step(call("mcp__t__slow", seconds=60)), {"text": "unused"}])
    result = await ws.run("slow", approve="allow", timeout=3)
    assert result.stop_reason == "timeout"


async def test_interrupt_during_a_slow_call_cancels_it_on_the_server_too(mcp_workspace: MakeMcp, tmp_path: Path):
    log = tmp_path / "server.log"
    ws, _ = mcp_workspace(
        [tool_step(call("mcp__t__slow", seconds=60)), {"text": "unused"}],
        {"t": stdio_server(env={"BLITZ_TEST_MCP_LOG": str(log)})},
    )
    turn = asyncio.ensure_future(ws.run("slow", approve="allow"))
    await wait_for_line(log, "slow started")
    turn.cancel()  # what the kernel's interrupt does to the running cell
    result = await turn
    assert result.stop_reason == "cancelled"
    [event] = [e for e in result.events if isinstance(e, ToolResultEvent)]
    assert event.status == "cancelled"
    await wait_for_line(log, "slow cancelled")
    # the connection survived: it answers without a restart
    connection = await ws.mcp.connection("t")
    answer = await connection.client().call_tool("echo", {"text": "still here"})
    assert answer.content[0].text == "still here"
    assert connection.starts == 1


async def wait_for_line(path: Path, line: str) -> None:
    """Wait (off the loop) until the file the server writes holds `line`."""
    assert await asyncio.to_thread(_poll_for_line, path, line, 30.0), f"{line!r} never reached {path}"


def _poll_for_line(path: Path, line: str, limit_s: float) -> bool:
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        if path.exists() and line in path.read_text():
            return True
        time.sleep(0.05)
    return False


async def test_env_values_read_variables_when_the_server_starts(
    mcp_workspace: MakeMcp, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    log = tmp_path / "env.log"
    monkeypatch.setenv("BLITZ_TEST_LOG_DIR", str(tmp_path))
    ws, _ = mcp_workspace(
        [tool_step(call("mcp__t__slow", seconds=0)), {"text": "ok"}],
        {"t": stdio_server(env={"BLITZ_TEST_MCP_LOG": "${BLITZ_TEST_LOG_DIR}/env.log"})},
    )
    await ws.run("slow", approve="allow")
    assert "slow started" in log.read_text()

    missing, _ = mcp_workspace([{"text": "ok"}], {"t": stdio_server(env={"TOKEN": "${BLITZ_NOT_SET_ANYWHERE}"})})
    result = await missing.run("hi")
    [notice] = [e for e in result.events if isinstance(e, NoticeEvent) and e.kind == "mcp_server"]
    assert "BLITZ_NOT_SET_ANYWHERE" in notice.message and "not set" in notice.message


async def test_untrusted_workspace_servers_are_refused_with_the_way_out(tmp_path: Path):
    (tmp_path / "blitz.toml").write_text(f'[mcp.servers.repo]\ncommand = "{sys.executable}"\nargs = ["{SERVER}"]\n')
    model = ScriptedModel([{"text": "ok"}, {"text": "ok"}])
    ws = Workspace.open(tmp_path, model=model, environ={}, home=tmp_path / "home", durable=False)
    result = await ws.run("hi")
    [notice] = [e for e in result.events if isinstance(e, NoticeEvent) and e.kind == "mcp_server"]
    assert "defined in this workspace's own blitz.toml" in notice.message
    assert "%blitz_trust" in notice.message and "~/.blitz/config.toml" in notice.message
    assert ws.mcp.connections["repo"].starts == 0  # the command never ran

    trusted = Workspace.open(
        tmp_path, model=model, environ={"BLITZ_TRUST_WORKSPACE": str(tmp_path)}, home=tmp_path / "home", durable=False
    )
    try:
        await trusted.run("hi")
        assert "mcp__repo__echo" in tool_names(model, 1)
    finally:
        await trusted.mcp.aclose()


async def test_revoking_trust_stops_the_workspaces_running_server_and_says_so(tmp_path: Path):
    from blitz_kernel.notebook.mcp_magic import describe_servers

    (tmp_path / "blitz.toml").write_text(f'[mcp.servers.repo]\ncommand = "{sys.executable}"\nargs = ["{SERVER}"]\n')
    ws = Workspace.open(
        tmp_path, model=ScriptedModel([{"text": "ok"}]), environ={}, home=tmp_path / "home", durable=False
    )
    try:
        ws.trust_workspace()
        await ws.run("hi")
        pid = ws.mcp.connections["repo"].pid
        assert pid is not None and not gone(pid)
        ws.revoke_trust()
        ws.mcp_servers()  # what the next turn or %blitz_mcp does first
        await asyncio.gather(*ws.mcp._retiring)
        assert gone(pid)  # trust let it start; without trust it does not keep running
        shown = describe_servers(ws)
        assert "refused · not running (the workspace is not trusted)" in shown and "pid" not in shown
    finally:
        await ws.mcp.aclose()


async def test_the_users_own_servers_are_trusted(tmp_path: Path):
    home = tmp_path / "home"
    (home / ".blitz").mkdir(parents=True)
    (home / ".blitz" / "config.toml").write_text(
        f'[mcp.servers.mine]\ncommand = "{sys.executable}"\nargs = ["{SERVER}"]\n'
    )
    workspace = tmp_path / "ws"
    workspace.mkdir()
    model = ScriptedModel([{"text": "ok"}])
    ws = Workspace.open(workspace, model=model, environ={}, home=home)
    try:
        await ws.run("hi")
        assert "mcp__mine__echo" in tool_names(model)
        assert ws.mcp.connections["mine"].entry.origin == "user"
    finally:
        await ws.mcp.aclose()


async def test_ENG04_an_agent_file_names_mcp_tools_and_server_patterns(mcp_workspace: MakeMcp, tmp_path: Path):
    agents = tmp_path / ".blitz" / "agents"
    agents.mkdir(parents=True)
    (agents / "one.md").write_text("---\nname: one\ndescription: d\ntools: read_file, mcp__t__echo\n---\nbody\n")
    (agents / "all.md").write_text("---\nname: all\ndescription: d\ntools: mcp__t__*\n---\nbody\n")
    ws, model = mcp_workspace([{"text": "ok"}, {"text": "ok"}])
    await ws.run("hi", agent="one")
    assert [n for n in tool_names(model, 0) if "mcp" in n] == [
        "mcp__t__echo",
        "list_mcp_resources",
        "read_mcp_resource",
    ]
    await ws.run("hi", agent="all")
    assert {"mcp__t__echo", "mcp__t__slow", "mcp__t__image"} <= set(tool_names(model, 1))
    assert "read_file" not in tool_names(model, 1)


async def test_the_tools_allow_list_and_disabled_servers(mcp_workspace: MakeMcp):
    ws, model = mcp_workspace(
        [{"text": "ok"}],
        {
            "t": stdio_server(tools=["echo", "im*"]),
            "off": stdio_server(enabled=False),
        },
    )
    await ws.run("hi")
    names = [n for n in tool_names(model) if n.startswith("mcp__")]
    assert names == ["mcp__t__echo", "mcp__t__image"]
    assert ws.mcp.connections["off"].status == "disabled"


async def test_restart_starts_a_new_server_process(mcp_workspace: MakeMcp):
    ws, _ = mcp_workspace([{"text": "ok"}])
    await ws.run("hi")
    pid = ws.mcp.connections["t"].pid
    assert pid is not None
    connection = await ws.mcp.restart("t")
    assert connection.pid not in (None, pid) and connection.starts == 2
    assert gone(pid)


# -- streamable HTTP ---------------------------------------------------------------------------


@pytest.fixture
def http_server() -> Iterator[str]:
    process = subprocess.Popen([sys.executable, SERVER, "--http"], stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.startswith("PORT "), line
        yield f"http://127.0.0.1:{int(line.split()[1])}/mcp"
    finally:
        process.terminate()
        process.wait(10)


async def test_a_streamable_http_server_offers_and_answers(
    mcp_workspace: MakeMcp, http_server: str, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("BLITZ_TEST_MCP_TOKEN", "s3cret")
    ws, model = mcp_workspace(
        [tool_step(call("mcp__web__echo", text="over http")), {"text": "done"}],
        {"web": {"url": http_server, "headers": {"X-Token": "BLITZ_TEST_MCP_TOKEN"}, "timeout_s": 20}},
    )
    result = await ws.run("hi", approve="allow")
    assert result.stop_reason == "end_turn", result.error
    assert "mcp__web__echo" in tool_names(model)
    assert result_of(model).output == "over http"


async def test_a_missing_header_variable_is_named(mcp_workspace: MakeMcp, http_server: str):
    ws, _ = mcp_workspace(
        [{"text": "ok"}], {"web": {"url": http_server, "headers": {"X-Token": "BLITZ_UNSET_VARIABLE"}}}
    )
    result = await ws.run("hi")
    [notice] = [e for e in result.events if isinstance(e, NoticeEvent) and e.kind == "mcp_server"]
    assert "BLITZ_UNSET_VARIABLE" in notice.message and "not set" in notice.message


# -- configuration -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("server", "key", "words"),
    [
        ({"command": "x", "url": "http://h/mcp"}, "mcp.servers.s", "exactly one transport"),
        ({"enabled": True}, "mcp.servers.s", "needs either `command`"),
        ({"comand": "x"}, "mcp.servers.s", "unknown key 'comand'; known keys: command"),
        (
            {"url": "http://h/mcp", "headers": {"Authorization": "Bearer abc"}},
            "mcp.servers.s.headers",
            "must name an environment variable",
        ),
        ({"url": "http://h/mcp", "args": ["a"]}, "mcp.servers.s", "`args` is for stdio servers"),
        ({"command": "x", "timeout_s": float("nan")}, "mcp.servers.s.timeout_s", ""),
    ],
)
def test_server_configuration_errors_name_the_key(tmp_path: Path, server: dict[str, Any], key: str, words: str):
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path, overrides={"mcp.servers.s": server}, environ={}, home=tmp_path)
    assert f"'{key}'" in str(caught.value) and words in str(caught.value)
    assert "Bearer abc" not in str(caught.value)


def test_a_server_name_must_fit_in_tool_names(tmp_path: Path):
    with pytest.raises(ConfigError, match="mcp__<server>__<tool>"):
        load_config(tmp_path, overrides={"mcp.servers.a__b": {"command": "x"}}, environ={}, home=tmp_path)


async def test_servers_starting_together_each_know_their_process(mcp_workspace: MakeMcp):
    ws, _ = mcp_workspace([{"text": "ok"}], {"a": stdio_server(), "b": stdio_server(), "c": stdio_server()})
    await ws.run("hi")
    pids = [ws.mcp.connections[name].pid for name in "abc"]
    assert None not in pids and len(set(pids)) == 3
    await ws.mcp.aclose()
    assert all(gone(pid) for pid in pids if pid is not None)


def test_the_widget_shows_an_mcp_notice_in_the_turn():
    from blitz_kernel.notebook.widgets.state import TurnState

    state = TurnState(turn_id="t1", prompt="", session="s")
    state.apply(NoticeEvent(kind="mcp_server", message="MCP server 'x' failed to start: FileNotFoundError"))
    assert state.synced_value("notice") == "MCP server 'x' failed to start: FileNotFoundError"


async def test_malformed_json_rpc_is_one_line_at_once_and_the_sdk_log_stays_out_of_the_cell(
    mcp_workspace: MakeMcp, capsys: pytest.CaptureFixture[str]
):
    """A server whose reply is not JSON-RPC: the call ends at once with one line (it used to
    wait out timeout_s and say "did not answer"), and the SDK's multi-line parse error goes
    to the kernel's log, not to the cell's stderr."""
    servers = {"t": stdio_server("--garble", timeout_s=30)}
    ws, model = mcp_workspace([tool_step(call("mcp__t__garble")), {"text": "noted"}], servers)
    started = time.monotonic()
    result = await ws.run("garble", approve="allow")
    assert result.stop_reason == "end_turn"
    assert time.monotonic() - started < 15
    error = result_of(model).error
    assert error is not None and "\n" not in error
    assert error.startswith("MCP server 't' sent malformed JSON-RPC (") and error.endswith("); see the kernel log")
    captured = capsys.readouterr()
    assert "Failed to parse JSONRPC" not in captured.err and "validation error" not in captured.err


def test_sanitised_tool_names_that_collide_get_a_suffix_and_empty_ones_are_left_out(tmp_path: Path):
    from mcp.types import Tool as McpTool

    from blitz_kernel.config.mcp_servers import McpServerConfig
    from blitz_kernel.mcp.manager import ServerConnection, ServerEntry
    from blitz_kernel.mcp.toolset import tool_names as offered_names

    entry = ServerEntry("s", McpServerConfig(command="x"), "user", "~/.blitz/config.toml")
    connection = ServerConnection(entry, tmp_path)
    connection.tools = [McpTool(name=n, input_schema={"type": "object"}) for n in ["a b", "a_b", "dup", "dup", "", " "]]
    names, notices = offered_names(connection)
    assert names == {0: "mcp__s__a_b", 1: "mcp__s__a_b_2", 2: "mcp__s__dup", 3: "mcp__s__dup_2"}
    assert notices == [
        "MCP server 's': tool 'a_b' is offered as mcp__s__a_b_2 (mcp__s__a_b is taken by another of its tools)",
        "MCP server 's': tool 'dup' is offered as mcp__s__dup_2 (mcp__s__dup is taken by another of its tools)",
        "MCP server 's' lists a tool without a name (tool 5); it is left out",
        "MCP server 's' lists a tool without a name (tool 6); it is left out",
    ]
    long = "x" * 80
    connection.tools = [McpTool(name=long, input_schema={"type": "object"}), McpTool(name=long + "y", input_schema={})]
    names, _ = offered_names(connection)
    assert len(set(names.values())) == 2 and all(len(n) <= 64 for n in names.values())


async def test_the_front_end_hears_which_servers_start_before_they_do(mcp_workspace: MakeMcp):
    """A first `npx` start can take 20 s: the cell says "starting MCP server NAME…" while it
    waits, before the turn's first event; a running server is not announced again, and what
    is said is never recorded with the turn."""
    ws, _ = mcp_workspace([{"text": "one"}, {"text": "two"}], servers={"t": stdio_server(), "u": stdio_server()})
    heard: list[tuple[str, bool]] = []

    def on_event(event: Event) -> None:
        alive = [name for name in ("t", "u") if name in ws.mcp.connections and ws.mcp.connections[name].alive]
        heard.append((getattr(event, "message", event.type), bool(alive)))

    first = await ws.run("one", on_event=on_event)
    assert heard[0] == ("starting MCP servers t, u…", False)  # said before either has started
    assert heard[1][0] == "turn_started"
    assert not any(isinstance(event, ProgressEvent) for event in first.events)
    heard.clear()
    await ws.run("two", on_event=on_event)
    assert heard[0][0] == "turn_started"  # both still running: nothing to wait for
