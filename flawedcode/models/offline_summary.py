"""Summaries the offline model writes when asked to summarize a rendered conversation.

Given ``<message type="...">`` blocks (``get_buffer_string(messages, format="xml")``) inside a
summary prompt, it extracts, and never invents: the original goal verbatim (from an earlier
summary's goal line, else the first request), the later requests, the tool calls with their
outcomes, the numbers its answers reported, what the user asked it to remember, the
scratch/ and archives/ paths, and whether the last request was answered, under
``## SESSION INTENT / ## SUMMARY / ## ARTIFACTS / ## NEXT STEPS``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any
from xml.sax.saxutils import unescape

from flawedcode.formats import GOAL_LINE as GOAL_LINE_TEXT
from flawedcode.formats import STUB_PREFIX
from flawedcode.models.offline_memory import format_call, goal_in_summary, is_note, is_summary_text
from flawedcode.models.offline_results import paths_named
from flawedcode.models.offline_stats import offload_path


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


LAST_REQUEST = re.compile(r"^Last request: (?P<request>.+?) \((?:answered|not answered yet)\)\.$", re.MULTILINE)
"""The summary's line naming the last request it covers (what a follow-up after the summary follows)."""


def last_request_in(summary: str) -> str | None:
    """The last request a summary names, word for word; None if it names none or had to clip it."""
    match = LAST_REQUEST.search(summary)
    return match["request"] if match and not match["request"].endswith("...") else None


def write_summary(rendered: list[RenderedMessage], vocabulary: object = None) -> str:
    """A compact structured summary, extracted (not invented) from the rendered conversation."""
    goal = _goal_of(rendered)
    requests = [m.content for m in rendered if m.type == "human" and not is_summary_text(m.content)]
    earlier = [m.content for m in rendered if m.type in ("human", "system") and is_summary_text(m.content)]
    actions = [format_call(name, args) for m in rendered for name, args in m.tool_calls]
    outcomes = [_outcome(m.content) for m in rendered if m.type == "tool"]
    artifacts = _artifacts(rendered)
    numbers = _numbers(rendered, earlier)
    answered = _is_answered(rendered)

    lines = ["## SESSION INTENT", f"{GOAL_LINE_TEXT}{goal or 'None'}", "", "## SUMMARY"]
    later = [request for request in requests if request != goal]
    last_request = later[-1] if later else None  # the pinned goal is the session's intent, not its last request
    if later:
        lines.append("Requests: " + " | ".join(_clip(request, 100) for request in later[-6:]))
    if actions:
        shown = [f"{action} -> {outcome}" for action, outcome in zip(actions, outcomes + [""] * len(actions))]
        lines.append(f"Actions ({len(actions)}):")
        lines += [f"- {_clip(item, 160)}" for item in shown[-8:]]
    if numbers:
        lines.append("Numbers reported:")
        lines += [f"- {_clip(item, 200)}" for item in list(dict.fromkeys(numbers[:1] + numbers[-5:]))]
    notes = _notes(rendered, earlier)
    if notes:
        lines.append("User notes (verbatim):")
        lines += [f"- {_clip(note, 200)}" for note in notes[-6:]]
    if not later and not actions and not numbers and not notes:
        lines.append("None")
    lines += ["", "## ARTIFACTS"]
    lines += [f"- {path}" for path in artifacts[-10:]] or ["None"]
    lines += ["", "## NEXT STEPS",
              f"Last request: {_clip(last_request, 160)} ({'answered' if answered else 'not answered yet'})." if last_request
              else "Last request: none after the goal in these messages."]
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
    unique = list(dict.fromkeys(found))
    return [path for path in unique if not any(other != path and other.startswith(path) for other in unique)]  # no cut-off copies


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



def _notes(rendered: list[RenderedMessage], earlier_summaries: list[str]) -> list[str]:
    """What the user asked to keep (earlier summaries' notes first), word for word."""
    found: list[str] = []
    for text in earlier_summaries:
        section = re.search(r"^User notes \(verbatim\):\n((?:- .*\n?)+)", text, re.MULTILINE)
        if section:
            found += [line[2:].strip() for line in section.group(1).splitlines()]
    found += [message.content.strip() for message in rendered if message.type == "human" and is_note(message.content)]
    return list(dict.fromkeys(found))
