"""The redactor's fast paths give what the full scan gives: a pattern is skipped only when its
literal is missing or the text is shorter than any of its matches, and a remembered text is
forgotten once a new secret is learned."""

from __future__ import annotations

import re

import pytest

from blitz_kernel.core.redact import CACHED_CHARS, REDACTED, Redactor
from blitz_kernel.core.secret_patterns import SecretPattern, required_literal, secret_patterns, shortest_match

GITHUB_TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
SLACK_HOOK = "https://hooks.slack.com/services/T0000AAAA/B0000BBBB/abcdefghijklmnop"


def full_scan(text: str) -> str:
    """The well-known formats applied without any needle (what the redactor did before)."""
    for pattern in secret_patterns():
        for start, end in reversed(pattern.spans(text)):
            text = text[:start] + REDACTED + text[end:]
    return text


def test_required_literal_is_on_every_path_of_the_regex():
    assert required_literal(re.compile(r"(?:\s|=|:|^)AKC[a-zA-Z0-9]{10,}")) == "AKC"
    assert (
        required_literal(re.compile(r"(?:http|https)://api\.x\.com/(?:v3|v4)")) == "://api.x.com/v"
    )  # the parser factors out the branches' common "v"
    assert required_literal(re.compile(r"a|b")) == ""
    assert required_literal(re.compile(r"Token-[0-9]+", re.IGNORECASE)) == "token-"


def test_shortest_match_is_the_regex_lower_bound():
    assert shortest_match(re.compile(r"ab{3,}c")) == 5
    assert shortest_match(re.compile(r"(?<![A-Za-z0-9])sk-[A-Za-z0-9][A-Za-z0-9_-]{30,}")) == 34
    assert shortest_match(re.compile(r"(?:\s|^)AP[0-9]{8,}(?:\s|$)")) == 10  # anchors span nothing
    assert shortest_match(re.compile(r"x*")) == 0


def test_no_match_of_any_pattern_is_shorter_than_its_bound():
    samples = [GITHUB_TOKEN, SLACK_HOOK, "AKIA" + "ABCDEFGHIJKLMNOP", "xoxb-1234-abcdef", "sk-" + "x" * 40, "eyJa.b.c"]
    matched = 0
    for pattern in secret_patterns():
        for sample in samples:
            for match in pattern.regex.finditer(sample):
                matched += 1
                assert len(match.group(0)) >= pattern.min_chars, (pattern.detector, pattern.min_chars)
    assert matched >= len(samples)


@pytest.mark.parametrize("secret", [GITHUB_TOKEN, "AKIA" + "ABCDEFGHIJKLMNOP", "eyJa.b.c", "sk-" + "x" * 40])
def test_a_secret_streamed_a_few_characters_at_a_time_is_still_redacted(secret):
    redactor = Redactor()
    stream = redactor.stream()
    text = f"here it is {secret} and more words after it"
    shown = "".join(stream.feed(text[i : i + 3]) for i in range(0, len(text), 3)) + stream.flush()
    assert secret not in shown and REDACTED in shown
    assert shown == full_scan(text)


def test_every_pattern_with_a_needle_finds_it_in_its_matches():
    samples = [GITHUB_TOKEN, SLACK_HOOK, "AKIA" + "ABCDEFGHIJKLMNOP", "xoxb-1234-abcdef", "sk-" + "x" * 40]
    for pattern in secret_patterns():
        for sample in samples:
            for match in pattern.regex.finditer(sample):
                folded = match.group(0).lower() if pattern.case_blind else match.group(0)
                assert pattern.needle in folded, (pattern.detector, pattern.needle)


@pytest.mark.parametrize(
    "text",
    [
        f"token is {GITHUB_TOKEN} here",
        f"hook: {SLACK_HOOK.upper()}",  # a case-blind pattern on upper-case text
        f"hook ünïcode {SLACK_HOOK.replace('https', 'HTTPS')}",  # not ASCII: every pattern runs
        "plain words with nothing secret in them at all, long enough to be remembered",
        "x" * 200,
    ],
)
def test_formats_redact_as_the_full_scan_does(text):
    assert Redactor(patterns=True).redact(text) == full_scan(text)


def test_a_remembered_text_is_redacted_again_after_learning_a_secret():
    redactor = Redactor()
    text = "the warehouse answered with hunter2-correct-horse, as the log of this run shows"
    assert len(text) >= CACHED_CHARS
    assert redactor.redact(text) == text
    redactor.learn(["hunter2-correct-horse"])
    assert "hunter2-correct-horse" not in redactor.redact(text)


def test_a_short_text_is_remembered_and_forgotten_on_learning_like_a_long_one():
    redactor = Redactor()
    text = "key hunter2-correct-horse"
    assert len(text) < CACHED_CHARS
    assert redactor.redact(text) == text
    assert redactor.redact(text) == text  # the remembered answer
    redactor.learn(["hunter2-correct-horse"])
    assert redactor.redact(text) == f"key {REDACTED}"
    assert redactor.redact("token=sw0rdf1sh-2024") == f"token={REDACTED}"  # learned while redacting
    assert redactor.redact("sw0rdf1sh-2024") == REDACTED


