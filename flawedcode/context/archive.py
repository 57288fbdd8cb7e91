"""The conversation archive: every message that leaves the context, kept unchanged.

Layout, one folder per conversation under ``archives/``::

    archives/<conversation_id>/
        0001.jsonl   lossless records of the messages the 1st summary replaced, in order
        0001.md      the same messages, rendered for people (and for read_file)
        0002.jsonl   ... the 2nd summary's, and so on
        index.json   a JSON list, one entry per part (one per line): its files, message count,
                     first/last sequence number (and ``redacted``: how many secrets of each
                     kind were replaced, when any)

Rules:
- Append-only: a part is never rewritten; a new summary adds a new part.
- Atomic: each file is written to a temporary name and renamed into place, and
  ``index.json`` is written last: a part exists once the index names it, so a crash
  mid-part leaves at most an unlisted file that the next append overwrites.
- Once only: a message (by id) already in the archive is not written again, so a
  turn that is retried or rolled back never archives the same message twice.
- Concurrent writers of the same conversation take a file lock before choosing a
  part number, so two agents never write the same part.
- ``search(query)`` finds messages whose text contains every query word, and
  returns snippets with the part file and message position, which is what the
  ``search_archive`` tool shows a model.

What is kept "unchanged", exactly:
- Secrets are replaced before anything is written (``flawedcode.infra.redact``): an API key
  in a message is archived as ``[REDACTED:openai-key]``, and the part's entry in
  ``index.json`` counts what was replaced (``"redacted": {"openai-key": 1}``), as does
  the head of its ``.md``. Everything else is kept character for character.
- Bad bytes never stop the archive: a lone surrogate (an undecodable byte in a file
  name, say) is kept in the ``.jsonl`` as its JSON escape (``\\udcff``, read back as
  the same character) and shown in the ``.md`` as ``\\xff`` (see ``flawedcode.infra.safe_text``).
- In the ``.md``, a line of a message that would look like a message header
  (``### [3] human``, ``# Archive part ...``: any line starting with ``#`` then ``[``)
  gets a backslash in front (``\\### [3] human``), so it never reads as a message.

Cost stays flat at any length: the archive keeps the ids of its messages and a word
index for search in memory, adds each new part to them as it is written, and reads
``index.json`` again only when another writer has changed it (one ``stat`` per read;
then only the new parts are read). A summary never re-reads old parts, and a search
reads no file.

A damaged archive never stops a conversation: when ``index.json`` is missing (while
part files exist) or is not a valid index, it is rebuilt from the ``.jsonl`` parts
that can be read; the next write keeps the bad file as ``index.json.corrupt`` and
writes the rebuilt index (and any missing ``.md``). What could not be read is listed
in ``notes`` (and shown by ``search_archive``).
"""

from __future__ import annotations

import bisect
import fcntl
import json
import os
import re
import threading
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_core.messages import BaseMessage, messages_from_dict, messages_to_dict
from langchain_core.tools import BaseTool, StructuredTool

from flawedcode import notices
from flawedcode.infra.redact import redact_data
from flawedcode.infra.safe_text import LONE_SURROGATE, escape_surrogates, has_surrogates
from flawedcode.infra.safefs import check_folder_name
from flawedcode.paths import write_atomically

INDEX_NAME = "index.json"
CORRUPT_SUFFIX = ".corrupt"
PART_FILE = re.compile(r"^(\d{4,})\.jsonl$")
QUERY_WORD = re.compile(r"[\w.%/-]+")
HEADER_LOOKALIKE = re.compile(r"^( {0,3})(?=#+[ \t]*\[|# Archive part )", re.MULTILINE)
REDACTED_MARK = re.compile(r"\[REDACTED:([^\]\s]+)\]")
MISSING = (-1, -1, -1)  # the signature of an index.json that does not exist


class ArchiveError(OSError):
    """The archive could not be written; nothing was removed from the context."""


@dataclass(frozen=True)
class ArchivePart:
    number: int
    jsonl_path: Path
    markdown_path: Path
    display_path: str  # how a model names the readable file, e.g. "archives/<conversation>/0001.md"
    first_seq: int
    last_seq: int


@dataclass(frozen=True)
class ArchiveHit:
    display_path: str
    seq: int
    message_type: str
    snippet: str


