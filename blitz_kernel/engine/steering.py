"""Steering and stopping a running turn.

The front end talks to a running turn only through its TurnControl: queue a steer message,
ask for a graceful stop. The loop takes the queue when it builds the next tool result.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from ..errors import SteerTooLateError


class TurnControl:
    """Shared between a running turn and whoever may steer or stop it."""

    def __init__(self, parent: TurnControl | None = None, *, grace_s: float | None = None) -> None:
        self._parent = parent
        self.grace_s = grace_s
        """Seconds a graceful stop may take before it is forced (`stop.grace_s`); None: never."""
        self.forced = False
        """The stop was forced: the running step was cancelled."""
        self._force_hooks: list[Callable[[], object]] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._force_timer: asyncio.TimerHandle | None = None
        self._queue: list[str] = []
        self._closed = False
        self._stop_requested = False
        self.charged_usd = 0.0
        """Cost of side questions answered while this turn runs (they count toward its
        `--max-cost`)."""
        self._stopped: asyncio.Event | None = None
        self._children: list[TurnControl] = []
        if parent is not None and parent.stop_requested:
            self._stop_requested = True

    def steer(self, text: str) -> None:
        """Queue `text`; once the turn has collected its leftovers nothing would carry it, so
        it is refused (SteerTooLateError) and the front end sends it as a prompt."""
        if self._closed:
            raise SteerTooLateError("the turn is ending; send it as the next prompt")
        self._queue.append(text)

    def take_messages(self) -> list[str]:
        """Everything queued so far, emptying the queue."""
        messages, self._queue = self._queue, []
        return messages

    def take_leftovers(self) -> list[str]:
        """Messages no tool result carried: the front end sends them as the next
        prompt. Closes the queue, so a steer that arrives later is refused, not lost."""
        self._closed = True
        return self.take_messages()

    def child(self) -> TurnControl:
        """The control of a sub-agent's turn: it stops when this one does, and it has
        its own steer queue (steer messages belong to the caller's turn)."""
        child = TurnControl(parent=self)
        self._children.append(child)
        return child

    @property
    def stop_requested(self) -> bool:
        return self._stop_requested

    def request_stop(self) -> None:
        """Graceful stop: the turn ends after the current step; a pending permission request
        is answered as denied at once (nobody will click it now). Sub-agents stop too. When
        the turn has not ended after `grace_s`, the stop becomes a force stop."""
        first = not self._stop_requested
        self._stop_requested = True
        if self._stopped is not None:
            self._stopped.set()
        for child in self._children:
            child.request_stop()
        if first and self.grace_s is not None and self._loop is not None:
            loop, grace = self._loop, self.grace_s
            # Stop may be asked from another thread (a widget's comm): the timer is the turn's loop's.
            loop.call_soon_threadsafe(self._arm_force, loop, grace)

    def _arm_force(self, loop: asyncio.AbstractEventLoop, grace: float) -> None:
        if self._loop is not None and not self.forced:
            self._force_timer = loop.call_later(grace, self.force_stop)

    def on_force(self, hook: Callable[[], object]) -> None:
        """`hook` cancels the running turn's step; called on a force stop (from the turn's loop)."""
        self._loop = asyncio.get_running_loop()
        self._force_hooks.append(hook)

    def force_stop(self) -> None:
        """Force stop: the running step (a model stream, a tool call) is cancelled now."""
        if self.forced or self._loop is None:
            return
        self.forced = True
        self.request_stop()
        for hook in self._force_hooks:
            hook()

    def release(self) -> None:
        """The turn is over: no force stop may reach whatever runs next."""
        if self._force_timer is not None:
            self._force_timer.cancel()
        self._loop, self._force_hooks, self._force_timer = None, [], None

    async def wait_for_stop(self) -> None:
        """Returns when a stop is requested (the approval gate races it)."""
        if self._stopped is None:
            self._stopped = asyncio.Event()
        if self.stop_requested:
            self._stopped.set()
        await self._stopped.wait()


def force_stop_text(grace_s: float | None) -> str:
    """What the front end shows of a forced stop."""
    within = f" within {grace_s:g} s" if grace_s is not None else ""
    return f"Stop did not end the turn{within} (stop.grace_s): its running step was cancelled"


INBOX_HEADER = "[Messages the user sent while no turn was running, oldest first]"
LEFTOVER_HEADER = "[Messages the user sent during the last turn, which ended before reading them, oldest first]"
PROMPT_HEADER = "[The user's prompt]"


def framed_prompt(inbox: list[str], prompt: str, header: str = INBOX_HEADER) -> str:
    """The next prompt with the queued messages before it, each part marked, so the model
    reads them as the user's earlier words and not as part of the prompt."""
    if not inbox:
        return prompt
    queued = "\n".join(f"- {message}" for message in inbox)
    framed = f"{header}\n{queued}"
    return f"{framed}\n\n{PROMPT_HEADER}\n{prompt}" if prompt else framed


def leftover_prompt(leftovers: list[str], prompt: str = "") -> str:
    """What the front end sends after a turn that ended with steer messages no tool result
    carried: the messages, marked as sent during that turn (with `prompt` after them when
    the cell goes on with one of its own, such as an approved plan's carry-out)."""
    return framed_prompt(leftovers, prompt, LEFTOVER_HEADER)
