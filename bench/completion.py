"""Inline completion's own latency (docs/completion.md): from the request to the first ghost
character, through the real Jupyter Server extension and litellm's path, against the fake
OpenAI-compatible server.

    .venv/bin/python bench/completion.py [--requests 30]

Baseline, in the same run: the same chat request sent straight to the fake server as one bare
streamed HTTP POST (httpx), timed to its first streamed piece. The difference is our own time (the extension,
the workspace's config, redaction, the prompt, NDJSON). The front end adds its debounce
(`completion.debounce_ms`, 250 ms by default) before it asks; the goal is the debounce plus
under 50 ms of our own time.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root: tests.helpers

from tests.fakeserver import FakeOpenAIServer  # noqa: E402
from tests.helpers.jupyter_server import INSTALLED, Server  # noqa: E402

ANSWER = "groupby('region').sum() + mean()"
BODY = {"path": "nb.ipynb", "prefix": "import pandas as pd\ndf.", "suffix": "", "before": ["df = pd.read_csv('x')"]}


def first_chunk_ms(server: Server) -> float:
    request = server.request("/blitz/completion", json.dumps(BODY).encode())
    started = time.perf_counter()
    with urllib.request.urlopen(request, timeout=30) as answer:
        first = answer.readline()
        waited = (time.perf_counter() - started) * 1000
        answer.read()
    assert json.loads(first)["kind"] == "text", first
    return waited


def direct_first_piece_ms(client: Any, base_url: str) -> float:
    """The same chat request as one bare streamed HTTP POST on a kept-alive connection (httpx,
    as the server extension's model client keeps its own), timed to its first piece: the floor
    any client pays for the model server's own answer."""
    body = {"model": "fake-model", "messages": [{"role": "user", "content": "df."}], "stream": True, "max_tokens": 64}
    started = time.perf_counter()
    waited = None
    with client.stream("POST", f"{base_url}/v1/chat/completions", json=body, timeout=30) as answer:
        for line in answer.iter_lines():
            if waited is None and line.startswith("data: ") and '"content"' in line:
                waited = (time.perf_counter() - started) * 1000
    assert waited is not None, "the fake server streamed no content"
    return waited


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--requests", type=int, default=30)
    args = parser.parse_args()
    if not INSTALLED.is_file():
        raise SystemExit(f"{INSTALLED} is missing: `pip install -e .` installs the server extension's config")
    with FakeOpenAIServer() as fake, tempfile.TemporaryDirectory() as name:
        root, home = Path(name) / "root", Path(name) / "home"
        root.mkdir()
        (home / ".blitz").mkdir(parents=True)
        (home / ".blitz" / "config.toml").write_text('[completion]\nmodel = "openai/fake-model"\n')
        server = Server(root, home, fake.base_url)
        try:
            fake.enqueue(*({"text": ANSWER} for _ in range(2 * args.requests + 2)))
            first_chunk_ms(server)  # warm: the workspace's config, litellm's import
            client = httpx.Client()
            direct_first_piece_ms(client, fake.base_url)
            ours = [first_chunk_ms(server) for _ in range(args.requests)]
            direct = [direct_first_piece_ms(client, fake.base_url) for _ in range(args.requests)]
            client.close()
        finally:
            server.stop()
    mine, floor = statistics.median(ours), statistics.median(direct)
    print(f"first ghost character, median of {args.requests}: {mine:.1f} ms through the server extension")
    print(f"  baseline, a bare streamed POST to the fake server: {floor:.1f} ms → ratio {mine / floor:.2f}×")
    print(f"  our own time: {mine - floor:.1f} ms (goal < 50 ms); the front end adds its debounce (250 ms default)")


if __name__ == "__main__":
    main()
