"""`%%blitz` cells in a real kernel, against the fake server through litellm."""

from __future__ import annotations

import json
from pathlib import Path

from tests.fakeserver import FakeOpenAIServer
from tests.helpers.wire import tool_messages

from .conftest import FAKE_KEY
from .driver import KernelDriver, kernel_environment


def test_a_turn_streams_into_one_display_and_ends_with_a_usage_line(kernel: KernelDriver, server: FakeOpenAIServer):
    answer = " ".join(f"word{i}" for i in range(60))
    server.enqueue({"text": answer, "usage": {"prompt_tokens": 120, "completion_tokens": 60}})
    cell = kernel.run("%%blitz -s stream\nSay sixty words.")
    assert cell.status == "ok", cell.reply
    assert list(cell.displays.values()) == [answer]  # one display, updated in place to the exact text
    assert cell.count("display_data") == 1
    assert "— openai/fake-model · 120 in · 60 out · 1 call · unpriced" in cell.stdout
    assert "end_turn" in cell.stdout
    [request] = server.requests
    assert request.body["stream"] is True
    assert request.body["messages"][-1] == {"role": "user", "content": "Say sixty words."}
    assert FAKE_KEY not in "".join(c.get("text", "") + json.dumps(c.get("data", {})) for _, c in cell.outputs)


def test_multi_turn_memory(kernel: KernelDriver, server: FakeOpenAIServer):
    server.enqueue({"text": "Your name is Ada."}, {"text": "You told me: Ada."})
    assert kernel.run("%%blitz -s memory\nMy name is Ada.").status == "ok"
    assert kernel.run("%%blitz -s memory\nWhat is my name?").status == "ok"
    second = server.requests[1].body["messages"]
    contents = [(m["role"], m.get("content")) for m in second if m["role"] != "system"]
    assert contents == [
        ("user", "My name is Ada."),
        ("assistant", "Your name is Ada."),
        ("user", "What is my name?"),
    ]


def test_run_python_variables_are_visible_in_the_next_cell(kernel: KernelDriver, server: FakeOpenAIServer):
    server.enqueue(
        {"tool_calls": [{"name": "run_python", "arguments": {"code": "answer_from_agent = 6 * 7\nanswer_from_agent"}}]},
        {"text": "Stored it."},
    )
    cell = kernel.run("%%blitz -s vars --approve allow\nCompute 6*7 into answer_from_agent.")
    assert cell.status == "ok", cell.reply
    assert "⚙ run_python(" in cell.stdout and "result: 42" in cell.stdout
    assert kernel.run("print(answer_from_agent + 1)").stdout == "43\n"
    [result] = tool_messages(server.requests[1].body)
    assert json.loads(result["content"]) == {"result": "namespace: created answer_from_agent\nresult:\n42"}


def test_headless_approval_denies_and_nothing_is_written(
    kernel: KernelDriver, server: FakeOpenAIServer, workspace_dir: Path
):
    server.enqueue(
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "notes.txt", "content": "hello"}}]},
        {"text": "I could not write it."},
    )
    cell = kernel.run("%%blitz -s deny\nWrite notes.txt.")
    assert cell.status == "ok"
    assert not (workspace_dir / "notes.txt").exists()
    assert "approval needed but nobody can answer (headless)" in cell.stdout
    [result] = tool_messages(server.requests[1].body)
    assert json.loads(result["content"]) == {
        "error": "write_file was denied: approval needed but nobody can answer (headless)"
    }