# --- a message as text ---------------------------------------------------------------

def message_text(message: BaseMessage) -> str:
    """The text of a message, tool calls included, as one string."""
    return _text(message.content, getattr(message, "tool_calls", None))


def record_text(record: dict[str, Any]) -> str:
    """``message_text`` of a message stored as a ``messages_to_dict`` record (without rebuilding the message)."""
    data = record.get("data") or {}
    return _text(data.get("content", ""), data.get("tool_calls"))


def _text(content: Any, tool_calls: Any) -> str:
    text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
    for call in tool_calls or []:
        text += f"\n-> {call['name']}({json.dumps(call.get('args', {}), ensure_ascii=False)})"
    return text


def render_markdown(messages: Sequence[BaseMessage], first_seq: int) -> str:
    """Render messages for a person (or a model paging with read_file)."""
    return render_records(messages_to_dict(list(messages)), first_seq)


def render_records(records: Sequence[dict[str, Any]], first_seq: int) -> str:
    """``render_markdown`` from stored records; header look-alikes escaped, bad bytes shown as ``\\xNN``."""
    blocks = []
    for offset, record in enumerate(records):
        name = (record.get("data") or {}).get("name")
        title = f"{record.get('type')}" + (f" ({name})" if name else "")
        body = HEADER_LOOKALIKE.sub(r"\1\\", record_text(record))
        blocks.append(f"### [{first_seq + offset}] {title}\n\n{body}\n")
    return escape_surrogates("\n".join(blocks))


def json_line(value: Any) -> str:
    """One JSON line, readable UTF-8; a lone surrogate is written as its JSON escape, so it reads back unchanged."""
    text = json.dumps(value, ensure_ascii=False)
    if has_surrogates(text):  # only inside strings, where "\udcff" is a valid JSON escape
        text = LONE_SURROGATE.sub(lambda match: f"\\u{ord(match.group()):04x}", text)
    return text


# --- the in-memory search index ----------------------------------------------------------

class _SearchIndex:
    """Every archived message's text, and which messages hold each word, so a search reads no file.

    A query word is a run of word characters (``QUERY_WORD``), so it occurs in a text only
    inside one of the text's own words: the messages containing it are those listed under
    every archived word it is part of. Those words are found in one string of the whole
    vocabulary, which is rebuilt only after new words were added.
    """

    def __init__(self) -> None:
        self.messages: list[tuple[int, str, str, str]] = []  # (seq, display_path, type, text), in archive order
        self.postings: dict[str, list[int]] = {}
        self._vocabulary, self._starts, self._words = "", [0], [""]
        self._stale = False

    def add(self, seq: int, display_path: str, message_type: str, text: str) -> None:
        position = len(self.messages)
        self.messages.append((seq, display_path, message_type, text))
        for word in set(QUERY_WORD.findall(text.lower())):
            positions = self.postings.get(word)
            if positions is None:
                self.postings[word] = [position]
                self._stale = True
            else:
                positions.append(position)

    def containing(self, query_word: str) -> set[int]:
        """Positions of the messages whose lower-cased text contains ``query_word``."""
        if self._stale:
            self._words = list(self.postings)
            self._vocabulary = "\n".join(self._words)
            self._starts = [0]
            for word in self._words[:-1]:
                self._starts.append(self._starts[-1] + len(word) + 1)
            self._stale = False
        found: set[int] = set()
        at = self._vocabulary.find(query_word)
        while at != -1 and self.postings:
            word_number = bisect.bisect_right(self._starts, at) - 1
            found.update(self.postings[self._words[word_number]])
            following = word_number + 1
            if following >= len(self._starts):
                break
            at = self._vocabulary.find(query_word, self._starts[following])
        return found

    def search(self, words: list[str], max_hits: int, snippet_chars: int) -> list[ArchiveHit]:
        matches: set[int] | None = None
        for word in sorted(words, key=len, reverse=True):  # longer words are rarer: the set shrinks fastest
            found = self.containing(word)
            matches = found if matches is None else matches & found
            if not matches:
                return []
        hits = []
        for position in sorted(matches or (), reverse=True)[:max_hits]:  # newest first
            seq, display_path, message_type, text = self.messages[position]
            lowered = text.lower()
            hits.append(ArchiveHit(display_path, seq, message_type,
                                   _snippet(text, _densest_window(lowered, words, snippet_chars), snippet_chars)))
        return hits


