"""What the offline model remembers: only what is in its window.

- **Goal.** "What was my original goal?" is answered from a visible summary
  (a message starting ``[Conversation summary`` with a line
  ``Original goal (verbatim): ...``, or LangChain's ``Here is a summary of the
  conversation to date:`` with a ``## SESSION INTENT`` section), else from the
  earliest visible request *if nothing was cut from the window*. Otherwise it
  says it does not know: the start of the conversation has been forgotten.
- **Last action.** "What did you just do?" is answered from the last visible
  tool call and its result.
- **Recall.** "What was the average SOFR rate you found?" is answered from a
  visible number (in an earlier answer, a summary, or a visible table). If the
  number is gone but a visible offload stub or summary names a ``scratch/`` or
  ``archives/`` path about that entity, the model plans to read it
  (``read_file``, or ``search_archive`` for an archive when it has that tool),
  then answers from what it read.
- **Summaries.** Asked to summarize a conversation rendered as
  ``<message type="...">`` blocks, it extracts: the original goal verbatim, the
  requests, the tool calls, the scratch/ and archives/ paths and files, the
  numbers reported, and the current state, under the headings
  ``## SESSION INTENT / ## SUMMARY / ## ARTIFACTS / ## NEXT STEPS``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any
from xml.sax.saxutils import unescape

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from flawedcode.formats import ARCHIVE_LINE as ARCHIVE_LINE_TEXT
from flawedcode.formats import GOAL_LINE as GOAL_LINE_TEXT
from flawedcode.formats import STUB_PREFIX, SUMMARY_PREFIX
from flawedcode.models.offline_entities import Vocabulary
from flawedcode.models.offline_intents import Request, Step, main_column
from flawedcode.models.offline_results import (
    READ_HEADER,
    number,
    offload_path,
    parse_loaded_table,
    paths_named,
)

OUR_SUMMARY_PREFIX = SUMMARY_PREFIX
LANGCHAIN_SUMMARY_PREFIX = "Here is a summary of the conversation to date:"
GOAL_LINE = re.compile(rf"^{re.escape(GOAL_LINE_TEXT.strip())}[ \t]*(.+)$", re.MULTILINE)
ARCHIVE_LINE = re.compile(rf"^{re.escape(ARCHIVE_LINE_TEXT.strip())}\s*(archives/\S+)", re.MULTILINE)

DONT_KNOW_GOAL_TRUNCATED = "I don't know: the start of our conversation is no longer in my context window."
DONT_KNOW_GOAL_EMPTY = "I don't know: I can't see any earlier request from you in my context window."

STAT_PATTERNS: dict[str, str] = {
    "mean": r"mean|average|avg",
    "min": r"min(?:imum)?|lowest",
    "max": r"max(?:imum)?|highest",
    "latest": r"latest|most recent|current",
    "spread": r"spread",
}


def text_of(message: BaseMessage) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(part if isinstance(part, str) else str(part.get("text", "")) for part in content
                   if isinstance(part, str) or (isinstance(part, dict) and part.get("type") == "text"))


def is_summary_text(text: str) -> bool:
    return text.startswith(OUR_SUMMARY_PREFIX) or text.startswith(LANGCHAIN_SUMMARY_PREFIX)


def is_summary_message(message: BaseMessage) -> bool:
    return isinstance(message, (HumanMessage, SystemMessage)) and is_summary_text(text_of(message).lstrip())


def goal_in_summary(text: str) -> str | None:
    """The goal a summary states: its 'Original goal (verbatim):' line or its SESSION INTENT section."""
    match = GOAL_LINE.search(text)
    if match:
        return match.group(1).strip()
    section = re.search(r"^## SESSION INTENT\s*\n(.*?)(?=^## |\Z)", text, re.MULTILINE | re.DOTALL)
    if section:
        intent = " ".join(line.strip() for line in section.group(1).strip().splitlines() if line.strip())
        return intent or None
    return None


# ----------------------------------------------------------------------------- goal and last action


def answer_goal(earlier: list[BaseMessage], system: list[BaseMessage], truncated: bool) -> str:
    """The original goal, from what is visible before the question, or an honest 'I don't know'."""
    for message in [*reversed(earlier), *system]:
        if is_summary_message(message) or (isinstance(message, SystemMessage) and GOAL_LINE.search(text_of(message))):
            goal = goal_in_summary(text_of(message))
            if goal:
                return f'Your original goal was: "{goal}" (from the conversation summary I can see).'
    requests = [message for message in earlier if isinstance(message, HumanMessage) and not is_summary_message(message)]
    if truncated:
        return DONT_KNOW_GOAL_TRUNCATED
    if not requests:
        return DONT_KNOW_GOAL_EMPTY
    return f'Your original goal was: "{text_of(requests[0]).strip()}" (your first message in this conversation).'


