"""The one way tests open a workspace: isolated from the machine that runs them.

Why one factory: every test workspace must see no environment variables (no real key, no
BLITZ_MODEL from the developer's shell) and a home folder of its own (no ~/.blitz/config.toml),
and that rule belongs in one place. `scripted_workspace` runs on a ScriptedModel (unit tests);
`wire_workspace` runs litellm's real path against the fake provider server (wire tests).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from blitz_kernel import Workspace
from blitz_kernel.core.usage import Price
from blitz_kernel.models.base import Model
from blitz_kernel.models.scripted import ScriptedModel, Step
from tests.fakeserver import FakeOpenAIServer

FAKE_MODEL = "openai/fake-model"


def open_workspace(
    root: Path,
    model: str | Model | None = None,
    *,
    overrides: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
    home: Path | None = None,
    kernel: Any = None,
    durable: bool = True,
) -> Workspace:
    """`root` as a workspace with no environment variables (unless `environ`) and its home in
    `root/home` (unless `home`)."""
    return Workspace.open(
        root,
        model=model,
        overrides=dict(overrides or {}),
        environ=dict(environ or {}),
        home=home if home is not None else root / "home",
        kernel=kernel,
        durable=durable,
    )


def scripted_workspace(
    root: Path,
    steps: list[Step],
    *,
    price: Price | None = None,
    kernel: Any = None,
    durable: bool = True,
    **overrides: Any,
) -> tuple[Workspace, ScriptedModel]:
    """An isolated workspace on a ScriptedModel playing `steps`; keyword arguments other than
    the named ones are configuration overrides (`**{"limits.max_turns": 2}`)."""
    model = ScriptedModel(steps, price=price)
    return open_workspace(root, model, overrides=overrides, kernel=kernel, durable=durable), model


def wire_workspace(
    root: Path,
    server: FakeOpenAIServer,
    model: str = FAKE_MODEL,
    *,
    retries: int | None = 0,
    durable: bool = True,
    **overrides: Any,
) -> Workspace:
    """An isolated workspace whose model is reached through litellm at the fake `server`;
    `retries` is `model_retries` (None: the default); other keywords are overrides. The test
    sets OPENAI_API_KEY itself (litellm reads the process environment)."""
    settings: dict[str, Any] = {"api_base": server.base_url, **overrides}
    if retries is not None:
        settings["model_retries"] = retries
    return open_workspace(root, model, overrides=settings, durable=durable)
