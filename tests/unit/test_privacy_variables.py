"""`privacy.variables = "schema"`: the variable tools send names, types, shapes, column names
and dtypes, never values (no head, describe or reprs)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from blitz_kernel.engine.workspace import Workspace
from blitz_kernel.models.scripted import ScriptedModel
from blitz_kernel.tools.registry import ToolContext
from blitz_kernel.tools.variables import VARIABLE_TOOLS

from .conftest import tool_results, tool_step

TOOLS = {t.name: t for t in VARIABLE_TOOLS}
SECRET_VALUES = ("Zanzibar", "31337", "4242.5", "hunter2")


@dataclass
class NamespaceKernel:
    user_ns: dict[str, Any] = field(default_factory=dict)


def namespace() -> dict[str, Any]:
    return {
        "sales": pd.DataFrame({"city": ["Zanzibar", "Oslo"], "amount": [4242.5, 1.0]}),
        "codes": pd.Series([31337, 2], name="code"),
        "grid": np.array([[31337.0, 1.0]]),
        "password": "hunter2",
        "config": {"token": "hunter2", "n": 31337},
        "ids": [31337, 2, 3],
    }


async def run_tool(ctx: ToolContext, tool_name: str, **arguments: Any) -> str:
    tool = TOOLS[tool_name]
    return str(await tool.func(tool.parse_arguments(json.dumps(arguments)), ctx))


@pytest.fixture
def schema_ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(workspace=tmp_path, kernel=NamespaceKernel(namespace()), variable_values=False)


async def test_list_variables_in_schema_mode_shows_no_values(schema_ctx: ToolContext) -> None:
    text = await run_tool(schema_ctx, "list_variables")
    assert not [secret for secret in SECRET_VALUES if secret in text], text
    assert "sales (DataFrame, shape (2, 2)): columns: city: " in text
    assert "amount: float64" in text
    assert "password (str, len 7)" in text
    assert "grid (ndarray, shape (1, 2))" in text


@pytest.mark.parametrize("name", ["sales", "codes", "grid", "password", "config", "ids"])
async def test_describe_variable_in_schema_mode_shows_no_values(schema_ctx: ToolContext, name: str) -> None:
    text = await run_tool(schema_ctx, "describe_variable", name=name)
    assert not [secret for secret in SECRET_VALUES if secret in text], text
    assert "privacy.variables = schema: values are not shown" in text
    assert "head(" not in text and "describe()" not in text


async def test_describe_dataframe_in_schema_mode_keeps_the_schema(schema_ctx: ToolContext) -> None:
    text = await run_tool(schema_ctx, "describe_variable", name="sales")
    assert "DataFrame: 2 rows × 2 columns" in text
    assert "columns (name: dtype): city: " in text and "amount: float64" in text
    grid = await run_tool(schema_ctx, "describe_variable", name="grid")
    assert "ndarray: shape (1, 2), dtype float64" in grid


async def test_full_mode_is_the_default_and_shows_values(tmp_path: Path) -> None:
    ctx = ToolContext(workspace=tmp_path, kernel=NamespaceKernel(namespace()))
    assert "Zanzibar" in await run_tool(ctx, "describe_variable", name="sales")


async def test_the_setting_reaches_the_tools_through_a_turn(tmp_path: Path) -> None:
    """The engine hands the config's choice to the tools (tools never read the config)."""
    steps = [tool_step({"name": "describe_variable", "arguments": {"name": "sales"}}), {"text": "ok"}]
    model = ScriptedModel(steps)
    kernel = NamespaceKernel(namespace())
    ws = Workspace.open(
        tmp_path,
        model=model,
        overrides={"privacy.variables": "schema"},
        environ={},
        home=tmp_path / "home",
        kernel=kernel,
        durable=False,
    )
    await ws.run("describe sales", session="s")
    [result] = tool_results(ws.session("s").history)
    assert "city" in (result.output or "") and "Zanzibar" not in (result.output or "")
    assert "privacy.variables = schema" in (result.output or "")
