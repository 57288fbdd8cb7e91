"""The conversation archive: every message that leaves the context, kept unchanged.

Layout, one folder per conversation under ``archives/``::

    archives/<conversation_id>/
        0001.jsonl   lossless records of the messages the 1st summary replaced, in order
        0001.md      the same messages, rendered for people (and for read_file)
        0002.jsonl   ... the 2nd summary's, and so on
        index.json   one entry per part: its files, message count, first/last sequence number

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
"""

from __future__ import annotations

import fcntl
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from langchain_core.messages import BaseMessage, messages_from_dict, messages_to_dict
from langchain_core.tools import BaseTool, StructuredTool

from flawedcode.paths import write_atomically


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


def message_text(message: BaseMessage) -> str:
    """The text of a message, tool calls included, as one string."""
    content = message.content if isinstance(message.content, str) else json.dumps(message.content, ensure_ascii=False)
    for call in getattr(message, "tool_calls", None) or []:
        content += f"\n-> {call['name']}({json.dumps(call.get('args', {}), ensure_ascii=False)})"
    return content


def render_markdown(messages: Sequence[BaseMessage], first_seq: int) -> str:
    """Render messages for a person (or a model paging with read_file)."""
    blocks = []
    for offset, message in enumerate(messages):
        name = getattr(message, "name", None)
        title = f"{message.type}" + (f" ({name})" if name else "")
        blocks.append(f"### [{first_seq + offset}] {title}\n\n{message_text(message)}\n")
    return "\n".join(blocks)


class ConversationArchive:
    """The archive of one conversation (see the module docstring for its layout and rules)."""

    def __init__(self, archive_root: Path, conversation_id: str) -> None:
        self.archive_root = Path(archive_root)
        self.restart(conversation_id)

    def restart(self, conversation_id: str) -> None:
        """Point at another conversation's folder (a new conversation starts an empty archive)."""
        self.conversation_id = conversation_id
        self.folder = self.archive_root / conversation_id

    # --- writing ---------------------------------------------------------
    def append(self, messages: Sequence[BaseMessage]) -> ArchivePart:
        """Archive ``messages`` as a new part; raises ArchiveError if anything cannot be written."""
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            with open(self.folder / ".lock", "a") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                index = self._read_index()
                number = len(index) + 1
                first_seq = index[-1]["last_seq"] + 1 if index else 1
                part = self._part(number, first_seq, first_seq + len(messages) - 1)
                records = messages_to_dict(list(messages))
                lines = "".join(json.dumps({"seq": first_seq + i, "message": record}, ensure_ascii=False) + "\n"
                                for i, record in enumerate(records))
                write_atomically(part.jsonl_path, lines)
                header = f"# Archive part {number} of conversation {self.conversation_id} (messages {part.first_seq}-{part.last_seq})\n\n"
                write_atomically(part.markdown_path, header + render_markdown(messages, first_seq))
                index.append({"part": number, "jsonl": part.jsonl_path.name, "markdown": part.markdown_path.name,
                              "messages": len(messages), "first_seq": part.first_seq, "last_seq": part.last_seq})
                write_atomically(self.folder / "index.json", json.dumps(index, indent=2) + "\n")
                return part
        except (OSError, ValueError, TypeError) as error:  # no folder, a corrupt index, a message JSON can't hold
            raise ArchiveError(f"cannot write the archive in {self.folder}: {getattr(error, 'strerror', None) or error}") from error

    # --- reading ---------------------------------------------------------
    def archived_ids(self) -> set[str]:
        """Ids of the messages already archived (to archive each message once)."""
        ids: set[str] = set()
        for part in self.parts():
            for line in part.jsonl_path.read_text(encoding="utf-8").splitlines():
                if line and (message_id := json.loads(line)["message"]["data"].get("id")):
                    ids.add(message_id)
        return ids

    def parts(self) -> list[ArchivePart]:
        return [self._part(entry["part"], entry["first_seq"], entry["last_seq"]) for entry in self._read_index()]

    def messages(self) -> list[BaseMessage]:
        """Every archived message, in order, restored exactly as it was."""
        restored: list[BaseMessage] = []
        for part in self.parts():
            records = [json.loads(line)["message"] for line in part.jsonl_path.read_text(encoding="utf-8").splitlines() if line]
            restored.extend(messages_from_dict(records))
        return restored

    def search(self, query: str, max_hits: int = 8, snippet_chars: int = 240) -> list[ArchiveHit]:
        """Messages containing every word of ``query`` (case-insensitive), newest first."""
        words = [word for word in re.findall(r"[\w.%/-]+", query.lower()) if len(word) > 1]
        if not words:
            return []
        hits: list[ArchiveHit] = []
        for part in reversed(self.parts()):
            lines = part.jsonl_path.read_text(encoding="utf-8").splitlines()
            for line in reversed(lines):
                record = json.loads(line)
                message = messages_from_dict([record["message"]])[0]
                text = message_text(message)
                lowered = text.lower()
                if all(word in lowered for word in words):
                    snippet = _snippet(text, _densest_window(lowered, words, snippet_chars), snippet_chars)
                    hits.append(ArchiveHit(part.display_path, record["seq"], message.type, snippet))
                    if len(hits) >= max_hits:
                        return hits
        return hits

    # --- helpers ---------------------------------------------------------
    def _read_index(self) -> list[dict]:
        index_path = self.folder / "index.json"
        return json.loads(index_path.read_text(encoding="utf-8")) if index_path.exists() else []

    def _part(self, number: int, first_seq: int, last_seq: int) -> ArchivePart:
        stem = f"{number:04d}"
        return ArchivePart(number, self.folder / f"{stem}.jsonl", self.folder / f"{stem}.md",
                           f"archives/{self.conversation_id}/{stem}.md", first_seq, last_seq)


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
        hits = archive.search(query)
        if not archive.parts():
            return "The archive is empty: nothing has been summarized away yet, so the detail should still be in the conversation."
        if not hits:
            return (f"No archived message contains all of: {query!r}. Try fewer or different words, "
                    f"or page the archive with read_file(path='{archive.parts()[-1].display_path}').")
        lines = [f"{len(hits)} archived message(s) match {query!r}:"]
        lines += [f"- {hit.display_path} [message {hit.seq}, {hit.message_type}]: {hit.snippet}" for hit in hits]
        lines.append("Read a whole part with read_file(path=...) to see more.")
        return "\n".join(lines)

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
