"""What the Blitz side panel shows (docs/panel.md): a workspace's sessions, search across them,
one session's transcript, its usage per model, its budget and its audit trail.

It runs in the Jupyter server, so it works with no kernel running. The workspace is the folder
of the notebook the panel is showing; its store is the one a kernel there would use (the same
configuration layers, trust and admin policy: `store.url`, the session budget), opened the
same way, and read only through the store protocol's reads — no session lock is taken and no
session is opened, created or changed. A workspace without a store file yet has no sessions
(the panel never creates one). On Postgres a user sees only their own sessions, as in a kernel.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, Field

from ..core.history import Message
from ..core.store_url import is_postgres, sqlite_path, store_url
from ..core.usage import UsageLedger, UsageTotals
from ..engine.store.factory import open_store
from ..engine.store.link import StoreLink
from ..engine.store.protocol import HIGHLIGHT, SessionStore, StoreError
from ..engine.store.records import StoredSession, TurnUsage, role_and_text
from ..engine.store.sqlite.store import DB_NAME
from ..errors import BlitzError
from .completion import Workspaces

T = TypeVar("T")
SEARCH_LIMIT = 30
MAX_QUERY = 500


class PanelError(BlitzError):
    """A request the panel refuses: no such session, a path outside the server's root."""


class SessionRow(BaseModel):
    """One session in the panel's list."""

    name: str
    turns: int
    created: float
    last_used: float
    cost_usd: float
    priced: bool
    input_tokens: int
    output_tokens: int
    held_by: str | None = None
    """Who holds it now ("pid 4242 on host …"), when a kernel does."""


class SessionList(BaseModel):
    """`GET /blitz/panel/sessions`: the workspace's sessions, the most recently used first."""

    workspace: str
    store: str | None
    """Where the store lives (`.blitz/blitz.db`, a Postgres URL without its password)."""
    problem: str | None = None
    """Why there is nothing to show (no store yet, a configuration or store that fails)."""
    sessions: list[SessionRow] = Field(default_factory=list)


class Part(BaseModel):
    """A piece of an excerpt: matched text is shown highlighted."""

    text: str
    match: bool = False


class Hit(BaseModel):
    """One passage that matched, best first."""

    session: str
    message: int
    turn: int
    role: str
    time: float
    parts: list[Part]
    compacted: bool
    rewound: bool


class SearchReply(BaseModel):
    """`GET /blitz/panel/search`."""

    query: str
    hits: list[Hit]
    problem: str | None = None


class TranscriptEntry(BaseModel):
    role: str
    text: str
    compacted: bool
    """Compaction replaced it with a summary: the model no longer sees it."""


class Transcript(BaseModel):
    """`GET /blitz/panel/transcript`: the session's messages, compacted ones first."""

    name: str
    turns: int
    messages: list[TranscriptEntry]


class ModelUsage(BaseModel):
    model: str
    totals: UsageTotals


class DayUsage(BaseModel):
    """What one model spent on one day (the server's local date, `YYYY-MM-DD`)."""

    day: str
    model: str
    totals: UsageTotals


class UsageReply(BaseModel):
    """`GET /blitz/panel/usage`: usage per model and per day and model, of one session or of
    all of them. A turn's usage counts on the day it ended; what a session spent outside its
    kept turn ledgers (turns from before they were kept) counts on the day it was last used."""

    session: str | None
    total: UsageTotals
    by_model: list[ModelUsage]
    by_day: list[DayUsage]


class BudgetReply(BaseModel):
    """`GET /blitz/panel/budget`: the session budget (`limits.max_cost_usd_session` plus what
    `%blitz_usage --add-budget` added) and what is left; no limit when none is set."""

    session: str
    limit_usd: float | None
    added_usd: float
    spent_usd: float
    left_usd: float | None
    tripped: bool


class AuditEntry(BaseModel):
    turn: int
    time: str
    tool: str
    decision: str
    decided_by: str
    status: str
    arguments: str
    reason: str | None = None
    agent: str | None = None
    caller: str | None = None


class AuditReply(BaseModel):
    """`GET /blitz/panel/audit`: the session's tool calls, filtered; `tools` and `decisions`
    are every value present, for the filter menus."""

    session: str
    records: list[AuditEntry]
    tools: list[str]
    decisions: list[str]


def split_excerpt(excerpt: str) -> list[Part]:
    """An excerpt with « » marks as plain and matched parts (the marks themselves dropped)."""
    parts: list[Part] = []
    rest = excerpt
    while rest:
        start = rest.find(HIGHLIGHT[0])
        end = rest.find(HIGHLIGHT[1], start + 1) if start >= 0 else -1
        if start < 0 or end < 0:
            parts.append(Part(text=rest))
            break
        if start:
            parts.append(Part(text=rest[:start]))
        parts.append(Part(text=rest[start + 1 : end], match=True))
        rest = rest[end + 1 :]
    return parts