def answer_last_action(earlier: list[BaseMessage]) -> str:
    results = {message.tool_call_id: text_of(message) for message in earlier if isinstance(message, ToolMessage)}
    for message in reversed(earlier):
        if isinstance(message, AIMessage) and message.tool_calls:
            call = message.tool_calls[-1]
            line = f"The last thing I did was call {format_call(call['name'], call['args'])}"
            result = results.get(call.get("id") or "")
            if result is not None:
                first_line = next((text for text in result.splitlines() if text.strip()), "(empty)")
                line += f"; it returned: {first_line[:300]}"
            return line + "."
    return "I don't know: I can't see any earlier tool call in my context window."


def format_call(name: str, args: dict[str, Any]) -> str:
    shown = ", ".join(f"{key}={_short_repr(value)}" for key, value in args.items())
    return f"{name}({shown})"


def _short_repr(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "...'"


# ----------------------------------------------------------------------------- recall


@dataclass
class Recalled:
    value: str
    line: str
    source: str


def entity_names(request: Request, vocabulary: Vocabulary) -> list[str]:
    names: list[str] = []
    for ref in request.mentions.dataframes:
        names += [name.lower() for name in vocabulary.aliases_of(ref)]
    if not names:  # a column alone ('rate') names the entity only when no dataframe is named
        names = [column.lower() for column in request.mentions.columns]
    return names


def _mentions_entity(text: str, names: list[str]) -> bool:
    if not names:
        return True
    lowered = text.lower()
    return any(re.search(r"(?<![\w])" + re.escape(name) + r"(?![\w])", lowered) for name in names)


DATAFRAME_KEY = re.compile(r"\b[a-z_]+/[a-z_]+\b")


def find_reported_number(texts: list[tuple[str, str]], stat: str, names: list[str]) -> Recalled | None:
    """The newest number reported for this statistic about this entity, in (source, text) pairs, newest first."""
    pattern = re.compile(rf"\b(?:{STAT_PATTERNS[stat]})\b[^0-9\n]{{0,40}}?(-?\d+(?:\.\d+)?)", re.IGNORECASE)
    for source, text in texts:
        lines = text.splitlines()
        for index in range(len(lines) - 1, -1, -1):
            match = pattern.search(lines[index])
            if not match:
                continue
            line = lines[index]
            # A line that names a dataframe speaks for that one; only a bare line borrows the lines above it.
            context = line if DATAFRAME_KEY.search(line) else "\n".join(lines[max(0, index - 2): index + 1])
            if _mentions_entity(context, names):
                return Recalled(match.group(1), lines[index].strip(), source)
    return None


def reported_texts(earlier: list[BaseMessage]) -> list[tuple[str, str]]:
    """Texts that may hold reported numbers: my answers and summaries, newest first."""
    texts: list[tuple[str, str]] = []
    for message in reversed(earlier):
        if isinstance(message, AIMessage) and text_of(message).strip():
            texts.append(("my earlier answer", text_of(message)))
        elif is_summary_message(message):
            texts.append(("the conversation summary", text_of(message)))
    return texts


def compute_from_tables(texts: list[tuple[str, str]], stat: str, request: Request, names: list[str]) -> Recalled | None:
    """A statistic computed from a loaded table in the given texts, if one is about the entity."""
    for source, text in texts:
        table = parse_loaded_table(text)
        if table is None or not _mentions_entity(table.key.replace("/", " ") + " " + table.key, names):
            continue
        numeric = table.numeric_columns()
        asked = [column for column in request.mentions.columns if column in numeric]
        column = asked[0] if asked else main_column(numeric)
        if column is None:
            continue
        pairs = table.values(column)
        if not pairs:
            continue
        values = [value for _, value in pairs]
        value = {
            "mean": sum(values) / len(values), "min": min(values), "max": max(values),
            "latest": values[-1], "spread": max(values) - min(values),
        }[stat]
        line = f"{stat} of {table.key} {column} over {len(values)} rows ({table.start} to {table.end})"
        return Recalled(number(value), line, source)
    return None


def recall_from_visible(request: Request, earlier: list[BaseMessage], vocabulary: Vocabulary) -> Recalled | None:
    stat = request.stats[0] if request.stats else "mean"
    names = entity_names(request, vocabulary)
    found = find_reported_number(reported_texts(earlier), stat, names)
    if found:
        return found
    tool_texts = [("a tool result I can see", text_of(message)) for message in reversed(earlier)
                  if isinstance(message, ToolMessage)]
    return compute_from_tables(tool_texts, stat, request, names)


def scratch_path_about(earlier: list[BaseMessage], names: list[str]) -> str | None:
    """The newest scratch/ file that a visible stub (by its path and call) or summary line names, about ``names``."""
    calls = {call["id"]: call for message in earlier if isinstance(message, AIMessage) for call in message.tool_calls}
    for message in reversed(earlier):
        text = text_of(message)
        if isinstance(message, ToolMessage) and (path := offload_path(text)):
            call = calls.get(message.tool_call_id, {})
            if _mentions_entity(path + " " + json.dumps(call.get("args", {})), names):
                return path
        elif is_summary_message(message):
            for line in text.splitlines():
                for path in paths_named(line):
                    if path.startswith("scratch/") and _mentions_entity(line, names):
                        return path
    return None


def recall_steps(request: Request, earlier: list[BaseMessage], vocabulary: Vocabulary,
                 tool_names: set[str]) -> list[Step]:
    """What to read when the number is not visible: a scratch file that holds it, else the archive."""
    path = scratch_path_about(earlier, entity_names(request, vocabulary))
    if path and "read_file" in tool_names:
        return [Step("read_file", {"path": path, "limit": 2000})]
    for message in reversed(earlier):
        text = text_of(message)
        archive = ARCHIVE_LINE.search(text) if is_summary_message(message) else None
        if archive:
            stat = request.stats[0] if request.stats else "mean"
            if "search_archive" in tool_names:
                return [Step("search_archive", {"query": " ".join(filter(None, [_entity_word(request), stat]))})]
            if "read_file" in tool_names:
                return [Step("read_file", {"path": archive.group(1).rstrip(".;,"), "limit": 2000})]
    return []


SAVED_WORDS = ("saved", "offloaded", "scratch", "stored", "full docs", "full result", "full file", "the file you")


def refers_to_saved_result(text: str) -> bool:
    lowered = text.lower()
    return any(re.search(r"(?<![\w])" + re.escape(word) + r"(?![\w])", lowered) for word in SAVED_WORDS)


def recovery_steps(request: Request, earlier: list[BaseMessage], vocabulary: Vocabulary,
                   tool_names: set[str]) -> list[Step]:
    """Go back to a saved result instead of fetching it again, when the request points at one.

    - "the saved / offloaded / scratch ... docs" -> read the scratch file a visible stub names;
    - a question about a column whose dataframe's docs were offloaded -> search that
      file for the column (only the matching lines come back), else read it.
    A request that names a file path is left alone.
    """
    if any(step.intent in ("read_file", "write_file", "run_python") for step in request.steps):
        return []
    names = entity_names(request, vocabulary) + [str(step.roles["dataframe"]) for step in request.steps if step.roles.get("dataframe")]
    path = scratch_path_about(earlier, names)
    if path is None:
        return []
    if refers_to_saved_result(request.text) and "read_file" in tool_names:
        return [Step("read_file", {"path": path, "limit": 2000})]
    asks_docs = any(step.intent == "docs" for step in request.steps)
    if asks_docs and request.mentions.columns and "chartbook_get_docs" in path:
        if "search_files" in tool_names:
            return [Step("search_files", {"pattern": "|".join(request.mentions.columns), "path": path})]
        if "read_file" in tool_names:
            return [Step("read_file", {"path": path, "limit": 2000})]
    return []


def _entity_word(request: Request) -> str:
    if request.mentions.dataframes:
        return request.mentions.dataframes[0].dataframe
    return request.mentions.columns[0] if request.mentions.columns else ""


def answer_recall(request: Request, found: Recalled | None) -> str:
    stat = request.stats[0] if request.stats else "mean"
    if found is None:
        return (f"I don't know: I can't see the {stat} you are asking about in my context window, "
                "and I can see no saved file that holds it.")
    about = " of " + ", ".join(ref.key for ref in request.mentions.dataframes) if request.mentions.dataframes else ""
    return f"The {stat}{about} was {found.value} (from {found.source}: {_clip(found.line, 200)})."


def recall_from_read(request: Request, results: list[tuple[str, str]], vocabulary: Vocabulary) -> Recalled | None:
    """After reading a scratch/ or archive file: a reported number in it, else one computed from its table."""
    stat = request.stats[0] if request.stats else "mean"
    names = entity_names(request, vocabulary)
    texts = []
    for name, content in results:
        where = READ_HEADER.match(content)
        texts.append((where["path"] if where else name, content))
    return compute_from_tables(texts, stat, request, names) or find_reported_number(texts, stat, names)


# ----------------------------------------------------------------------------- summaries


@dataclass
class RenderedMessage:
    type: str
    content: str
    tool_calls: list[tuple[str, dict[str, Any]]]


MESSAGE_BLOCK = re.compile(r"<message type=([\"'])(?P<type>\w+)\1>(?P<body>.*?)</message>", re.DOTALL)
TOOL_CALL = re.compile(r"<tool_call id=([\"']).*?\1 name=([\"'])(?P<name>.*?)\2>(?P<args>.*?)</tool_call>", re.DOTALL)


def parse_rendered_conversation(text: str) -> list[RenderedMessage]:
    """Messages rendered by get_buffer_string(messages, format="xml")."""
    messages: list[RenderedMessage] = []
    for block in MESSAGE_BLOCK.finditer(text):
        body = block["body"]
        calls: list[tuple[str, dict[str, Any]]] = []
        for call in TOOL_CALL.finditer(body):
            try:
                args = json.loads(unescape(call["args"]))
            except json.JSONDecodeError:
                args = {"raw": unescape(call["args"])}
            calls.append((unescape(call["name"], {"&quot;": '"', "&apos;": "'"}), args if isinstance(args, dict) else {}))
        content = unescape(TOOL_CALL.sub("", body)).strip()
        messages.append(RenderedMessage(block["type"], content, calls))
    return messages


NUMBER_LINE = re.compile(r"-?\d+\.\d+")


def write_summary(rendered: list[RenderedMessage], vocabulary: Vocabulary) -> str:
    """A compact structured summary, extracted (not invented) from the rendered conversation."""
    goal = _goal_of(rendered)
    requests = [m.content for m in rendered if m.type == "human" and not is_summary_text(m.content)]
    earlier = [m.content for m in rendered if m.type in ("human", "system") and is_summary_text(m.content)]
    actions = [format_call(name, args) for m in rendered for name, args in m.tool_calls]
    outcomes = [_outcome(m.content) for m in rendered if m.type == "tool"]
    artifacts = _artifacts(rendered)
    numbers = _numbers(rendered, earlier)
    last_request = requests[-1] if requests else goal
    answered = _is_answered(rendered)

    lines = ["## SESSION INTENT", f"{GOAL_LINE_TEXT}{goal or 'None'}", "", "## SUMMARY"]
    later = [request for request in requests if request != goal]
    if later:
        lines.append("Requests: " + " | ".join(_clip(request, 100) for request in later[-6:]))
    if actions:
        shown = [f"{action} -> {outcome}" for action, outcome in zip(actions, outcomes + [""] * len(actions))]
        lines.append(f"Actions ({len(actions)}):")
        lines += [f"- {_clip(item, 160)}" for item in shown[-8:]]
    if numbers:
        lines.append("Numbers reported:")
        lines += [f"- {_clip(item, 200)}" for item in numbers[-6:]]
    if not later and not actions and not numbers:
        lines.append("None")
    lines += ["", "## ARTIFACTS"]
    lines += [f"- {path}" for path in artifacts[-10:]] or ["None"]
    lines += ["", "## NEXT STEPS",
              f"Last request: {_clip(last_request or 'None', 160)} ({'answered' if answered else 'not answered yet'})."]
    return "\n".join(lines)


def _goal_of(rendered: list[RenderedMessage]) -> str:
    for message in rendered:
        if message.type in ("human", "system") and is_summary_text(message.content):
            goal = goal_in_summary(message.content)
            if goal:
                return goal
        elif message.type == "human":
            return message.content
    return ""


def _outcome(content: str) -> str:
    if content.startswith("Error"):
        return _clip(content.splitlines()[0], 100)
    if content.startswith(STUB_PREFIX):
        return "offloaded to " + (offload_path(content) or "scratch/")
    first = next((line for line in content.splitlines() if line.strip()), "")
    return f"{_clip(first, 80)} ({len(content):,} chars)"


def _artifacts(rendered: list[RenderedMessage]) -> list[str]:
    found: list[str] = []
    for message in rendered:
        found += paths_named(message.content)
        for _, args in message.tool_calls:
            for key in ("path", "file_path"):
                if isinstance(args.get(key), str) and args[key] not in found:
                    found.append(args[key])
    return list(dict.fromkeys(found))


def _numbers(rendered: list[RenderedMessage], earlier_summaries: list[str]) -> list[str]:
    found: list[str] = []
    for text in earlier_summaries:
        section = re.search(r"^Numbers reported:\n((?:- .*\n?)+)", text, re.MULTILINE)
        if section:
            found += [line[2:].strip() for line in section.group(1).splitlines()]
    for message in rendered:
        if message.type != "ai" or not message.content:
            continue
        for sentence in re.split(r"(?<=\.)\s+(?=[A-Z])|\n", message.content):
            if NUMBER_LINE.search(sentence) and re.search(r"[a-z]", sentence) and not sentence.startswith(">"):
                found.append(sentence.strip())
    return list(dict.fromkeys(found))


def _is_answered(rendered: list[RenderedMessage]) -> bool:
    last_human = max((i for i, m in enumerate(rendered) if m.type == "human"), default=-1)
    return any(m.type == "ai" and m.content and not m.tool_calls for m in rendered[last_human + 1:])


def _clip(text: str, limit: int) -> str:
    flat = re.sub(r"\s+", " ", text).strip()
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."

