"""Inline completion through the real Jupyter Server extension (blitz_kernel/server/), against
the fake OpenAI-compatible server through litellm's path: the settings endpoint, the streamed
NDJSON answer, redaction of a secret on its way to the model, authentication, a bad body, and
a client that goes away (docs/completion.md)."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakeserver import FakeOpenAIServer

SECRET = "sk-completion-secret-0123456789abcdef"
READY_TIMEOUT_S = 60.0
INSTALLED = Path(sys.prefix) / "etc" / "jupyter" / "jupyter_server_config.d" / "blitz_kernel.json"


def free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Server:
    """`jupyter server` on the loopback with a token, in a private home whose user config
    names the completion model."""

    def __init__(self, root: Path, home: Path, model_url: str) -> None:
        self.port, self.token = free_port(), secrets.token_hex(16)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("BLITZ_", "JUPYTER"))}
        env.update(
            HOME=str(home),
            JUPYTER_CONFIG_DIR=str(home / ".jupyter"),
            LITELLM_LOCAL_MODEL_COST_MAP="True",
            BLITZ_API_BASE=model_url,
            OPENAI_API_KEY="sk-wire-not-a-real-key",
            WAREHOUSE_TOKEN=SECRET,
        )
        self.log = (home / "server.log").open("w")
        self.process = subprocess.Popen(
            [
                str(Path(sys.executable).parent / "jupyter"),
                "server",
                "--no-browser",
                "--ip=127.0.0.1",
                f"--port={self.port}",
                f"--IdentityProvider.token={self.token}",
                "--allow-root",
                f"--ServerApp.root_dir={root}",
                "--ServerApp.port_retries=0",
            ],
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"jupyter server exited: {(home / 'server.log').read_text()[-2000:]}")
            try:
                self.get("/api/status")
                return
            except OSError:
                time.sleep(0.2)  # a server that is starting: there is no event to wait on
        raise TimeoutError("jupyter server did not answer")

    def request(self, path: str, body: bytes | None = None, token: bool = True) -> urllib.request.Request:
        headers = {"Authorization": f"token {self.token}"} if token else {}
        return urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", data=body, headers=headers)

    def get(self, path: str) -> dict[str, object]:
        with urllib.request.urlopen(self.request(path), timeout=10) as answer:
            return json.loads(answer.read())  # type: ignore[no-any-return]

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
        self.log.close()


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
    running = Server(root, home, fake.base_url)
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
