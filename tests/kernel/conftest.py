"""Kernel tests: a real ipykernel, `%load_ext blitz_kernel`, and the fake OpenAI-compatible
server as the model (reached through litellm's real code path)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakeserver import FakeOpenAIServer
from tests.helpers.tiers import mark_tier

from .driver import KernelDriver, kernel_environment

FAKE_KEY = "sk-test-not-a-real-key-4242"


@pytest.fixture(scope="module")
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as fake:
        yield fake


@pytest.fixture(scope="module")
def workspace_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("workspace")


@pytest.fixture(scope="module")
def kernel(
    server: FakeOpenAIServer, workspace_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[KernelDriver]:
    driver = blitz_kernel_on(server, workspace_dir, tmp_path_factory.mktemp("home"))
    yield driver
    driver.shutdown()


def blitz_kernel_on(server: FakeOpenAIServer, workspace: Path, home: Path, **extra: str) -> KernelDriver:
    """A real kernel in `workspace` with blitz_kernel loaded, its model the fake server (no
    retries: a test's script is exact); `extra`: more environment (JPY_SESSION_NAME …)."""
    env = kernel_environment(
        home, BLITZ_MODEL="openai/fake-model", BLITZ_API_BASE=server.base_url, OPENAI_API_KEY=FAKE_KEY, **extra
    )
    driver = KernelDriver(workspace, env)
    loaded = driver.run("%load_ext blitz_kernel\n%blitz_config model_retries=0")
    assert loaded.status == "ok", loaded.reply
    return driver


@pytest.fixture(autouse=True)
def fresh_script(server: FakeOpenAIServer) -> Iterator[None]:
    server.reset()
    yield
    server.reset()


# -- the tier: every test here is marked `kernel` and gets the tier's timeout ---------------------


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    mark_tier(config, items, Path(__file__).parent, "kernel")