class Panel:
    """The panel's reads for every notebook folder under one server's root. Each folder's store
    is opened once and kept; one that fails is dropped and opened again on the next request."""

    def __init__(self, workspaces: Workspaces) -> None:
        self.workspaces = workspaces
        self._links: dict[tuple[Path, str | None], StoreLink] = {}

    def close(self) -> None:
        for link in self._links.values():
            if link.store is not None:
                link.store.close()
        self._links.clear()

    def sessions(self, notebook: str) -> SessionList:
        folder = self.workspaces.folder_of(notebook)
        shown = str(folder.relative_to(self.workspaces.root_dir)) or "."
        try:
            link = self._link(folder)
        except BlitzError as error:
            return SessionList(workspace=shown, store=None, problem=str(error))
        if link is None:
            return SessionList(workspace=shown, store=None, problem="no sessions saved in this folder yet")
        store = link.store
        if store is None:
            return SessionList(workspace=shown, store=None, problem=link.problem)
        try:
            infos = store.sessions()
        except StoreError as error:
            self._drop(folder)
            return SessionList(workspace=shown, store=store.location, problem=str(error))
        rows = [
            SessionRow(
                name=info.name,
                turns=info.turns,
                created=info.created,
                last_used=info.last_used,
                cost_usd=info.usage.cost_usd,
                priced=info.usage.priced,
                input_tokens=info.usage.input_tokens,
                output_tokens=info.usage.output_tokens,
                held_by=_holder(link, info.name),
            )
            for info in infos
        ]
        rows.sort(key=lambda row: row.last_used, reverse=True)
        return SessionList(workspace=shown, store=store.location, sessions=rows)

    def search(self, notebook: str, text: str, session: str | None = None) -> SearchReply:
        query = text.strip()[:MAX_QUERY]
        if not query:
            return SearchReply(query="", hits=[])
        try:
            stored = self._read(notebook, lambda store: store.search(query, session, SEARCH_LIMIT))
        except PanelError as error:
            return SearchReply(query=query, hits=[], problem=str(error))
        hits = [
            Hit(
                session=hit.session,
                message=hit.message,
                turn=hit.turn,
                role=hit.role,
                time=hit.time,
                parts=split_excerpt(hit.excerpt),
                compacted=hit.compacted,
                rewound=hit.rewound,
            )
            for hit in stored
        ]
        return SearchReply(query=query, hits=hits)

    def transcript(self, notebook: str, name: str) -> Transcript:
        session = self._session(notebook, name)
        entries = [_entry(message, compacted=True) for message in session.archive]
        entries += [_entry(message, compacted=False) for message in session.history]
        return Transcript(name=session.name, turns=session.turns, messages=entries)

    def usage(self, notebook: str, name: str | None = None) -> UsageReply:
        infos = self._read(notebook, lambda store: store.sessions())
        chosen = [info for info in infos if name is None or info.name == name]
        if name is not None and not chosen:
            raise PanelError(f"no session {name!r} in this folder")
        total, models, days = UsageTotals(), dict[str, UsageTotals](), dict[tuple[str, str], UsageTotals]()
        for info in chosen:
            ledger = self._session(notebook, info.name).ledger
            turns = self._turns(notebook, info.name)
            total.merge(ledger.total)
            for model, totals in ledger.by_model.items():
                models.setdefault(model, UsageTotals()).merge(totals)
            for key, totals in per_day(turns, ledger, info.last_used).items():
                days.setdefault(key, UsageTotals()).merge(totals)
        by_day = [DayUsage(day=day, model=model, totals=days[day, model]) for day, model in sorted(days)]
        return UsageReply(session=name, total=total, by_model=_by_model(models), by_day=by_day)

    def budget(self, notebook: str, name: str) -> BudgetReply:
        session = self._session(notebook, name)
        folder = self.workspaces.folder_of(notebook)
        limit = self.workspaces.configuration(folder).config.limits.max_cost_usd_session
        spent = session.ledger.total.cost_usd
        whole = None if limit is None else limit + session.budget_added_usd
        return BudgetReply(
            session=name,
            limit_usd=limit,
            added_usd=session.budget_added_usd,
            spent_usd=spent,
            left_usd=None if whole is None else max(0.0, whole - spent),
            tripped=session.budget_tripped,
        )

    def audit(self, notebook: str, name: str, tool: str | None = None, decision: str | None = None) -> AuditReply:
        records = self._session(notebook, name).audit
        shown = [
            AuditEntry(
                turn=record.turn,
                time=record.time.isoformat(),
                tool=record.tool,
                decision=record.decision,
                decided_by=str(record.decided_by),
                status=str(record.status),
                arguments=record.arguments,
                reason=record.reason,
                agent=record.agent,
                caller=record.caller,
            )
            for record in records
            if (tool is None or record.tool == tool) and (decision is None or record.decision == decision)
        ]
        return AuditReply(
            session=name,
            records=shown,
            tools=sorted({record.tool for record in records}),
            decisions=sorted({record.decision for record in records}),
        )

    # -- the store ----------------------------------------------------------------------------

    def _session(self, notebook: str, name: str) -> StoredSession:
        session = self._read(notebook, lambda store: store.read_session(name))
        if session is None:
            raise PanelError(f"no session {name!r} in this folder")
        return session

    def _turns(self, notebook: str, name: str) -> list[TurnUsage]:
        return self._read(notebook, lambda store: store.turn_usage(name))

    def _read(self, notebook: str, action: Callable[[SessionStore], T]) -> T:
        """`action` on the folder's store; PanelError saying why when there is none."""
        folder = self.workspaces.folder_of(notebook)
        link = self._link(folder)
        if link is None:
            raise PanelError("no sessions saved in this folder yet")
        if link.store is None:
            raise PanelError(link.problem or "the session store cannot be used")
        try:
            return action(link.store)
        except StoreError as error:
            self._drop(folder)
            raise PanelError(str(error)) from None

    def _link(self, folder: Path) -> StoreLink | None:
        """The folder's store as its configuration names it; None when it has none yet. A
        configuration that does not load (a bad admin policy) raises, so nothing is shown."""
        configuration = self.workspaces.configuration(folder)
        settings = configuration.config.store
        url = store_url(settings.url, settings.path)
        key = (folder, url)
        link = self._links.get(key)
        if link is not None and link.store is not None:
            return link
        if not is_postgres(url) and not _sqlite_file(url, folder).is_file():
            return None  # a kernel creates the store; the panel never does
        link = open_store(url, workspace=folder, home=self.workspaces.home, viewer=True)
        if link.store is not None:
            self._links[key] = link
        return link

    def _drop(self, folder: Path) -> None:
        for key in [key for key in self._links if key[0] == folder]:
            link = self._links.pop(key)
            if link.store is not None:
                with contextlib.suppress(StoreError):
                    link.store.close()


