"""Shared fixtures. Each group below has one owner; add new groups rather than editing others."""

from __future__ import annotations

import ipaddress
import os
import socket
from collections.abc import Iterator
from typing import Any

import pytest

# -- model wire: fake OpenAI server and the no-real-network rule --------------------------

# Before anything imports litellm: its price map comes from the installed package, never the
# network.
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"

from tests.fakeserver import FakeOpenAIServer  # noqa: E402 - after the environment is set


def pytest_configure(config: pytest.Config) -> None:
    # The same narrow filters the adapter installs when it loads litellm (pytest resets the
    # process's filters around each test, so they are declared here too).
    config.addinivalue_line(
        "filterwarnings", "ignore:Item '.*' on TypedDict class '.*' is using the `ReadOnly` qualifier:UserWarning"
    )
    config.addinivalue_line(
        "filterwarnings",
        r"ignore:Accessing the 'model_(computed_)?fields' attribute on the instance:DeprecationWarning:litellm\.",
    )


def _is_loopback(address: Any) -> bool:
    """True for 127.0.0.0/8, ::1, "localhost" and non-IP addresses (Unix sockets)."""
    if not isinstance(address, tuple) or not address:
        return True  # AF_UNIX path or something that is not an internet address
    host = address[0]
    if host in ("localhost", "", None):
        return True
    try:
        return ipaddress.ip_address(str(host).split("%", 1)[0]).is_loopback
    except ValueError:
        return False  # a host name other than localhost: would need DNS, so not local


@pytest.fixture(autouse=True)
def no_real_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Fail the test if anything connects outside 127.0.0.1 (e.g. a model call that escaped
    the fake server). The connect raises at once, and the test fails at teardown even if the
    code under test swallowed the error (litellm wraps it, the adapter may retry it)."""
    attempts: list[str] = []
    original_connect = socket.socket.connect
    original_connect_ex = socket.socket.connect_ex

    def refuse(address: Any) -> None:
        attempts.append(repr(address))
        raise ConnectionRefusedError(f"tests may not reach the network (tried {address!r})")

    def guarded_connect(self: socket.socket, address: Any) -> None:
        if not _is_loopback(address):
            refuse(address)
        original_connect(self, address)

    def guarded_connect_ex(self: socket.socket, address: Any) -> int:
        if not _is_loopback(address):
            refuse(address)
        return original_connect_ex(self, address)

    monkeypatch.setattr(socket.socket, "connect", guarded_connect)
    monkeypatch.setattr(socket.socket, "connect_ex", guarded_connect_ex)
    yield attempts
    if attempts:
        pytest.fail(f"the test tried to reach the network: {', '.join(attempts)}")


@pytest.fixture
def fake_server() -> Iterator[FakeOpenAIServer]:
    """A started FakeOpenAIServer on an ephemeral 127.0.0.1 port, stopped after the test."""
    server = FakeOpenAIServer().start()
    try:
        yield server
    finally:
        server.stop()


# -- test order: browser tests last --------------------------------------------------------------


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    """Run tests/browser after everything else. Playwright's sync API keeps an event loop
    running on the main thread for as long as its session-scoped browser lives, and
    pytest-asyncio cannot start a test's loop while it does, so async tests collected after
    a browser test would fail with "Runner.run() cannot be called from a running event loop"."""
    browser = [item for item in items if "tests/browser/" in item.nodeid]
    if browser:
        items[:] = [item for item in items if "tests/browser/" not in item.nodeid] + browser


# -- model transport: the direct OpenAI path and litellm, for the same cases ---------------------


@pytest.fixture(params=["direct", "litellm"])
def model_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Runs a test once over the direct OpenAI path and once through litellm (an
    OpenAI-compatible model takes either; both must behave alike). Fails the test if a call
    went the other way (litellm callbacks registered by the test itself excepted)."""
    from blitz_kernel.models import litellm_model, openai_direct

    direct = request.param == "direct"
    monkeypatch.setattr(litellm_model, "DIRECT_PATH", direct)
    strays: list[str] = []
    for transport, stray_when in (
        (litellm_model._LiteLLMTransport, direct),
        (litellm_model._DirectTransport, not direct),
    ):
        original = transport.__init__

        def counted(self: Any, *args: Any, _original: Any = original, _stray: bool = stray_when, **kwargs: Any) -> None:
            if _stray and not openai_direct.litellm_callbacks_registered():
                strays.append(type(self).__name__)
            _original(self, *args, **kwargs)

        monkeypatch.setattr(transport, "__init__", counted)
    yield request.param
    assert not strays, f"{request.param} path expected, but calls went through {sorted(set(strays))}"
