"""What the offline model does with v3's tools: a plan, sub-agents, memory and deferred tools.

Each rule applies only when its tool was bound (v0-v2 never see them): a stated plan calls ``write_todos``
and "continue" does the next item of the plan it can see; "delegate to sub-agents: A; B" calls ``task``
per part; a note or correction calls ``save_memory``; a step whose tool is deferred first calls
``load_tools(group)``. (Summaries, v3's among them: teaching/summary.py.)
The exact rules: docs/offline-model.md, "v3's tools"; their patterns and replies: ``offline_v3.toml``.
"""

from __future__ import annotations

import json
import re
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from flawedcode.models import offline_memory as memory
from flawedcode.models.offline_cues import data_file
from flawedcode.models.offline_intents import plan
from flawedcode.models.offline_plan import TOOL_NAMES_BY_INTENT, Context, Step, Task, ToolResult, calls, reply, tool_name_for
from flawedcode.models.offline_words import normalize

PATTERNS, SAY = (data_file("offline_v3.toml")["v3"][part] for part in ("patterns", "say"))
FLAGS = {"plan_item_split": 0, "reminder_line": re.MULTILINE}
PLAN_STATEMENT, PLAN_ITEM_SPLIT, CONTINUE, SHOW_PLAN, DELEGATE, CORRECTION, REMINDER_LINE = (
    re.compile(PATTERNS[name], FLAGS.get(name, re.IGNORECASE | re.DOTALL)) for name in (
        "plan_statement", "plan_item_split", "continue", "show_plan", "delegate", "correction", "reminder_line"))
"""The message-level rules' patterns (offline_v3.toml), matched against the whole message."""
LOADER = "load_tools"
TOOL_GROUP = re.compile(r"group '(?P<group>[\w-]+)' = (?P<names>[\w, ]+)")


def plan_message(text: str, context: Context) -> list[Task] | None:
    """v3's message-level rules (module docstring), or None to plan the message as usual."""
    tools = context.tool_names
    if recalled := recall_from_memory(text, context):
        return [recalled]
    if "write_todos" in tools and (match := PLAN_STATEMENT.match(text)):
        items = [item.strip(" .") for item in PLAN_ITEM_SPLIT.split(match["items"]) if item and item.strip(" .")]
        if items:
            return [calls(Step("write_todos", {"todos": [{"content": item, "status": "pending"} for item in items]}))]
    if CONTINUE.match(text):
        return plan_next_item(context)
    if SHOW_PLAN.match(text):
        todos = visible_plan(context.earlier)
        return [reply(SAY["plan_seen"].format(plan=render(todos)) if todos else SAY["no_plan"])]
    if match := DELEGATE.match(text):
        parts = [part.strip(" .") for part in re.split(r"\s*;\s*|\n+", match["work"]) if part.strip(" .")]
        if "task" in tools and parts:
            return [calls(*(Step("task", {"description": part}) for part in parts))]
        return plan(match["work"], context)  # no sub-agents here: it does the parts itself
    if "save_memory" in tools and (match := CORRECTION.match(text)):
        return [calls(Step("save_memory", {"fact": match["fact"].strip(), "correction": True}))]
    if "save_memory" in tools and memory.is_note(text):
        return [calls(Step("save_memory", {"fact": memory.note_words(text, " .")})), reply(memory.acknowledge_note(text))]
    return None


def memory_notes(system: list[BaseMessage]) -> list[str]:
    """The facts of a ``<memory>`` block in the system prompt (its ``User notes (verbatim):`` lines)."""
    notes: list[str] = []
    for message in system:
        block = re.search(r"<memory\b[^>]*>\s*User notes \(verbatim\):\n((?:- .*\n?)+)", memory.text_of(message))
        if block:
            notes += [unquoted(line[2:].strip()) for line in block.group(1).splitlines() if line.startswith("- ")]
    return notes


def unquoted(note: str) -> str:
    """A block's note as text: its JSON string read back, after the ``[correction]`` mark when it has one."""
    mark = "[correction] " if note.startswith("[correction] ") else ""
    try:
        text = json.loads(note[len(mark):])
    except ValueError:
        return note
    return mark + text if isinstance(text, str) else note


