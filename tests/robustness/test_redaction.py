"""Redaction of everything that leaves: secrets planted in environment variables, in files the
agent reads (`.env`, JSON), in a variable and an exception the prompt attaches, and in the
model's own text, each in its plain, JSON-escaped, repr-escaped and URL-encoded forms, plus
well-known key formats. Every channel out is searched for every form: what the model provider
received (the fake server's recorded requests, through the real litellm adapter), the turn's
events and answer, the session store's rows, the cell output and its `.ipynb` metadata, the
spans, and `blitz run`'s stderr and report (through a real kernel).

Run alone: `pytest tests/robustness/test_redaction.py` (about 20 s).
"""

from __future__ import annotations

import io
import json
import sqlite3
from pathlib import Path
from urllib.parse import quote, quote_plus

import pytest

from blitz_kernel.core.attachments import Attachment
from blitz_kernel.core.redact import REDACTED, Redactor, encoded_forms
from blitz_kernel.engine.workspace import Workspace
from blitz_kernel.notebook.widgets.state import TurnState
from blitz_kernel.notebook.widgets.static import static_bundle
from tests.fakeserver import FakeOpenAIServer

ENV_PASSWORD = 'Pa"ss\\w0rd/with spaces&x=1'
"""In the kernel's environment; a quote, a backslash, a slash, spaces and URL syntax."""
FILE_TOKEN = "wh-token-7f3a9c2e1b"
"""Only in the workspace's `.env` (`WAREHOUSE_TOKEN=…`), never in the environment."""
JSON_SECRET = "db'secret\\value-42"
"""Only in config.json, JSON-escaped there, as `"db_password"`."""
VAR_SECRET = "var-secret-Zq81xyz"
"""In a variable the prompt attaches (`{'api_key': …}`)."""
GITHUB = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
AWS = "AKIA" + "QWERTYUIOPASDFGH"
ANTHROPIC = "sk-ant-api03-" + "x9Y8z7W6v5U4t3S2r1Q0p9O8n7M6l5K4"
SECRETS = [ENV_PASSWORD, FILE_TOKEN, JSON_SECRET, VAR_SECRET, GITHUB, AWS, ANTHROPIC]


def every_form(secret: str) -> set[str]:
    return encoded_forms(secret) | {secret}


def leaks(text: str) -> list[str]:
    """The forms of the planted secrets that `text` holds."""
    return sorted({form for secret in SECRETS for form in every_form(secret) if form in text})


def encodings(secret: str) -> str:
    """The secret as code and logs show it: plain, JSON, repr and URL-encoded."""
    return f"plain {secret} json {json.dumps(secret)} repr {secret!r} url {quote(secret, safe='')} form {quote_plus(secret)}"


# -- the redactor itself ------------------------------------------------------------------------


@pytest.mark.parametrize("secret", [ENV_PASSWORD, "hunter2-correct-horse", "ключ-секрет-123"])
def test_each_encoding_of_a_known_secret_is_redacted(secret: str) -> None:
    redactor = Redactor([secret])
    text = encodings(secret) + f" nested {json.dumps(json.dumps(secret))}"
    out = redactor.redact(text)
    assert not [form for form in every_form(secret) if form in out], out
    assert out.count(REDACTED) >= 5


@pytest.mark.parametrize(
    ("line", "value"),
    [
        (f"WAREHOUSE_TOKEN={FILE_TOKEN}", FILE_TOKEN),
        (f"export DB_PASSWORD='{FILE_TOKEN}'", FILE_TOKEN),
        (f'  "db_password": {json.dumps(JSON_SECRET)},', JSON_SECRET),
        (f"api_key: {FILE_TOKEN}", FILE_TOKEN),
        (f"client_secret = {JSON_SECRET!r}", JSON_SECRET),
        (f"https://host/cb?access_token={FILE_TOKEN}&next=1", FILE_TOKEN),
    ],
)
def test_assignments_of_secret_named_keys_are_redacted_and_learned(line: str, value: str) -> None:
    redactor = Redactor()
    assert value not in redactor.redact(line) and REDACTED in redactor.redact(line)
    assert redactor.redact(f"later, alone: {value}") == f"later, alone: {REDACTED}"


@pytest.mark.parametrize(
    "code",
    ["max_tokens = 1000", "token = tokenizer(text)", "self.token = token", "password = None", "TOKEN_URL=https://x/y"],
)
def test_code_that_names_secrets_is_left_alone(code: str) -> None:
    assert Redactor().redact(code) == code


@pytest.mark.parametrize("secret", [GITHUB, AWS, ANTHROPIC, "xoxb-1234567890-abcdefghij", "sk_live_" + "a" * 24])
def test_well_known_formats_come_from_detect_secrets(secret: str) -> None:
    assert Redactor().redact(f"key: [{secret}] end") == f"key: [{REDACTED}] end"


def test_a_private_key_block_is_redacted_whole() -> None:
    block = "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA1\nabc\n-----END RSA PRIVATE KEY-----"
    assert Redactor().redact(f"before\n{block}\nafter") == f"before\n{REDACTED}\nafter"


def test_a_streamed_secret_cut_across_pieces_is_held_back_and_redacted() -> None:
    redactor = Redactor([ENV_PASSWORD])
    text = f"the password is {ENV_PASSWORD} and the key is {GITHUB}.\nTOKEN: {FILE_TOKEN}\ndone"
    for size in (1, 2, 3, 7):
        stream = redactor.stream()
        shown = [stream.feed(text[i : i + size]) for i in range(0, len(text), size)] + [stream.flush()]
        assert "".join(shown) == redactor.redact(text)
        assert not leaks("".join(shown))


