"""Builds a Model from a name: `scripted:PATH` or any litellm model name."""

from __future__ import annotations

import os
from pathlib import Path

from .base import Model
from .placeholder import HOW_TO_SET_A_MODEL, PlaceholderModel
from .scripted import ScriptedModel

SCRIPTED_PREFIX = "scripted:"


def build_model(
    name: str | None,
    *,
    workspace: Path,
    api_base: str | None = None,
    api_key_env: str | None = None,
    retries: int = 3,
) -> Model:
    """Never raises (WS-01): a name that cannot be built gives a placeholder model that says why."""
    if not name:
        return PlaceholderModel(HOW_TO_SET_A_MODEL)
    if name.startswith(SCRIPTED_PREFIX):
        path = Path(name[len(SCRIPTED_PREFIX) :]).expanduser()
        path = path if path.is_absolute() else workspace / path
        try:
            return ScriptedModel.from_file(path, name=name)
        except (OSError, ValueError, KeyError) as exc:
            return PlaceholderModel(f"cannot load the scripted model {name!r}: {exc}")
    api_key = None
    if api_key_env:
        api_key = os.environ.get(api_key_env)
        if api_key is None:
            return PlaceholderModel(
                f"model {name!r}: the environment variable {api_key_env} (api_key_env) is not set"
            )
    from .litellm_model import LiteLLMModel  # cheap: litellm itself is imported on first call

    return LiteLLMModel(name, api_base=api_base, api_key=api_key, retries=retries)
