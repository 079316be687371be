"""Secrets kept out of everything that leaves the kernel: model requests, the transcript and the
store, cell outputs and metadata, spans, `blitz run`'s summary and report (docs/safety.md).

Three sources of secrets, one pass over each text:
- known values: environment variables named like secrets (`*KEY*`, `*TOKEN*`, `*SECRET*`,
  `*PASSWORD*`, `*CREDENTIAL*`), the configured model key (`api_key_env`), and values learned
  from text seen earlier (below). Each is matched in its plain, JSON-escaped, repr-escaped and
  URL-encoded forms: a password with a quote or a backslash is common, and `run_python`
  printing a dict or a URL shows it escaped.
- assignments: `KEY=value`, `KEY: value`, `"key": "value"` lines whose key is named like a
  secret (`WAREHOUSE_TOKEN=…` in a `.env` the agent reads). The value is redacted in place and
  learned, so the model repeating it later, or a tool printing it alone, is caught too.
- well-known formats (`sk-…`, `ghp_…`, `AKIA…`, private key blocks): core/secret_patterns.py.
Values under 8 characters are not learned (they would redact ordinary words); an assignment's
value is still redacted where it stands.

A text is often redacted more than once on its way out (a tool's output goes into the event,
the history and the store; a tool's name, the model's name and an audit decision go out with
every call), so the redactor remembers what it gave for its recent texts (`CACHE_ENTRIES`
longer ones, `SHORT_ENTRIES` short ones), and forgets all of it whenever it learns a new
secret.
"""

from __future__ import annotations

import ast
import enum
import json
import re
import types
import typing
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote, quote_plus

from pydantic import BaseModel

from .secret_patterns import secret_patterns, shortest_secret

REDACTED = "[redacted]"
SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL", re.IGNORECASE)
MIN_SECRET_CHARS = 8
ENV_FILE_BYTES = 1_000_000
"""A workspace `.env` larger than this is not read at open (it is not a `.env`)."""
KEPT_FIELDS = frozenset({"data_base64", "id", "call_id", "kind", "part_kind", "media_type", "type"})
"""Model fields never rewritten: image bytes and identifiers (a match there would break them)."""

_KEYWORD = (
    r"(?:api[_-]?key|access[_-]?key|secret[_-]?key|private[_-]?key|token|secret|password|passwd|pwd|credentials?)"
)
KEYWORD = re.compile(_KEYWORD, re.IGNORECASE)
KEYWORD_IN_LOWER = re.compile(_KEYWORD)
"""KEYWORD on an ASCII text's `lower()` (same positions): `re`'s case-insensitive scan of a long
text costs tens of times more than a case-sensitive one (100 KB: ~40 ms against ~1 ms)."""
KEYWORD_PIECES = ("key", "token", "secret", "pass", "pwd", "credential")
"""Every KEYWORD match contains one of these: an ASCII text holding none has no assignment."""
VALUE_AFTER_KEY = re.compile(
    r"""(?![A-Za-z0-9])["']?[ \t]*(?:=>|:=|=|:)[ \t]*(?!=)"""
    r"""(?P<value>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|[^\s"'`,;#\[\](){}<>&]+(?=[ \t]*(?:[#,;}\]&]|\r?$)))""",
    re.MULTILINE,
)
"""What follows a secret-named key in an assignment: `=`, `:`, `=>` or `:=`, then the value
(quoted, or bare up to the end of the line, a comment or a separator)."""
KEY_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")
NOT_SECRETS = frozenset({"none", "null", "nil", "true", "false", "~", "undefined", "required", "optional"})
_IDENTIFIER = re.compile(r"[A-Za-z_][\w.]*")
CACHE_ENTRIES = 512
CACHE_CHARS = 4_000_000
"""At most this many entries and characters of text are remembered, then it starts afresh."""
CACHED_CHARS = 64
"""Texts this long or longer are remembered in the bounded cache above."""
KEPT = ""
"""What the caches hold for a text with nothing to redact (no redaction is empty)."""
SHORT_ENTRIES = 2048
"""Shorter texts are remembered apart, at most this many, then afresh: streamed pieces pass
once each, so they must not push the longer texts out; the short texts that repeat (names,
decisions, arguments) cost a dictionary look-up instead of a pass over every format."""

T = TypeVar("T")