# --- the archive ----------------------------------------------------------------------------

@dataclass(frozen=True)
class _IndexRead:
    """What reading index.json gave: its entries, what was wrong with it, and whether the entries were rebuilt."""

    entries: list[dict[str, Any]]
    problem: str | None = None
    rebuilt: bool = False  # from the part files; the next write saves them as the index


class ConversationArchive:
    """The archive of one conversation (see the module docstring for its layout and rules)."""

    def __init__(self, archive_root: Path, conversation_id: str) -> None:
        self.archive_root = Path(archive_root)
        self._lock = threading.RLock()
        self.restart(conversation_id)

    def restart(self, conversation_id: str) -> None:
        """Point at another conversation's folder (a new conversation starts an empty archive)."""
        with self._lock:
            self.conversation_id = check_folder_name(conversation_id, "conversation id")  # never a folder elsewhere
            self.folder = self.archive_root / conversation_id
            self._entries: list[dict[str, Any]] = []
            self._entry_lines: list[str] = []  # each entry as written in index.json, so a write re-encodes only the new one
            self._parts: list[ArchivePart] = []
            self._signature: tuple[int, int, int] | None = None  # the index.json the entries were read from (None: not yet)
            self._rebuilt_from: str | None = None  # why the entries were rebuilt from the parts, if they were
            self._index_unreadable = False  # index.json exists but cannot be read: reading goes on, writing must not
            self._ids: set[str] = set()
            self._search = _SearchIndex()
            self.notes: list[str] = []

    # --- writing ---------------------------------------------------------
    def append(self, messages: Sequence[BaseMessage]) -> ArchivePart:
        """Archive ``messages`` as a new part; raises ArchiveError if anything cannot be written."""
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            with open(self.folder / ".lock", "a") as lock, self._lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                self._refresh(for_writing=True)
                if self._rebuilt_from is not None:
                    self._save_rebuilt_index()
                part = self._write_part(messages)
        except (OSError, ValueError, TypeError) as error:  # no folder, an unreadable index, a message JSON can't hold
            self.restart(self.conversation_id)  # whatever was learned half-way is read again next time
            self._warn_unwritable(_reason(error))
            if isinstance(error, ArchiveError):
                raise
            raise ArchiveError(f"cannot write the archive in {self.folder}: {_reason(error)}") from error
        notices.forget(self._warning_key)  # written again: a later failure is said again
        return part

    @property
    def _warning_key(self) -> str:
        return f"archive-unwritable:{self.archive_root}:"

    def _warn_unwritable(self, reason: str) -> None:
        """One line per folder and reason: the callers keep every message in the context and try again next call."""
        notices.warn_once(self._warning_key + reason,
                          f"archives/ cannot be written ({reason}; {self.folder}): nothing leaves the context (no "
                          "summary, compaction or clearing) until it can; each call tries again, and requests may go "
                          "over the budget meanwhile")

    def _write_part(self, messages: Sequence[BaseMessage]) -> ArchivePart:
        number = self._next_part_number()
        first_seq = self._entries[-1]["last_seq"] + 1 if self._entries else 1
        part = self._part(number, first_seq, first_seq + len(messages) - 1)
        records, redacted = redact_data(messages_to_dict(list(messages)))
        lines = "".join(json_line({"seq": first_seq + i, "message": record}) + "\n" for i, record in enumerate(records))
        write_atomically(part.jsonl_path, lines)
        write_atomically(part.markdown_path, self._markdown_header(part, redacted) + render_records(records, first_seq))
        entry: dict[str, Any] = {"part": number, "jsonl": part.jsonl_path.name, "markdown": part.markdown_path.name,
                                 "messages": len(messages), "first_seq": part.first_seq, "last_seq": part.last_seq}
        if redacted:
            entry["redacted"] = dict(sorted(redacted.items()))
        self._write_index([*self._entries, entry])
        self._entries.append(entry)
        self._entry_lines.append(_entry_line(entry))
        self._parts.append(part)
        self._learn(part, records)
        return part

    def _next_part_number(self) -> int:
        listed = self._entries[-1]["part"] + 1 if self._entries else 1
        if self._rebuilt_from is None:
            return listed  # an unlisted file from a crash at this number is overwritten, as the rules say
        on_disk = [int(match.group(1)) for name in os.listdir(self.folder) if (match := PART_FILE.match(name))]
        return max([listed - 1, *on_disk]) + 1  # after a rebuild, never overwrite a part file that could not be read

    def _write_index(self, entries: list[dict[str, Any]]) -> None:
        """index.json: a JSON list with one entry per line."""
        index_path = self.folder / INDEX_NAME
        lines = self._entry_lines[: len(entries)] + [_entry_line(entry) for entry in entries[len(self._entry_lines):]]
        write_atomically(index_path, "[\n" + ",\n".join(lines) + "\n]\n")
        self._signature = _signature(index_path)

    def _save_rebuilt_index(self) -> None:
        """Keep the bad index as index.json.corrupt, write any missing .md, then the rebuilt index."""
        index_path = self.folder / INDEX_NAME
        if index_path.exists():
            kept, number = index_path.with_name(INDEX_NAME + CORRUPT_SUFFIX), 1
            while kept.exists():
                number += 1
                kept = index_path.with_name(f"{INDEX_NAME}{CORRUPT_SUFFIX}-{number}")
            os.replace(index_path, kept)
        for part in self._parts:
            if not part.markdown_path.exists():
                records = _read_records(part.jsonl_path)[0]
                write_atomically(part.markdown_path, self._markdown_header(part, Counter()) + render_records(records, part.first_seq))
        self._write_index(self._entries)
        self._rebuilt_from = None

    def _markdown_header(self, part: ArchivePart, redacted: Counter[str]) -> str:
        header = f"# Archive part {part.number} of conversation {self.conversation_id} (messages {part.first_seq}-{part.last_seq})\n\n"
        if redacted:
            kinds = ", ".join(f"{kind} x{count}" for kind, count in sorted(redacted.items()))
            header += f"Secrets replaced before writing: {sum(redacted.values())} ({kinds}).\n\n"
        return escape_surrogates(header)

    # --- reading ---------------------------------------------------------
    def archived_ids(self) -> set[str]:
        """Ids of the messages already archived (to archive each message once)."""
        with self._lock:
            self._refresh()
            return set(self._ids)

    def not_archived(self, messages: Iterable[BaseMessage]) -> list[BaseMessage]:
        """The messages whose id is not in the archive yet (messages without an id always count as new)."""
        with self._lock:
            self._refresh()
            return [message for message in messages if not (message.id and message.id in self._ids)]

    def parts(self) -> list[ArchivePart]:
        with self._lock:
            self._refresh()
            return list(self._parts)

    def messages(self) -> list[BaseMessage]:
        """Every archived message, in order, restored exactly as it was written."""
        restored: list[BaseMessage] = []
        for part in self.parts():
            restored.extend(messages_from_dict(_read_records(part.jsonl_path)[0]))
        return restored

    def search(self, query: str, max_hits: int = 8, snippet_chars: int = 240) -> list[ArchiveHit]:
        """Messages containing every word of ``query`` (case-insensitive), newest first."""
        words = [word for word in QUERY_WORD.findall(query.lower()) if len(word) > 1]
        if not words:
            return []
        with self._lock:
            self._refresh()
            return self._search.search(words, max_hits, snippet_chars)

    # --- keeping the in-memory index current ------------------------------------------------
    def _refresh(self, for_writing: bool = False) -> None:
        """Re-read index.json only if it changed since it was read; then learn only the parts not yet seen."""
        index_path = self.folder / INDEX_NAME
        signature = _signature(index_path)
        if signature == self._signature and not (for_writing and self._index_unreadable):
            return
        if signature == MISSING and not self._entries and not _part_files(self.folder):
            self._signature = MISSING  # an empty archive: nothing to read until index.json appears
            return
        read = self._read_index(index_path, signature, for_writing)
        known = len(self._entries)
        if read.entries[:known] != self._entries or read.rebuilt != (self._rebuilt_from is not None):
            self.restart(self.conversation_id)  # rewritten or rebuilt: learn every part again
            known = 0
        self._signature = signature
        self._rebuilt_from = read.problem if read.rebuilt else None
        self._index_unreadable = read.problem is not None and not read.rebuilt
        if read.problem is not None:
            self.notes.append(read.problem)
        for entry in read.entries[known:]:
            part = self._part(entry["part"], entry["first_seq"], entry["last_seq"])
            self._entries.append(entry)
            self._entry_lines.append(_entry_line(entry))
            self._parts.append(part)
            try:
                records, skipped = _read_records(part.jsonl_path)
            except (OSError, ValueError) as error:
                if for_writing:
                    raise ArchiveError(f"cannot read {part.jsonl_path}: {_reason(error)}") from error
                self.notes.append(f"part {part.number} could not be read ({_reason(error)})")
                continue
            if skipped:
                self.notes.append(f"part {part.number}: {skipped} unreadable line(s) skipped")
            self._learn(part, records)

    def _read_index(self, index_path: Path, signature: tuple[int, int, int], for_writing: bool) -> _IndexRead:
        """The index's entries; or, when it is missing or not a valid index, entries rebuilt from the part files."""
        if signature == MISSING:
            return _IndexRead(self._rebuild_entries(), f"{INDEX_NAME} was missing; rebuilt from the part files", rebuilt=True)
        try:
            data = json.loads(index_path.read_text(encoding="utf-8"))
        except UnicodeDecodeError as error:
            reason = f"not UTF-8 ({error.reason})"
        except ValueError as error:
            reason = f"not valid JSON ({error})"
        except OSError as error:
            if for_writing:  # never write over parts that may be listed in an index we cannot read
                raise ArchiveError(f"cannot read {index_path}: {_reason(error)}") from error
            return _IndexRead([], f"{INDEX_NAME} could not be read ({_reason(error)})")
        else:
            problem = _index_problem(data)
            if problem is None:
                return _IndexRead(data)
            reason = problem
        return _IndexRead(self._rebuild_entries(), f"{INDEX_NAME} was {reason}; rebuilt from the part files", rebuilt=True)

    def _rebuild_entries(self) -> list[dict[str, Any]]:
        """An index made from every ``NNNN.jsonl`` part whose records can be read, in part order."""
        entries: list[dict[str, Any]] = []
        for number, path in _part_files(self.folder):
            try:
                records, _ = _read_seq_records(path)
            except (OSError, ValueError):
                continue
            seqs = [seq for seq, _ in records]
            last = entries[-1]["last_seq"] if entries else 0
            if not seqs or seqs != list(range(last + 1, last + 1 + len(seqs))):
                continue  # a part must continue the numbering of the one before it
            entry: dict[str, Any] = {"part": number, "jsonl": path.name, "markdown": f"{path.stem}.md",
                                     "messages": len(seqs), "first_seq": seqs[0], "last_seq": seqs[-1]}
            redacted = Counter(REDACTED_MARK.findall(path.read_text(encoding="utf-8", errors="replace")))
            if redacted:
                entry["redacted"] = dict(sorted(redacted.items()))
            entries.append(entry)
        return entries

    def _learn(self, part: ArchivePart, records: Sequence[dict[str, Any]]) -> None:
        for offset, record in enumerate(records):
            message_id = (record.get("data") or {}).get("id")
            if message_id:
                self._ids.add(message_id)
            self._search.add(part.first_seq + offset, part.display_path, str(record.get("type")), record_text(record))

    def _part(self, number: int, first_seq: int, last_seq: int) -> ArchivePart:
        stem = f"{number:04d}"
        return ArchivePart(number, self.folder / f"{stem}.jsonl", self.folder / f"{stem}.md",
                           f"archives/{self.conversation_id}/{stem}.md", first_seq, last_seq)


