"""`blitz mcp` against a real kernel, driven by the official `mcp` SDK's client over stdio: the
server forwards every call into the kernel, where it gets the checks a `%%blitz` call gets
(headless policy, `approval.tools.*`), lands in `%blitz_audit` naming the client, and is undone
by `%blitz_undo` (docs/mcp-server.md)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tests.fakeserver import FakeOpenAIServer

from .driver import KernelDriver, kernel_environment

ROOT = Path(__file__).resolve().parents[2]


def server_parameters(connection_file: str, call_timeout: float = 60) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "blitz_kernel", "mcp", "--connection-file", connection_file, "--call-timeout", str(call_timeout)],
        env={"PYTHONPATH": str(ROOT), "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
    )


def over_mcp(kernel: KernelDriver, *calls: tuple[str, dict[str, Any]]) -> tuple[list[Any], list[Any]]:
    """Start `blitz mcp` for the kernel, list its tools, make `calls` in order."""

    async def session() -> tuple[list[Any], list[Any]]:
        async with Client(server_parameters(kernel.manager.connection_file), read_timeout_seconds=90) as client:
            tools = (await client.list_tools()).tools
            results = [await client.call_tool(name, arguments) for name, arguments in calls]
            return tools, results

    return anyio.run(session)


def text_of(result: Any) -> str:
    return "\n".join(part.text for part in result.content if getattr(part, "type", None) == "text")


def ok(run: Any) -> Any:
    assert run.status == "ok", run.reply
    return run


def test_lists_the_kernels_tools_with_schemas_and_read_only_annotations(kernel: KernelDriver) -> None:
    tools, _ = over_mcp(kernel)
    by_name = {tool.name: tool for tool in tools}
    shown = ("list_variables", "describe_variable", "run_python", "notebook_read", "notebook_edit", "notebook_run")
    for name in (*shown, "write_file"):
        assert name in by_name, sorted(by_name)
    assert by_name["notebook_run"].annotations.read_only_hint is False
    assert "blitz_turn" in by_name
    assert "invoke_agent" not in by_name and "enter_plan_mode" not in by_name  # a turn's own tools
    assert by_name["list_variables"].annotations.read_only_hint is True
    assert by_name["run_python"].annotations.read_only_hint is False
    assert "code" in by_name["run_python"].input_schema["properties"]
    assert by_name["blitz_turn"].input_schema["required"] == ["prompt"]


def test_list_variables_sees_the_live_namespace(kernel: KernelDriver) -> None:
    ok(kernel.run("import pandas as pd\nsales = pd.DataFrame({'region': ['n', 's'], 'amount': [3, 4]})"))
    _, (listed,) = over_mcp(kernel, ("list_variables", {}))
    assert not listed.is_error, text_of(listed)
    assert "sales" in text_of(listed) and "DataFrame" in text_of(listed)


def test_run_python_is_denied_headless_then_allowed_by_policy_and_audited(kernel: KernelDriver) -> None:
    _, (denied,) = over_mcp(kernel, ("run_python", {"code": "made_by_mcp = 41 + 1"}))
    assert denied.is_error
    assert "denied" in text_of(denied) and "headless" in text_of(denied)
    assert "NameError" in ok(kernel.run("try:\n    made_by_mcp\nexcept NameError as e:\n    print('NameError')")).stdout

    ok(kernel.run('%blitz_config approval.tools.run_python="allow"'))
    try:
        _, (allowed,) = over_mcp(kernel, ("run_python", {"code": "made_by_mcp = 41 + 1"}))
    finally:
        ok(kernel.run('%blitz_config approval.tools.run_python="ask"'))
    assert not allowed.is_error, text_of(allowed)
    assert ok(kernel.run("print(made_by_mcp)")).stdout.strip() == "42"

    audit = ok(kernel.run("%blitz_audit --tool run_python")).stdout
    rows = [line for line in audit.splitlines() if "run_python" in line.split()[2:4]]  # after the agent column
    assert len(rows) >= 2, audit
    assert "denied" in rows[-2] and "headless default (mcp:" in rows[-2], audit
    assert "allowed" in rows[-1] and "policy (mcp:" in rows[-1], audit


def test_a_file_written_through_mcp_is_undone_by_blitz_undo(kernel: KernelDriver, workspace_dir: Path) -> None:
    target = workspace_dir / "from_mcp.txt"
    ok(kernel.run('%blitz_config approval.tools.write_file="allow"'))
    try:
        _, (written,) = over_mcp(kernel, ("write_file", {"path": "from_mcp.txt", "content": "hello from outside"}))
    finally:
        ok(kernel.run('%blitz_config approval.tools.write_file="ask"'))
    assert not written.is_error, text_of(written)
    assert target.read_text() == "hello from outside"
    undo = ok(kernel.run("%blitz_undo"))
    assert "from_mcp.txt" in undo.stdout, undo.stdout
    assert not target.exists()


def test_blitz_turn_runs_a_whole_turn_with_the_notebooks_model(kernel: KernelDriver, server: FakeOpenAIServer) -> None:
    server.enqueue({"text": "The table has 2 regions.", "usage": {"prompt_tokens": 50, "completion_tokens": 7}})
    _, (answer,) = over_mcp(kernel, ("blitz_turn", {"prompt": "how many regions?"}))
    assert not answer.is_error, text_of(answer)
    assert text_of(answer).startswith("The table has 2 regions.")
    assert "stop: end_turn; usage: 50 in, 7 out" in text_of(answer)
    assert "how many regions?" in json.dumps(server.requests[-1].to_json())


def test_a_busy_kernel_is_a_clear_error_and_the_call_never_runs_later(
    kernel: KernelDriver, workspace_dir: Path
) -> None:
    target = workspace_dir / "late.txt"
    ok(kernel.run('%blitz_config approval.tools.write_file="allow"'))

    async def session() -> Any:
        parameters = server_parameters(kernel.manager.connection_file, call_timeout=2)
        async with Client(parameters, read_timeout_seconds=60) as client:
            await client.list_tools()
            busy = kernel.submit("import time\ntime.sleep(6)")  # the user's long cell
            try:
                return await client.call_tool("write_file", {"path": "late.txt", "content": "late"})
            finally:
                kernel.collect(busy, timeout=30)

    try:
        late = anyio.run(session)
        ok(kernel.run("1"))  # the queued request ran (and refused) before this cell
    finally:
        ok(kernel.run('%blitz_config approval.tools.write_file="ask"'))
    assert late.is_error and text_of(late).startswith("kernel busy: no answer within 2 s"), text_of(late)
    assert not target.exists()


def test_a_refused_call_is_a_clear_error_and_records_nothing(kernel: KernelDriver) -> None:
    before = ok(kernel.run("%blitz_audit")).stdout
    _, (unknown, invalid) = over_mcp(kernel, ("no_such_tool", {}), ("describe_variable", {"nmae": "sales"}))
    assert unknown.is_error and text_of(unknown) == "unknown tool 'no_such_tool'"
    assert invalid.is_error and "invalid arguments for describe_variable" in text_of(invalid)
    assert ok(kernel.run("%blitz_audit")).stdout == before


@pytest.fixture(scope="module")
def bare_kernel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KernelDriver]:
    """A kernel without `%load_ext blitz_kernel`."""
    driver = KernelDriver(tmp_path_factory.mktemp("bare"), kernel_environment(tmp_path_factory.mktemp("home")))
    yield driver
    driver.shutdown()


def run_server(connection_file: str) -> subprocess.CompletedProcess[str]:
    parameters = server_parameters(connection_file)
    return subprocess.run(
        [parameters.command, *parameters.args],
        env={**parameters.env, "PATH": "/usr/bin:/bin", "HOME": str(Path.home())} if parameters.env else None,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


def test_a_kernel_without_the_extension_is_one_clear_line(bare_kernel: KernelDriver) -> None:
    done = run_server(bare_kernel.manager.connection_file)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        "blitz mcp: blitz_kernel is not loaded in this kernel: run %load_ext blitz_kernel in the notebook first"
    ]


def test_a_missing_connection_file_is_one_clear_line(tmp_path: Path) -> None:
    done = run_server(str(tmp_path / "kernel-gone.json"))
    assert done.returncode == 1
    assert done.stderr.strip() == f"blitz mcp: connection file {tmp_path / 'kernel-gone.json'} does not exist"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_listening(port: int, process: subprocess.Popen[str], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert process.poll() is None, process.communicate()[1]
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)  # polling a port that is not open yet: the state is waited for, with a deadline
    raise TimeoutError(f"blitz mcp did not listen on {port}")


def test_over_http_with_the_bearer_token(kernel: KernelDriver) -> None:
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    ok(kernel.run("reached_over_http = 7"))
    port, token = free_port(), "test-token-1234"
    parameters = server_parameters(kernel.manager.connection_file)
    process = subprocess.Popen(
        [parameters.command, *parameters.args, "--http", f"127.0.0.1:{port}"],
        env={**os.environ, **(parameters.env or {}), "BLITZ_MCP_TOKEN": token},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_listening(port, process)
        url = f"http://127.0.0.1:{port}/mcp"
        assert httpx2.post(url, json={}).status_code == 401  # no token, no kernel

        async def session() -> tuple[list[str], str]:
            async with (
                httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=90) as http,
                Client(streamable_http_client(url, http_client=http), read_timeout_seconds=90) as client,
            ):
                names = [tool.name for tool in (await client.list_tools()).tools]
                listed = await client.call_tool("list_variables", {})
                return names, text_of(listed)

        names, listed = anyio.run(session)
        assert "run_python" in names and "blitz_turn" in names
        assert "reached_over_http" in listed
    finally:
        process.terminate()
        process.communicate(timeout=30)


def test_the_notebooks_cells_are_resources_read_through_notebook_read(
    kernel: KernelDriver, workspace_dir: Path
) -> None:
    import nbformat
    from mcp.shared.exceptions import MCPError

    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_markdown_cell("# Sales"), nbformat.v4.new_code_cell("total = 7")]
    notebook.cells[1].outputs = [nbformat.v4.new_output("stream", name="stdout", text="seven\n")]
    nbformat.write(notebook, workspace_dir / "sales.ipynb")
    ok(kernel.run(f"__session__ = {str(workspace_dir / 'sales.ipynb')!r}"))  # the notebook this kernel runs

    async def session() -> tuple[list[str], list[str], str, str, str]:
        async with Client(server_parameters(kernel.manager.connection_file), read_timeout_seconds=90) as client:
            listed = [str(r.uri) for r in (await client.list_resources()).resources]
            templates = [t.uri_template for t in (await client.list_resource_templates()).resource_templates]
            try:
                await client.read_resource("blitz://notebook/elsewhere")
                unknown = ""
            except MCPError as error:
                unknown = str(error)
            every = (await client.read_resource("blitz://notebook/cells")).contents[0]
            second = (await client.read_resource("blitz://notebook/cells/1")).contents[0]
            return listed, templates, unknown, getattr(every, "text", ""), getattr(second, "text", "")

    try:
        listed, templates, unknown, every, second = anyio.run(session)
    finally:
        ok(kernel.run("del __session__"))
    assert listed == ["blitz://notebook/cells"]
    assert templates == ["blitz://notebook/cells/{index}"]
    assert unknown.startswith("unknown resource 'blitz://notebook/elsewhere'"), unknown
    assert "# Sales" in every and "total = 7" in every and "seven" in every, every
    assert "total = 7" in second and "# Sales" not in second, second


def test_blitz_clients_lists_what_a_client_called_and_a_detached_client_is_refused(kernel: KernelDriver) -> None:
    ok(kernel.run("listed_by_a_client = 1"))
    _, (first,) = over_mcp(kernel, ("list_variables", {}))
    assert not first.is_error, text_of(first)
    listing = ok(kernel.run("%blitz_clients")).stdout
    client = next(word for word in listing.split() if word.startswith("mcp:"))
    assert "attached" in listing and "list_variables (ok)" in listing, listing

    detached = ok(kernel.run(f"%blitz_clients --detach {client}")).stdout
    assert detached.strip() == f"{client} is detached: its requests are refused from now on"
    before = ok(kernel.run("%blitz_audit")).stdout
    try:
        _, (refused,) = over_mcp(kernel, ("list_variables", {}))
    finally:
        ok(kernel.run(f"%blitz_clients --reattach {client}"))
    assert refused.is_error
    assert text_of(refused) == (
        f"{client} was detached in the notebook (%blitz_clients --reattach {client} lets it back in)"
    )
    assert ok(kernel.run("%blitz_audit")).stdout == before  # nothing recorded for it
    _, (again,) = over_mcp(kernel, ("list_variables", {}))
    assert not again.is_error, text_of(again)

    unknown = kernel.run("%blitz_clients --detach mcp:nobody")
    assert unknown.status == "error" and "no outside client named 'mcp:nobody'" in str(unknown.reply), unknown.reply