def test_bad_option_is_a_usage_error_and_calls_no_model(kernel: KernelDriver, server: FakeOpenAIServer):
    cell = kernel.run("%%blitz --max-turnz 3\nhello")
    assert cell.status == "error"
    assert cell.ename == "UsageError"
    assert "unrecognized arguments: --max-turnz 3" in cell.evalue
    assert "usage: %%blitz [-s SESSION]" in cell.evalue
    bad_value = kernel.run("%%blitz --max-turns zero\nhello")
    assert bad_value.ename == "UsageError" and "--max-turns expects a number" in bad_value.evalue
    unclosed = kernel.run('%%blitz -s "unclosed\nhello')
    assert unclosed.ename == "UsageError" and "No closing quotation" in unclosed.evalue
    assert "Traceback" not in json.dumps(unclosed.outputs)
    bad_out = kernel.run("%%blitz --out 1bad\nhello")
    assert bad_out.ename == "UsageError" and "--out needs a Python variable name" in bad_out.evalue
    assert server.requests == []


def test_a_model_that_cannot_be_built_keeps_the_previous_one(kernel: KernelDriver, server: FakeOpenAIServer):
    """One line, no traceback, and the turns still run on the previous model."""
    cell = kernel.run("%blitz_model scripted:/nonexistent/steps.json")
    assert cell.ename == "UsageError" and "cannot load the scripted model" in cell.evalue
    assert "Traceback" not in json.dumps(cell.outputs)
    assert kernel.run("%blitz_model").stdout.startswith("model: openai/fake-model")


def test_failed_turn_raises_a_short_error_unless_out_is_given(kernel: KernelDriver, server: FakeOpenAIServer):
    loop_step = {"tool_calls": [{"name": "list_files", "arguments": {}}]}
    server.enqueue(loop_step, loop_step)
    failed = kernel.run("%%blitz -s limits --max-turns 1\nList files forever.")
    assert failed.status == "error"
    assert failed.ename == "TurnFailedError"
    assert len(failed.reply["traceback"]) == 1
    assert "maximum turns reached (1 model calls)" in failed.reply["traceback"][0]
    kept = kernel.run("%%blitz -s limits --max-turns 1 --out r\nAgain.")
    assert kept.status == "ok"
    check = kernel.run("print(r.stop_reason, r.error, r.session)")
    assert check.stdout == "max_turns maximum turns reached (1 model calls) limits\n"


def test_model_error_names_the_model(kernel: KernelDriver, server: FakeOpenAIServer):
    server.enqueue({"fault": "status", "status": 401, "message": "Incorrect API key provided"})
    cell = kernel.run("%%blitz -s autherr\nhello")
    assert cell.ename == "TurnFailedError"
    assert "model 'openai/fake-model' failed" in cell.evalue
    assert FAKE_KEY not in cell.evalue


def test_interrupt_while_the_model_stalls_ends_cancelled_and_the_next_turn_works(
    kernel: KernelDriver, server: FakeOpenAIServer
):
    server.enqueue({"fault": "stall", "seconds": 20})
    msg_id = kernel.submit("%%blitz -s interrupt\nTake your time.")
    server.wait_for_requests(1, timeout=30)
    kernel.interrupt()
    cell = kernel.collect(msg_id, timeout=15)
    assert cell.status == "ok", cell.reply
    assert "cancelled" in cell.stdout
    server.enqueue({"text": "Back again."})
    after = kernel.run("%%blitz -s interrupt\nStill there?")
    assert after.status == "ok" and list(after.displays.values()) == ["Back again."]
    roles = [m["role"] for m in server.requests[-1].body["messages"] if m["role"] != "system"]
    assert roles == ["user", "user"]


def test_interrupt_during_run_python_cancels_and_history_stays_valid(kernel: KernelDriver, server: FakeOpenAIServer):
    server.enqueue(
        {
            "tool_calls": [
                {"name": "run_python", "arguments": {"code": "print('spinning', flush=True)\nwhile True:\n    pass"}}
            ]
        }
    )
    msg_id = kernel.submit("%%blitz -s spin --approve allow\nSpin.")
    seen = kernel.wait_for_output(msg_id, "⚙ run_python", timeout=30)
    kernel.interrupt()
    cell = kernel.collect(msg_id, timeout=15, already=seen)
    assert cell.status == "ok", cell.reply
    assert "cancelled" in cell.stdout
    server.enqueue({"text": "Stopped spinning."})
    assert kernel.run("%%blitz -s spin\nOK?").status == "ok"
    [result] = tool_messages(server.requests[-1].body)
    assert "error" in json.loads(result["content"])