# --- reading files ------------------------------------------------------------------------

def _signature(path: Path) -> tuple[int, int, int]:
    """What changes whenever the file is replaced: its inode, size and modification time (``MISSING`` if none)."""
    try:
        status = os.stat(path)
    except OSError:
        return MISSING
    return status.st_ino, status.st_size, status.st_mtime_ns


def _entry_line(entry: dict[str, Any]) -> str:
    return "  " + json.dumps(entry)


def _reason(error: BaseException) -> str:
    return getattr(error, "strerror", None) or str(error)


def _part_files(folder: Path) -> list[tuple[int, Path]]:
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    return sorted((int(match.group(1)), folder / name) for name in names if (match := PART_FILE.match(name)))


def _read_seq_records(path: Path) -> tuple[list[tuple[int, dict[str, Any]]], int]:
    """``(seq, message record)`` for each readable line of a part file, and how many lines were not readable."""
    found, skipped = [], 0
    for line in path.read_text(encoding="utf-8", errors="surrogateescape").splitlines():
        if not line.strip():
            continue
        try:
            item = json.loads(line)
            seq, record = item["seq"], item["message"]
            if not isinstance(seq, int) or not isinstance(record, dict) or not isinstance(record.get("data"), dict):
                raise ValueError("not an archived message")
        except (ValueError, TypeError, KeyError):
            skipped += 1
            continue
        found.append((seq, record))
    return found, skipped


