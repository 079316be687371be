"""The magics: `%%blitz` and the commands around it (docs/magics.md).

Options parse with IPython's magic_arguments; a wrong option is a UsageError that shows the
usage line and calls no model. `%%blitz` returns a coroutine that the await transformer makes
the cell await, so the turn runs on the kernel's own loop (docs/architecture.md).

`%load_ext` imports this module, so it imports no engine module (nor pydantic) at the top:
each magic imports what it needs when it runs, by which time the extension's background
warm-up has usually loaded the engine already.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import keyword
import math
import os
import re
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_cell_magic, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring

from ..errors import BlitzError, ConfigError
from .help_text import HELP

if TYPE_CHECKING:
    from ..engine.store.sessions import SessionBook
    from ..engine.turn.options import RunOptions
    from ..engine.turn.setup import TurnResult
    from ..engine.turn.structured import OutputSchema
    from ..engine.workspace import Workspace

FAILING_STOPS = {"error", "max_turns", "max_cost", "timeout", "blocked", "watchdog"}


class BlitzCellError(Exception):
    """Fails the cell (so papermill and nbval notice) with one readable line, no traceback."""

    headline = "Blitz"

    def _render_traceback_(self) -> list[str]:
        """IPython shows these lines instead of a traceback."""
        return [f"\x1b[0;31m{self.headline}:\x1b[0m {self}"]


class TurnFailedError(BlitzCellError):
    """A turn ended in error or at a limit."""

    def __init__(self, result: TurnResult) -> None:
        self.result = result
        self.headline = f"Blitz turn stopped ({result.stop_reason})"
        super().__init__(result.error)


@contextlib.contextmanager
def usage_errors() -> Iterator[None]:
    """Our errors (bad config, unknown agent, bad option values) and ValueErrors from parsing
    become a one-line UsageError: the user made a choice we cannot take, no traceback helps."""
    try:
        yield
    except (BlitzError, ValueError) as exc:
        raise UsageError(str(exc)) from None


IPYTHON_NAMES = re.compile(r"_+|_i{1,3}|_i?\d+|_ih|_oh|_dh|In|Out|get_ipython|exit|quit")
"""Names IPython keeps its history and output cache under: `--out _` would be overwritten by
the next result, or overwrite the cache."""


def _whose(name: str) -> str:
    return f"IPython's {name}" if IPYTHON_NAMES.fullmatch(name) else f"the builtin {name}"


def positive_option(kind: type, value: str, option: str) -> Any:
    try:
        number = kind(value)
    except ValueError:
        raise UsageError(f"{option} expects a number, got {value!r}") from None
    if not math.isfinite(number):  # nan would pass every comparison below
        raise UsageError(f"{option} must be a finite number, got {value}")
    if number <= 0:
        raise UsageError(f"{option} must be positive, got {value}")
    return number


@contextlib.contextmanager
def interrupt_is_one_line(what: str) -> Iterator[None]:
    """■ (a kernel interrupt, or a second Stop) arriving as a cancellation outside a turn (the
    engine turns one inside a turn into the stop reason `cancelled`) ends the cell with one
    line saying what did not happen, not with a CancelledError traceback."""
    try:
        yield
    except asyncio.CancelledError:
        task = asyncio.current_task()
        if task is not None:
            task.uncancel()
        raise BlitzCellError(f"interrupted: {what}") from None


def name_option(value: str | None, option: str, magic: Any) -> str | None:
    """An option that names something, without the quotes IPython's argument splitting keeps
    (`-s 'my session'` names `my session`); never empty (None: not given)."""
    if value is None:
        return None
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        value = value[1:-1]
    if not value.strip():
        raise UsageError(f"{option} needs a name, got an empty one\n{usage_line(magic)}")
    return value


def usage_line(magic: Any) -> str:
    """The magic's usage as one readable line (magic_arguments formats it as reST)."""
    words = magic.parser.format_usage().replace("::", " ").split()
    if words and magic.__name__ == "blitz":
        words[0] = "%%blitz"
    return "usage: " + " ".join(words)