def test_usage_model_and_config_magics(kernel: KernelDriver, server: FakeOpenAIServer):
    server.enqueue({"text": "hi", "usage": {"prompt_tokens": 1000, "completion_tokens": 100}})
    priced = kernel.run('%blitz_config prices."openai/fake".input=2.0 prices."openai/fake".output=4.0')
    assert priced.status == "ok", priced.reply  # a prefix of the model name
    assert kernel.run("%%blitz -s priced\nhi").status == "ok"
    usage = kernel.run("%blitz_usage -s priced").stdout
    assert "session 'priced': 1,000 in · 100 out · 1 call · $0.0024" in usage
    assert "openai/fake-model:" in usage
    assert kernel.run("%blitz_model").stdout.startswith("model: openai/fake-model (api_base http://127.0.0.1:")
    shown = kernel.run("%blitz_config").stdout
    assert "model_retries = 0" in shown
    bad = kernel.run("%blitz_config limits.max_turns=lots")
    assert bad.ename == "UsageError" and "limits.max_turns" in bad.evalue and "%blitz_config" in bad.evalue
    assert "%%blitz [options]" in kernel.run("%blitz_help").stdout


def test_no_model_configured_explains_how_to_set_one(tmp_path: Path):
    driver = KernelDriver(tmp_path, kernel_environment(tmp_path))
    try:
        assert driver.run("%load_ext blitz_kernel").status == "ok"
        cell = driver.run("%%blitz\nhello")
        assert cell.ename == "TurnFailedError"
        assert "BLITZ_MODEL" in cell.evalue and "%blitz_model" in cell.evalue
    finally:
        driver.shutdown()


def test_model_html_never_reaches_a_display_raw(kernel: KernelDriver, server: FakeOpenAIServer):
    """JupyterLab renders raw HTML inside a kernel's Markdown output, event handlers included:
    every Markdown display of model text (while it streams, too) has the HTML escaped, and code
    blocks stay readable."""
    answer = (
        "Look: <img src=x onerror=alert(1)> and `List<int>` and `x = 1`\n\n```html\n<i>code stays as it is</i>\n```"
    )
    server.enqueue({"text": answer})
    cell = kernel.run("%%blitz -s xss\nShow me.")
    assert cell.status == "ok", cell.reply
    markdown = [c["data"]["text/markdown"] for k, c in cell.outputs if k in ("display_data", "update_display_data")]
    assert markdown and all("<img" not in text for text in markdown)
    [shown] = cell.displays.values()
    assert shown == (
        "Look: &lt;img src=x onerror=alert(1)> and <code>List&lt;int&gt;</code> and `x = 1`\n\n"
        "```html\n<i>code stays as it is</i>\n```"
    )
    records = [c["metadata"]["blitz"] for _, c in cell.outputs if "blitz" in c.get("metadata", {})]
    assert records[-1]["text"] == answer  # the record keeps the model's exact text


def test_agent_magics_switch_the_active_agent(kernel: KernelDriver, server: FakeOpenAIServer, workspace_dir: Path):
    agents = workspace_dir / ".blitz" / "agents"
    agents.mkdir(parents=True, exist_ok=True)
    (agents / "terse.md").write_text("---\nname: terse\ndescription: one-word answers\n---\nAnswer in one word.\n")
    # written while the kernel runs: seen without reloading anything
    listed = kernel.run("%blitz_agents").stdout
    assert "* blitz:" in listed and "  terse: one-word answers" in listed
    unknown = kernel.run("%blitz_agent nobody")
    assert unknown.ename == "UsageError" and "unknown agent 'nobody'" in unknown.evalue
    assert kernel.run("%blitz_agent terse").stdout == "agent: terse\n"
    server.enqueue({"text": "Yes."})
    assert kernel.run("%%blitz -s agents\nAre you there?").status == "ok"
    assert server.requests[-1].body["messages"][0] == {"role": "system", "content": "Answer in one word."}
    assert kernel.run("%blitz_agent blitz").stdout == "agent: blitz\n"


