"""The offline teaching model: a deterministic, documented simulator of a tool-calling LLM.

It is what every lesson, test and offline benchmark runs on. It is not an LLM
and not a canned script: it reads what it is sent, within a finite window, and
follows rules you can read here.

What it sees
    The system prompt (the leading system messages), the tool schemas it was
    bound to, and as many of the most recent messages as fit in
    ``max_input_tokens``, counted exactly with ``flawedcode.tokens.TokenCounter``.
    With ``overflow="truncate"`` the oldest messages silently fall out (the
    visible part never starts on a tool result whose call fell out); with
    ``overflow="error"`` a request that does not fit raises LangChain's
    ``ContextOverflowError`` naming both numbers, like a real API. Even in
    truncate mode, a latest message that alone does not fit raises it.
    **What falls out of the window is forgotten**: that is the deterministic
    stand-in for context rot.

What it understands (the latest user request; see offline_intents.py)
    - list the ChartBook catalog; get a dataframe's docs (named as
      ``pipeline/dataframe``, by dataframe id, by alias such as SOFR, EFFR,
      fed funds, treasury, par yields, repo, yield curve, or by a column that
      belongs to one dataframe); load rows (``50 rows``, ``last 30``, column
      names, ``2024-03-01`` dates, years, months); mean / min / max / latest /
      spread of a column (it loads, then computes);
    - read, list, search and write files; run a script (``run analyze.py``)
      or a ``` code block; search the archive (when given ``search_archive``).
    Two dataframes in one request make successive tool calls (at most
    ``max_tool_calls_per_request`` per request). It only calls tools it was
    given, and fills arguments by each tool's own parameter names (``path``
    for ours, ``file_path`` for Deep Agents').

How it answers (see offline_results.py)
    After tool results it answers from them: the catalog's dataframes; a
    doc's title and every column name it can see; for loaded rows, the row
    count, date range and mean/min/max/latest of the asked (or main rate)
    column computed from the rows, with 4 decimals; errors relayed with what
    to do; offload stubs (``[Offloaded: scratch/...``) by saying where the
    full result is and quoting the preview. A statistic hidden behind a stub
    makes it read the file first.

What it remembers (see offline_memory.py)
    Only what is in its window. "What was my original goal?" comes from a
    visible summary, else from the earliest visible request if nothing was cut,
    else: "I don't know: the start of our conversation is no longer in my
    context window." Recall questions ("what was the average SOFR rate you
    found?") use a visible number, else read a visible scratch/ or archives/
    path that holds it, else it says it does not know. A request about "the
    saved" (or offloaded, or scratch) docs or result reads back the scratch/
    file a visible stub names, and quotes the rows for any column it asked
    about. A number counts for a dataframe only if its own line names that
    dataframe (or names none). Asked to summarize a
    rendered conversation, it writes a structured summary (goal verbatim,
    actions, files, numbers, current state).

What it cannot do
    Reason, plan beyond one request, fix code, write prose, or understand
    requests that use none of the words above (it then says what it can do).
    It never invents a number: every figure it states was read or computed.

Bookkeeping
    Same input, same output (tool call ids are hashes of what it saw).
    ``usage_metadata`` holds exact counts of what it saw and wrote;
    ``response_metadata["model_provider"] == "flawedcode"`` matches its
    ``ls_provider``, and ``profile["max_input_tokens"]`` is its window, so
    LangChain's SummarizationMiddleware token and fraction triggers work.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.exceptions import ContextOverflowError
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.language_models.base import LangSmithParams
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import PrivateAttr

from flawedcode.models.offline_entities import Vocabulary
from flawedcode.models.offline_intents import Request, fill_arguments, read_request, tool_name_for
from flawedcode.models.offline_memory import (
    answer_goal,
    answer_last_action,
    answer_recall,
    is_summary_message,
    parse_rendered_conversation,
    recall_from_read,
    recall_from_visible,
    recall_steps,
    recovery_steps,
    text_of,
    write_summary,
)
from flawedcode.models.offline_results import ToolResult, answer_from_results, offload_path
from flawedcode.models.profiles import OFFLINE_WINDOW_TOKENS
from flawedcode.tokens import TokenCounter, count_text

PROVIDER = "flawedcode"

HELP_TEXT = (
    "I'm the offline teaching model, a deterministic simulator rather than an LLM. I understand requests such as: "
    "'List ChartBook dataframes', 'Get docs for money_markets/sofr', 'Load 50 rows of SOFR data', "
    "'What is the average EFFR rate in 2024?', 'Read analyze.py', 'Run analyze.py', 'Search for volatility', "
    "'What was my original goal?'."
)


@dataclass
class Window:
    """What the model sees of one request."""

    system: list[BaseMessage]
    system_prompt: str
    visible: list[BaseMessage]
    truncated: bool
    input_tokens: int


ToolCallPlan = tuple[str, dict[str, Any]]


class OfflineModel(BaseChatModel):
    """Deterministic offline teaching model (read the module docstring for its rules)."""

    model_name: str = "offline"
    """Shown in response metadata and traces."""
    max_input_tokens: int = OFFLINE_WINDOW_TOKENS
    """The window: how many input tokens it can see."""
    overflow: Literal["truncate", "error"] = "truncate"
    """'truncate': forget the oldest messages; 'error': raise ContextOverflowError."""
    encoding: str = "o200k_base"
    """The tiktoken encoding used to count what it sees and writes."""
    catalog_root: Path | None = None
    """The ChartBook catalog whose names it recognises (default: flawedcode.paths.data_dir())."""
    max_tool_calls_per_request: int = 4
    """At most this many tool calls after one user request, then it answers."""

    _counter: TokenCounter | None = PrivateAttr(default=None)
    _vocabulary: Vocabulary | None = PrivateAttr(default=None)

    # ------------------------------------------------------------------ LangChain plumbing

    @property
    def _llm_type(self) -> str:
        return "flawedcode-offline"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model_name": self.model_name, "max_input_tokens": self.max_input_tokens, "overflow": self.overflow}

    def _resolve_model_profile(self) -> dict[str, Any]:
        return {"max_input_tokens": self.max_input_tokens, "tool_calling": True}

    def _get_ls_params(self, stop: list[str] | None = None, **kwargs: Any) -> LangSmithParams:
        params = super()._get_ls_params(stop=stop, **kwargs)
        params["ls_provider"] = PROVIDER
        params["ls_model_name"] = self.model_name
        return params

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Bind tools as OpenAI tool schemas; ``_generate`` reads them from ``kwargs["tools"]``."""
        formatted = [convert_to_openai_tool(tool) for tool in tools]
        if tool_choice is not None:
            kwargs["tool_choice"] = tool_choice
        return self.bind(tools=formatted, **kwargs)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        tool_schemas = {schema["function"]["name"]: schema for schema in kwargs.get("tools") or []}
        window = self.see(messages, list(tool_schemas.values()))
        content, calls = self.decide(window, tool_schemas)
        message = self._message(window, content, calls)
        return ChatResult(generations=[ChatGeneration(message=message)])

    # ------------------------------------------------------------------ the window

    def token_counter(self) -> TokenCounter:
        if self._counter is None:
            self._counter = TokenCounter(self.encoding)
        return self._counter

    def vocabulary(self) -> Vocabulary:
        if self._vocabulary is None:
            self._vocabulary = Vocabulary.from_catalog(self.catalog_root)
        return self._vocabulary

    def see(self, messages: list[BaseMessage], tools: list[dict[str, Any]]) -> Window:
        """The part of a request that fits in the window (or ContextOverflowError)."""
        leading = 0
        while leading < len(messages) and isinstance(messages[leading], SystemMessage):
            leading += 1
        system, conversation = list(messages[:leading]), list(messages[leading:])
        system_prompt = "\n\n".join(text_of(message) for message in system)
        counter = self.token_counter()
        total = counter.count_request(system_prompt, tools, conversation)
        if total <= self.max_input_tokens:
            return Window(system, system_prompt, conversation, False, total)
        if self.overflow == "error":
            raise ContextOverflowError(
                f"This request has {total:,} input tokens but the offline model's window is "
                f"{self.max_input_tokens:,} tokens (overflow='error')."
            )
        visible = self._most_recent_that_fit(system_prompt, tools, conversation)
        return Window(system, system_prompt, visible, True, counter.count_request(system_prompt, tools, visible))

    def _most_recent_that_fit(
        self, system_prompt: str, tools: list[dict[str, Any]], conversation: list[BaseMessage]
    ) -> list[BaseMessage]:
        counter = self.token_counter()
        room = self.max_input_tokens - counter.count_request(system_prompt, tools, [])
        first = len(conversation)
        while first > 0 and counter.count_message(conversation[first - 1]) <= room:
            room -= counter.count_message(conversation[first - 1])
            first -= 1
        while first < len(conversation) and isinstance(conversation[first], ToolMessage):
            first += 1  # never start on a tool result whose call fell out
        if first >= len(conversation):
            latest = counter.count_message(conversation[-1]) if conversation else 0
            raise ContextOverflowError(
                f"The latest message alone needs {latest:,} tokens but the offline model's window is "
                f"{self.max_input_tokens:,} tokens (system prompt and tools included); nothing can be truncated."
            )
        return conversation[first:]

    # ------------------------------------------------------------------ deciding

    def decide(self, window: Window, tool_schemas: dict[str, dict[str, Any]]) -> tuple[str, list[ToolCallPlan]]:
        """(answer text, tool calls): one tool call, or an answer with none."""
        visible = window.visible
        latest = next((i for i in range(len(visible) - 1, -1, -1)
                       if isinstance(visible[i], HumanMessage) and not is_summary_message(visible[i])), None)
        if latest is None:
            results = tool_results_after(visible, -1)
            lost = "I can no longer see your request in my context window."
            return (lost + ("\n\n" + answer_from_results(None, results, self.vocabulary()) if results else ""), [])
        request = read_request(text_of(visible[latest]), self.vocabulary())
        earlier, results = visible[:latest], join_read_pages(tool_results_after(visible, latest))
        if request.kind == "summary":
            return write_summary(parse_rendered_conversation(request.text), self.vocabulary()), []
        if request.kind == "goal":
            return answer_goal(earlier, window.system, window.truncated), []
        if request.kind == "last_action":
            return answer_last_action(earlier), []
        if request.kind == "recall" and not results:
            found = recall_from_visible(request, earlier, self.vocabulary())
            if found is not None:
                return answer_recall(request, found), []
            request.steps = recall_steps(request, earlier, self.vocabulary(), set(tool_schemas))
            if not request.steps:
                return answer_recall(request, None), []
        if request.kind == "tools":
            request.steps = recovery_steps(request, earlier, self.vocabulary(), set(tool_schemas)) or request.steps
        call = self.next_call(request, results, tool_schemas)
        if call is not None:
            return "", [call]
        return self.answer(request, results, tool_schemas), []

    def next_call(
        self, request: Request, results: list[ToolResult], tool_schemas: dict[str, dict[str, Any]]
    ) -> ToolCallPlan | None:
        """The first planned call not made yet, then a read of any offloaded data a statistic needs."""
        made = [(result.name, result.args) for result in results]
        if len(made) >= self.max_tool_calls_per_request:
            return None
        wanted = [(step.intent, step.roles) for step in request.steps]
        if request.stats or request.kind == "recall":
            wanted += [("read_file", {"path": path, "limit": 2000})
                       for result in results if (path := offload_path(result.content))]
            wanted += [("read_file", {"path": page[0], "offset": page[1], "limit": 2000})  # the rest of a paged read
                       for result in results if result.name == "read_file" and (page := next_page(result.content))]
        for intent, roles in wanted:
            name = tool_name_for(intent, tool_schemas)
            arguments = fill_arguments(tool_schemas[name], roles) if name else None
            if arguments is not None and (name, arguments) not in made:
                return name, arguments
        return None

    def answer(self, request: Request, results: list[ToolResult], tool_schemas: dict[str, dict[str, Any]]) -> str:
        vocabulary = self.vocabulary()
        if request.kind == "recall":
            return answer_recall(request, recall_from_read(request, [(r.name, r.content) for r in results], vocabulary))
        if results:
            return answer_from_results(request, results, vocabulary)
        if request.note:
            return request.note
        if request.kind == "chat":
            return HELP_TEXT
        missing = sorted({step.intent.replace("_", " ") for step in request.steps})
        have = ", ".join(tool_schemas) or "none"
        return f"I can't do that here: I have no tool to {', '.join(missing)} (tools I have: {have})."

    # ------------------------------------------------------------------ the reply

    def _message(self, window: Window, content: str, calls: list[ToolCallPlan]) -> AIMessage:
        seen = _fingerprint(window.system + window.visible)
        tool_calls = [
            {"name": name, "args": args, "id": f"call_{_hash(seen, str(index), name, _json(args))[:24]}",
             "type": "tool_call"}
            for index, (name, args) in enumerate(calls)
        ]
        output_tokens = count_text(content, self.encoding) + sum(
            count_text(json.dumps({"name": name, "arguments": _json(args)}, ensure_ascii=False), self.encoding)
            for name, args in calls
        )
        return AIMessage(
            content=content,
            tool_calls=tool_calls,
            usage_metadata={
                "input_tokens": window.input_tokens,
                "output_tokens": output_tokens,
                "total_tokens": window.input_tokens + output_tokens,
            },
            response_metadata={
                "model_provider": PROVIDER,
                "model_name": self.model_name,
                "finish_reason": "tool_calls" if calls else "stop",
                "truncated_context": window.truncated,
            },
        )


