"""A plan that survives compaction: the ``write_todos`` tool and its reminder.

The model keeps its plan as a todo list (Deep Agents' ``write_todos``; DeerFlow's
todo middleware). Rules:

- ``write_todos(todos)`` replaces the whole list each call: a list of
  ``{"content": str, "status": "pending" | "in_progress" | "done"}``. A list with
  an unknown status, an empty item, more than ``MAX_TODOS`` (50) items, an item over
  ``MAX_ITEM_CHARS`` (300) characters, a list over ``MAX_PLAN_CHARS`` (3,000) rendered or two
  items that say the same step is refused with one line saying why, and the old list stays.
  An item is one line: line breaks and other unprintable characters inside it become spaces,
  so no item can forge a line of the reminder. Two items are the same step when their words
  are (``_key``: case, Unicode width, punctuation and invisible characters ignored).
- The list lives in a ``TodoList`` object (not only in the messages), so compaction
  cannot lose it: whenever the plan as it stood at the latest request is no longer in
  view before that request (a compaction removed the last ``write_todos`` call), it is
  re-injected as a short reminder just before the request, every time (DeerFlow's
  self-heal, not once). The current turn's own ``write_todos`` calls follow the request
  (they are never compacted), so the current list is always in view. ``write_todos``
  results are never cleared (``EXCLUDED_FROM_CLEARING``). The reminder reads::

      [Plan reminder: your todo list (3 of 12 done); keep it up to date with write_todos]
      - [done] Get docs for money_markets/sofr
      - [in_progress] Load 50 rows of SOFR data
      - [pending] ...

- A finished item stays ``done``: ``write_todos`` refuses a list that turns a done item
  back into pending or drops it (a plan never redoes finished work after a compaction),
  and a near-duplicate of it is a duplicate; to really redo it, add a new item that says so
  (``Redo: ...``).

``plan_is_visible(messages, todos)`` says whether the current list is in view: in a
``write_todos`` call whose result said it was saved, or in a reminder that matches it.
"""

from __future__ import annotations

import json
import re
import unicodedata
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool, StructuredTool
from pydantic import BaseModel, ConfigDict, Field, field_validator

from flawedcode.tools import invalid_arguments_text

Status = Literal["pending", "in_progress", "done"]
STATUSES: tuple[str, ...] = ("pending", "in_progress", "done")
MAX_TODOS = 50
"""Most items in one list (a plan, not a log)."""
MAX_ITEM_CHARS = 300
"""Longest item (one step, not its output)."""
MAX_PLAN_CHARS = 3000
"""Longest list, rendered (about 750 tokens): the reminder re-sends it after every compaction."""
REMINDER_PREFIX = "[Plan reminder: "
EXCLUDED_FROM_CLEARING = ("write_todos",)
"""Tool results compaction never clears (Anthropic's ``exclude_tools``): the plan's own confirmations."""
SAVED_PREFIX = "Todo list saved"


class TodoItem(BaseModel):
    # one item of the plan (no docstring or field descriptions: they would be sent in the tool's schema)
    model_config = ConfigDict(extra="forbid")
    content: str = Field(min_length=1)
    status: Status = "pending"

    @field_validator("content")
    @classmethod
    def _one_line(cls, content: str) -> str:  # a line break inside an item could forge a line of the reminder
        text = " ".join("".join(c if c.isprintable() else " " for c in content).split())
        if not text:
            raise ValueError("an item is empty")
        return text


class WriteTodosInput(BaseModel):
    todos: list[TodoItem]


