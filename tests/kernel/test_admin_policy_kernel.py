"""The admin policy in a real kernel (docs/teams.md): a policy file that cannot be parsed lets
the extension load but fails every turn, naming the file and line, with nothing sent; once it
parses, a trusted cloned repository's blitz.toml and `%blitz_config` cannot loosen it."""

from __future__ import annotations

from pathlib import Path

from tests.fakeserver import FakeOpenAIServer

from .conftest import FAKE_KEY
from .driver import KernelDriver, kernel_environment

POLICY = """
[locked]
approval.tools.run_python = "ask"
approval.headless = "deny"
api_base = "{base}"

[tools]
disabled = ["write_file"]

[models]
allowed = ["openai/fake-*"]
"""


def test_a_broken_policy_fails_closed_and_a_working_one_cannot_be_loosened(
    tmp_path: Path, server: FakeOpenAIServer
) -> None:
    repo = tmp_path / "cloned"
    repo.mkdir()
    # the repository pre-approves run_python, and the user even trusts it
    (repo / "blitz.toml").write_text('[approval.tools]\nrun_python = "allow"\n', encoding="utf-8")
    policy = tmp_path / "policy.toml"
    policy.write_text('[locked]\napproval.headless = "deny\n', encoding="utf-8")  # unterminated string
    env = kernel_environment(
        tmp_path / "home",
        BLITZ_MODEL="openai/fake-model",
        OPENAI_API_KEY=FAKE_KEY,
        BLITZ_ADMIN_POLICY=str(policy),
        BLITZ_TRUST_WORKSPACE=str(repo),
    )
    kernel = KernelDriver(repo, env)
    try:
        loaded = kernel.run("%load_ext blitz_kernel")
        assert loaded.status == "ok", loaded.reply
        for _ in range(2):  # every turn, not only the first
            server.enqueue({"text": "must not be asked"})
            cell = kernel.run("%%blitz -s t\nhello")
            assert cell.status == "error" and cell.ename == "UsageError", cell.reply
            assert str(policy) in cell.evalue and "line 2" in cell.evalue and "\n" not in cell.evalue.strip()
            assert server.requests == []
            server.reset()

        policy.write_text(POLICY.format(base=server.base_url), encoding="utf-8")
        server.enqueue(
            {
                "tool_calls": [
                    {"name": "run_python", "arguments": {"code": "ran = 1"}},
                    {"name": "write_file", "arguments": {"path": "out.txt", "content": "x"}},
                ]
            },
            {"text": "could not"},
        )
        cell = kernel.run("%%blitz -s t\nset ran and write out.txt")
        assert cell.status == "ok", cell.reply
        assert len(server.requests) == 2
        offered = [tool["function"]["name"] for tool in server.requests[0].body["tools"]]
        assert "write_file" not in offered and "run_python" in offered
        assert kernel.run("print('ran' in dir())").stdout == "False\n"
        assert not (repo / "out.txt").exists()
        results = [m["content"] for m in server.requests[1].body["messages"] if m["role"] == "tool"]
        assert any("headless" in text for text in results)
        assert any(f"write_file is disabled by the admin policy ({policy})" in text for text in results)
        audit = kernel.run("%blitz_audit -s t").stdout
        [write_row] = [line for line in audit.splitlines() if "write_file" in line]
        assert "denied" in write_row and "policy" in write_row

        loosen = kernel.run("%blitz_config approval.tools.run_python=allow")
        assert loosen.status == "error" and loosen.ename == "UsageError"
        assert str(policy) in loosen.evalue and "locked" in loosen.evalue
        shown = kernel.run("%blitz_config").stdout
        assert f"admin policy {policy}" in shown.splitlines()[0]
        assert f"admin policy {policy}: tools disabled: write_file; models allowed: openai/fake-*" in shown
        assert 'approval.tools.run_python = "ask"   # locked by the admin policy' in shown
    finally:
        kernel.shutdown()