def recall_from_memory(text: str, context: Context) -> Task | None:
    """A question about what the user said, answered from the memory block when no visible note answers it."""
    notes = memory_notes(getattr(context, "system", []) or [])
    norm = normalize(text)
    if not notes or "?" not in text or memory.visible_notes(context.earlier) and memory.is_note_question(norm, context):
        return None
    if re.search(r"\b(?:average|mean|median|min|max|rows?|docs|load|spread|20\d\d)\b", norm):
        return None  # a data question, not a recall
    if not (matches := memory._matching_notes(norm, notes)):
        return None
    corrections = [note for note in matches if note.lower().startswith("[correction]")]
    return reply(SAY["from_memory"].format(quoted="; ".join(f'"{note}"' for note in (corrections or matches))))


def plan_next_item(context: Context) -> list[Task]:
    """The next item of the visible plan, then write_todos marking it done."""
    todos = visible_plan(context.earlier)
    if not todos:
        return [reply(SAY["no_plan_next"])]
    current = next((i for i, item in enumerate(todos) if item["status"] == "in_progress"),
                   next((i for i, item in enumerate(todos) if item["status"] == "pending"), None))
    if current is None:
        return [reply(SAY["plan_done"].format(count=len(todos)))]
    done = [dict(item, status="done") if i == current else dict(item) for i, item in enumerate(todos)]
    header = reply(SAY["plan_step"].format(number=current + 1, count=len(todos), item=todos[current]["content"]))
    return [header, *plan(todos[current]["content"], context), calls(Step("write_todos", {"todos": done}))]


def visible_plan(earlier: list[BaseMessage]) -> list[dict[str, Any]]:
    """The latest todo list in view: a write_todos call's list, or a plan reminder's lines."""
    for message in reversed(earlier):
        if isinstance(message, HumanMessage) and memory.text_of(message).startswith("[Plan reminder: "):
            return [{"content": content, "status": status} for status, content in REMINDER_LINE.findall(memory.text_of(message))]
        if isinstance(message, AIMessage):
            for call in reversed(message.tool_calls):
                if call["name"] == "write_todos" and isinstance(call["args"].get("todos"), list):
                    return [dict(item) for item in call["args"]["todos"] if isinstance(item, dict)]
    return []


def render(todos: list[dict[str, Any]]) -> str:
    return "\n".join(f"- [{item.get('status', 'pending')}] {item.get('content', '')}" for item in todos)


# --- deferred tools --------------------------------------------------------------------------------

def with_deferred_tools(tasks: list[Task], results: list[ToolResult], tool_schemas: dict[str, dict[str, Any]]) -> tuple[list[Task], list[ToolResult]]:
    """The tasks to carry out and the results they read: ``load_tools(group)`` first when a step's tool is deferred."""
    own = [result for result in results if result.name != LOADER]
    if LOADER not in tool_schemas:
        return tasks, own
    groups = deferred_groups(tool_schemas[LOADER])
    asked = {result.args.get("group") for result in results if result.name == LOADER}
    for task in tasks:
        for step in task.steps:
            if tool_name_for(step.intent, tool_schemas) is not None:
                continue
            wanted = TOOL_NAMES_BY_INTENT.get(step.intent, (step.intent,))
            group = next((name for name, tools in groups.items() if set(wanted) & tools and name not in asked), None)
            if group is not None:
                return [calls(Step(LOADER, {"group": group}))], own
    return tasks, own


def loader_call(intent: str, tool_schemas: dict[str, dict[str, Any]]) -> tuple[str, dict[str, Any]] | None:
    """``load_tools(group)`` when a step's tool is not bound but a ``load_tools`` description offers it."""
    if LOADER not in tool_schemas:
        return None
    wanted = set(TOOL_NAMES_BY_INTENT.get(intent, (intent,)))
    group = next((name for name, tools in deferred_groups(tool_schemas[LOADER]).items() if wanted & tools), None)
    return (LOADER, {"group": group}) if group is not None else None


def offered_tools(tool_schemas: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The bound tools and those a ``load_tools`` description offers (``with_deferred_tools`` loads them first)."""
    if LOADER not in tool_schemas:
        return tool_schemas
    deferred = {name: {} for names in deferred_groups(tool_schemas[LOADER]).values() for name in names}
    return {**deferred, **tool_schemas}


def deferred_groups(schema: dict[str, Any]) -> dict[str, set[str]]:
    """The groups a ``load_tools`` description names, each with its tools."""
    description = str(schema.get("function", schema).get("description", ""))
    return {match["group"]: {name.strip() for name in match["names"].split(",") if name.strip()} for match in TOOL_GROUP.finditer(description)}
