"""A handful of the bad-input table (tests/robustness/bad_input_cases.py) through a real
kernel: the error reaches the front end as one line (no traceback in any output), and
nothing was recorded: the next turn of the same session sends only its own prompt."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.fakeserver import FakeOpenAIServer

from .driver import KernelDriver

CASES = [
    ("max-cost-nan", "%%blitz -s k1 --max-cost nan\nhi", "UsageError", "--max-cost must be a finite number, got nan"),
    ("unclosed-quote", '%%blitz -s "k2\nhi', "UsageError", "No closing quotation"),
    (
        "tools-empty",
        "%%blitz -s k3 --tools ,,,\nhi",
        "UsageError",
        "the allowed tools list is empty: name at least one tool",
    ),
    (
        "model-no-provider",
        "%%blitz -s k4 -m nosuchprovider/x\nhi",
        "TurnFailedError",
        "model 'nosuchprovider/x': litellm knows no provider for this name; write it as provider/model, e.g. openai/gpt-4.1-mini",
    ),
    (
        "model-broken-script",
        "%%blitz -s k5 -m scripted:broken.json\nhi",
        "TurnFailedError",
        "cannot load the scripted model 'scripted:broken.json': broken.json: step 1: unknown key 'txt' "
        "(known: error, message, text, thought, tool_calls, usage)",
    ),
    (
        "policy-typo",
        "%blitz_config approval.tools.write_flie=deny",
        "UsageError",
        "bad configuration 'approval.tools.write_flie' in %blitz_config: unknown tool 'write_flie'; did you mean 'write_file'?",
    ),
    ("agent-unknown", "%%blitz -s k7 -a nosuch\nhi", "UsageError", "unknown agent 'nosuch' (known: blitz)"),
]


@pytest.mark.parametrize(("case", "cell", "ename", "error"), CASES, ids=[c[0] for c in CASES])
def test_bad_input_in_a_real_kernel_is_one_line_and_records_nothing(
    kernel: KernelDriver, server: FakeOpenAIServer, workspace_dir: Path, case: str, cell: str, ename: str, error: str
) -> None:
    (workspace_dir / "broken.json").write_text('[{"txt": "hi"}]', encoding="utf-8")
    ran = kernel.run(cell)
    assert ran.status == "error" and ran.ename == ename, ran.reply
    assert ran.evalue.splitlines()[0] == error
    assert "Traceback" not in json.dumps(ran.outputs) + json.dumps(ran.reply.get("traceback", []))
    assert server.requests == []
    session = next((word for word in cell.split()[1:] if word.startswith("k")), None)
    if session is None or case == "unclosed-quote":
        return
    server.enqueue({"text": "fine"})
    after = kernel.run(f"%%blitz -s {session}\nnext")
    assert after.status == "ok", after.reply
    [request] = server.requests
    assert [m["content"] for m in request.body["messages"] if m["role"] == "user"] == ["next"]
