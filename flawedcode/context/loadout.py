"""A lean tool loadout and the layered, cache-stable request prefix.

Fixed cost (the system prompt and the tool schemas, re-sent with every call) was
the largest item of v2's bill. Two rules cut it:

1. **Compact schemas.** ``compact_tool(tool, description)`` sends the same tool
   (same name, same parameters, same function) with a one-line description and no
   per-parameter prose; the descriptions are data, in ``prompts/tools_compact.yaml``.
2. **Tools join when they can be useful**, and only at a *boundary* (the start of a
   conversation, or a compaction, when the prefix changes anyway):

   - ``search_archive`` joins once the archive holds a part (nothing to search before);
   - a tool a session may never use is *deferred* until it asks for it: a
     ``load_tools(group)`` tool (one line naming each group and its tools; Anthropic's
     deferred tools and tool search work the same way) makes a group join at the next
     call, once (``TOOL_GROUPS``): ``files`` (``write_file``, ``list_files``,
     ``search_files``; ``LoadoutConfig.defer_file_tools``, on) and, with
     ``defer_unused_tools`` (off by default), ``python`` (``run_python``), ``plan``
     (``write_todos``, ``task``) and ``memory`` (``save_memory``). On workload B and the
     long session none of those is ever called: deferring them takes 281 tokens off every
     call (v3's fixed block 857 -> 576), 18% of v3's raw input on workload B at 8,192, but
     under a prompt cache it costs more (+41% cache-weighted): cached schemas cost 0.1x,
     and without them v3's stable prefix falls under the 1,024 tokens a provider caches
     at all, so whole requests are billed in full (docs/benchmark.md). ``read_file`` is
     always there (offloaded results are read back with it); ``load_tools`` leaves once
     every group has joined.

The request prefix is layered, most stable first, and nothing in it moves unless a
layer itself changes: **system prompt, tool schemas** (``RequestPrefix.system_text``),
the **memory block** (``leading_messages``: a user-role message of data, never part of the
system message), then the conversation, whose first message is the pinned goal. ``RequestPrefix.boundary()`` is the only place the loadout and the
memory block change (besides ``load_tools``); ``LayeredPrefixMiddleware`` applies
the prefix to every model call, so the agent's calls and the summary calls share it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain_core.messages import AnyMessage
from langchain_core.tools import BaseTool, StructuredTool
from pydantic import create_model

from flawedcode.config import LoadoutConfig
from flawedcode.context.archive import ConversationArchive
from flawedcode.context.memory import MemoryStore, memory_message
from flawedcode.tokens import TokenCounter

COMPACT_DESCRIPTIONS_FILE = Path(__file__).resolve().parent.parent / "prompts" / "tools_compact.yaml"
TOOL_GROUPS: dict[str, tuple[str, ...]] = {
    "files": ("write_file", "list_files", "search_files"),
    "python": ("run_python",),
    "plan": ("write_todos", "task"),
    "memory": ("save_memory",),
}
"""Deferred groups: these tools join when ``load_tools(group)`` is called."""
FILE_GROUP = "files"
"""The group ``LoadoutConfig.defer_file_tools`` defers (the others: ``defer_unused_tools``)."""
ARCHIVE_TOOLS = ("search_archive",)
"""Tools that join once the archive holds something."""


def compact_descriptions() -> dict[str, str]:
    data = yaml.safe_load(COMPACT_DESCRIPTIONS_FILE.read_text(encoding="utf-8")) or {}
    return {str(name): str(text) for name, text in data.items()}


def compact_tool(tool: BaseTool, description: str) -> BaseTool:
    """The same tool with a one-line description and its parameters stripped of descriptions."""
    schema = tool.tool_call_schema
    if not isinstance(schema, type):
        return tool
    fields = {name: (info.annotation, info.default if not info.is_required() else ...)
              for name, info in schema.model_fields.items()}
    lean_schema = create_model(f"{tool.name}_compact", **fields)  # type: ignore[call-overload]
    lean = StructuredTool(name=tool.name, description=description, args_schema=lean_schema,
                          func=getattr(tool, "func", None), coroutine=getattr(tool, "coroutine", None))
    lean.handle_validation_error = tool.handle_validation_error
    lean.handle_tool_error = tool.handle_tool_error
    return lean


def compact_tools(tools: Sequence[BaseTool]) -> list[BaseTool]:
    descriptions = compact_descriptions()
    return [compact_tool(tool, descriptions[tool.name]) if tool.name in descriptions else tool for tool in tools]


@dataclass
class RequestPrefix:
    """What leads every request (system prompt + memory, then the loaded tools), changed only at boundaries."""

    system_prompt: str
    tools: list[BaseTool]
    archive: ConversationArchive | None = None
    counter: TokenCounter = field(default_factory=TokenCounter)
    memory: MemoryStore | None = None
    loadout: LoadoutConfig = field(default_factory=LoadoutConfig)
    deferred: dict[str, tuple[str, ...]] = field(default_factory=dict)
    loaded_groups: set[str] = field(default_factory=set)
    _memory_block: str = ""
    _active: list[str] = field(default_factory=list)
    changes: int = 0

    def __post_init__(self) -> None:
        self.deferred = {group: names for group, names in TOOL_GROUPS.items()
                         if (self.loadout.defer_file_tools if group == FILE_GROUP else self.loadout.defer_unused_tools)}
        present = {tool.name for tool in self.tools}
        self.deferred = {group: names for group, names in self.deferred.items() if set(names) & present}
        self.boundary()

    def add_tool(self, tool: BaseTool) -> BaseTool:
        """Add a tool to the loadout (it is sent when useful, from the next boundary on); returns it."""
        self.tools.append(tool)
        self.boundary()
        return tool

    def boundary(self) -> bool:
        """Re-decide the loadout and the memory block (a conversation start or a compaction); True if they changed."""
        before = (self._memory_block, list(self._active))
        self._memory_block = self.memory.block(at_boundary=True) if self.memory is not None else ""
        self._active = [tool.name for tool in self.tools if self._useful(tool.name)]
        changed = before != (self._memory_block, self._active)
        self.changes += changed
        return changed

    def _useful(self, name: str) -> bool:
        if name in ARCHIVE_TOOLS and self.loadout.archive_tools_when_archived:
            return self.archive is not None and bool(self.archive.parts())
        if name == "load_tools":
            return any(group not in self.loaded_groups for group in self.deferred)
        for group, names in self.deferred.items():
            if name in names:
                return group in self.loaded_groups
        return True

    def load_group(self, group: str) -> str:
        """``load_tools``'s work: the group's tools join from the next call."""
        if group not in self.deferred:
            return f"Error: unknown tool group {group!r}; groups: {', '.join(self.deferred)}."
        if group in self.loaded_groups:
            return f"The {group} tools are already loaded: {', '.join(self.deferred[group])}."
        self.loaded_groups.add(group)
        self._active = [tool.name for tool in self.tools if self._useful(tool.name)]
        self.changes += 1
        return f"Loaded the {group} tools: {', '.join(self.deferred[group])}. They are available from your next step."

    def system_text(self) -> str:
        """The system prompt (memory is never part of it: see ``leading_messages``)."""
        return self.system_prompt

    def leading_messages(self) -> list[AnyMessage]:
        """What leads the conversation in every request: the memory block as data in a message of its own."""
        if self.memory is not None:
            self._memory_block = self.memory.block()
        message = memory_message(self._memory_block)
        return [message] if message is not None else []

    def active_tools(self) -> list[BaseTool]:
        return [tool for tool in self.tools if tool.name in self._active]

    def fixed_tokens(self) -> int:
        return (self.counter.count_system(self.system_text()) + self.counter.count_tools(self.active_tools())
                + self.counter.count_messages(self.leading_messages()))

    def reset(self, archive: ConversationArchive | None = None) -> None:
        """A new conversation: the deferred groups are deferred again; the loadout and memory are re-decided."""
        self.archive = archive or self.archive
        self.loaded_groups.clear()
        self.boundary()


def make_load_tools_tool(prefix: RequestPrefix) -> BaseTool:
    def load_tools(group: str) -> str:
        return prefix.load_group(group)

    groups = "; ".join(f"group '{group}' = {', '.join(names)}" for group, names in prefix.deferred.items())
    return StructuredTool.from_function(load_tools, name="load_tools", description=f"Load deferred tools: {groups}.")


class LayeredPrefixMiddleware(AgentMiddleware):
    """Thin adapter: every model call gets the prefix's system text and its loaded tools."""

    def __init__(self, prefix: RequestPrefix) -> None:
        super().__init__()
        self.prefix = prefix

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]) -> Any:
        names = {tool.name for tool in self.prefix.active_tools()}
        tools = [tool for tool in request.tools if getattr(tool, "name", None) in names]
        messages = [*self.prefix.leading_messages(), *request.messages]  # memory: data before the conversation
        return handler(request.override(system_prompt=self.prefix.system_text(), tools=tools, messages=messages))
