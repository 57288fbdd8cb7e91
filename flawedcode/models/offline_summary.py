"""Summaries the offline model writes when asked to summarize a conversation rendered as ``<message type="...">``
blocks (``get_buffer_string(messages, format="xml")``): extracted, never invented, under ``## SESSION INTENT /
## SUMMARY / ## ARTIFACTS / ## NEXT STEPS`` (the goal verbatim, requests, tool calls and outcomes, numbers reported,
the user's notes, scratch/ and archives/ paths, and whether the last request was answered).
"""

from __future__ import annotations

import json
import re
from collections import namedtuple
from typing import Any
from xml.sax.saxutils import unescape

from langchain_core.messages import get_buffer_string

from flawedcode.formats import GOAL_LINE as GOAL_LINE_TEXT
from flawedcode.formats import STUB_PREFIX
from flawedcode.models.offline_cues import register_planner
from flawedcode.models.offline_introspect import say
from flawedcode.models.offline_memory import clip, format_call, goal_in_summary, is_note, is_summary_text, section_lines
from flawedcode.models.offline_plan import Clause, Context, Task
from flawedcode.models.offline_results import paths_named
from flawedcode.models.offline_stats import offload_path

RenderedMessage = namedtuple("RenderedMessage", "type content tool_calls")
"""One message of a rendered conversation: its type ('human', 'ai', 'tool', 'system'), its text and its (name, args) calls."""
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
        messages.append(RenderedMessage(block["type"], unescape(TOOL_CALL.sub("", body)).strip(), calls))
    return messages


NUMBER_LINE = re.compile(r"-?\d+\.\d+")
LAST_REQUEST = re.compile(r"^Last request: (?P<request>.+?) \((?:answered|not answered yet)\)\.$", re.MULTILINE)
"""The summary's line naming the last request it covers (what a follow-up after the summary follows)."""


REQUESTS_LINE = re.compile(r"^Requests: (?P<requests>.+)$", re.MULTILINE)


def requests_in(summary: str) -> list[str]:
    """The requests a summary covers, oldest first and word for word: its goal, then its 'Requests:' line (none it had
    to clip), so a chain of follow-ups ('and Q4?', 'the 20y', 'now in bp') survives it; its last request if it lists none."""
    listed = REQUESTS_LINE.search(summary)
    if listed is None:
        match = LAST_REQUEST.search(summary)
        return [match["request"]] if match and not match["request"].endswith("...") else []
    goal = goal_in_summary(summary)
    return [goal] * (goal not in (None, "None")) + [request for request in listed["requests"].split(" | ") if not request.endswith("...")]


def write_summary(rendered: list[RenderedMessage], vocabulary: object = None) -> str:
    """A compact structured summary, extracted (not invented) from the rendered conversation."""
    goal = _goal_of(rendered)
    earlier = [m.content for m in rendered if m.type in ("human", "system") and is_summary_text(m.content)]
    later = [m.content for m in rendered if m.type == "human" and not is_summary_text(m.content) and m.content != goal]
    actions = [format_call(name, args) for m in rendered for name, args in m.tool_calls]
    outcomes = [_outcome(m.content) for m in rendered if m.type == "tool"]
    said = [sentence.strip() for m in rendered if m.type == "ai" and m.content for sentence in re.split(r"(?<=\.)\s+(?=[A-Z])|\n", m.content)
            if NUMBER_LINE.search(sentence) and re.search(r"[a-z]", sentence) and not sentence.startswith(">")]
    numbers = list(dict.fromkeys([line for text in earlier for line in section_lines(text, "Numbers reported:")] + said))
    notes = list(dict.fromkeys([line for text in earlier for line in section_lines(text, "User notes (verbatim):")] +
                               [m.content.strip() for m in rendered if m.type == "human" and is_note(m.content)]))
    lines = ["## SESSION INTENT", f"{GOAL_LINE_TEXT}{goal or 'None'}", "", "## SUMMARY"]
    if later:
        lines.append("Requests: " + " | ".join(clip(request, 100) for request in later[-6:]))
    if actions:
        shown = [f"{action} -> {outcome}" for action, outcome in zip(actions, outcomes + [""] * len(actions))]
        lines += [f"Actions ({len(actions)}):", *(f"- {clip(item, 160)}" for item in shown[-8:])]
    if numbers:
        lines += ["Numbers reported:", *(f"- {clip(item, 200)}" for item in dict.fromkeys(numbers[:1] + numbers[-5:]))]
    if notes:
        lines += ["User notes (verbatim):", *(f"- {clip(note, 200)}" for note in notes[-6:])]
    if not later and not actions and not numbers and not notes:
        lines.append("None")
    lines += ["", "## ARTIFACTS", *([f"- {path}" for path in _artifacts(rendered)[-10:]] or ["None"]), "", "## NEXT STEPS"]
    last_human = max((i for i, m in enumerate(rendered) if m.type == "human"), default=-1)
    answered = any(m.type == "ai" and m.content and not m.tool_calls for m in rendered[last_human + 1:])
    last = later[-1] if later else ""  # the pinned goal is the session's intent, not its last request
    lines.append(f"Last request: {clip(last, 160)} ({'answered' if answered else 'not answered yet'})." if last
                 else "Last request: none after the goal in these messages.")
    return "\n".join(lines)


def plan_conversation_summary(clause: Clause, context: Context) -> list[Task]:
    """'summarize our conversation so far': the summary it writes of the messages it can see, as a summary step would."""
    if not context.earlier:
        return say("no_summary", context)
    rendered = parse_rendered_conversation(get_buffer_string(context.earlier, format="xml"))
    return say("summary", context, summary=write_summary(rendered))


register_planner("conversation_summary", plan_conversation_summary)


def _goal_of(rendered: list[RenderedMessage]) -> str:
    for message in rendered:
        if message.type in ("human", "system") and is_summary_text(message.content):
            if goal := goal_in_summary(message.content):
                return goal
        elif message.type == "human":
            return message.content
    return ""


def _outcome(content: str) -> str:
    if content.startswith("Error"):
        return clip(content.splitlines()[0], 100)
    if content.startswith(STUB_PREFIX):
        return "offloaded to " + (offload_path(content) or "scratch/")
    return f"{clip(next((line for line in content.splitlines() if line.strip()), ''), 80)} ({len(content):,} chars)"


def _artifacts(rendered: list[RenderedMessage]) -> list[str]:
    found = [path for message in rendered for path in [*paths_named(message.content), *(
        args[key] for _, args in message.tool_calls for key in ("path", "file_path") if isinstance(args.get(key), str))]]
    unique = list(dict.fromkeys(found))
    return [path for path in unique if not any(other != path and other.startswith(path) for other in unique)]  # no cut-off copies