def test_image_bytes_and_ids_are_never_rewritten() -> None:
    from blitz_kernel.core.history import ImagePart, UserMessage

    message = UserMessage(parts=[ImagePart(data_base64="AKIA" + "Q" * 16)])
    assert Redactor().redact_value(message) is message


# -- every channel of a real turn --------------------------------------------------------------


@pytest.fixture
def planted(tmp_path: Path) -> Path:
    (tmp_path / ".env").write_text(f"WAREHOUSE_TOKEN={FILE_TOKEN}\nREGION=eu-west-1\n")
    (tmp_path / "config.json").write_text(json.dumps({"db_password": JSON_SECRET, "host": "db.internal"}))
    (tmp_path / "keys.txt").write_text(f"github {GITHUB}\naws {AWS}\nanthropic {ANTHROPIC}\n")
    return tmp_path


async def test_no_secret_leaves_a_turn_by_any_channel(
    planted: Path, fake_server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-wire-not-a-real-key")  # litellm reads the process's
    environ = {"OPENAI_API_KEY": "sk-wire-not-a-real-key", "WAREHOUSE_PASSWORD": ENV_PASSWORD}
    overrides = {
        "api_base": fake_server.base_url,
        "model_retries": 0,
        "telemetry.enabled": True,
        "telemetry.exporter": "memory",
        "telemetry.include_content": True,
    }
    workspace = Workspace.open(
        planted, model="openai/fake-model", overrides=overrides, environ=environ, home=planted / "home"
    )
    reads = [{"name": "read_file", "arguments": {"path": p}} for p in (".env", "config.json", "keys.txt")]
    repeated = " | ".join(encodings(secret) for secret in SECRETS)
    fake_server.enqueue(
        {"text": "Reading the settings.", "tool_calls": reads},
        {"text": f"Found them: {repeated}. TOKEN: {FILE_TOKEN}"},
        {"text": f"Again: {encodings(FILE_TOKEN)}"},
    )
    attachments = [
        Attachment(kind="variable", name="creds", text=f"dict with 1 key: {{'api_key': {VAR_SECRET!r}}}"),
        Attachment(kind="error", name="err", text=f"RuntimeError: login failed for {ENV_PASSWORD!r}"),
    ]
    first = await workspace.run(f"check @creds and @err; my password is {ENV_PASSWORD}", attachments=attachments)
    second = await workspace.run(f"once more, the token was {FILE_TOKEN}")
    assert first.stop_reason == second.stop_reason == "end_turn", (first.error, second.error)

    requests = "\n".join(json.dumps(request.body, ensure_ascii=False) for request in fake_server.requests)
    assert len(fake_server.requests) == 3
    assert leaks(requests) == [], "the model provider received a secret"
    assert REDACTED in requests

    for result in (first, second):
        assert leaks(result.text) == [] and REDACTED in result.text
        assert leaks(json.dumps([event.model_dump(mode="json") for event in result.events], ensure_ascii=False)) == []
        state = TurnState(turn_id="t", prompt="", session="")
        for event in result.events:
            state.apply(event)
        data, metadata = static_bundle(state, result.text)
        assert leaks(json.dumps([data, metadata], ensure_ascii=False)) == [], "cell output or .ipynb metadata"

    assert workspace.telemetry.memory is not None
    spans = workspace.telemetry.memory.get_finished_spans()
    assert spans
    dumped = json.dumps(
        [{**dict(span.attributes or {}), "events": [dict(e.attributes or {}) for e in span.events]} for span in spans],
        default=str,
        ensure_ascii=False,
    )
    assert leaks(dumped) == [], "a span attribute"

    assert leaks(json.dumps([r.model_dump(mode="json") for r in workspace.audit()], ensure_ascii=False)) == []
    rows = _store_rows(planted / ".blitz" / "blitz.db")
    assert rows and leaks(rows) == [], "the session store"


def _store_rows(path: Path) -> str:
    with sqlite3.connect(path) as db:
        tables = [row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        dumped = [str(row) for table in tables for row in db.execute(f'SELECT * FROM "{table}"')]  # noqa: S608
    return "\n".join(dumped)


# -- blitz run: stderr and the report ----------------------------------------------------------


def test_blitz_run_keeps_a_failing_cells_secret_out_of_stderr_and_the_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cell's exception text reaches the summary line and the report, which CI keeps."""
    from blitz_kernel.cli.run import main as blitz_run

    monkeypatch.setenv("WAREHOUSE_PASSWORD", ENV_PASSWORD)
    (tmp_path / ".env").write_text(f"WAREHOUSE_TOKEN={FILE_TOKEN}\n")
    code = (
        "import os, json\n"
        "raise RuntimeError('cannot connect with ' + os.environ['WAREHOUSE_PASSWORD'] + ' '"
        " + json.dumps(os.environ['WAREHOUSE_PASSWORD']) + ' token " + FILE_TOKEN + "')"
    )
    notebook = {
        "cells": [{"cell_type": "code", "metadata": {}, "source": code, "outputs": [], "execution_count": None}],
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    (tmp_path / "nb.ipynb").write_text(json.dumps(notebook))
    err = io.StringIO()
    status = blitz_run([str(tmp_path / "nb.ipynb"), "--report", str(tmp_path / "report.json")], err=err)
    assert status == 1, err.getvalue()
    assert "RuntimeError: cannot connect with [redacted]" in err.getvalue()
    assert leaks(err.getvalue()) == [], err.getvalue()
    report = (tmp_path / "report.json").read_text()
    assert "cannot connect with [redacted]" in report
    assert leaks(report) == []
