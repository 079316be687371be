"""Prices, context windows and vision support from litellm's model map, without importing litellm.

litellm ships its price map as a JSON file inside its package
(`model_prices_and_context_window_backup.json`); with `LITELLM_LOCAL_MODEL_COST_MAP` set, as
this project always sets it, `litellm.model_cost` is exactly that file. The direct OpenAI path
(`openai_direct.py`) must price calls the same way without paying for `import litellm`
(seconds and about 180 MB), so this module finds the file with `importlib.util.find_spec` —
which locates the package without executing it — and reads it once with `json` (about 70 ms
and 10 MB, cached for the process). Without litellm installed the map is empty: every model
is unpriced, which the usage display says (never a silent $0).

Look-ups go by exact name, then without the provider prefix (`openai/gpt-4o` → `gpt-4o`),
as the litellm adapter's own look-up does.
"""

from __future__ import annotations

import functools
import importlib.util
import json
from pathlib import Path
from typing import Any

from ..core.usage import Price

MAP_FILE = "model_prices_and_context_window_backup.json"


@functools.cache
def model_map() -> dict[str, Any]:
    """litellm's model map as shipped in its package ({} when litellm is not installed)."""
    spec = importlib.util.find_spec("litellm")
    if spec is None or spec.origin is None:
        return {}
    try:
        loaded = json.loads((Path(spec.origin).parent / MAP_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return loaded if isinstance(loaded, dict) else {}


def entry_of(model_cost: dict[str, Any], model: str) -> dict[str, Any] | None:
    """The map's entry for `model`: the exact name, else the name without its provider."""
    entry = model_cost.get(model)
    if entry is None and "/" in model:
        entry = model_cost.get(model.split("/", 1)[1])
    return entry if isinstance(entry, dict) else None


def price_from(entry: dict[str, Any] | None) -> Price | None:
    """A map entry's USD-per-token rates as our USD per million tokens, or None."""
    if entry is None:
        return None
    input_rate = entry.get("input_cost_per_token")
    output_rate = entry.get("output_cost_per_token")
    if input_rate is None or output_rate is None:
        return None
    cached = entry.get("cache_read_input_token_cost")
    cache_write = entry.get("cache_creation_input_token_cost")
    return Price(
        input=per_million(input_rate),
        output=per_million(output_rate),
        cached_input=None if cached is None else per_million(cached),
        cache_write=None if cache_write is None else per_million(cache_write),
    )


def per_million(rate: Any) -> float:
    """litellm's USD per token as our USD per million tokens (rounded off float noise)."""
    return round(float(rate) * 1e6, 9)


def price_of(model: str) -> Price | None:
    return price_from(entry_of(model_map(), model))


def context_window_of(model: str) -> int | None:
    tokens = (entry_of(model_map(), model) or {}).get("max_input_tokens")
    return int(tokens) if tokens else None


def supports_vision_of(model: str) -> bool:
    return bool((entry_of(model_map(), model) or {}).get("supports_vision"))


def supports_reasoning_of(model: str) -> bool:
    return bool((entry_of(model_map(), model) or {}).get("supports_reasoning"))


def supports_response_schema_of(model: str) -> bool:
    return bool((entry_of(model_map(), model) or {}).get("supports_response_schema"))


def provider_of(model: str) -> str | None:
    """The provider the map names for `model` (`openai` for `gpt-4o-mini`), or None."""
    provider = (entry_of(model_map(), model) or {}).get("litellm_provider")
    return provider if isinstance(provider, str) else None
