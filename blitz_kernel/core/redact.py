"""Secrets kept out of everything the model, the transcript, cell metadata and spans see (WS-08).

A value is a secret when the environment variable holding it is named like one (`*KEY*`,
`*TOKEN*`, `*SECRET*`, `*PASSWORD*`, `*CREDENTIAL*`) or is a configured model key
(`api_key_env`). `run_python` can print `os.environ["OPENAI_API_KEY"]`, a file can contain a
token: every tool result passes through `Redactor.redact` before anyone reads it. Short values
(under 8 characters) are left alone: they would redact ordinary words.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

REDACTED = "[redacted]"
SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL", re.IGNORECASE)
MIN_SECRET_CHARS = 8


class Redactor:
    """Replaces known secret values in text."""

    def __init__(self, secrets: Iterable[str]) -> None:
        values = sorted({s for s in secrets if len(s) >= MIN_SECRET_CHARS}, key=len, reverse=True)
        self._pattern = re.compile("|".join(re.escape(v) for v in values)) if values else None

    @classmethod
    def from_environment(cls, environ: Mapping[str, str], extra_names: Iterable[str | None] = ()) -> Redactor:
        """Secrets from variables named like secrets, plus the named ones (configured keys)."""
        names = {name for name in environ if SECRET_NAME.search(name)}
        names |= {name for name in extra_names if name}
        return cls(environ[name] for name in names if name in environ)

    def redact(self, text: str) -> str:
        if self._pattern is None or not text:
            return text
        return self._pattern.sub(REDACTED, text)

    def redact_optional(self, text: str | None) -> str | None:
        return None if text is None else self.redact(text)

    def __bool__(self) -> bool:
        return self._pattern is not None
