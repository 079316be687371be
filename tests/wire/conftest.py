"""The wire tier: every test here is marked `wire` and gets the tier's timeout."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.tiers import mark_tier


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    mark_tier(config, items, Path(__file__).parent, "wire")