def tool_results_after(visible: list[BaseMessage], index: int) -> list[ToolResult]:
    """The tool calls made after message ``index`` and what came back, in order."""
    results: list[ToolResult] = []
    calls: dict[str, dict[str, Any]] = {}
    for message in visible[index + 1:]:
        if isinstance(message, AIMessage):
            calls.update({call["id"]: call for call in message.tool_calls if call.get("id")})
        elif isinstance(message, ToolMessage):
            call = calls.get(message.tool_call_id, {})
            results.append(ToolResult(call.get("name", message.name or "tool"), call.get("args", {}), text_of(message)))
    return results


CONTINUATION_LINE = re.compile(r"^# \.\.\. \d+ more lines: read_file\(path='(?P<path>[^']+)', offset=(?P<offset>\d+)\)$")
"""read_file's last line when more of the file remains (the page format of ``flawedcode.tools``)."""


def next_page(content: str) -> tuple[str, int] | None:
    """(path, offset) of the next page when a read_file result ends with a continuation line."""
    lines = content.rstrip("\n").splitlines()
    match = CONTINUATION_LINE.match(lines[-1]) if lines else None
    return (match["path"], int(match["offset"])) if match else None


def join_read_pages(results: list[ToolResult]) -> list[ToolResult]:
    """Consecutive pages of one file read as one result (the first page's header, every page's lines)."""
    joined: list[ToolResult] = []
    for result in results:
        previous = joined[-1] if joined else None
        page = next_page(previous.content) if previous is not None and previous.name == "read_file" else None
        if previous is not None and page and result.name == "read_file" and \
                (result.args.get("path"), result.args.get("offset")) == page:
            lines = previous.content.rstrip("\n").splitlines()[:-1] + result.content.splitlines()[1:]
            joined[-1] = ToolResult(previous.name, previous.args, "\n".join(lines))
        else:
            joined.append(result)
    return joined


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _fingerprint(messages: list[BaseMessage]) -> str:
    parts = [f"{message.type}\x1f{text_of(message)}\x1f{_json(getattr(message, 'tool_calls', None) or [])}"
             for message in messages]
    return _hash(*parts)


def _hash(*parts: str) -> str:
    return hashlib.sha256("\x1e".join(parts).encode("utf-8")).hexdigest()
