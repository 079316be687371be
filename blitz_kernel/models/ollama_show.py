"""What an Ollama server says about one of its models (`POST /api/show`): whether it sees
images, and how many tokens it reads.

Why not litellm's word: its price map marks no Ollama model as seeing images (so llava or
gemma3 would never get one), and its model lookup asks the default local address rather
than the configured `api_base`. The server itself knows: `capabilities` lists "vision", and
`parameters` holds the `num_ctx` it runs the model with (else `model_info` has the model's
trained context length). The server is `api_base`, else `OLLAMA_API_BASE` (as for litellm),
else the local default. Asked once per server and model, with a short timeout; a server
that does not answer, or an old one without `capabilities`, leaves the question to litellm.
"""

from __future__ import annotations

import os
import re
import threading
from typing import Any

DEFAULT_BASE = "http://localhost:11434"
TIMEOUT_S = 2.0
_PREFIXES = ("ollama_chat/", "ollama/")
_NUM_CTX = re.compile(r"^\s*num_ctx\s+(\d+)\s*$", re.MULTILINE)

_lock = threading.Lock()
_answers: dict[tuple[str, str], dict[str, Any] | None] = {}


def ollama_model(name: str) -> str | None:
    """The model's name on the Ollama server for `ollama_chat/<model>` or `ollama/<model>`."""
    for prefix in _PREFIXES:
        if name.startswith(prefix):
            return name[len(prefix) :]
    return None


def show(api_base: str | None, model: str) -> dict[str, Any] | None:
    """The server's `/api/show` answer for `model` (cached), or None when it gave none."""
    base = (api_base or os.environ.get("OLLAMA_API_BASE") or DEFAULT_BASE).rstrip("/")
    for suffix in ("/api/chat", "/api/generate"):
        base = base.removesuffix(suffix)
    key = (base, model)
    with _lock:
        if key in _answers:
            return _answers[key]
    import httpx

    answer: dict[str, Any] | None = None
    try:
        response = httpx.post(f"{base}/api/show", json={"model": model}, timeout=TIMEOUT_S)
        if response.status_code == 200 and isinstance(body := response.json(), dict):
            answer = body
    except (httpx.HTTPError, ValueError):
        answer = None
    with _lock:
        _answers[key] = answer
    return answer


def forget() -> None:
    """Drop every cached answer (a server's models changed; tests)."""
    with _lock:
        _answers.clear()


def sees_images(info: dict[str, Any] | None) -> bool | None:
    """Whether the server lists "vision" among the model's capabilities (None: it does not say)."""
    capabilities = (info or {}).get("capabilities")
    return "vision" in capabilities if isinstance(capabilities, list) else None


def context_tokens(info: dict[str, Any] | None) -> int | None:
    """The context the server runs the model with: its `num_ctx`, else the model's own length."""
    if not info:
        return None
    parameters = info.get("parameters")
    if isinstance(parameters, str) and (match := _NUM_CTX.search(parameters)):
        return int(match.group(1))
    model_info = info.get("model_info")
    if isinstance(model_info, dict):
        for key, value in model_info.items():
            if key.endswith(".context_length") and isinstance(value, int) and value > 0:
                return value
    return None
