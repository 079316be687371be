"""Inline completion through the real Jupyter Server extension (blitz_kernel/server/), against
the fake OpenAI-compatible server through litellm's path: the settings endpoint, the streamed
NDJSON answer, redaction of a secret on its way to the model, authentication, a bad body and a
model error (docs/completion.md)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest

from tests.fakeserver import FakeOpenAIServer
from tests.helpers.jupyter_server import INSTALLED, Server

SECRET = "sk-completion-secret-0123456789abcdef"


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, fake: FakeOpenAIServer) -> Iterator[Server]:
    assert INSTALLED.is_file(), f"{INSTALLED} is missing: `pip install -e .` installs the server extension's config"
    root, home = tmp_path_factory.mktemp("root"), tmp_path_factory.mktemp("home")
    (root / "project").mkdir()
    (home / ".blitz").mkdir()
    (home / ".blitz" / "config.toml").write_text('[completion]\nmodel = "openai/fake-model"\nmax_tokens = 40\n')
    running = Server(root, home, fake.base_url, WAREHOUSE_TOKEN=SECRET)
    yield running
    running.stop()


def post(server: Server, body: dict[str, object], token: bool = True) -> list[dict[str, object]]:
    request = server.request("/blitz/completion", json.dumps(body).encode(), token=token)
    with urllib.request.urlopen(request, timeout=30) as answer:
        assert answer.headers["Content-Type"].startswith("application/x-ndjson")
        return [json.loads(line) for line in answer.read().decode().splitlines() if line.strip()]


def test_settings_say_which_model_and_how_long_to_wait(server: Server):
    settings = server.get("/blitz/completion?path=project/nb.ipynb")
    assert settings["enabled"] is True and settings["model"] == "openai/fake-model"
    assert settings["max_tokens"] == 40 and settings["debounce_ms"] == 250


def test_a_suggestion_streams_back_and_the_secret_never_reaches_the_model(server: Server, fake: FakeOpenAIServer):
    fake.enqueue({"text": "sum() + mean() + count()", "usage": {"prompt_tokens": 30, "completion_tokens": 6}})
    chunks = post(
        server,
        {"path": "project/nb.ipynb", "prefix": f"token = '{SECRET}'\ndf.", "suffix": "", "before": ["import pandas"]},
    )
    assert [c["kind"] for c in chunks][-1] == "done"
    assert chunks[-1]["text"] == "sum() + mean() + count()"
    assert len([c for c in chunks if c["kind"] == "text"]) > 1  # streamed in pieces
    sent = json.dumps(fake.requests[-1].body)
    assert SECRET not in sent and "import pandas" in sent and "<CURSOR>" in sent
    assert fake.requests[-1].body["max_tokens"] == 40
    usage = server.get("/blitz/completion?path=project/nb.ipynb")["usage"]
    assert isinstance(usage, dict) and usage["calls"] >= 1


def test_without_the_token_nothing_is_answered(server: Server):
    with pytest.raises(urllib.error.HTTPError) as refused:
        post(server, {"path": "project/nb.ipynb", "prefix": "x"}, token=False)
    assert refused.value.code == 403


def test_a_malformed_request_is_a_400_naming_the_field(server: Server):
    with pytest.raises(urllib.error.HTTPError) as refused:
        post(server, {"path": "project/nb.ipynb", "prefix": "x", "extra": 1})
    assert refused.value.code == 400 and "extra" in (refused.value.reason or "")


def test_a_model_error_is_one_error_chunk(server: Server, fake: FakeOpenAIServer):
    fake.enqueue({"fault": "status", "status": 401, "message": "Incorrect API key provided"})
    chunks = post(server, {"path": "project/nb.ipynb", "prefix": "x"})
    assert [c["kind"] for c in chunks] == ["error"]
    assert "openai/fake-model" in str(chunks[0]["message"])


def test_the_kernels_variables_reach_the_model_and_a_secret_among_them_does_not(server: Server, fake: FakeOpenAIServer):
    fake.enqueue({"text": "groupby('region')"})
    variables = [{"name": "sales_by_region", "type": "DataFrame"}, {"name": "token", "type": SECRET}]
    chunks = post(server, {"path": "project/nb.ipynb", "prefix": "sales_by_region.", "variables": variables})
    assert chunks[-1]["kind"] == "done"
    prompt = fake.requests[-1].body["messages"][-1]["content"]
    assert "sales_by_region: DataFrame" in str(prompt)
    assert SECRET not in json.dumps(fake.requests[-1].body)


def test_too_many_variables_are_a_400(server: Server):
    many = [{"name": f"v{i}", "type": "int"} for i in range(101)]
    with pytest.raises(urllib.error.HTTPError) as refused:
        post(server, {"path": "project/nb.ipynb", "prefix": "x", "variables": many})
    assert refused.value.code == 400 and "variables" in (refused.value.reason or "")