def default_session_name(user_ns: dict[str, Any]) -> str:
    """The notebook's default session: derived from its path, `default` when unknown."""
    path = os.environ.get("JPY_SESSION_NAME") or user_ns.get("__session__")
    if not path or not isinstance(path, str):
        return "default"
    return Path(path).stem or "default"


@magics_class
class BlitzMagics(Magics):
    """Holds the kernel's Workspace (created on first use, so `%load_ext` stays fast)."""

    def __init__(self, shell: Any) -> None:
        super().__init__(shell)
        self._workspace: Workspace | None = None
        self._session_in_use: str | None = None
        """Set by `%blitz_session use/new/load`; else the notebook's own session."""
        self.cell_turns: dict[int, tuple[str, int]] = {}
        """Execution count of a `%%blitz` cell → (session, turn index), for `%blitz_replay CELL`."""

    def _current_session(self) -> str:
        return self._session_in_use or default_session_name(self._user_ns)

    def current_session(self) -> str:
        """The session `%%blitz` uses now (outside calls land in it, so `%blitz_undo` finds them)."""
        return self._current_session()

    @property
    def _user_ns(self) -> dict[str, Any]:
        assert self.shell is not None, "the magics are registered on a shell"
        namespace: dict[str, Any] = self.shell.user_ns
        return namespace

    def workspace(self) -> Workspace:
        if self._workspace is None:
            from ..engine.workspace import Workspace
            from .kernel_context import IPythonKernelContext

            with usage_errors():
                self._workspace = Workspace.open(os.getcwd(), kernel=IPythonKernelContext(self.shell))
        return self._workspace

    def _parse(self, magic: Any, line: str) -> Any:
        try:
            return parse_argstring(magic, line)
        except (UsageError, ValueError) as exc:  # ValueError: shlex's "No closing quotation"
            raise UsageError(f"{exc}\n{usage_line(magic)}") from None

    # -- %%blitz ----------------------------------------------------------------------------

    @magic_arguments()
    @argument("-s", "--session", help="session to use (default: from the notebook's path)")
    @argument("-a", "--agent", help="agent for this turn only")
    @argument("-m", "--model", help="model for this turn only (litellm name or scripted:PATH)")
    @argument("--plan", action="store_true", help="plan-only turn")
    @argument("--think", choices=["off", "low", "medium", "high"], help="how hard the model thinks this turn")
    @argument("--max-turns", help="cap on model calls")
    @argument("--max-cost", help="cost ceiling for this turn in USD")
    @argument("--timeout", help="wall-clock limit in seconds")
    @argument("--tools", help="allowed tools for this turn, comma-separated")
    @argument("--approve", choices=["ask", "allow", "deny"], help="approval policy for mutating tools")
    @argument("-o", "--out", help="store the TurnResult in this variable")
    @argument(
        "--schema", help="end with data of this shape: a pydantic model class or JSON-schema dict in the namespace"
    )
    @argument("--plain", action="store_true", help="plain text/markdown output, no widget")
    @cell_magic
    def blitz(self, line: str, cell: str) -> Coroutine[Any, Any, None]:
        """Run one agent turn; the cell body is the prompt."""
        from ..engine.turn.modes import TurnMode
        from ..engine.turn.options import RunOptions

        args = self._parse(self.blitz, line)
        prompt = cell.strip()
        if not prompt:
            raise UsageError("the cell body is the prompt, and it is empty")
        args.session = name_option(args.session, "--session", self.blitz)
        args.agent = name_option(args.agent, "--agent", self.blitz)
        args.model = name_option(args.model, "--model", self.blitz)
        args.out = name_option(args.out, "--out", self.blitz)
        if args.out is not None and (not args.out.isidentifier() or keyword.iskeyword(args.out)):
            raise UsageError(f"--out needs a Python variable name, got {args.out!r}\n{usage_line(self.blitz)}")
        if args.out is not None and (args.out in vars(builtins) or IPYTHON_NAMES.fullmatch(args.out)):
            raise UsageError(
                f"--out {args.out!r} would replace {_whose(args.out)}; choose another name\n{usage_line(self.blitz)}"
            )
        with usage_errors():
            options = RunOptions(
                agent=args.agent,
                model=args.model,
                mode=TurnMode.PLAN if args.plan else TurnMode.NORMAL,
                max_turns=positive_option(int, args.max_turns, "--max-turns") if args.max_turns else None,
                max_cost_usd=positive_option(float, args.max_cost, "--max-cost") if args.max_cost else None,
                timeout_s=positive_option(float, args.timeout, "--timeout") if args.timeout else None,
                tools=tuple(t.strip() for t in args.tools.split(",") if t.strip()) if args.tools is not None else None,
                approve=args.approve,
                output=self._schema(name_option(args.schema, "--schema", self.blitz)),
                reasoning=args.think,
            )
        workspace = self.workspace()
        session = args.session or self._current_session()
        return self._run_turn(workspace, prompt, session, options, args.out, plain=args.plain)

    def _schema(self, name: str | None) -> OutputSchema | None:
        """`--schema NAME`: the namespace's model class or dict (RunOptionError: not one)."""
        from ..engine.turn.structured import output_schema

        if name is not None and name not in self._user_ns:
            raise UsageError(f"--schema: no variable {name!r} in the namespace\n{usage_line(self.blitz)}")
        return output_schema(self._user_ns[name], name) if name is not None else None

    def _remember_cell(self, result: TurnResult) -> None:
        count = getattr(self.shell, "execution_count", None)  # the running cell is In[count - 1]
        if isinstance(count, int):
            self.cell_turns[count - 1] = (result.session, result.turn_index)

    async def _run_turn(
        self, workspace: Workspace, prompt: str, session: str, options: RunOptions, out: str | None, *, plain: bool
    ) -> None:
        from .live import run_turn_in_cell
        from .references import PromptReferences

        # raised before the turn started (a bad choice, or ■ while the model is looked up):
        # nothing was recorded
        with usage_errors(), interrupt_is_one_line("the turn was cancelled before it started"):
            references = PromptReferences(
                self.shell,
                workspace.root,
                variable_values=workspace.config.privacy.variables == "full",
                timeout_s=options.timeout_s if options.timeout_s is not None else workspace.config.limits.timeout_s,
            )
            prompt, attachments = await references.resolve(prompt)
            result = await run_turn_in_cell(
                workspace,
                prompt,
                session=session,
                options=options,
                plain=plain,
                shell=self.shell,
                attachments=attachments,
            )
        self._remember_cell(result)
        if out:
            self._user_ns[out] = result
        elif result.stop_reason in FAILING_STOPS:
            raise TurnFailedError(result)

    # -- the other magics ---------------------------------------------------------------------

    @magic_arguments()
    @argument("model", nargs="?", help="litellm model name or scripted:PATH")
    @line_magic
    def blitz_model(self, line: str) -> None:
        """Show the model, or set it for this kernel's turns. A model that cannot be built
        is a one-line error and the previous model stays."""
        args = self._parse(self.blitz_model, line)
        workspace = self.workspace()
        model = name_option(args.model, "MODEL", self.blitz_model)
        if model is not None:
            with usage_errors():
                try:
                    workspace.set_model(model)
                except ConfigError as exc:  # name the magic the user typed, not %blitz_config
                    raise ConfigError(exc.key, "%blitz_model", exc.problem) from None
        from ..config.loading import redact_url

        api_base = workspace.config.api_base
        print(f"model: {workspace.model.name}" + (f" (api_base {redact_url(api_base)})" if api_base else ""))
        pin = self._active_agent_pin(workspace)
        if pin is not None:
            agent, pinned = pin
            print(f"agent {agent!r} pins model {pinned}; {workspace.model.name} applies to agents without a pin")

    @staticmethod
    def _active_agent_pin(workspace: Workspace) -> tuple[str, str] | None:
        """(agent, model) when the active agent pins a model: its turns run on the pin."""
        from ..errors import UnknownAgentError

        name = workspace.config.agent
        try:
            agent = workspace.agents.get(name)
        except UnknownAgentError:
            return None
        return (name, agent.model) if agent.model else None

    @magic_arguments()
    @argument("assignments", nargs="*", help="key=value pairs, dotted keys")
    @line_magic
    def blitz_config(self, line: str) -> None:
        """Show the configuration, or set keys for this kernel: `%blitz_config limits.max_turns=10`."""
        from ..config.loading import config_sources, describe_config, parse_assignment, redact_url

        args = self._parse(self.blitz_config, line)
        workspace = self.workspace()
        if args.assignments:
            with usage_errors():
                values = dict(parse_assignment(text) for text in args.assignments)
                if "agent" in values:  # an unknown name changes nothing, as with %blitz_agent
                    workspace.reload_agents().get(str(values["agent"]))
                workspace.configure(**values)
            for key, value in values.items():
                shown = redact_url(value) if key == "api_base" and isinstance(value, str) else value
                print(f"set {key} = {shown!r}")
            return
        policy = workspace.configuration.policy
        sources = config_sources(workspace.root, policy=policy) or ["(defaults only)"]
        print("sources: " + ", ".join(sources))
        if policy is not None and policy.describe():
            print(f"{policy.source}: {policy.describe()}")
        held = workspace.trust.held if workspace.trust.holding_back else None
        print(describe_config(workspace.config, held, policy))

    @magic_arguments()
    @argument("agent", nargs="?", help="agent name (built-in `blitz`, or .blitz/agents/NAME.md)")
    @line_magic
    def blitz_agent(self, line: str) -> None:
        """Show the active agent, or make another one active from the next turn."""

        args = self._parse(self.blitz_agent, line)
        workspace = self.workspace()
        if args.agent:
            with usage_errors():
                workspace.reload_agents().get(args.agent)  # an unknown name changes nothing
            workspace.configure(agent=args.agent)
        print(f"agent: {workspace.config.agent}")

    @line_magic
    def blitz_agents(self, line: str) -> None:
        """List the agents: the built-in one and those in .blitz/agents/*.md."""

        workspace = self.workspace()
        with usage_errors():
            workspace.reload_agents()
        active = workspace.config.agent
        for problem in workspace.agents.skipped.values():
            print(f"⚠ {problem}")
        for name in workspace.agents.names():
            agent = workspace.agents.get(name)
            pin = f" (model {agent.model})" if agent.model else ""
            marker = "*" if name == active else " "
            print(f"{marker} {name}{pin}: {agent.description or '(no description)'}")

    @magic_arguments()
    @argument("-s", "--session", help="session (default: the notebook's)")
    @argument("--add-budget", metavar="USD", help="add to the session budget (limits.max_cost_usd_session)")
    @line_magic
    def blitz_usage(self, line: str) -> None:
        """Tokens and cost of a session, per model; `--add-budget USD` lifts a spent session budget."""
        args = self._parse(self.blitz_usage, line)
        session = name_option(args.session, "--session", self.blitz_usage) or self._current_session()
        workspace = self.workspace()
        if args.add_budget is not None:
            with usage_errors():
                left = workspace.add_budget(session, positive_option(float, args.add_budget, "--add-budget"))
            print(f"session {session!r}: budget raised; ${left:.2f} left")
            return
        if session not in workspace.sessions.names():  # asking must not create it
            print(f"session {session!r}: no model calls yet")
            return
        ledger = workspace.usage(session)
        if not ledger.total.calls:
            print(f"session {session!r}: no model calls yet")
            return
        print(f"session {session!r}: {ledger.total.describe()}")
        for model, totals in sorted(ledger.by_model.items()):
            print(f"  {model}: {totals.describe()}")

    @magic_arguments()
    @argument("question", nargs="*", help="the side question")
    @line_cell_magic
    def blitz_btw(self, line: str, cell: str | None = None) -> Coroutine[Any, Any, None]:
        """A side question answered from a read-only copy of the session; nothing is recorded."""
        question = (cell or "").strip() or line.strip()
        if not question:
            raise UsageError("ask a question: %blitz_btw what did we decide about the outliers?")
        workspace = self.workspace()
        return self._aside(workspace, self._current_session(), question)

    async def _aside(self, workspace: Workspace, session: str, question: str) -> None:
        from .live import tick_forever
        from .render import plain_event_handler
        from .widgets.state import TurnState

        state = TurnState(turn_id="", prompt=question, session=session)
        show = plain_event_handler(state, header="💬 aside — not recorded in the session")
        ticker = asyncio.ensure_future(tick_forever())
        try:
            result = await workspace.aside(session, question, on_event=show)
        finally:
            ticker.cancel()
        if result.stop_reason in FAILING_STOPS:
            raise TurnFailedError(result)

    @magic_arguments()
    @argument("--keep", default="1", help="recent user turns to keep verbatim (default 1)")
    @argument("-s", "--session", help="session (default: the notebook's)")
    @argument("focus", nargs="*", help="what the summary should pay particular attention to")
    @line_magic
    def blitz_compact(self, line: str) -> Coroutine[Any, Any, None]:
        """Summarise the session's older turns to make room."""
        args = self._parse(self.blitz_compact, line)
        keep = positive_option(int, args.keep, "--keep")
        session = name_option(args.session, "--session", self.blitz_compact) or self._current_session()
        focus = " ".join(args.focus) or None
        workspace = self.workspace()
        if session not in workspace.sessions.names():  # compacting must not create it
            raise BlitzCellError(f"session {session!r} has no history yet: nothing to compact")
        return self._compact(workspace, session, focus, keep)

    async def _compact(self, workspace: Workspace, session: str, focus: str | None, keep: int) -> None:
        from ..errors import CompactionError, NothingToCompactError, SessionBusyError
        from .live import tick_forever

        ticker = asyncio.ensure_future(tick_forever())
        try:
            with interrupt_is_one_line(f"nothing of session {session!r} was compacted"):
                outcome = await workspace.compact(session, focus=focus, keep_turns=keep)
        except (NothingToCompactError, CompactionError, SessionBusyError) as exc:
            raise BlitzCellError(str(exc)) from None
        finally:
            ticker.cancel()
        print(
            f"compacted {outcome.covered_turns} turn(s), {outcome.covered_events} event(s) of session "
            f"{session!r} into a summary: prompt ≈{outcome.tokens_before:,} → ≈{outcome.tokens_after:,} tokens"
        )

    @magic_arguments()
    @argument(
        "action",
        nargs="?",
        default="show",
        choices=["list", "new", "use", "show", "snapshot", "load", "search", "delete"],
    )
    @argument("name", nargs="*", help="session or snapshot name; for search, the text")
    @argument("--session", dest="search_session", help="search: this session (default: the current one)")
    @argument("--all", action="store_true", help="search: every session of the workspace")
    @line_magic
    def blitz_session(self, line: str) -> None:
        """The workspace's sessions (kept in .blitz/blitz.db, so they survive a kernel restart):
        list, new NAME, use NAME, show, snapshot NAME, load SNAPSHOT,
        search TEXT [--session NAME | --all], delete NAME."""

        args = self._parse(self.blitz_session, line)
        words = " ".join(args.name)
        needs_name = {"new", "use", "snapshot", "load", "search", "delete"}
        if args.action in needs_name and not words:
            raise UsageError(f"%blitz_session {args.action} needs a name\n{usage_line(self.blitz_session)}")
        if (args.search_session or args.all) and args.action != "search":
            raise UsageError("--session and --all go with search")
        if args.search_session and args.all:
            raise UsageError("search takes --session NAME or --all, not both")
        scope = None if args.all else args.search_session or self._current_session()
        with usage_errors():
            self._session_action(args.action, words, scope)

    def _session_action(self, action: str, name: str, scope: str | None = None) -> None:
        book = self.workspace().sessions
        current = self._current_session()
        try:
            self._session_step(book, action, name, scope, current)
        finally:  # after the action: a damaged row it came across is named too
            if book.store_problem:
                print(f"⚠ {book.store_problem}")

    def _session_step(self, book: SessionBook, action: str, name: str, scope: str | None, current: str) -> None:
        import time

        if action == "list":
            listing = book.listing()
            if listing:
                print(f"  {'session':<24} {'turns':>5}  {'last used':<16} {'cost':<12} held by")
            for row in listing:
                marker = "*" if row.name == current else " "
                used = time.strftime("%Y-%m-%d %H:%M", time.localtime(row.last_used)) if row.last_used else "-"
                held = f"another kernel ({row.held_by.describe()})" if row.held_by else "-"
                print(f"{marker} {row.name:<24} {row.turns:>5}  {used:<16} {row.usage.describe_cost():<12} {held}")
            if not listing:
                print(f"no sessions yet; the next %%blitz uses {current!r}")
        elif action in ("new", "use", "load"):
            state = book.create(name) if action == "new" else book.load(name) if action == "load" else book.get(name)
            self._session_in_use = state.name
            print(f"using session {state.name!r}" + (f" (from snapshot {name!r})" if action == "load" else ""))
        elif action == "snapshot":
            book.snapshot(current, name)
            print(f"snapshot {name!r} of session {current!r}: load it with %blitz_session load {name}")
        elif action == "search":
            hits = book.search(name, scope)
            where = "any session" if scope is None else f"session {scope!r}"
            if not hits:
                print(f"no match for {name!r} in {where}" + (" (try --all)" if scope is not None else ""))
            for hit in hits:
                when = time.strftime("%Y-%m-%d %H:%M", time.localtime(hit.time)) if hit.time else ""
                turn = f"turn {hit.turn + 1}, " if hit.turn is not None else ""
                gone = (", compacted" if hit.compacted else "") + (", rewound" if hit.rewound else "")
                print(f"{hit.session} [{turn}message {hit.index}, {hit.role}, {when}{gone}]\n    {hit.excerpt}")
        elif action == "delete":
            book.delete(name)
            if self._session_in_use == name:
                self._session_in_use = None
            print(f"deleted session {name!r}")
        else:
            self._show_session(current)

    def _show_session(self, name: str) -> None:
        from ..core.history import subagent_turns

        book = self.workspace().sessions
        state = book.get(name)
        kinds = [m.kind for m in state.history]
        reason = state.not_saved
        saved = f"saved in {book.location}" if state.saved else "in memory only (not saved)"
        saved += f": {reason}" if reason and not state.saved and reason != book.store_problem else ""
        print(
            f"session {name!r}: {state.turns} turn(s), {len(kinds)} message(s) in the history"
            f" ({kinds.count('summary')} summary), {len(state.archive)} compacted away; {saved}"
        )
        print(f"usage: {state.ledger.total.describe()}")
        workspace = self.workspace()
        context = workspace.context_of(name)
        if context is not None:
            print(f"context: {context}")
        memory = workspace.memory()
        print(
            "project memory: "
            + (", ".join(m.label for m in memory) if memory else "none (AGENTS.md, BLITZ.md, ~/.blitz/AGENTS.md)")
        )
        limit = workspace.config.limits.max_cost_usd_session
        if limit is not None:
            spent = " (spent: %blitz_usage --add-budget USD to go on)" if state.budget_tripped else ""
            print(f"session budget: ${limit + state.budget_added_usd:.2f}{spent}")
        outcomes = book.outcomes(name)
        if outcomes:
            last = outcomes[-1]
            print(
                f"last turn ({last.turn + 1}): {last.stop_reason or 'running'}"
                + (f" — {last.error}" if last.error else "")
            )
        for nested in subagent_turns(state.history):  # kept whole in the caller's turn
            print(f"sub-agent turn: {nested.agent}, {len(nested.messages)} message(s), {nested.stop_reason}")
        if state.inbox:
            print(f"inbox ({len(state.inbox)}, sent with the next prompt):")
            for message in state.inbox:
                print(f"  - {message}")
        for item in state.todos:
            print(f"  [{'x' if item.status == 'done' else ' '}] {item.content}")

    @line_magic
    def blitz_help(self, line: str) -> None:
        """List the magics with examples."""
        if line.strip():
            raise UsageError(f"%blitz_help takes no arguments, got {line.strip()!r}; for one magic: %blitz_config?")
        print(HELP)
