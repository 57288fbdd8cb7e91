"""A conversation made of requests (issue 41): the state is the last *answered* request.

The model is stateless: each call re-reads the user's earlier messages it can see, in order. A turn
read completely (a ``Request``) becomes the state; a declined turn (``Decline``) never does, so a
follow-up after it builds on the last request that was answered. A follow-up is a partial request
merged slot by slot onto the state (``Request.merged_onto``): "now change just the year, 2023",
"same thing for EFFR", "and the day before?", "in percent please?", "sorry, I meant the 20-year".
A turn this package leaves to the old model (``None``) makes the next follow-up go there too, since
only it knows what that turn asked.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from flawedcode.models.teaching.request import Decline, Request
from flawedcode.models.teaching.router import Reading, describe, read_message


@dataclass(frozen=True)
class Turn:
    """The latest message read against the conversation so far."""

    readings: list[Reading] | None  # None: the old model answers it
    builds_on: Request | None  # the earlier answered request a follow-up was merged onto


NEGATIVE_NUMBER = re.compile(r"(?:^|[\s(=<>])-\s?\d")
"""A negative number as written ('-0.25%', 'below - 25'): the readers' tokens do not keep its sign."""


def state_after(earlier_requests: list[str]) -> tuple[Request | None, bool]:
    """(the last answered request, whether the last turn was left to the old model)."""
    state: Request | None = None
    deferred = False
    for text in earlier_requests:
        readings = read_message(text, state)
        deferred = readings is None
        for reading in readings or []:
            if isinstance(reading, Request):
                state = reading
    return state, deferred


def read_turn(latest: str, earlier_requests: list[str]) -> Turn:
    state, deferred = state_after(earlier_requests)
    readings = read_message(latest, state)
    if readings is None:
        return Turn(None, None)
    fresh = read_message(latest, None)
    builds_on = state if state is not None and readings != fresh else None
    if builds_on is not None and deferred:
        return Turn(None, None)  # a follow-up of a turn the old model answered: it knows what that turn asked
    if all(isinstance(reading, Decline) and not reading.reason for reading in readings):
        return Turn(None, None)  # words not read here (a fresh ask or a follow-up): the old model may know the phrasing
    if NEGATIVE_NUMBER.search(latest) and any(isinstance(reading, Request) and reading.condition for reading in readings):
        return Turn(None, None)  # the tokens drop a minus sign ('below -0.25%'): never answer with its sign lost
    return Turn(readings, builds_on)


def builds_on_text(request: Request) -> str:
    return f"(Building on your earlier request: the {describe(request)}.)"
