"""Summaries for any agent that asks, extracted from the messages it shows, never invented (issue 41, stage 4).

Asked for when the latest user message has a summary word (``session.toml``) and holds a conversation rendered as ``<message type="...">`` blocks
(v2 and the peers send it so), or says it is about the conversation. A live request summarizes the messages before it: the leading goal, then 'the
N messages' after it and the earlier summaries (an agent's bracketed note, '[Plan reminder: ...]', is not one), or all; the summaries too when it
asks to consolidate them (not 'consolidate ...: no'), or only they ('the 3 summary blocks'). 'Under 600 characters' drops whole lines
(``DROP_ORDER``), 'the goal is pinned' the SESSION INTENT. A rendered conversation's summary is never cut: cutting it to v2's '1,500 characters'
moved lesson figures with the clone's path (measured). Sections: SESSION INTENT (the goal verbatim), SUMMARY (requests, calls and outcomes,
sentences with figures, notes), ARTIFACTS, NEXT STEPS."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any
from xml.sax.saxutils import unescape

from langchain_core.messages import BaseMessage, HumanMessage

from flawedcode.formats import GOAL_LINE, STUB_PREFIX, SUMMARY_PREFIX

WORDS = tomllib.loads(Path(__file__).with_name("session.toml").read_text(encoding="utf-8"))
SAY = WORDS["say"]
LANGCHAIN_SUMMARY_PREFIX = "Here is a summary of the conversation to date:"
BLOCK = re.compile(r"<message type=([\"'])(?P<type>\w+)\1>(?P<body>.*?)</message>", re.DOTALL)
CALL = re.compile(r"<tool_call id=([\"']).*?\1 name=([\"'])(?P<name>.*?)\2>(?P<args>.*?)</tool_call>", re.DOTALL)
PATH = re.compile(r"(?<![\w/])((?:scratch|archives)/[\w/-]*[\w-]\.[a-z]+)(?![\w])")
WORD = re.compile(r"tl;dr|[\w'-]+")
FIGURE = re.compile(r"-?\d+\.\d+")
COUNT = re.compile(r"\b(\d+) (summary blocks|summaries|messages)\b")
LIMIT = re.compile(r"\b([\d,]+) (\w+)")
DROP_ORDER = ("Actions (", "Requests: ", "## ARTIFACTS", "Numbers reported:", "User notes")  # the session's first figure last

Said = tuple[str, str, list[tuple[str, dict[str, Any]]]]  # a message's type ('human', 'ai', 'tool', 'system'), text, calls


def words_in(text: str, phrases: list[str]) -> bool:
    padded = " " + " ".join(WORD.findall(text.lower())) + " "
    return any(f" {phrase} " in padded for phrase in phrases)


def is_summary(text: str) -> bool:
    return text.lstrip().startswith((SUMMARY_PREFIX, LANGCHAIN_SUMMARY_PREFIX))


def reply(visible: list[BaseMessage], latest: int) -> str | None:
    """The summary the latest request asks for, or None when it asks for none."""
    text = visible[latest].text
    instruction = re.sub(r"(?i)\btl;dr:", " ", BLOCK.sub(" ", text))  # 'TL;DR: the median ...' heads the user's own ask
    if not words_in(instruction, WORDS["summary"]["asks"]) or words_in(instruction, WORDS["summary"]["asked_of_the_past"]):
        return None  # 'what have you summarized so far?' asks what happened (introspect.py), not for a summary
    if BLOCK.search(text):
        return write(rendered(text))  # not cut to a length it names: see the module docstring
    if not words_in(instruction, WORDS["summary"]["about"]):
        return None
    if not (earlier := visible[:latest]):
        return SAY["nothing_to_summarize"]
    summary = write([said(m) for m in chosen(earlier, instruction)])
    if words_in(instruction, WORDS["summary"]["goal_kept"]):
        summary = re.sub(r"^## SESSION INTENT\n(?:.*\n)*?(?=## |\Z)", "", summary, flags=re.MULTILINE)
    return fit(summary, instruction)


def chosen(earlier: list[BaseMessage], instruction: str) -> list[BaseMessage]:
    start = 1 if isinstance(earlier[0], HumanMessage) and not is_summary(earlier[0].text) else 0
    end = next((i for i in range(start, len(earlier)) if not is_summary(earlier[i].text)), len(earlier))
    counted = {kind: int(number) for number, kind in COUNT.findall(instruction.lower())}
    if blocks := counted.get("summary blocks", counted.get("summaries")):  # 'the 3 summary blocks after the first 1 messages'
        return [*earlier[:start], *earlier[start:end][:blocks]]
    said_no = re.search(r"(?:consolidat|merg)\w*[^.;:]*:\s*no\b", instruction.lower())
    summaries = earlier[start:end] if words_in(instruction, WORDS["summary"]["consolidate"]) and not said_no else []
    rest = earlier[end:end + counted["messages"]] if "messages" in counted else earlier[end:]
    return [*earlier[:start], *summaries, *(m for m in rest if not (isinstance(m, HumanMessage) and m.text.startswith("[")))]


def said(message: BaseMessage) -> Said:
    return message.type, message.text.strip(), [(c["name"], c["args"]) for c in getattr(message, "tool_calls", None) or []]


def rendered(text: str) -> list[Said]:
    messages: list[Said] = []
    for block in BLOCK.finditer(text):
        calls = []
        for call in CALL.finditer(block["body"]):
            try:
                args = json.loads(unescape(call["args"]))
            except json.JSONDecodeError:
                args = {"raw": unescape(call["args"])}
            calls.append((unescape(call["name"], {"&quot;": '"', "&apos;": "'"}), args if isinstance(args, dict) else {}))
        messages.append((block["type"], unescape(CALL.sub("", block["body"])).strip(), calls))
    return messages


def goal_in(summary: str) -> str | None:
    if match := re.search(rf"^{re.escape(GOAL_LINE.strip())}[ \t]*(.+)$", summary, re.MULTILINE):
        return match.group(1).strip()
    section = re.search(r"^## SESSION INTENT\s*\n(.*?)(?=^## |\Z)", summary, re.MULTILINE | re.DOTALL)
    return (" ".join(line.strip() for line in section.group(1).splitlines() if line.strip()) or None) if section else None


def section(text: str, title: str) -> list[str]:
    found = re.search(rf"^{re.escape(title)}\n((?:- .*\n?)+)", text, re.MULTILINE)
    return [line[2:].strip() for line in found.group(1).splitlines()] if found else []


def clip(text: str, limit: int) -> str:
    flat = re.sub(r"\s+", " ", text).strip()
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def call_text(name: str, args: dict[str, Any]) -> str:
    shown = [repr(value) if len(repr(value)) <= 80 else repr(value)[:77] + "...'" for value in args.values()]
    return f"{name}({', '.join(f'{key}={value}' for key, value in zip(args, shown))})"


def is_note(text: str) -> bool:
    words = re.findall(r"[\w']+", text.lower())
    while words and words[0] in WORDS["notes"]["lead_in"]:
        words.pop(0)
    opening = f" {' '.join(words)} "
    return "?" not in text and (any(opening.startswith(f" {verb} ") for verb in WORDS["notes"]["verbs"] + WORDS["notes"]["statements"])
                                or any(f" {keep} " in opening for keep in WORDS["notes"]["kept"]))


def write(messages: list[Said]) -> str:
    goals = (goal_in(text) if is_summary(text) else text for kind, text, _ in messages  # the first summary's goal or the first request
             if kind in ("human", "system") and (is_summary(text) and goal_in(text) or kind == "human" and not is_summary(text)))
    goal, earlier = next(goals, ""), [text for kind, text, _ in messages if kind in ("human", "system") and is_summary(text)]
    later = [text for kind, text, _ in messages if kind == "human" and not is_summary(text) and text != goal]
    actions = [call_text(name, args) for _, _, calls in messages for name, args in calls]
    outcomes = [outcome(text) for kind, text, _ in messages if kind == "tool"]
    stated = [s.strip() for kind, text, _ in messages if kind == "ai" and text for s in re.split(r"(?<=\.)\s+(?=[A-Z])|\n", text)
              if FIGURE.search(s) and re.search(r"[a-z]", s) and not s.startswith(">")]
    numbers = list(dict.fromkeys([line for text in earlier for line in section(text, "Numbers reported:")] + stated))
    notes = list(dict.fromkeys([line for text in earlier for line in section(text, "User notes (verbatim):")]
                               + [text for kind, text, _ in messages if kind == "human" and is_note(text)]))
    lines = ["## SESSION INTENT", f"{GOAL_LINE}{goal or 'None'}", "", "## SUMMARY"]
    if later:
        lines.append("Requests: " + " | ".join(clip(request, 100) for request in later[-6:]))
    if actions:
        shown = [f"{action} -> {result}" for action, result in zip(actions, outcomes + [""] * len(actions))]
        lines += [f"Actions ({len(actions)}):", *(f"- {clip(item, 160)}" for item in shown[-8:])]
    if numbers:
        lines += ["Numbers reported:", *(f"- {clip(item, 200)}" for item in dict.fromkeys(numbers[:1] + numbers[-5:]))]
    if notes:
        lines += ["User notes (verbatim):", *(f"- {clip(note, 200)}" for note in notes[-6:])]
    if not later and not actions and not numbers and not notes:
        lines.append("None")
    lines += ["", "## ARTIFACTS", *([f"- {path}" for path in artifacts(messages)[-10:]] or ["None"]), "", "## NEXT STEPS"]
    last_human = max((i for i, m in enumerate(messages) if m[0] == "human"), default=-1)
    answered = any(kind == "ai" and text and not calls for kind, text, calls in messages[last_human + 1:])
    last = later[-1] if later else ""  # the goal is the session's intent, not its last request
    lines.append(f"Last request: {clip(last, 160)} ({'answered' if answered else 'not answered yet'})." if last
                 else "Last request: none after the goal in these messages.")
    return "\n".join(lines)


def outcome(content: str) -> str:
    if content.startswith("Error"):
        return clip(content.splitlines()[0], 100)
    if content.startswith(STUB_PREFIX):
        return "offloaded to " + (re.match(rf"{re.escape(STUB_PREFIX)}([^\s|\]]+)", content) or [None, "scratch/"])[1]
    return f"{clip(next((line for line in content.splitlines() if line.strip()), ''), 80)} ({len(content):,} chars)"


def artifacts(messages: list[Said]) -> list[str]:
    unique = list(dict.fromkeys(path for _, text, calls in messages for path in [*PATH.findall(text), *(
        args[key] for _, args in calls for key in ("path", "file_path") if isinstance(args.get(key), str))]))
    return [path for path in unique if not any(other != path and other.startswith(path) for other in unique)]  # no cut-off copies


def fit(summary: str, instruction: str) -> str:
    limits = [int(number.replace(",", "")) for number, unit in LIMIT.findall(instruction.lower()) if unit in WORDS["summary"]["limit"]]
    if not limits or len(summary) <= limits[0]:
        return summary  # else whole lines go, DROP_ORDER's kinds first
    lines: list[str | None] = list(tidy(summary).splitlines())
    kinds, kind = [], ""
    for line in lines:  # a '- ' line is of its heading's kind
        opens = next((start for start in DROP_ORDER if line.startswith(start)), None)
        kind = (opens or "") if opens not in (None, "Requests: ") or line.startswith("## ") else kind
        kinds.append(opens if opens == "Requests: " else kind if line.startswith("- ") else "")
    for drop in DROP_ORDER:
        of_kind = [index for index, line_kind in enumerate(kinds) if line_kind == drop]
        for index in (of_kind[1:] + of_kind[:1]) if drop == "Numbers reported:" else of_kind:
            if len("\n".join(line for line in lines if line is not None)) <= limits[0]:
                break
            lines[index] = None
    return tidy("\n".join(line for line in lines if line is not None))


def tidy(summary: str) -> str:  # no blank lines, no heading with nothing under it
    lines = [line for line in summary.splitlines() if line.strip()]

    def heading(line: str) -> bool:
        return line.startswith("## ") or line.rstrip().endswith(":") and not line.startswith("- ")
    return "\n".join(line for index, line in enumerate(lines) if not heading(line) or (
        index + 1 < len(lines) and not lines[index + 1].startswith("## ") and (line.startswith("## ") or not heading(lines[index + 1]))))