def test_session_magic_lists_switches_snapshots_and_searches(kernel: KernelDriver, server: FakeOpenAIServer):
    server.enqueue({"text": "The median is 42."}, {"text": "Branch answer."})
    assert kernel.run("%blitz_session new analysis").stdout == "using session 'analysis'\n"
    assert kernel.run("%%blitz\nWhat is the median?").status == "ok"  # no -s: the session in use
    listed = kernel.run("%blitz_session list").stdout.splitlines()
    assert listed[0].split() == ["session", "turns", "last", "used", "cost", "held", "by"]
    [row] = [line for line in listed if line.startswith("* analysis ")]
    assert row.split()[2] == "1" and row.endswith(" -")  # 1 turn, held by no other kernel
    shown = kernel.run("%blitz_session show").stdout
    assert shown.startswith("session 'analysis': 1 turn(s), 2 message(s) in the history")
    kernel.run("%blitz_session snapshot median-known")
    assert (
        kernel.run("%blitz_session load median-known").stdout
        == "using session 'median-known-2' (from snapshot 'median-known')\n"
    )
    assert kernel.run("%%blitz\nAnd the mean?").status == "ok"
    sent = [m["content"] for m in server.requests[-1].body["messages"] if m["role"] != "system"]
    assert sent == ["What is the median?", "The median is 42.", "And the mean?"]
    found = kernel.run("%blitz_session search MEDIAN 42 --all").stdout.splitlines()
    assert sorted(line.split(" [")[0] + " " + line.split(", ")[1] for line in found[::2]) == [
        "analysis message 1",
        "median-known-2 message 1",
    ]
    assert found[1] == found[3] == "    The «median» is «42»."
    assert "median-known-2 [turn 2, message 2, user," in kernel.run("%blitz_session search mean").stdout
    nothing = kernel.run("%blitz_session search zebra").stdout
    assert nothing == "no match for 'zebra' in session 'median-known-2' (try --all)\n"
    missing = kernel.run("%blitz_session use")
    assert missing.ename == "UsageError" and "needs a name" in missing.evalue
    bad = kernel.run("%blitz_session rename x")
    assert bad.ename == "UsageError" and "invalid choice" in bad.evalue
    assert kernel.run("%blitz_session delete median-known-2").stdout == "deleted session 'median-known-2'\n"


def test_schema_option_ends_the_turn_with_validated_data(kernel: KernelDriver, server: FakeOpenAIServer):
    setup = kernel.run("from pydantic import BaseModel\nclass Region(BaseModel):\n    name: str\n    revenue: float")
    assert setup.status == "ok", setup.reply
    server.enqueue({"tool_calls": [{"name": "final_result", "arguments": {"name": "north", "revenue": 9.5}}]})
    cell = kernel.run("%%blitz -s typed --schema Region --out typed\nThe best region?")
    assert cell.status == "ok", cell.reply
    assert kernel.run("print(repr(typed.output))").stdout == "Region(name='north', revenue=9.5)\n"
    [tool] = [t for t in server.requests[0].body["tools"] if t["function"]["name"] == "final_result"]
    assert set(tool["function"]["parameters"]["required"]) == {"name", "revenue"}

    missing = kernel.run("%%blitz -s typed --schema NoSuchName\nAgain?")
    assert missing.ename == "UsageError" and "no variable 'NoSuchName'" in missing.evalue
    wrong = kernel.run("not_a_schema = 3\n")
    assert wrong.status == "ok"
    refused = kernel.run("%%blitz -s typed --schema not_a_schema\nAgain?")
    assert refused.ename == "UsageError" and "pydantic model class" in refused.evalue
    assert len(server.requests) == 1  # neither refused cell reached the model
