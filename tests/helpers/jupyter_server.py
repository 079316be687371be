"""A real `jupyter server` for tests and benchmarks of the server extension (blitz_kernel/server/):
on the loopback with a token, in a private home, started and stopped by the caller."""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

READY_TIMEOUT_S = 60.0
INSTALLED = Path(sys.prefix) / "etc" / "jupyter" / "jupyter_server_config.d" / "blitz_kernel.json"
"""Where `pip install` puts the extension's config; the server loads it from there."""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Server:
    """`jupyter server` on the loopback with a token, in a private home whose user config
    names the completion model."""

    def __init__(self, root: Path, home: Path, model_url: str, **extra_env: str) -> None:
        self.port, self.token = free_port(), secrets.token_hex(16)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("BLITZ_", "JUPYTER"))}
        env.update(
            HOME=str(home),
            JUPYTER_CONFIG_DIR=str(home / ".jupyter"),
            LITELLM_LOCAL_MODEL_COST_MAP="True",
            BLITZ_API_BASE=model_url,
            OPENAI_API_KEY="sk-wire-not-a-real-key",
        )
        env.update(extra_env)
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
