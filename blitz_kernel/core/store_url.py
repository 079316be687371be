"""What a `store.url` may say (docs/store.md): pure, so that the settings model checks it when
the configuration loads (an error names the key and the file) and the store factory reads it
the same way."""

from __future__ import annotations

from pathlib import Path

from ..errors import BlitzError

SQLITE_PREFIX = "sqlite:///"
POSTGRES_SCHEMES = ("postgresql", "postgres")


class StoreUrlError(BlitzError):
    """A `store.url` that names no backend this blitz_kernel has."""


def check_store_url(url: str) -> str:
    """The URL, or StoreUrlError saying in one line what is wrong with it."""
    scheme = url.split("://", 1)[0].lower() if "://" in url else ""
    if scheme in POSTGRES_SCHEMES:
        return url
    if scheme.startswith(("postgresql+", "postgres+")):
        raise StoreUrlError(f"{scheme}:// names a driver; write postgresql://USER@HOST/DATABASE (psycopg is used)")
    if not url.startswith(SQLITE_PREFIX):
        shown = f"scheme {scheme!r}" if scheme else repr(url)
        raise StoreUrlError(f"unknown store {shown}; use sqlite:///PATH or postgresql://USER@HOST/DATABASE")
    if not url[len(SQLITE_PREFIX) :].strip():
        raise StoreUrlError("sqlite:/// needs a file path after it, e.g. sqlite:///.blitz/blitz.db")
    return url


def is_postgres(url: str | None) -> bool:
    """Whether `url` names a PostgreSQL store."""
    return url is not None and "://" in url and url.split("://", 1)[0].lower() in POSTGRES_SCHEMES


def shown_url(url: str) -> str:
    """The URL as a message may show it: any password replaced by `***`."""
    scheme, _, rest = url.partition("://")
    credentials, at, place = rest.rpartition("@")
    if at and ":" in credentials:
        credentials = credentials.split(":", 1)[0] + ":***"
    return f"{scheme}://{credentials}{at}{place}"


def store_url(url: str | None, path: str | None) -> str | None:
    """The URL the two keys choose (`store.path` is the SQLite file's path); None: default."""
    return SQLITE_PREFIX + path if path is not None else url


def sqlite_path(url: str, workspace: Path) -> Path:
    """The file a `sqlite:///PATH` URL names; a relative PATH starts at the workspace."""
    raw = Path(check_store_url(url)[len(SQLITE_PREFIX) :]).expanduser()
    return raw if raw.is_absolute() else workspace / raw