def per_day(turns: list[TurnUsage], final: UsageLedger, last_used: float) -> dict[tuple[str, str], UsageTotals]:
    """(day, model) → what was spent then: each kept turn ledger less the one before it, on
    the day the turn ended; the rest of `final` on the day of `last_used`. The parts add up
    to `final` exactly."""
    spent: dict[tuple[str, str], UsageTotals] = {}
    before: dict[str, UsageTotals] = {}
    for turn in turns:
        if turn.ledger is None or turn.ended is None:
            continue
        for model, totals in turn.ledger.by_model.items():
            _add(spent, (_day(turn.ended), model), _minus(totals, before.get(model)))
        before = dict(turn.ledger.by_model)
    for model, totals in final.by_model.items():
        _add(spent, (_day(last_used), model), _minus(totals, before.get(model)))
    return spent


def _add(spent: dict[tuple[str, str], UsageTotals], key: tuple[str, str], part: UsageTotals) -> None:
    if part.calls or part.input_tokens or part.output_tokens or part.cost_usd:
        spent.setdefault(key, UsageTotals()).merge(part)


def _minus(later: UsageTotals, earlier: UsageTotals | None) -> UsageTotals:
    if earlier is None:
        return later.model_copy()
    return UsageTotals(
        input_tokens=max(0, later.input_tokens - earlier.input_tokens),
        cached_tokens=max(0, later.cached_tokens - earlier.cached_tokens),
        cache_write_tokens=max(0, later.cache_write_tokens - earlier.cache_write_tokens),
        output_tokens=max(0, later.output_tokens - earlier.output_tokens),
        cost_usd=max(0.0, later.cost_usd - earlier.cost_usd),
        priced=later.priced,
        calls=max(0, later.calls - earlier.calls),
    )


def _day(when: float) -> str:
    return datetime.fromtimestamp(when).date().isoformat()


def _sqlite_file(url: str | None, folder: Path) -> Path:
    return folder / ".blitz" / DB_NAME if url is None else sqlite_path(url, folder)


def _holder(link: StoreLink, name: str) -> str | None:
    if link.locks is None:
        return None
    holder = link.locks.holder(name)
    return None if holder is None else holder.describe()


def _entry(message: Message, *, compacted: bool) -> TranscriptEntry:
    role, text = role_and_text(message)
    return TranscriptEntry(role=role, text=text, compacted=compacted)


def _by_model(models: dict[str, UsageTotals]) -> list[ModelUsage]:
    return [ModelUsage(model=model, totals=totals) for model, totals in sorted(models.items())]