def encoded_forms(value: str) -> set[str]:
    """`value` as it reads plainly, JSON-escaped (once and twice: JSON inside JSON),
    repr-escaped (either quote) and URL-encoded (path, form and fully quoted)."""
    json_once = json.dumps(value)[1:-1]
    forms = {
        value,
        json_once,
        json.dumps(value, ensure_ascii=False)[1:-1],
        json.dumps(json_once)[1:-1],
        repr(value)[1:-1],
        value.replace("\\", "\\\\").replace("'", "\\'"),
        value.replace("\\", "\\\\").replace('"', '\\"'),
        quote(value),
        quote(value, safe=""),
        quote_plus(value),
    }
    return {form for form in forms if len(form) >= MIN_SECRET_CHARS}


class Redactor:
    """Replaces secrets in text; learns the values of secret assignments it reads."""

    def __init__(self, secrets: Iterable[str] = (), *, patterns: bool = True) -> None:
        self._known: set[str] = set()
        self._forms: list[str] = []
        self._anchors: list[tuple[str, tuple[str, ...]]] = []
        """Per secret: a piece every one of its forms contains, and its forms."""
        self._with_patterns = patterns
        self._done: dict[str, str] = {}
        """Text → its redaction, for recent texts of CACHED_CHARS or more (cleared on learning);
        KEPT for a text with nothing to redact, so the caller gets its own object back (an
        equal copy from the cache would read as changed: a redacted walk copies what changed)."""
        self._done_chars = 0
        self._short: dict[str, str] = {}
        """The same for shorter texts (SHORT_ENTRIES)."""
        self.learn(secrets)

    @classmethod
    def from_environment(
        cls, environ: Mapping[str, str], extra_names: Iterable[str | None] = (), *, learned: Iterable[str] = ()
    ) -> Redactor:
        """Secrets from variables named like secrets, plus the named ones (configured keys),
        plus values learned before (a reconfigured workspace keeps what it had read)."""
        names = {name for name in environ if SECRET_NAME.search(name)}
        names |= {name for name in extra_names if name}
        redactor = cls(environ[name] for name in names if name in environ)
        redactor.learn(learned)
        return redactor

    @property
    def learned(self) -> frozenset[str]:
        return frozenset(self._known)

    def learn(self, values: Iterable[str]) -> None:
        """Treat each value (8 characters or more) as a secret from now on, in every form."""
        added = False
        for value in values:
            value = value.strip() if isinstance(value, str) else ""
            if len(value) >= MIN_SECRET_CHARS and value not in self._known and value != REDACTED:
                self._known.add(value)
                added = True
        if added:
            self._done, self._done_chars, self._short = {}, 0, {}
            forms = set().union(*(encoded_forms(value) for value in self._known))
            self._forms = sorted(forms, key=len, reverse=True)  # longest first: a form within a form
            self._anchors = [(_anchor(value), tuple(encoded_forms(value))) for value in self._known]

    def learn_file(self, path: Path) -> None:
        """Learn the secret assignments of a `.env`-style file (the workspace's, at open)."""
        try:
            if path.is_file() and path.stat().st_size <= ENV_FILE_BYTES:
                self.redact(path.read_text(encoding="utf-8", errors="replace"))
        except OSError:
            return

    def redact(self, text: str) -> str:
        if not text or not isinstance(text, str):
            return text
        remembered = len(text) >= CACHED_CHARS
        if remembered:
            if (done := self._done.get(text)) is not None:
                return done or text
        elif (done := self._short.get(text)) is not None:
            return done or text
        original = text
        folded = text.lower() if text.isascii() else None
        if folded is None or _has_keyword_piece(folded):
            text = self._assignments(text, folded)
            folded = text.lower() if text.isascii() else None
        if self._forms:
            text = self._replace_known(text)
            folded = text.lower() if text.isascii() else None
        if self._with_patterns:
            text = _redact_formats(text, folded)
        if text == original:
            text = original
        if remembered and len(original) <= CACHE_CHARS:
            if len(self._done) >= CACHE_ENTRIES or self._done_chars + len(original) > CACHE_CHARS:
                self._done, self._done_chars = {}, 0
            self._done[original] = KEPT if text is original else text
            self._done_chars += len(original)
        elif not remembered:
            if len(self._short) >= SHORT_ENTRIES:
                self._short = {}
            self._short[original] = KEPT if text is original else text
        return text

    def _replace_known(self, text: str) -> str:
        """Known values: `str.find` for each form first (a regex alternation of hundreds of
        literals is tried at every position), then one substitution of those present."""
        candidates = {form for anchor, forms in self._anchors if anchor in text for form in forms}
        present = tuple(form for form in self._forms if form in candidates and form in text)
        if not present:
            return text
        if len(present) == 1:
            return text.replace(present[0], REDACTED)
        return re.compile("|".join(re.escape(form) for form in present)).sub(REDACTED, text)

    def redact_optional(self, text: str | None) -> str | None:
        return None if text is None else self.redact(text)

    def redact_value(self, value: T) -> T:
        """`value` with every string inside it redacted: a pydantic model (a message, an
        event), a list, a dict's values. Unchanged parts are the same objects."""
        return _walk(self, value)  # type: ignore[no-any-return]

    def stream(self) -> StreamRedactor:
        return StreamRedactor(self)

    def held_tail(self, text: str) -> int:
        """Where the longest tail of `text` starts that is the beginning of a known secret
        (len(text) when none): a streamed text holds it back until it can tell. Such a tail
        starts with the secret's first character, so only those places are tried (this runs
        for every streamed piece)."""
        size = len(text)
        start = size
        for form in self._forms:
            first = form[0]
            place = text.find(first, max(0, size - len(form) + 1), start)
            while place >= 0:
                if form.startswith(text[place:]):
                    start = place
                    break
                place = text.find(first, place + 1, start)
        return start

    def __bool__(self) -> bool:
        return bool(self._forms) or self._with_patterns

    # -- assignments --------------------------------------------------------------------------

    def _assignments(self, text: str, folded: str | None = None) -> str:
        """Values assigned to secret-named keys, found from each keyword hit (a scan of the
        whole text for keys costs far more than the few hits there are). `folded`: the text's
        `lower()` when it is ASCII (the faster scan, same positions)."""
        spans: list[tuple[int, int]] = []
        hits = KEYWORD_IN_LOWER.finditer(folded) if folded is not None else KEYWORD.finditer(text)
        for hit in hits:
            tail = VALUE_AFTER_KEY.match(text, hit.end())
            if tail is None:
                continue
            start = hit.start()
            while start > 0 and text[start - 1] in KEY_CHARS:
                start -= 1
            key, value = text[start : hit.end()], tail.group("value")
            quoted = value[:1] in "\"'" and len(value) >= 2
            inner = value[1:-1] if quoted else value
            if not inner or inner == REDACTED or (not quoted and _looks_like_code(key, inner)):
                continue
            self.learn([_unquoted(value) if quoted else inner])
            first = tail.start("value") + (1 if quoted else 0)
            spans.append((first, first + len(inner)))
        for first, last in reversed(spans):
            text = text[:first] + REDACTED + text[last:]
        return text


