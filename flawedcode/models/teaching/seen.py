"""What the model has actually seen of each tool result: the whole text, or only a preview.

An offloaded tool result is a stub (``flawedcode.formats.STUB_PREFIX``): a path under scratch/, a typed preview and how to read the rest; its
format is every agent's, so these rules read every agent alike. An answer never concludes from a preview: ``resolve`` folds read_file pages back
into their stub, ``next_read`` is the read a real model makes next, ``unreadable``/``say_unread`` what the reply must say it could not read, and
``read_test_run`` a test run as its runner reports it (each function's docstring gives its rule)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from flawedcode.formats import STUB_PREFIX

READ_LIMIT = 2000  # Lines per read_file page when reading a saved result back (read_file's own maximum).
MAX_PAGES = 20  # At most this many pages of one saved result are read back; past that the reply says it saw a part.
SHOWN_AS_PREVIEW = ("docs",)  # Preview kinds the reply may show as a preview (labelled, with the path); every other kind is read back.
STUB = re.compile(rf"^{re.escape(STUB_PREFIX)}(?P<path>[^\s|\]]+)(?:[^\n]*?(?P<tokens>[\d,]+) tokens)?[^\n]*\n(?:Preview \((?P<kind>\w+))?")
PAGE = re.compile(r"^# (?P<path>\S+) \(lines (?P<a>\d+)-(?P<b>\d+) of (?P<n>\d+)\)")
MORE = re.compile(r"^# \.\.\. \d+ more lines: read_file\(path='[^']+', offset=(?P<offset>\d+)\)\s*$", re.MULTILINE)
CONSULTING_TOOLS = ("search_files", "run_python", "execute")  # calls that work on a saved result in its place: the answer comes from them
LOADER_GROUP = re.compile(r"group '(?P<group>[\w-]+)' = (?P<names>[\w, ]+)")


class Resolved(Enum):
    """How much of a tool result the model has seen."""
    WHOLE = "whole"  # the result itself, or its saved copy read back in full
    PREVIEW = "preview"  # an offload stub, not read back (yet)
    PART = "part"  # some pages of the saved copy, not all


@dataclass(frozen=True)
class Seen:
    """One tool result as seen: ``content`` is the whole text once read back (the stub before that)."""
    name: str
    args: dict[str, Any]
    content: str
    resolved: Resolved = Resolved.WHOLE
    path: str | None = None  # the scratch/ file of an offloaded result
    preview_kind: str | None = None  # 'table', 'docs', 'text': the stub's typed preview
    tokens: int | None = None  # the saved result's size, as its stub states it
    pages: tuple[str, ...] = field(default=(), repr=False)  # read_file pages of ``path`` read so far

    @property
    def whole(self) -> bool:
        return self.resolved is Resolved.WHOLE

    def needs_text(self) -> bool:
        """True when an answer from this result needs its whole text and only a preview or part was seen. A table is read
        back in one page or not at all: paged by the agent (its room is smaller than the table), the answer is the data
        path's own (a script over the same rows, or labelled statistics)."""
        return not self.whole and self.preview_kind not in SHOWN_AS_PREVIEW and not (self.preview_kind == "table" and self.resolved is Resolved.PART)


def assemble(pages: Iterable[str]) -> tuple[str | None, int | None]:
    """read_file pages of one file put back together: (the whole text or None, offset of the next page to read)."""
    lines: dict[int, str] = {}
    total = None
    for page, header in ((page, PAGE.match(page)) for page in pages if PAGE.match(page)):
        total, body = int(header["n"]), page.splitlines()[1:-1 if MORE.search(page) else None]
        lines.update(enumerate(body, start=int(header["a"])))
    if total is None:
        return None, 0
    missing = next((number for number in range(1, total + 1) if number not in lines), None)
    return ("\n".join(lines[number] for number in range(1, total + 1)), None) if missing is None else (None, missing - 1)


def resolve(results: Sequence[Any]) -> list[Seen]:
    """Each result as seen: a stub and the read_file pages that make its whole file become one ``Seen``; other pages stay as they are."""
    seen: list[Seen] = []
    for result in results:
        path = str(result.args.get("path") or result.args.get("file_path") or "").removeprefix("./")  # a page of an unread stub's file?
        owner = next((i for i in range(len(seen) - 1, -1, -1) if seen[i].path == path and not seen[i].whole and PAGE.match(result.content)), None)
        if result.name == "read_file" and owner is not None:
            stub, pages = seen[owner], (*seen[owner].pages, result.content)
            if (text := assemble(pages)[0]) is not None:  # whole: the stub is the result itself now, and its pages fold into it
                seen[owner] = Seen(stub.name, stub.args, text, Resolved.WHOLE, stub.path, stub.preview_kind, stub.tokens, pages)
                seen[owner + 1:] = [item for item in seen[owner + 1:] if item.content not in stub.pages or item.name != "read_file"]
                continue
            seen[owner] = Seen(stub.name, stub.args, stub.content, Resolved.PART, stub.path, stub.preview_kind, stub.tokens, pages)
            seen.append(Seen(result.name, dict(result.args), result.content))
            continue
        stub = STUB.match(result.content.lstrip())  # an offload stub: (path, preview kind, tokens)
        found = (stub["path"], stub["kind"], int(stub["tokens"].replace(",", "")) if stub["tokens"] else None) if stub else None
        seen.append(Seen(result.name, dict(result.args), result.content, *((Resolved.PREVIEW, *found) if found else ())))
    return seen


