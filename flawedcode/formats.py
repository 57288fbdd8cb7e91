"""The marker texts that the context wrappers write and the offline teaching model reads.

They live here, below both (``flawedcode.context`` and ``flawedcode.models`` may not
import each other), so that a change to a stub or summary header changes both sides.

- An offload stub (a tool result's replacement) starts with ``STUB_PREFIX``:
  ``[Offloaded: scratch/<file> | 5,465 characters, 80 lines, 1,571 tokens]``.
- A summary message starts with ``SUMMARY_PREFIX`` and has a ``GOAL_LINE`` line with the
  user's first request, character for character, and an ``ARCHIVE_LINE`` line naming
  the archive file that holds what it replaced.
- A tool result that compaction moved to the archive (no model involved) starts with
  ``COMPACTED_PREFIX`` and names the archive file that holds it.
- A summary lists the requests it covers on a ``REQUESTS_LINE`` line (``a | b | c``); a turn digest (one
  old turn, written by code: ``context/stable.py``) names its one request on a ``LAST_REQUEST_LINE`` line,
  ``Last request: <verbatim> (answered).``, and the start of its answer on an ``ANSWER_LINE`` line;
  ``requests_named`` and ``digest_turn`` read them.
- A ``chartbook_load_data`` result starts with the line ``load_header`` writes,
  ``# money_markets/sofr: 30 rows x 3 columns, 2024-11-18 to 2024-12-31``, then the rows as CSV;
  ``LOAD_HEADER`` is its one reader (the offload preview and the offline model's statistics use it).
"""

import re

STUB_PREFIX = "[Offloaded: "
SUMMARY_PREFIX = "[Conversation summary"
GOAL_LINE = "Original goal (verbatim): "
ARCHIVE_LINE = "Archive: "
REQUESTS_LINE, LAST_REQUEST_LINE, ANSWER_LINE = "Requests: ", "Last request: ", "Answer: "
GOAL_PINNED = "(the goal, pinned above)"
"""A digest's request when its turn's request is the goal, kept pinned above the digests."""
COMPACTED_PREFIX = "[Compacted: "
"""A tool result moved to the archive by compaction (no model) starts with this (see ``context/compact.py``)."""


def load_header(key: str, rows: int, columns: int, start: str, end: str) -> str:
    """The first line of a ``chartbook_load_data`` result (``key`` is ``pipeline/dataframe``); ``LOAD_HEADER`` reads it."""
    return f"# {key}: {rows} rows x {columns} columns, {start} to {end}"


LOAD_HEADER = re.compile(
    r"^# (?P<key>[\w.-]+/[\w.-]+): (?P<rows>\d+) rows x (?P<columns>\d+) columns, (?P<start>\S+) to (?P<end>\S+)\s*$",
    re.MULTILINE,
)
"""Reads the line ``load_header`` writes: the table's key, its size and its first and last dates."""


def requests_named(summary: str) -> list[str]:
    """The requests a summary or digest names, oldest first, word for word (none it clipped with '...')."""
    lines = summary.splitlines()
    listed = next((line[len(REQUESTS_LINE):].split(" | ") for line in lines if line.startswith(REQUESTS_LINE)), [
        line[len(LAST_REQUEST_LINE):].rsplit(" (", 1)[0] for line in lines if line.startswith(LAST_REQUEST_LINE) and line.endswith(
            ("(answered).", "(not answered yet)."))])
    goal = [line[len(GOAL_LINE):] for line in lines if line.startswith(GOAL_LINE)][:1]
    return [text for text in goal + listed if text not in ("", "None", GOAL_PINNED) and not text.endswith("...")]


def digest_turn(text: str) -> tuple[str, str] | None:
    """A turn digest's (request, start of its answer); a summary of several turns (a ``Requests:`` line) or any other text is none."""
    lines = text.splitlines() if text.lstrip().startswith(SUMMARY_PREFIX) else [REQUESTS_LINE]
    asked = next((line[len(LAST_REQUEST_LINE):].rsplit(" (", 1)[0] for line in lines if line.startswith(LAST_REQUEST_LINE)), None)
    return None if asked is None or any(line.startswith(REQUESTS_LINE) for line in lines) else (
        asked, next((line[len(ANSWER_LINE):] for line in lines if line.startswith(ANSWER_LINE)), ""))
