"""Numbers checked where they enter the engine: a NaN cost ceiling would compare false against
every spend and silently lift the ceiling, and an infinite timeout overflows the timers the tools
arm. Shared by the run options, the session budget and undo."""

from __future__ import annotations

import math

from ..errors import BlitzError

MAX_TIMEOUT_S = 7 * 24 * 3600.0
"""The longest wall-clock limit a turn takes: a week. Larger values are mistakes (and `1e309`
is infinity), and timers armed with them overflow."""
MAX_COST_USD = 1_000_000.0
MAX_TURNS = 100_000


class RunOptionError(BlitzError):
    """A per-run option out of range; the message names the option and the value."""


def check_number(name: str, value: float | None, *, upper: float, integer: bool = False) -> None:
    """`value` is None or a finite number in (0, upper]; else RunOptionError naming it."""
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise RunOptionError(f"{name} must be a number, got {value!r}")
    if integer and not isinstance(value, int):
        raise RunOptionError(f"{name} must be a whole number, got {value!r}")
    if not math.isfinite(value) or value <= 0 or value > upper:
        raise RunOptionError(f"{name} must be a finite number above 0 and at most {upper:g}, got {value!r}")
