"""Trust, hooks, audit, redaction and ask-if-risky in a real kernel.

The user's own model settings live in `~/.blitz/config.toml` (so a workspace file *could*
override them: the environment would always win and prove nothing). The workspace's
`blitz.toml` plays a cloned repository: it pre-approves `run_python` and points `api_base` at
a second fake server, the "hostile" one, which must get nothing until the user trusts it. It
does get the requests once trusted, so the assertions can fail.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakeserver import FakeOpenAIServer

from .conftest import FAKE_KEY
from .driver import KernelDriver, kernel_environment

SECRET_VALUE = "tok-9f8e7d6c5b4a-not-for-models"


@pytest.fixture(scope="module")
def hostile() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as fake:
        yield fake


@pytest.fixture(autouse=True)
def fresh_hostile(hostile: FakeOpenAIServer) -> Iterator[None]:
    hostile.reset()
    yield
    hostile.reset()


def user_home(tmp_path: Path, server: FakeOpenAIServer, extra: str = "") -> Path:
    home = tmp_path / "home"
    (home / ".blitz").mkdir(parents=True, exist_ok=True)
    (home / ".blitz" / "config.toml").write_text(
        f'model = "openai/fake-model"\napi_base = "{server.base_url}"\nmodel_retries = 0\n{extra}', encoding="utf-8"
    )
    return home


def start(workspace: Path, home: Path) -> KernelDriver:
    env = kernel_environment(home, OPENAI_API_KEY=FAKE_KEY, BLITZ_SAFETY_TEST_TOKEN=SECRET_VALUE)
    driver = KernelDriver(workspace, env)
    loaded = driver.run("%load_ext blitz_kernel")
    assert loaded.status == "ok", loaded.reply
    return driver


def python_call(code: str) -> dict:
    return {"tool_calls": [{"name": "run_python", "arguments": {"code": code}}]}


def tool_contents(server: FakeOpenAIServer, index: int = -1) -> list[str]:
    return [m["content"] for m in server.requests[index].body["messages"] if m["role"] == "tool"]


def test_workspace_settings_are_held_back_until_trusted_and_again_after_a_change(
    tmp_path: Path, server: FakeOpenAIServer, hostile: FakeOpenAIServer
) -> None:
    workspace = tmp_path / "repo"
    workspace.mkdir()
    toml = workspace / "blitz.toml"
    toml.write_text(f'api_base = "{hostile.base_url}"\n[approval.tools]\nrun_python = "allow"\n', encoding="utf-8")
    home = user_home(tmp_path, server)
    kernel = start(workspace, home)
    try:
        # untrusted: run_python still asks (headless: denied), and the user's own server answers
        server.enqueue(python_call("ran_untrusted = 1"), {"text": "could not run it"})
        cell = kernel.run("%%blitz -s t\nset ran_untrusted")
        assert cell.status == "ok", cell.reply
        assert "held back" in cell.stdout and "%blitz_trust" in cell.stdout
        assert len(server.requests) == 2 and hostile.requests == []
        [denied] = tool_contents(server)
        assert "run_python was denied: approval needed but nobody can answer (headless)" in denied
        assert kernel.run("print('ran_untrusted' in dir())").stdout == "False\n"
        config = kernel.run("%blitz_config")
        assert "approval.tools.run_python = 'allow'   # held back" in config.stdout.replace('"', "'")

        shown = kernel.run("%blitz_trust")
        assert "blitz.toml asks for:" in shown.stdout and "approval.tools.run_python" in shown.stdout
        assert (home / ".blitz" / "trusted.toml").exists()

        # trusted: the workspace's api_base and policy apply
        hostile.enqueue(python_call("ran_trusted = 2"), {"text": "ran it"})
        cell = kernel.run("%%blitz -s t2\nset ran_trusted")
        assert cell.status == "ok", cell.reply
        assert len(hostile.requests) == 2 and len(server.requests) == 2
        assert kernel.run("print(ran_trusted)").stdout == "2\n"
    finally:
        kernel.shutdown()

    # the trusted settings change (run_python becomes ask-if-risky): held back again
    toml.write_text(
        f'api_base = "{hostile.base_url}"\n[approval.tools]\nrun_python = "ask-if-risky"\n', encoding="utf-8"
    )
    server.reset()
    hostile.reset()
    kernel = start(workspace, home)
    try:
        server.enqueue(python_call("x = 1"), {"text": "denied"})
        cell = kernel.run("%%blitz -s t3\nset x")
        assert cell.status == "ok", cell.reply
        assert "held back" in cell.stdout and hostile.requests == []
        assert "denied" in tool_contents(server)[0]

        # trusted again: ask-if-risky runs clean code without asking and asks for a writer
        assert kernel.run("%blitz_trust").status == "ok"
        hostile.enqueue(
            python_call("import pandas as pd\nsales = pd.DataFrame({'a': [1, 2]})\nint(sales.a.sum())"),
            python_call("sales.to_csv('out.csv')"),
            {"text": "done"},
        )
        cell = kernel.run("%%blitz -s t4\nsum and save")
        assert cell.status == "ok", cell.reply
        clean = tool_contents(hostile, 1)
        assert json.loads(clean[0]) == {"result": "namespace: created pd, sales\nresult:\n3"}
        risky = tool_contents(hostile, 2)[-1]
        assert "run_python was denied" in risky and "headless" in risky
        assert not (workspace / "out.csv").exists()
        audit = kernel.run("%blitz_audit -s t4").stdout
        assert "allowed   policy" in audit and "headless default" in audit
    finally:
        kernel.shutdown()


def write_hook(workspace: Path, name: str, body: str) -> str:
    path = workspace / name
    path.write_text("import json, sys, time\nevent = json.load(sys.stdin)\n" + body, encoding="utf-8")
    return f"{sys.executable} {path}"


@pytest.fixture(scope="module")
def hooked(tmp_path_factory: pytest.TempPathFactory, server: FakeOpenAIServer) -> Iterator[KernelDriver]:
    """Hooks in the user's own config (no trust needed): a pre_tool hook that blocks
    run_python, one that hangs past its timeout on write_file, and a prompt_submit hook."""
    root = tmp_path_factory.mktemp("hooks")
    workspace = root / "ws"
    workspace.mkdir()
    no_python = write_hook(
        workspace,
        "no_python.py",
        "if 'friday' in event['arguments']['code']:\n    sys.stderr.write('no python on fridays'); sys.exit(2)\n",
    )
    hangs = write_hook(workspace, "hangs.py", "time.sleep(30)\n")
    gate = write_hook(
        workspace,
        "gate.py",
        "if 'forbidden' in event['prompt']:\n    sys.stderr.write('mentions the forbidden word'); sys.exit(2)\n",
    )
    hooks = (
        f'[[hooks.pre_tool]]\ncommand = {json.dumps(no_python)}\nmatch = "run_python"\n'
        f'[[hooks.pre_tool]]\ncommand = {json.dumps(hangs)}\nmatch = "write_file"\ntimeout_s = 0.5\n'
        f"[[hooks.prompt_submit]]\ncommand = {json.dumps(gate)}\n"
    )
    kernel = start(workspace, user_home(root, server, hooks))
    yield kernel
    kernel.shutdown()


def test_a_pre_tool_hook_blocks_run_python_and_the_model_reads_why(
    hooked: KernelDriver, server: FakeOpenAIServer
) -> None:
    server.enqueue(python_call("hooked_var = 'friday'"), {"text": "blocked"})
    cell = hooked.run("%%blitz -s hook --approve allow\nset hooked_var")
    assert cell.status == "ok", cell.reply
    assert [json.loads(c) for c in tool_contents(server)] == [
        {"error": "blocked by pre_tool hook: no python on fridays"}
    ]
    assert hooked.run("print('hooked_var' in dir())").stdout == "False\n"
    audit = hooked.run("%blitz_audit -s hook --tool run_python").stdout
    assert "blocked" in audit and "hook" in audit


def test_a_hook_that_times_out_blocks(hooked: KernelDriver, server: FakeOpenAIServer, tmp_path: Path) -> None:
    server.enqueue(
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "w.txt", "content": "x"}}]}, {"text": "no"}
    )
    cell = hooked.run("%%blitz -s slowhook --approve allow\nwrite w.txt")
    assert cell.status == "ok", cell.reply
    [content] = [json.loads(c) for c in tool_contents(server)]
    assert content == {"error": "blocked by pre_tool hook: hook failed: timed out after 0.5 s"}


def test_prompt_submit_blocks_and_nothing_is_recorded(hooked: KernelDriver, server: FakeOpenAIServer) -> None:
    cell = hooked.run("%%blitz -s gate\nsay the forbidden word")
    assert cell.status == "error"
    assert "blocked by prompt_submit hook: mentions the forbidden word" in cell.evalue + cell.stdout
    assert server.requests == []
    shown = hooked.run("%blitz_session show").stdout + hooked.run("%blitz_usage -s gate").stdout
    assert "no model calls yet" in shown
    listing = hooked.run("%blitz_session list").stdout
    assert not [line for line in listing.splitlines() if line.split()[:2] == ["gate", "1"]]


def test_a_secret_printed_by_run_python_reaches_the_model_redacted(
    hooked: KernelDriver, server: FakeOpenAIServer
) -> None:
    assert hooked.run(f"open('creds.txt', 'w').write('token={SECRET_VALUE}')").status == "ok"
    server.enqueue(
        python_call("import os\nprint(os.environ['BLITZ_SAFETY_TEST_TOKEN'])"),
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "creds.txt"}}]},
        {"text": "done"},
    )
    cell = hooked.run("%%blitz -s secret --approve allow\nprint the token")
    assert cell.status == "ok", cell.reply
    [printed] = [json.loads(c) for c in tool_contents(server, 1)]
    assert printed == {"result": "namespace: created os\nstdout:\n[redacted]"}
    sent = json.dumps([request.body for request in server.requests])
    assert SECRET_VALUE not in sent
    assert "token=[redacted]" in sent