def next_read(seen: Sequence[Seen], tool_names: Iterable[str], loader_description: str = "",
              groups_asked: Iterable[str] = (), room_tokens: int | None = None) -> tuple[str, dict[str, Any]] | None:
    """The next call that reads a saved result back: ``read_file`` (next page), or ``load_tools`` when read_file is deferred;
    none for a result larger than ``room_tokens`` (it would push the conversation out of the window: it is said)."""
    wanted = unreadable(seen)
    if wanted is None or len(wanted.pages) >= MAX_PAGES or room_tokens is not None and (wanted.tokens or 0) > room_tokens:
        return None
    names, (_, offset) = set(tool_names), assemble(wanted.pages)
    if wanted.pages and not offset:
        return None  # pages that are not read_file's '# path (lines a-b of n)' pages: no way to know the next one
    if "read_file" in names:
        return "read_file", {"path": wanted.path, "limit": READ_LIMIT, **({"offset": offset} if offset else {})}
    group = next((found["group"] for found in LOADER_GROUP.finditer(loader_description) if "load_tools" in names  # the group listing it
                  and "read_file" in {name.strip() for name in found["names"].split(",")}), None)
    return ("load_tools", {"group": group}) if group is not None and group not in set(groups_asked) else None


def consulted(seen: Sequence[Seen], item: Seen) -> bool:
    """True when a later call worked on a saved result in its place (a search of it, a script over its rows)."""
    return any(later.name in CONSULTING_TOOLS for later in seen[next(index for index, other in enumerate(seen) if other is item) + 1:])


def unreadable(seen: Sequence[Seen]) -> Seen | None:
    """The first result whose answer needs text the model has not seen (to be said, never answered from its preview)."""
    return next((item for item in seen if item.needs_text() and not consulted(seen, item)), None)


def say_unread(item: Seen, room_tokens: int | None = None) -> str:
    """The reply's part for a result it could not read back: what and where it is, and that nothing is concluded."""
    part = f"only {len(item.pages)} page(s) of it" if item.resolved is Resolved.PART else "only its preview"
    why = (f"it is {item.tokens:,} tokens, more than I can read back into my window" if room_tokens is not None and (item.tokens or 0) > room_tokens
           else "I can't read the whole file back here")
    what = "/".join(str(item.args[key]) for key in ("pipeline", "dataframe") if item.args.get(key))  # what the call asked, from its own arguments
    rows = f"{limit} rows of " if isinstance(limit := item.args.get("limit"), int) else ""
    asked = f" (it asked for {rows}{what})" if what else ""
    return (f"The result of {item.name}{asked} was saved to {item.path}, and I have seen {part}: {why}, so I won't "
            f"draw a conclusion from a preview. Ask for fewer rows or columns, or read it with read_file(path='{item.path}').")


COUNT = re.compile(r"\b(?P<count>\d+) (?P<kind>passed|failed|errors?|skipped|xfailed|xpassed|deselected)\b")
SUMMARY_LINE = re.compile(r"^=*\s*(?:\d+ (?:passed|failed|errors?|skipped|xfailed|xpassed|deselected|warnings?)(?:, )?)+.*$", re.MULTILINE)
FAILED_LINE = re.compile(r"^(?:FAILED|ERROR) (?P<test>\S+?)(?: - (?P<why>.*))?$", re.MULTILINE)
FALLBACK_OK = re.compile(r"^ok\s+(?P<test>test_\w+)", re.MULTILINE)


@dataclass(frozen=True)
class RunReport:
    """A test run as its runner reported it."""
    passed: int | None = None
    failed: int | None = None
    errors: int = 0
    failing: tuple[str, ...] = ()  # the failing tests' names, as the runner wrote them
    reasons: tuple[str, ...] = ()  # the runner's one-line reason beside each, where it gave one
    summary: str = ""  # the runner's own summary line, word for word
    fallback: bool = False  # the project's own runner (python test_*.py), which stops at the first failure

    known = property(lambda self: bool(self.summary or self.failing or self.fallback))
    """True when the output says how the run went (a summary line, or a failure named)."""

    def describe(self) -> str:
        if not self.known:
            return "The test output I can see has no summary line and names no failing test, so I can't say how the run went."
        head = f"pytest's summary line: {self.summary}." if self.summary else (f"The project's own runner (no pytest here) passed "
                f"{self.passed or 0} test(s)" + (" and stopped at the first one that failed." if self.failing else "."))
        if not self.failing:
            return head + (" No test failed." if self.summary and not self.failed and not self.errors else "")
        named = "\n".join(f"- {test}" + (f": {why}" if why else "") for test, why in zip(self.failing, self.reasons, strict=True))
        return f"{head}\nFailing ({len(self.failing)}):\n{named}"


def read_test_run(output: str) -> RunReport:
    """The run's counts from the runner's own summary line, and the failing tests' names."""
    failed = FAILED_LINE.findall(output)
    names, reasons = tuple(test for test, _ in failed), tuple(why.strip() for _, why in failed)
    summary = next((line.strip(" =") for line in reversed(SUMMARY_LINE.findall(output)) if COUNT.search(line)), "")
    if summary:
        counts = {kind.rstrip("s") if kind.startswith("error") else kind: int(count) for count, kind in COUNT.findall(summary)}
        return RunReport(counts.get("passed", 0), counts.get("failed", 0), counts.get("error", 0), names, reasons, summary)
    fallback = bool(oks := FALLBACK_OK.findall(output)) or "pytest is not installed" in output  # the project's own runner
    return RunReport(len(oks) if fallback else None, len(names) or (0 if fallback else None), failing=names, reasons=reasons, fallback=fallback)
