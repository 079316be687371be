"""Shortening text for previews, cards and one-line renderings: one rule everywhere.

A preview is cut with a trailing "…" so a reader can tell it was cut; a one-line preview also
folds runs of whitespace (newlines included) into single spaces first.
"""

from __future__ import annotations

ELLIPSIS = "…"


def shorten(text: str, limit: int) -> str:
    """`text` cut to at most `limit` characters, the last one "…" when it was cut."""
    return text if len(text) <= limit else text[: max(limit - 1, 0)] + ELLIPSIS


def one_line(text: str, limit: int) -> str:
    """`text` on one line (whitespace runs folded) and shortened to `limit`."""
    return shorten(" ".join(text.split()), limit)
