"""`probe.known_mode`: which execute requests say, by themselves, that no widget can be shown."""

from __future__ import annotations

import uuid

import pytest
from jupyter_client.session import Session

from blitz_kernel.notebook.probe import cell_request, known_mode


def jupyter_client_request(**metadata: object) -> dict:
    return Session().msg("execute_request", {"code": "1"}, metadata=metadata)


def test_jupyter_clients_own_request_is_plain() -> None:
    assert known_mode(jupyter_client_request()) == "plain"


@pytest.mark.parametrize(
    "request_",
    [
        {"header": {"msg_id": str(uuid.uuid4()), "session": str(uuid.uuid4())}, "metadata": {}},  # @jupyterlab/services
        jupyter_client_request(cellId="c-1"),  # a client that sends the cell's id: maybe a browser behind a server
        {"header": {"msg_id": "abc_12_3", "session": "another"}, "metadata": {}},  # not its own session's id
        {},
        None,
    ],
    ids=["browser", "cell-id", "foreign-id", "empty", "none"],
)
def test_anything_else_is_left_to_the_probe(request_: dict | None) -> None:
    assert known_mode(request_) is None


def test_a_kernel_without_get_parent_gives_no_request() -> None:
    class Failing:
        def get_parent(self, channel: str) -> dict:
            raise RuntimeError("no parent")

    assert cell_request(object()) is None and cell_request(Failing()) is None