def test_short_texts_streamed_past_do_not_grow_the_memory_without_bound():
    from blitz_kernel.core.redact import SHORT_ENTRIES

    redactor = Redactor()
    for n in range(3 * SHORT_ENTRIES):
        redactor.redact(f"piece {n}")
    assert len(redactor._short) <= SHORT_ENTRIES


def test_an_assignment_learned_while_redacting_reaches_remembered_texts():
    redactor = Redactor()
    later = "and then the value s3cr3t-value-42 was printed alone, far into a long output line"
    assert redactor.redact(later) == later
    redactor.redact("WAREHOUSE_TOKEN=s3cr3t-value-42")
    assert "s3cr3t-value-42" not in redactor.redact(later)


def test_keyword_prefilter_keeps_non_ascii_keys():
    # The Kelvin sign folds to "k": only the regex knows, so non-ASCII text always runs it.
    text = "API_\u212aEY=abcdefgh12345"
    assert "abcdefgh12345" not in Redactor(patterns=False).redact(text)


def test_secret_pattern_default_has_no_needle():
    pattern = SecretPattern("x", re.compile("abc"))
    assert pattern.needle == "" and not pattern.case_blind


def held_tail_by_every_size(redactor: Redactor, text: str) -> int:
    """The held tail found by trying every size of every form (the slow, obvious way)."""
    start = len(text)
    for form in redactor._forms:
        for size in range(min(len(form) - 1, len(text)), 0, -1):
            if text.endswith(form[:size]):
                start = min(start, len(text) - size)
                break
    return start


def test_held_tail_tries_only_where_a_secret_begins_and_finds_what_every_size_finds():
    import random

    rng = random.Random(11)
    secrets = ["abcabcabd-secret", "zzzz-token-9876", "a" * 12, "x+y/z=w&q 1234"]
    redactor = Redactor(secrets, patterns=False)
    alphabet = "abcdz-+/ %xyt0123"
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30)))
        if rng.random() < 0.5:
            form = rng.choice(redactor._forms)
            text += form[: rng.randint(1, len(form) - 1)]
        assert redactor.held_tail(text) == held_tail_by_every_size(redactor, text), text


def test_the_walk_skips_only_fields_that_cannot_hold_text():
    from typing import Literal

    from pydantic import BaseModel

    from blitz_kernel.core.redact import _walked_fields

    class Inner(BaseModel):
        count: int = 0

    class WithNote(Inner):
        note: str = ""

    class Event(BaseModel):
        type: Literal["x"] = "x"
        ok: bool = True
        size: int | None = None
        ratio: float = 0.0
        text: str = ""
        maybe: str | None = None
        inner: Inner = Inner()
        extra: dict[str, object] = {}

    assert _walked_fields(Event) == ("text", "maybe", "inner", "extra")
    event = Event(text=f"a {GITHUB_TOKEN}", inner=WithNote(note=f"b {GITHUB_TOKEN}"), extra={"k": GITHUB_TOKEN})
    redacted = Redactor().redact_value(event)
    assert GITHUB_TOKEN not in repr(redacted)  # a subclass in a model-typed field is walked too
    assert redacted.inner.note == f"b {REDACTED}" and redacted.extra == {"k": REDACTED}


def test_the_keyword_piece_check_knows_every_piece_and_nothing_else():
    from blitz_kernel.core.redact import KEYWORD, KEYWORD_PIECES, _has_keyword_piece

    assert all(_has_keyword_piece(f"my {piece} here") for piece in KEYWORD_PIECES)
    assert not _has_keyword_piece("plain words: a kernel, a session, a cell")
    alternatives = KEYWORD.pattern.strip("(?:)").replace("[_-]?", "").replace("s?", "").split("|")
    assert all(_has_keyword_piece(word) for word in alternatives)  # every KEYWORD match holds a piece


@pytest.mark.parametrize("size", [8, CACHED_CHARS * 2])
def test_a_remembered_text_with_nothing_to_redact_comes_back_as_the_callers_own_object(size):
    """An equal copy from the memory would read as a change: redacting a model walks its
    fields and copies the model when one of them is not the object it was."""
    from blitz_kernel.core.history import ToolCall

    redactor = Redactor()
    first = "".join(["plain text "] * size)
    again = "".join(["plain text "] * size)  # equal, another object
    assert again is not first and redactor.redact(first) is first
    assert redactor.redact(again) is again
    call = ToolCall(id="c1", name="read_file", arguments='{"path": "data.csv"}')
    redactor.redact_value(call)
    copy = ToolCall(id="c1", name="".join(["read_", "file"]), arguments="".join(['{"path": ', '"data.csv"}']))
    assert redactor.redact_value(copy) is copy
    assert (
        redactor.redact(f"token = {GITHUB_TOKEN}")
        == redactor.redact(f"token = {GITHUB_TOKEN}")
        != f"token = {GITHUB_TOKEN}"
    )
