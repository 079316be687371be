"""`%blitz_clients [--detach NAME | --reattach NAME]`: the clients outside the notebook
(`blitz mcp`, `blitz acp`) that have reached this kernel, what they called, and a way to shut one
out (docs/outside-clients.md).

Outside clients come over the kernel's own connection, one request at a time, so "attached"
means "has sent requests": there is no socket of theirs to close. Detaching a client refuses
every later request that names it, with one line saying who detached it and how to undo that;
nothing it asks is recorded. The book lives as long as the kernel.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring

MAX_SHOWN_CALLS = 5
"""Calls shown per client (the newest); the count covers them all."""


@dataclass
class ClientRecord:
    name: str
    first_seen: float
    last_seen: float
    calls: list[str] = field(default_factory=list)
    count: int = 0
    detached: bool = False


class ClientBook:
    """Who called from outside, and who is shut out."""

    def __init__(self) -> None:
        self.clients: dict[str, ClientRecord] = {}

    def refusal(self, client: str) -> str | None:
        """The line a detached client gets instead of an answer; None when it may ask."""
        record = self.clients.get(client)
        if record is None or not record.detached:
            return None
        return f"{client} was detached in the notebook (%blitz_clients --reattach {client} lets it back in)"

    def seen(self, client: str, what: str, status: str) -> None:
        now = time.time()
        record = self.clients.setdefault(client, ClientRecord(client, now, now))
        record.last_seen = now
        record.count += 1
        record.calls = [*record.calls, f"{what} ({status})"][-MAX_SHOWN_CALLS:]

    def detach(self, client: str, detached: bool = True) -> None:
        if client not in self.clients:
            known = ", ".join(self.clients) or "none yet"
            raise UsageError(f"no outside client named {client!r} (seen: {known})")
        self.clients[client].detached = detached

    def table(self) -> str:
        if not self.clients:
            return "no outside clients yet (blitz mcp, blitz acp: see docs/outside-clients.md)"
        lines = []
        for record in self.clients.values():
            state = "detached" if record.detached else "attached"
            first, last = (time.strftime("%H:%M:%S", time.localtime(t)) for t in (record.first_seen, record.last_seen))
            lines.append(f"{record.name}  {state}  {record.count} calls  first {first}  last {last}")
            lines += [f"  {call}" for call in record.calls]
        return "\n".join(lines)


book = ClientBook()
"""The kernel's one book: the outside endpoint (outside.py) writes it, the magic reads it."""


@magics_class
class ClientMagics(Magics):
    """`%blitz_clients`."""

    @magic_arguments()
    @argument("--detach", metavar="NAME", help="refuse every later request of this client")
    @argument("--reattach", metavar="NAME", help="let a detached client ask again")
    @line_magic
    def blitz_clients(self, line: str) -> None:
        """List the outside clients that reached this kernel (blitz mcp, blitz acp) and their
        newest calls; --detach NAME shuts one out, --reattach NAME lets it back in."""
        usage = "usage: %blitz_clients [--detach NAME | --reattach NAME]"
        try:
            args = parse_argstring(self.blitz_clients, line)
        except UsageError as exc:
            raise UsageError(f"{exc}\n{usage}") from None
        if args.detach and args.reattach:
            raise UsageError(f"give --detach or --reattach, not both\n{usage}")
        if args.detach:
            book.detach(args.detach)
            print(f"{args.detach} is detached: its requests are refused from now on")
        elif args.reattach:
            book.detach(args.reattach, detached=False)
            print(f"{args.reattach} may ask again")
        else:
            print(book.table())
