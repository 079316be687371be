"""Fault injection through the real litellm path.

Each case plays a misbehaving OpenAI-compatible server (tests/fakeserver.py): HTTP errors,
connections reset mid-stream, malformed chunks, stalls before the first byte and between
chunks, broken tool calls, and the fallback chain acting on them. Whatever
happens, the turn ends with the expected stop reason and at most a one-line error, the
session's history is valid (every tool call has exactly one result), and the next turn
works and sends the provider a well-formed conversation.

Run alone: `pytest tests/robustness/test_fault_injection.py` (about 30 s).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from blitz_kernel.core.history import check_history
from blitz_kernel.engine.events import ModelSwitchEvent
from blitz_kernel.models.breaker import reset_breakers
from tests.fakeserver import FakeOpenAIServer
from tests.helpers.wire import check_request, received_models
from tests.helpers.workspaces import open_workspace

pytestmark = pytest.mark.usefixtures("model_path")  # the direct OpenAI path and litellm

PRIMARY = "openai/fake-model"
FALLBACK = "openai/fallback-model"
STALL_S = 1.0
"""Both stall budgets in the stall cases: a stall is noticed within a second, while the gap
between two pieces the fake writes back to back stays far below it on a loaded machine (at
0.3 s a busy CI machine once delayed the first text piece past the budget, so a stall "after
text" was taken for one before it and retried)."""
RELAXED_S = 30.0
"""The budgets everywhere else: a loaded 2-core machine can take longer than STALL_S to send
a first byte, and that must not turn a case about another fault into a stall."""


def status(http: int, **extra: Any) -> dict[str, Any]:
    return {"fault": "status", "status": http, "message": f"fake {http}", **extra}


LIST = {"tool_calls": [{"name": "list_files", "arguments": {}}]}
OK = {"text": "recovered"}


@dataclass
class Case:
    id: str
    steps: list[dict[str, Any]]
    stop: str
    """Expected stop reason of the faulty turn."""
    error: str | None = None
    """Expected start of its error (stop "error")."""
    text: str | None = None
    retries: int = 0
    fallback: bool = False
    switched: bool = False
    """A ModelSwitchEvent is expected: the chain moved on to the fallback (which may fail too)."""
    asked: list[str] | None = None
    """The models the provider was asked, in order (checked where given)."""
    settings: dict[str, Any] = field(default_factory=dict)


CASES: list[Case] = [
    # -- HTTP errors on the first call, no retries: one line, nothing half-done
    *[
        Case(f"status-{code}-first-call", [status(code)], "error", f"model '{PRIMARY}' failed")
        for code in (400, 401, 403, 404, 408, 409, 413, 422, 429, 500, 502, 503, 504)
    ],
    Case("429-insufficient-quota", [status(429, code="insufficient_quota")], "error", f"model '{PRIMARY}' failed"),
    Case(
        "context-window-400",
        [status(400, code="context_length_exceeded", message="maximum context length is 10 tokens")],
        "error",
        f"model '{PRIMARY}'",
    ),
    # -- retryable errors, one retry: the retry answers
    *[
        Case(f"status-{code}-then-retry-answers", [status(code), OK], "end_turn", text="recovered", retries=1)
        for code in (429, 500, 502, 503, 504)
    ],
    Case("429-retry-after-honoured", [status(429, retry_after=0.05), OK], "end_turn", text="recovered", retries=1),
    # -- errors on the second call, after a tool ran: its result stays paired with its call
    *[
        Case(f"status-{code}-after-a-tool-call", [LIST, status(code)], "error", f"model '{PRIMARY}' failed")
        for code in (400, 401, 429, 500, 503)
    ],
    # -- broken streams
    Case("reset-before-any-text", [{"fault": "reset_mid_stream"}], "error", f"model '{PRIMARY}'"),
    Case(
        "reset-before-any-text-then-retry", [{"fault": "reset_mid_stream"}, OK], "end_turn", text="recovered", retries=1
    ),
    Case(
        "reset-after-text-is-not-retried",
        [{"fault": "reset_mid_stream", "text": "The answer is"}, OK],
        "error",
        f"model '{PRIMARY}'",
        retries=1,
    ),
    Case("reset-after-a-tool-call", [LIST, {"fault": "reset_mid_stream"}], "error", f"model '{PRIMARY}'"),
    Case("malformed-chunk", [{"fault": "malformed"}], "error", f"model '{PRIMARY}'"),
    Case("malformed-chunk-then-retry", [{"fault": "malformed"}, OK], "end_turn", text="recovered", retries=1),
    Case("malformed-after-a-tool-call", [LIST, {"fault": "malformed"}], "error", f"model '{PRIMARY}'"),
    # -- stalls
    Case(
        "stall-before-the-first-byte",
        [{"fault": "stall", "seconds": 5}],
        "error",
        f"model '{PRIMARY}' failed: sent nothing for {STALL_S:g} s (stall.first_byte_s)",
    ),
    Case(
        "stall-before-the-first-byte-then-retry",
        [{"fault": "stall", "seconds": 5}, OK],
        "end_turn",
        text="recovered",
        retries=1,
    ),
    Case(
        "stall-between-chunks",
        [{"fault": "stall", "seconds": 5, "started": True}],
        "error",
        f"model '{PRIMARY}' failed",
    ),
    Case(
        "stall-after-text-is-not-retried",
        [{"fault": "stall", "seconds": 5, "text": "Half an"}, OK],
        "error",
        f"model '{PRIMARY}'",
        retries=1,
    ),
    Case("stall-after-a-tool-call", [LIST, {"fault": "stall", "seconds": 5}], "error", f"model '{PRIMARY}' failed"),
    # -- the fallback chain: the fallback answers the same request
    *[
        Case(f"fallback-after-{name}", [fault, OK], "end_turn", text="recovered", fallback=True, switched=True)
        for name, fault in (
            ("500", status(500)),
            ("503", status(503)),
            ("429", status(429)),
            ("reset", {"fault": "reset_mid_stream"}),
            ("malformed", {"fault": "malformed"}),
            ("stall", {"fault": "stall", "seconds": 5}),
            ("stall-between-chunks", {"fault": "stall", "seconds": 5, "started": True}),
        )
    ],
    Case(
        "fallback-after-a-tool-call",
        [LIST, status(500), OK],
        "end_turn",
        text="recovered",
        fallback=True,
        switched=True,
    ),
    Case(
        "fallback-fails-too",
        [status(500), status(502)],
        "error",
        None,
        fallback=True,
        switched=True,
        asked=["fake-model", "fallback-model"],
    ),
    Case(
        "fallback-stalls-too",
        [status(500), {"fault": "stall", "seconds": 5}],
        "error",
        None,
        fallback=True,
        switched=True,
        asked=["fake-model", "fallback-model"],
    ),
    Case(
        "fallback-never-replaces-shown-text",
        [{"fault": "reset_mid_stream", "text": "Half"}, OK],
        "error",
        None,
        fallback=True,
        asked=["fake-model"],
    ),
    # -- broken tool calls from the model: the model reads an error and goes on
    Case(
        "tool-arguments-not-json",
        [{"tool_calls": [{"name": "list_files", "arguments": "{not json"}]}, OK],
        "end_turn",
        text="recovered",
    ),
    Case(
        "tool-arguments-wrong-type",
        [{"tool_calls": [{"name": "read_file", "arguments": {"path": 42}}]}, OK],
        "end_turn",
        text="recovered",
    ),
    Case(
        "tool-unknown", [{"tool_calls": [{"name": "format_disk", "arguments": {}}]}, OK], "end_turn", text="recovered"
    ),
    Case(
        "tool-call-duplicate-ids",
        [
            {
                "tool_calls": [
                    {"name": "list_files", "arguments": {}, "id": "same"},
                    {"name": "glob", "arguments": {"pattern": "*"}, "id": "same"},
                ]
            },
            OK,
        ],
        "end_turn",
        text="recovered",
    ),
    Case(
        "tool-arguments-missing",
        [{"tool_calls": [{"name": "read_file", "arguments": {}}]}, OK],
        "end_turn",
        text="recovered",
    ),
    Case("empty-answer", [{"text": ""}], "end_turn", text=""),
]


@pytest.fixture(autouse=True)
def fresh_breakers() -> Iterator[None]:
    reset_breakers()
    yield
    reset_breakers()


def test_the_suite_has_at_least_forty_cases() -> None:
    assert len(CASES) >= 40
    assert len({case.id for case in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
async def test_a_fault_ends_cleanly_and_the_next_turn_works(
    case: Case, tmp_path: Path, fake_server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fault-not-a-real-key")
    budget = STALL_S if "stall" in case.id else RELAXED_S
    settings = {
        "api_base": fake_server.base_url,
        "model_retries": case.retries,
        "stall.first_byte_s": budget,
        "stall.between_chunks_s": budget,
        **({"fallback_models": [FALLBACK]} if case.fallback else {}),
        **case.settings,
    }
    workspace = open_workspace(tmp_path, PRIMARY, overrides=settings, durable=False)
    fake_server.enqueue(*case.steps)

    result = await workspace.run("go", session="s")

    assert result.stop_reason == case.stop, result.error
    if case.stop == "error":
        assert result.error is not None and "\n" not in result.error and "Traceback" not in result.error
        if case.error is not None:
            assert result.error.startswith(case.error), result.error
    if case.text is not None:
        assert result.text == case.text
    switches = [event for event in result.events if isinstance(event, ModelSwitchEvent)]
    assert bool(switches) == case.switched, switches
    if case.asked is not None:
        assert received_models(fake_server) == case.asked
    history = workspace.session("s").history
    check_history(history)
    assert workspace.session("s").turns == 1

    fake_server.reset()
    reset_breakers()
    workspace.configure(**{"stall.first_byte_s": RELAXED_S, "stall.between_chunks_s": RELAXED_S})
    fake_server.enqueue({"text": "next turn works"})
    after = await workspace.run("and now?", session="s")
    assert (after.stop_reason, after.text) == ("end_turn", "next turn works"), after.error
    check_history(workspace.session("s").history)
    [request] = fake_server.requests
    check_request(request.body)
    assert request.body["messages"][-1] == {"role": "user", "content": "and now?"}
    assert json.dumps(request.body).count('"content": "go"') == 1  # the faulty turn's prompt, once