def _read_records(path: Path) -> tuple[list[dict[str, Any]], int]:
    records, skipped = _read_seq_records(path)
    return [record for _, record in records], skipped


def _index_problem(data: Any) -> str | None:
    """Why ``data`` is not a valid index (a list of entries numbering parts and messages in order), or None."""
    if not isinstance(data, list):
        return f"not a list of parts (found {type(data).__name__})"
    last_part, last_seq = 0, 0
    for position, entry in enumerate(data):
        fields = ("part", "messages", "first_seq", "last_seq")
        if not isinstance(entry, dict) or not all(type(entry.get(key)) is int for key in fields):
            return f"not a valid index (entry {position + 1} lacks {', '.join(fields)})"
        if entry["part"] <= last_part or entry["first_seq"] != last_seq + 1 or entry["last_seq"] < entry["first_seq"] - 1:
            return f"not a valid index (entry {position + 1} is out of order)"
        last_part, last_seq = entry["part"], entry["last_seq"]
    return None


# --- search helpers ---------------------------------------------------------------------------

def _densest_window(lowered: str, words: list[str], width: int) -> int:
    """Where the snippet should start: the window holding the most distinct query words."""
    starts = sorted(match.start() for word in words for match in re.finditer(re.escape(word), lowered))
    best, best_count = starts[0], 0
    for start in starts:
        window = lowered[start:start + width * 2 // 3]
        count = sum(1 for word in words if word in window)
        if count > best_count:
            best, best_count = start, count
    return best


def _snippet(text: str, position: int, width: int) -> str:
    start = max(0, position - width // 3)
    piece = text[start:start + width].replace("\n", " ")
    return ("..." if start else "") + piece + ("..." if start + width < len(text) else "")


def make_search_archive_tool(archive: ConversationArchive) -> BaseTool:
    """The recovery tool: search this conversation's archive for a detail that was summarized away."""

    def search_archive(query: str) -> str:
        try:
            hits, parts = archive.search(query), archive.parts()
        except Exception as error:  # a tool never raises into the turn; the archive's files are still there
            return (f"The archive could not be searched ({type(error).__name__}: {error}). "
                    f"Its files are in archives/{archive.conversation_id}/; page them with read_file.")
        notes = "".join(f"\n(Note: {note}.)" for note in dict.fromkeys(archive.notes))
        if not parts:
            return "The archive is empty: nothing has been summarized away yet, so the detail should still be in the conversation." + notes
        if not hits:
            return (f"No archived message contains all of: {query!r}. Try fewer or different words, "
                    f"or page the archive with read_file(path='{parts[-1].display_path}')." + notes)
        lines = [f"{len(hits)} archived message(s) match {query!r}:"]
        lines += [f"- {hit.display_path} [message {hit.seq}, {hit.message_type}]: {hit.snippet}" for hit in hits]
        lines.append("Read a whole part with read_file(path=...) to see more.")
        return "\n".join(lines) + notes

    return StructuredTool.from_function(
        search_archive,
        name="search_archive",
        description=(
            "Search the archive of this conversation: the earlier messages that were summarized away. "
            "Use it when the user asks about a detail (a number, a file, a result) that is no longer in "
            "the conversation. `query` is a few words that must all appear, e.g. 'sofr average'. "
            "Returns matching snippets with the archive file and message number."
        ),
    )