class StreamRedactor:
    """Redacts a text that arrives in pieces (the model's streamed answer). A secret can be
    cut across two pieces, so the tail that might still become one is held back: the last
    word, a line that assigns a secret-named key, a private key block still open, and the
    beginning of a known secret. `flush` gives what is held when the stream ends."""

    HOLD_LIMIT = 4096
    """Held text beyond this is let go (redacted as it stands): the answer keeps moving."""

    def __init__(self, redactor: Redactor) -> None:
        self._redactor = redactor
        self._held = ""

    def feed(self, piece: str) -> str:
        # One pass per piece, inlined (this runs for every streamed piece): the cut is the
        # start of the line when it names a secret, else after the last blank; never inside an
        # open private key block or a known secret's beginning.
        text = self._held + piece
        line = text.rfind("\n") + 1
        tail = text[line:] if line else text
        if tail.isascii():
            folded = tail.lower()
            names_a_secret = _has_keyword_piece(folded) and KEYWORD_IN_LOWER.search(folded) is not None
        else:
            names_a_secret = KEYWORD.search(tail) is not None
        if names_a_secret:
            cut = line
        else:
            blank = text.rfind(" ")
            tab = text.rfind("\t")
            cut = (blank if blank > tab else tab) + 1
            if cut < line:
                cut = line
        block = text.rfind("-----BEGIN")
        if 0 <= block < cut and text.find("-----END", block) < 0:
            cut = block
        redactor = self._redactor
        if redactor._forms:
            cut = min(cut, redactor.held_tail(text))
        if len(text) - cut > self.HOLD_LIMIT:
            cut = len(text)
        if not cut:
            self._held = text
            return ""
        self._held = text[cut:]
        return redactor.redact(text[:cut])

    def flush(self) -> str:
        text, self._held = self._held, ""
        return self._redactor.redact(text)


