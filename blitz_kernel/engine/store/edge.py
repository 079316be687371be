"""The edge of a store backend: every public method of a backend wears `edge(doing)`, so what
its driver (or the file system, or a row that does not parse) raises leaves the backend only as
one of the typed store errors of protocol.py. Each backend says which errors are its driver's and
how to word them; the wrapping itself is written once, here."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, Protocol, TypeVar, cast

from .protocol import StoreError

F = TypeVar("F", bound=Callable[..., Any])
Translate = Callable[[BaseException, str, str], StoreError]


class Located(Protocol):
    """A backend names where its data is (a file, a server) in every error it raises."""

    location: str


def edge_for(caught: tuple[type[BaseException], ...], translate: Translate) -> Callable[[str], Callable[[F], F]]:
    """The `edge(doing)` decorator of a backend whose methods may raise `caught`, worded by
    `translate(error, location, doing)`; `doing` is what the method does ("read", "write to")."""

    def edge(doing: str) -> Callable[[F], F]:
        def wrap(method: F) -> F:
            @functools.wraps(method)
            def translated(self: Located, *args: Any, **kwargs: Any) -> Any:
                try:
                    return method(self, *args, **kwargs)
                except StoreError:
                    raise
                except caught as exc:
                    raise translate(exc, self.location, doing) from exc

            return cast(F, translated)

        return wrap

    return edge
