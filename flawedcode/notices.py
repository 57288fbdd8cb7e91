"""Notices: one-line warnings a user must see once, without a Python source line.

``warn_once(key, text)`` prints ``warning: <text>`` to stderr the first time a
key is seen in this process, and never again; it returns True when it printed.
Examples of what goes through it (the exact texts live with their writers):

- an unknown model name: its window and prices are not known, cost shows as unknown;
- a budget lowered to fit the model's window;
- a server that truncated the prompt (it reported far fewer input tokens than were sent);
- a server that counts tokens differently, so the summary trigger is calibrated.

Python's ``warnings.warn`` prints the file, line and source of the caller, and
repeats itself in some setups; a class reading a notebook needs one clean line.
``capture()`` collects the notices instead of printing them (the REPL prints
them in order with the turn's other lines; tests read them).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

PREFIX = "warning: "

_lock = threading.Lock()
_seen: set[str] = set()
_captured: list[list[str]] = []


def warn_once(key: str, text: str) -> bool:
    """Print ``warning: <text>`` once per ``key`` in this process; True if it was printed (or captured) now."""
    with _lock:
        if key in _seen:
            return False
        _seen.add(key)
        if _captured:
            _captured[-1].append(text)
            return True
    print(PREFIX + text, file=sys.stderr, flush=True)
    return True


@contextmanager
def capture() -> Iterator[list[str]]:
    """Collect notices into the yielded list instead of printing them (nested captures get their own)."""
    collected: list[str] = []
    with _lock:
        _captured.append(collected)
    try:
        yield collected
    finally:
        with _lock:
            _captured.remove(collected)


def forget(prefix: str = "") -> None:
    """Let notices whose key starts with ``prefix`` be shown again (all of them by default)."""
    with _lock:
        for key in [key for key in _seen if key.startswith(prefix)]:
            _seen.discard(key)