@dataclass
class TodoList:
    """The current plan, kept outside the messages so that no compaction can remove it."""

    items: list[TodoItem] = field(default_factory=list)
    version: int = 0

    def counts(self) -> dict[str, int]:
        return {status: sum(item.status == status for item in self.items) for status in STATUSES}

    def done_contents(self) -> list[str]:
        return [item.content for item in self.items if item.status == "done"]

    def problem_with(self, new_items: Sequence[TodoItem]) -> str | None:
        """Why ``new_items`` may not replace the list (a finished item undone or dropped), or None."""
        if len(new_items) > MAX_TODOS:
            return f"the list has {len(new_items)} items; at most {MAX_TODOS} are allowed"
        if (longest := max((len(item.content) for item in new_items), default=0)) > MAX_ITEM_CHARS:
            return f"an item has {longest:,} characters; at most {MAX_ITEM_CHARS} are allowed (name the step, not its output)"
        if (size := len(render_items(new_items))) > MAX_PLAN_CHARS:
            return f"the list takes {size:,} characters; at most {MAX_PLAN_CHARS:,} are allowed (fewer or shorter steps)"
        keys = [_key(item.content) for item in new_items]
        if len(set(keys)) < len(keys):
            twin = next(item.content for item, key in zip(new_items, keys) if keys.count(key) > 1)
            return f"two items say the same step ({twin!r}); keep one (to redo a finished step, say so: 'Redo: ...')"
        new_status = dict(zip(keys, (item.status for item in new_items)))
        for done in self.done_contents():
            status = new_status.get(_key(done))
            if status is None:
                return f"the finished item {done!r} is missing; keep done items in the list"
            if status != "done":
                return f"the finished item {done!r} would become {status}; add a new item to redo it"
        return None

    def replace(self, new_items: Sequence[TodoItem]) -> str:
        """Replace the whole list (the tool's result text); a refused list changes nothing."""
        problem = self.problem_with(new_items)
        if problem is not None:
            return f"Error: todo list not saved: {problem}. The current list is unchanged:\n{self.render()}"
        self.items = [TodoItem(content=item.content.strip(), status=item.status) for item in new_items]
        self.version += 1
        counts = self.counts()
        return f"{SAVED_PREFIX} ({counts['done']} of {len(self.items)} done):\n{self.render()}"

    def render(self) -> str:
        return render_items(self.items)

    def reminder(self) -> HumanMessage:
        """The short message that puts the list back in view after a compaction (a new id each time)."""
        header = (f"{REMINDER_PREFIX}your todo list ({self.counts()['done']} of {len(self.items)} done); "
                  "keep it up to date with write_todos]")
        return HumanMessage(f"{header}\n{self.render()}", id=f"plan-reminder-{self.version}-{uuid.uuid4().hex[:8]}")

    def snapshot(self) -> TodoList:
        """A copy of the list as it is now (the plan as it stood when a request was made)."""
        return TodoList([item.model_copy() for item in self.items], self.version)

    def next_item(self) -> TodoItem | None:
        """The item to work on: the one in progress, else the first pending one."""
        return next((item for item in self.items if item.status == "in_progress"),
                    next((item for item in self.items if item.status == "pending"), None))


def render_items(items: Sequence[TodoItem]) -> str:
    return "\n".join(f"- [{item.status}] {item.content}" for item in items) or "(empty)"


def _key(content: str) -> str:
    """What makes two items the same step: their words, whatever the case, width, punctuation or invisible characters."""
    text = "".join(character for character in unicodedata.normalize("NFKC", content)
                   if unicodedata.category(character) != "Cf").casefold()
    return " ".join(re.sub(r"[\W_]+", " ", text).split())


def make_write_todos_tool(plan: TodoList) -> BaseTool:
    """The ``write_todos`` tool over one ``TodoList``."""

    def write_todos(todos: list[TodoItem]) -> str:
        try:
            items = [item if isinstance(item, TodoItem) else TodoItem.model_validate(item) for item in todos]
        except Exception as error:  # a tool never raises into the turn
            return f"Error: todo list not saved: {error}"
        return plan.replace(items)

    tool = StructuredTool.from_function(
        write_todos, name="write_todos", args_schema=WriteTodosInput,
        description="Save your plan: the whole todo list each call (status pending, in_progress or done).",
    )
    tool.handle_validation_error = invalid_arguments_text  # a bad list is one line for the model, not a crash
    return tool


# --- is the plan in view? -----------------------------------------------------------------

def is_reminder(message: AnyMessage) -> bool:
    return isinstance(message, HumanMessage) and isinstance(message.content, str) and message.content.startswith(REMINDER_PREFIX)


def plan_is_visible(messages: Sequence[AnyMessage], todos: TodoList) -> bool:
    """Is the current list in ``messages``: the last saved ``write_todos`` call, or a reminder of this version?"""
    if not todos.items:
        return True
    saved_calls = {message.tool_call_id for message in messages if isinstance(message, ToolMessage)
                   and message.name == "write_todos" and str(message.content).startswith(SAVED_PREFIX)}
    for message in reversed(messages):
        if is_reminder(message):
            return message.content.split("\n", 1)[-1] == todos.render()
        if isinstance(message, AIMessage):
            for call in message.tool_calls:
                if call["name"] == "write_todos" and call.get("id") in saved_calls:
                    return _rendered_args(call["args"]) == todos.render()
    return False


def _rendered_args(args: dict[str, Any]) -> str:
    try:
        items = [TodoItem.model_validate(item) for item in args.get("todos", [])]
    except Exception:  # noqa: BLE001 - arguments that do not parse show no plan
        return ""
    return TodoList([TodoItem(content=item.content.strip(), status=item.status) for item in items]).render()


def with_plan_in_view(messages: Sequence[AnyMessage], todos: TodoList, request_index: int) -> list[AnyMessage]:
    """``messages`` with a reminder just before the latest request when the plan (as it stood when that
    request was made: ``todos``) is not in view before it. The current turn's own calls follow the request."""
    messages = list(messages)
    if plan_is_visible(messages[:request_index], todos):
        return messages
    return [*messages[:request_index], todos.reminder(), *messages[request_index:]]


def todos_json(todos: TodoList) -> str:
    return json.dumps([item.model_dump() for item in todos.items])