def _has_keyword_piece(folded: str) -> bool:
    """An ASCII text's `lower()` holds a piece of every KEYWORD match (without one it holds
    no secret-named key, and the regex need not run). KEYWORD_PIECES spelled out: a chain of
    `in` tests costs a third of a generator over them, and this runs for every streamed piece."""
    return (
        "key" in folded
        or "token" in folded
        or "secret" in folded
        or "pass" in folded
        or "pwd" in folded
        or "credential" in folded
    )


def _redact_formats(text: str, folded: str | None) -> str:
    """The well-known formats, each pattern tried only where its literal occurs; `folded`:
    the text lower-cased when it is ASCII, else None."""
    size = len(text)
    if size < shortest_secret():
        return text
    for pattern in secret_patterns():
        if size < pattern.min_chars:
            continue
        needle = pattern.needle  # inlined: this loop runs for every text that leaves
        if needle:
            if pattern.case_blind:
                if folded is not None and needle not in folded:
                    continue
            elif needle not in text:
                continue
        spans = pattern.spans(text)
        if spans:
            for start, end in reversed(spans):
                text = text[:start] + REDACTED + text[end:]
            folded = text.lower() if text.isascii() else None
    return text


_UNESCAPED = re.compile(r"[A-Za-z0-9_.~-]+")
"""Characters that JSON, repr and URL encoding all leave as they are."""


def _anchor(value: str) -> str:
    """The longest run of `value` every encoded form keeps verbatim ('' when none: then
    every text is a candidate)."""
    runs = _UNESCAPED.findall(value)
    return max(runs, key=len) if runs else ""


def _looks_like_code(key: str, value: str) -> bool:
    """`token = None`, `password = password`, `self.token = token`: a program, not a secret."""
    if value.lower() in NOT_SECRETS or value.startswith("$"):
        return True
    return bool(_IDENTIFIER.fullmatch(value)) and (KEYWORD.search(value) is not None or value == key)


def _unquoted(literal: str) -> str:
    """The string a quoted literal stands for (JSON or Python quoting), else its inside."""
    try:
        value = json.loads(literal) if literal[0] == '"' else ast.literal_eval(literal)
    except (ValueError, SyntaxError):
        return literal[1:-1]
    return value if isinstance(value, str) else literal[1:-1]


_WALKED: dict[type[BaseModel], tuple[str, ...]] = {}
"""Per model class, the fields the walk visits (`_walked_fields`)."""
_SCALARS = (type(None), int, float, bool)
"""Values that hold no text: returned as they are before any other check."""


def _walked_fields(cls: type[BaseModel]) -> tuple[str, ...]:
    """The fields of `cls` that can hold text: all but KEPT_FIELDS and those declared as
    numbers, flags, literals or enums only (validated, they hold nothing else). A field
    declared as a model is always walked: it may hold a subclass with more fields."""
    return tuple(
        name for name, info in cls.model_fields.items() if name not in KEPT_FIELDS and _may_hold_text(info.annotation)
    )


def _may_hold_text(annotation: Any) -> bool:
    if annotation in _SCALARS:
        return False
    origin = typing.get_origin(annotation)
    if origin is typing.Literal:
        return False
    if origin is typing.Union or origin is types.UnionType:
        return any(_may_hold_text(arg) for arg in typing.get_args(annotation))
    return not (isinstance(annotation, type) and issubclass(annotation, enum.Enum))


def _walk(redactor: Redactor, value: Any) -> Any:
    if isinstance(value, str):
        return redactor.redact(value)
    if type(value) in _SCALARS:
        return value
    if isinstance(value, BaseModel):
        updates = {}
        cls = type(value)
        names = _WALKED.get(cls)
        if names is None:
            names = _WALKED[cls] = _walked_fields(cls)
        for name in names:
            old = getattr(value, name)
            new = _walk(redactor, old)
            if new is not old:
                updates[name] = new
        return value.model_copy(update=updates) if updates else value
    if isinstance(value, list):
        items = [_walk(redactor, item) for item in value]
        return items if any(a is not b for a, b in zip(items, value, strict=True)) else value
    if isinstance(value, tuple):
        items = [_walk(redactor, item) for item in value]
        return tuple(items) if any(a is not b for a, b in zip(items, value, strict=True)) else value
    if isinstance(value, dict):
        pairs = {key: _walk(redactor, item) for key, item in value.items()}
        return pairs if any(pairs[key] is not item for key, item in value.items()) else value
    return value
