"""Builds a Model from a name: `scripted:PATH` or any litellm model name, and, when
`fallback_models` are configured, the fallback chain over it."""

from __future__ import annotations

import os
from collections.abc import Sequence
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
    stall_first_byte_s: float = 120.0,
    stall_between_chunks_s: float = 60.0,
    fallback_models: Sequence[str] = (),
    breaker_failures: int = 3,
    breaker_cooldown_s: float = 60.0,
    prompt_caching: bool = True,
    cache_ttl_s: int = 300,
) -> Model:
    """Never raises: a name that cannot be built gives a placeholder model that says why.

    Each fallback is built like the primary (same api_base, key, retry, stall and cache settings).
    A fallback that cannot be built stays in the chain as a placeholder, so its reason shows up
    in the switch event instead of the fallback silently vanishing.
    """
    if not name:
        return PlaceholderModel(HOW_TO_SET_A_MODEL)

    def build(model_name: str, placeholder_name: str) -> Model:
        return _build_one(
            model_name,
            workspace=workspace,
            api_base=api_base,
            api_key_env=api_key_env,
            retries=retries,
            stall_first_byte_s=stall_first_byte_s,
            stall_between_chunks_s=stall_between_chunks_s,
            placeholder_name=placeholder_name,
            prompt_caching=prompt_caching,
            cache_ttl_s=cache_ttl_s,
        )

    primary = build(name, "(none)")
    fallbacks = [fallback for fallback in dict.fromkeys(fallback_models) if fallback and fallback != name]
    if not fallbacks or isinstance(primary, PlaceholderModel):
        return primary
    from .fallback import FallbackModel

    return FallbackModel(
        [primary, *(build(fallback, fallback) for fallback in fallbacks)],
        breaker_failures=breaker_failures,
        breaker_cooldown_s=breaker_cooldown_s,
    )


def model_problem(model: Model) -> str | None:
    """Why `model` cannot answer any call (it could not be built, or no provider serves its
    name), or None. Checked before a turn records anything, so such a turn records nothing.
    May load litellm: call it off the event loop. A fallback chain is never unusable here:
    another of its models may answer."""
    if isinstance(model, PlaceholderModel):
        return model.reason
    from .litellm_model import LiteLLMModel

    if isinstance(model, LiteLLMModel):
        return model.problem()
    return None


def needs_litellm(name: str | None) -> bool:
    """Whether calls to `name` go through litellm (any provider but an OpenAI-compatible
    one, which the direct path serves; see litellm_model.py). Reads the price map once for a
    bare name: call it off the event loop."""
    if not name or name.startswith(SCRIPTED_PREFIX):
        return False
    from .openai_direct import speaks_openai

    return not speaks_openai(name)


def warm_up(names: Sequence[str | None]) -> None:
    """Load, ahead of the first turn, what calls to these models will need: litellm only if
    one of them needs it (seconds and about 180 MB), else the openai SDK and the price map.
    Blocking: the extension runs it in a background thread."""
    if any(needs_litellm(name) for name in names):
        from .litellm_model import load_litellm

        load_litellm()
    elif any(names):
        import openai  # noqa: F401 - the direct path's client

        from .price_map import model_map

        model_map()


def _build_one(
    name: str,
    *,
    workspace: Path,
    api_base: str | None,
    api_key_env: str | None,
    retries: int,
    stall_first_byte_s: float,
    stall_between_chunks_s: float,
    placeholder_name: str,
    prompt_caching: bool = True,
    cache_ttl_s: int = 300,
) -> Model:
    if name.startswith(SCRIPTED_PREFIX):
        given = Path(name[len(SCRIPTED_PREFIX) :]).expanduser()
        path = given if given.is_absolute() else workspace / given
        try:
            return ScriptedModel.from_file(path, name=name)
        except FileNotFoundError:
            hint = "" if given.is_absolute() else f" (a relative path is read from the workspace, {workspace})"
            return PlaceholderModel(
                f"cannot load the scripted model {name!r}: no such file {path}{hint}", name=placeholder_name
            )
        except (OSError, ValueError, KeyError) as exc:
            return PlaceholderModel(f"cannot load the scripted model {name!r}: {exc}", name=placeholder_name)
    api_key = None
    if api_key_env:
        api_key = os.environ.get(api_key_env)
        if api_key is None:
            return PlaceholderModel(
                f"model {name!r}: the environment variable {api_key_env} (api_key_env) is not set",
                name=placeholder_name,
            )
    from .litellm_model import LiteLLMModel  # cheap: litellm itself is imported on first call

    return LiteLLMModel(
        name,
        api_base=api_base,
        api_key=api_key,
        retries=retries,
        stall_first_byte_s=stall_first_byte_s,
        stall_between_chunks_s=stall_between_chunks_s,
        prompt_caching=prompt_caching,
        cache_ttl_s=cache_ttl_s,
    )
