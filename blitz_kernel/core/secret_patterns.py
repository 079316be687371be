"""Well-known secret formats, taken from the `detect-secrets` plugins rather than typed here.

Every regex-based detector of `detect-secrets` (AWS, GitHub, GitLab, Slack, Stripe, OpenAI,
JWT, SendGrid, Twilio, npm, PyPI, …) contributes its `denylist`. Left out: public IP addresses
(not secrets, and an agent reads logs full of them) and the high-entropy and keyword scanners
(they judge whole files and would hide hashes and ids), and the detectors' assignment rules
(`cloudant_key = …`, `ibm_cloud_iam_api_key: …`): assignments to secret-named keys are the
assignment scan's (redact.py), and these rules cost more than all the others together on
every text (lookbehinds at every position). The private-key detector only knows a
key block's header, so its headers become whole `BEGIN … END` blocks. One pattern is added: the
`sk-…` keys of providers that `detect-secrets` does not know (its OpenAI rule needs the legacy
marker inside the key).

Every text that leaves is checked against all of them, so each pattern carries the longest
literal every match of it contains (`needle`, read from the regex's parse): a text without it
cannot match, and `str.find` rules that out far faster than a regex scanning every position.
It also carries the fewest characters a match spans: a text shorter than that is not tried.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import pkgutil
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

SKIPPED_DETECTORS = frozenset({"IPPublicDetector", "PrivateKeyDetector"})
ASSIGNMENT_RULE = "(?:(?<=\\W)|(?<=^))"
"""How `RegexBasedDetector.build_assignment_regex` begins each rule it builds."""
EXTRA_PATTERNS = (re.compile(r"(?<![A-Za-z0-9])sk-[A-Za-z0-9][A-Za-z0-9_-]{30,}"),)
MIN_GROUP_CHARS = 8
DELIMITERS = " \t\r\n=:\"'"


@dataclass(frozen=True)
class SecretPattern:
    """One format: its regex, and where in a match the secret itself lies."""

    detector: str
    regex: re.Pattern[str]
    needle: str = ""
    """A literal every match contains ('' when none is known), lower-cased for a case-blind
    regex, whose needle is trusted on ASCII text only (Unicode case folding has exceptions)."""
    case_blind: bool = False
    min_chars: int = 0
    """The fewest characters a match spans: a shorter text cannot hold one (a streamed
    answer is redacted a few words at a time, shorter than nearly every format)."""

    @classmethod
    def of(cls, detector: str, regex: re.Pattern[str]) -> SecretPattern:
        return cls(detector, regex, required_literal(regex), bool(regex.flags & re.IGNORECASE), shortest_match(regex))

    def spans(self, text: str) -> list[tuple[int, int]]:
        """The secret's span in each match: the longest captured group when the detector
        captures the secret (an assignment's value), else the match less its delimiters."""
        spans = []
        for match in self.regex.finditer(text):
            groups = [i for i in range(1, (self.regex.groups or 0) + 1) if match.group(i)]
            best = max(groups, key=lambda i: len(match.group(i)), default=None)
            if best is not None and len(match.group(best)) >= MIN_GROUP_CHARS:
                spans.append(match.span(best))
                continue
            start, end = match.span()
            while start < end and text[start] in DELIMITERS:
                start += 1
            while end > start and text[end - 1] in DELIMITERS:
                end -= 1
            if end > start:
                spans.append((start, end))
        return spans


@functools.cache
def secret_patterns() -> tuple[SecretPattern, ...]:
    """The formats, loaded once (importing the plugins takes a few milliseconds)."""
    import detect_secrets.plugins as plugins
    from detect_secrets.plugins.base import RegexBasedDetector
    from detect_secrets.plugins.private_key import PrivateKeyDetector

    found: list[SecretPattern] = []
    for module_info in sorted(pkgutil.iter_modules(plugins.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{plugins.__name__}.{module_info.name}")
        for name, detector in inspect.getmembers(module, inspect.isclass):
            if detector.__module__ != module.__name__ or name in SKIPPED_DETECTORS:
                continue
            if issubclass(detector, RegexBasedDetector) and not inspect.isabstract(detector):
                rules: Iterable[re.Pattern[str]] = detector.denylist  # type: ignore[assignment]  # a class attribute
                found.extend(
                    SecretPattern.of(name, regex) for regex in rules if not regex.pattern.startswith(ASSIGNMENT_RULE)
                )
    headers: Iterable[re.Pattern[str]] = PrivateKeyDetector.denylist  # type: ignore[assignment]
    for header in headers:
        block = rf"-----{header.pattern}-----[\s\S]*?(?:-----END[^\n]*?-----|\Z)"
        found.append(SecretPattern.of("PrivateKeyDetector", re.compile(block)))
    found.extend(SecretPattern.of("provider sk- key", regex) for regex in EXTRA_PATTERNS)
    return tuple(found)


def required_literal(regex: re.Pattern[str]) -> str:
    """The longest run of literal characters on the regex's top-level path (groups entered,
    everything else breaking the run): every match contains it. '' when the parse is not
    understood (the pattern is then always run)."""
    parsed = _parse(regex)
    if parsed is None:
        return ""
    runs: list[str] = []
    _literal_runs(parsed, runs, [])
    best = max(runs, key=len, default="")
    return best.lower() if regex.flags & re.IGNORECASE else best


def shortest_match(regex: re.Pattern[str]) -> int:
    """The fewest characters any match of `regex` spans (the parser's lower width bound);
    0 when the parse is not understood (the pattern is then always run)."""
    parsed = _parse(regex)
    try:
        return max(0, int(parsed.getwidth()[0])) if parsed is not None else 0
    except Exception:  # noqa: BLE001 - a private module: any surprise means "no bound"
        return 0


@functools.cache
def shortest_secret() -> int:
    """The fewest characters any well-known format spans: a shorter text holds none."""
    return min((pattern.min_chars for pattern in secret_patterns()), default=0)


def _parse(regex: re.Pattern[str]) -> Any:
    """The regex's parse tree from `re`'s own parser, or None when it cannot be had (a
    private module: any surprise means nothing is known about the pattern)."""
    try:
        return importlib.import_module("re._parser").parse(regex.pattern, regex.flags)
    except Exception:  # noqa: BLE001 - see above
        return None


def _literal_runs(parsed: Any, runs: list[str], current: list[str]) -> None:
    for op, argument in parsed:
        name = str(op)
        if name == "LITERAL":
            current.append(chr(argument))
            continue
        if name == "SUBPATTERN" and not argument[1] and not argument[2]:  # a group, flags unchanged
            _literal_runs(argument[3], runs, current)
            continue
        if current:
            runs.append("".join(current))
            current.clear()
    if current:
        runs.append("".join(current))
        current.clear()
