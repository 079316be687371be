"""`Delegated`: an attribute of the facade that lives on one of its services.

The public API keeps reading `workspace.config`, `workspace.model`, … while each value has one
owner; a descriptor says so in one line per attribute instead of a property pair each.
"""

from __future__ import annotations

from typing import Any, Generic, TypeVar, overload

T = TypeVar("T")


class Delegated(Generic[T]):
    """Reads (and, when `writable`, writes) `<instance>.<service>.<name>`."""

    def __init__(self, service: str, name: str, *, writable: bool = False) -> None:
        self.service, self.name, self.writable = service, name, writable

    @overload
    def __get__(self, instance: None, owner: type[Any]) -> Delegated[T]: ...

    @overload
    def __get__(self, instance: object, owner: type[Any]) -> T: ...

    def __get__(self, instance: object | None, owner: type[Any]) -> T | Delegated[T]:
        if instance is None:
            return self
        value: T = getattr(getattr(instance, self.service), self.name)
        return value

    def __set__(self, instance: object, value: T) -> None:
        if not self.writable:
            raise AttributeError(f"{self.name} is read-only here; it belongs to the workspace's {self.service}")
        setattr(getattr(instance, self.service), self.name, value)
