"""The offline teaching model: a deterministic, documented simulator of a tool-calling LLM.

It is what every lesson, test and offline benchmark runs on. It is not an LLM and not a canned
script: it reads what it is sent, within a finite window (``max_input_tokens``, counted exactly;
what falls out is forgotten), and follows rules you can read: the whole behaviour is in
docs/offline-model.md, each part's contract in its module's docstring. This module is the
LangChain side: the window it sees, the turn (plan the request, walk its steps against the tool
results so far: the next call or the answer) and the reply's bookkeeping. Same input, same output.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
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

from flawedcode.constants import ENCODING_NAME
from flawedcode.models import (
    offline_introspect,  # noqa: F401 - registers its rows' planners (offline_cues)
    offline_windows,
)
from flawedcode.models.offline_answers import load_script, named_columns
from flawedcode.models.offline_attention import AttentionDecay, decay_window
from flawedcode.models.offline_entities import Vocabulary
from flawedcode.models.offline_intents import help_text, plan
from flawedcode.models.offline_memory import data_correction, is_note, is_summary_message, recall_from_memory, text_of
from flawedcode.models.offline_plan import TOOL_NAMES_BY_INTENT, Context, Step, Task, ToolResult, calls, fill_arguments, reply, tool_name_for
from flawedcode.models.offline_results import answer_task, next_step
from flawedcode.models.profiles import OFFLINE_WINDOW_TOKENS
from flawedcode.models.teaching import offered, seen, summary, workspace
from flawedcode.models.teaching import turn as teaching_turn
from flawedcode.models.teaching.answers import decline_text
from flawedcode.models.teaching.readers import WORDS, Tokens, read_series, read_statistics, tokens
from flawedcode.models.teaching.request import Decline, Intent
from flawedcode.models.teaching.router import IGNORED, read_ask, told, unread_phrases
from flawedcode.tokens import TokenCounter, count_text

PROVIDER = "flawedcode"
REPLAYED_REQUESTS = 5  # a chain of follow-ups ("and 2024?", "the median?", "and effr?") keeps what the first one asked
"""How many earlier requests are planned again to know what they asked (follow-ups, 'those two')."""

SMALL_TALK = " Ask me for data, docs or files whenever you like."
"""The reply to a message of discourse and social words only ('lol sorry, long day', 'Tick.'): nothing to look up, never a follow-up."""

READ_BACK_SHARE = 0.3
READ_BACK_RESERVE = 1024
"""A saved result is read back whole before answering from it when it leaves this many tokens of the window free (teaching/seen.py)."""


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
    encoding: str = ENCODING_NAME
    """The tiktoken encoding used to count what it sees and writes."""
    catalog_root: Path | None = None
    """The ChartBook catalog whose names it recognises (default: flawedcode.paths.data_dir())."""
    attention_decay: AttentionDecay | None = None
    """Optional seeded context rot before the window fills (rule in offline_attention.py); None = off."""
    max_tool_calls_per_request: int = 12
    """At most this many tool calls after one user request, then it answers with what it has (several
    requests in one message, read-back pages of an offloaded result and a fix-the-code check each take some)."""

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
        window = decay_window(self.attention_decay, window, self.token_counter())  # off by default (offline_attention.py)
        try:
            content, calls = self.decide(window, tool_schemas)
        except Exception as error:  # noqa: BLE001 - a rule that breaks answers honestly instead of a traceback
            content, calls = (f"I could not handle that request: my rules hit an internal error ({type(error).__name__}: "
                              f"{error}). Please rephrase it; I can still list, describe and load data and work with files."), []
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
        while leading < len(messages) and (isinstance(messages[leading], SystemMessage)  # and leading data (memory)
                                           or messages[leading].additional_kwargs.get("context_data")):
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
        visible = offline_windows.notes_as_summaries(window.visible, tool_schemas)  # its notes read back (offline_windows.py)
        latest = next((i for i in range(len(visible) - 1, -1, -1)
                       if isinstance(visible[i], HumanMessage) and not is_summary_message(visible[i])), None)
        context = self.context(visible[:latest] if latest is not None else visible, offered.offered(tool_schemas), window.truncated)
        context.system = list(window.system)
        context.input_tokens = window.input_tokens
        if latest is None:
            results = tool_results_after(visible, -1)
            lost = "I can no longer see your request in my context window."
            return lost + ("\n\n" + "\n\n".join(answer_task(Task("calls"), [r], context) for r in results) if results else ""), []
        text = text_of(visible[latest])
        if (written := summary.reply(visible, latest)) is not None:
            return written, []  # a summary asked for, of the messages it is shown (teaching/summary.py)
        if (call := offline_windows.window_call(visible, latest, window.system_prompt, tool_schemas, self.max_input_tokens)):
            return "", [call]  # told its window is running out, or a new window begins (offline_windows.py)
        if (none_ran := no_sub_agent_ran(text, visible, tool_schemas)) is not None:
            return none_ran, []  # 'what did the helper find?' with no sub-agent run in view: never a figure from elsewhere
        if len(offered.stated_plan(text)) > 1 and offered.tool_for("plan", tool_schemas) == (None, None):
            return ("I have no plan or to-do tool here, so I can't keep a plan (and I won't guess what its steps leave out). Ask me for "
                    "each step on its own, in full, and I'll do it."), []
        own = own_work(text, visible[:latest], tool_schemas)  # a stated plan, a note, a hand-over: the agent's own tools first
        mine = own and (own.calls or own.say) or is_note(text)  # a note (a correction of one too) is kept, never read as a data request
        if not mine and small_talk(text):  # 'lol sorry, long day', 'Tick.': never an ask, never a follow-up
            return ("You're welcome." if set(tokens(text).words) & {"thanks", "thank", "thx", "ty", "cheers"} else "Noted.") + SMALL_TALK, []
        if not mine:  # small talk and its reply are no turn of the conversation the teaching package reads
            talk = {i for i, m in enumerate(visible[:latest]) if isinstance(m, HumanMessage) and small_talk(text_of(m))}
            kept = [m for i, m in enumerate(visible) if i not in talk and not (i - 1 in talk and isinstance(m, AIMessage) and not m.tool_calls)]
            if (reply := teaching_turn.decide(kept, set(tool_schemas), context.catalog_root)) is not None:
                return reply  # the new teaching model reads this request (flawedcode/models/teaching/)
        self._remember_previous_request(context)
        text, story = told(text)  # the story before 'anyway, what I'd like to know is ...': set aside, and said (teaching/router.py)
        asked = workspace.read_ask(text, visible[:latest])  # the demo project's asks, follow-ups too (teaching/workspace.py)
        if asked is None and (table := next((path for path in workspace.FILE.findall(text) if path.endswith(".csv")), None)) and \
                read_statistics(tokens(text)):  # 'the highest close in data.csv': never its line count or header instead
            return (f"I can't compute a statistic of a CSV file's columns ({table}): my statistics are of the ChartBook catalog's series. "
                    f"I can count {table}'s rows, show its first or last row, or run Python you write over it."), []
        tasks = [Task("workspace", detail={"ask": asked})] if asked else self.own_tools(text, context, own) or plan(text, context)
        kinds = {task.kind for task in tasks} | {step.intent for task in tasks if task.kind == "calls" for step in task.steps}
        if kinds & TOOL_KINDS and not (asked and asked.kind is Intent.TEST_FIND) and (decline := data_question(text)) is not None:
            return decline, []  # 'how many days passed ...', 'search for the highest sofr volume in 2024': never the tests or a file search
        made = tool_results_after(visible, latest)
        loaders = offered.loaders(tool_schemas)  # a deferred tool is loaded before use (teaching/offered.py)
        loaded = {str(next(iter(result.args.values()), "")) for result in made if result.name in loaders}
        results = [result for result in made if result.name not in loaders]
        wanted = [tools_for(step.intent) for task in tasks for step in task.steps if tool_name_for(step.intent, tool_schemas) is None]
        if (load := next(filter(None, (offered.load_call(names, tool_schemas, loaded) for names in wanted)), None)) is not None:
            tasks = [calls(Step(*load))]
        answer, made = self.carry_out(tasks, results, tool_schemas, context, sorted(loaded))
        return answer + (teaching_turn.SET_ASIDE.format(f"'{story}'", "it") if answer and story else ""), made

    def own_tools(self, text: str, context: Context, work: offered.Work | None) -> list[Task] | None:
        """A recall from the memory in its leading data, or what the message asks of the agent's own tools (teaching/offered.py)."""
        if recalled := recall_from_memory(text, context):
            return [recalled]
        if work is None:  # own_work's reading of this message, made once in decide
            return None
        return ([reply(work.say)] if work.say else []) + [task for ask in work.asks for task in plan(ask, context)] + (
            [calls(*(Step(name, args) for name, args in work.calls))] if work.calls else []) + ([reply(work.then_say)] if work.then_say else [])

    def context(self, earlier: list[BaseMessage], tool_schemas: dict[str, dict[str, Any]], truncated: bool) -> Context:
        return Context(self.vocabulary(), set(tool_schemas), self.max_input_tokens, list(earlier), truncated,
                       catalog_root=str(self.catalog_root) if self.catalog_root is not None else None)

    def _remember_previous_request(self, context: Context) -> None:
        """What the previous requests asked (for 'and for EFFR?', 'run it', 'the docs for it', 'the gap between those two').

        The last ``REPLAYED_REQUESTS`` requests are planned again, oldest first, each seeing what the one
        before it asked ('... over the same year'); their data asks go to ``context.recent_asks``.
        """
        requests: list[tuple[int, str]] = []
        for i, message in enumerate(context.earlier):
            if not isinstance(message, HumanMessage) or is_note(text_of(message)) or teaching_turn.declined(context.earlier, i):
                continue  # a declined request never becomes what a follow-up builds on (teaching/turn.py)
            if is_summary_message(message):  # a summary names the requests it covers: a follow-up follows them
                requests += [(i, request) for request in requests_in(text_of(message))]
            else:
                requests.append((i, text_of(message)))
        before: Context | None = None
        for index, request in requests[-REPLAYED_REQUESTS:]:
            replay = self.context(context.earlier[:index], {name: {} for name in context.tool_names}, context.truncated)
            if before is not None:
                replay.previous_ask, replay.previous_frames = before.previous_ask, before.previous_frames
                replay.previous_rule, replay.last_path = before.previous_rule, before.last_path
            for task in plan(request, replay):
                if task.ask is not None:
                    replay.previous_ask = task.ask
                    replay.previous_frames = task.ask.frames()
                    context.recent_asks.append(task.ask)
                if task.kind == "docs" and task.detail.get("key"):
                    frame = self.vocabulary().frame(task.detail["key"])
                    replay.previous_frames = [frame] if frame else replay.previous_frames
                if task.path:
                    replay.last_path = task.path
                replay.previous_rule = task.rule
            before = replay
        if before is not None:
            context.previous_ask, context.previous_frames = before.previous_ask, before.previous_frames
            context.previous_rule, context.last_path = before.previous_rule, before.last_path

    def carry_out(self, tasks: list[Task], results: list[ToolResult], tool_schemas: dict[str, dict[str, Any]],
                  context: Context, loaded: Sequence[str] = ()) -> tuple[str, list[ToolCallPlan]]:
        """Walk the tasks in order against the results so far: the next call to make, or the answer."""
        position = 0
        answers: list[str] = []
        for task in tasks:
            mine: list[ToolResult] = []
            note = ""
            while True:
                view = seen.resolve(mine)  # a saved result read back counts as the result itself (teaching/seen.py)
                step = next_step(task, view, context) or self._read_back(
                    view, tool_schemas, loaded, context, results[position] if position < len(results) else None, task)
                if step is None:
                    break
                name = tool_name_for(step.intent, tool_schemas)
                arguments = fill_arguments(tool_schemas[name], step.roles) if name else None
                if arguments is None and (loader := offered.load_call(tools_for(step.intent), tool_schemas)) is not None:
                    return "", [loader]  # the step's tool is deferred: load it first (docs/offline-model.md)
                if arguments is None:
                    have = ", ".join(tool_schemas) or "none"
                    note = f"I can't do that here: I have no tool to {step.intent.replace('_', ' ')} (tools I have: {have})."
                    break
                if position < len(results):
                    result, position = results[position], position + 1
                    if (result.name, result.args) != (name, arguments):
                        # not the call this step makes: it never ran as planned (cut off mid-JSON), or it was made
                        # for another reading of the request (a summary since changed what this call sees): make it
                        continue
                    mine.append(result)
                    continue
                if any((r.name, r.args) == (name, arguments) and r.content.lstrip().startswith("Error") for r in results):
                    note = f"I won't call {name} again with the same arguments: it failed just before."
                    break
                if len(results) >= self.max_tool_calls_per_request:
                    note = f"I stopped after {len(results)} tool calls (my limit for one request); ask again for the rest."
                    break
                return "", [(name, arguments)]
            if note and not mine:
                answers.append(note)
                continue
            view = seen.resolve(mine)
            if (unread := seen.unreadable(view)) is not None and task.kind != "reply":
                # never an answer from a preview: what was saved, where, and why it was not read back
                answers.append(seen.say_unread(unread, self.read_back_tokens(context)) + (f"\n{note}" if note else ""))
                continue
            answers.append(answer_task(task, view, context) + (f"\n{note}" if note else ""))
        return "\n\n".join(answer for answer in answers if answer) or help_text(context), []

    def read_back_tokens(self, context: Context) -> int:
        """The largest saved result it reads back whole: the room left in its window but ``READ_BACK_RESERVE``, and at most
        ``READ_BACK_SHARE`` of the window (an agent pages a larger read-back under its own trigger); a larger one is said."""
        return max(min(self.max_input_tokens - context.input_tokens - READ_BACK_RESERVE, int(self.max_input_tokens * READ_BACK_SHARE)), 0)

    def _read_back(self, view: list[seen.Seen], tool_schemas: dict[str, dict[str, Any]], loaded: Sequence[str],
                   context: Context, made: ToolResult | None, task: Task | None = None) -> Step | None:
        """The call that reads a saved result back when the answer needs its text (teaching/seen.py), for every agent alike.

        Its room is judged before the read (``made``, the read already made, is what it decided then)."""
        loader = str(tool_schemas.get("load_tools", {}).get("function", {}).get("description", ""))
        room = None if made is not None and made.name == "read_file" else self.read_back_tokens(context)
        call = seen.next_read(view, tool_schemas, loader, loaded, room)
        rows = task is not None and task.ask is not None and task.ask.wants_rows  # a load's figures, from the same rows:
        if call is None and rows and "run_python" in tool_schemas and (load := next((item for item in view if item.name == "chartbook_load_data"
                    and item.preview_kind == "table" and not item.whole and not seen.consulted(view, item)), None)):
            key = f"{load.args.get('pipeline')}/{load.args.get('dataframe')}"  # by a script, never from the preview
            main = self.vocabulary().main_column(self.vocabulary().frame(key)) if self.vocabulary().frame(key) else None
            columns = named_columns(load.args, task.ask) or ([] if load.args.get("columns") else [main])  # the user's
            code = load_script(load.args, columns, self.vocabulary(), context.catalog_root)
            call = ("run_python", {"code": code, "timeout": 60}) if code else None
        return Step(*call) if call else None

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


TOOL_KINDS = {"workspace", "tests", "fix", "function", "find_file", "search_files"}
"""The older rules' asks of the workspace's tools (tests, code, a file search) that a data question's words can set off."""
TOOL_NOUNS = {"file", "files", "archive", "archives", "note", "notes", "test", "tests", "script", "scripts", "function", "functions",
              "code", "readme", "folder", "directory", "workspace", "project", "repo", "repository"}


@cache  # asked again of every earlier message at each call: each text is tokenized once
def small_talk(text: str) -> bool:
    """Discourse and social words only, one of them social ('lol sorry, long day', 'hmm interesting', 'Tick.'), asking nothing: nothing to look
    up ('show me the data', 'hmm, do it again', 'hello there' ask something)."""
    said, social = set(tokens(text).words), set(WORDS["social"]["words"])
    return "?" not in text and said <= IGNORED | social and bool(said & social) and not said & REQUESTING


def own_work(text: str, earlier: list[BaseMessage], tool_schemas: dict[str, dict[str, Any]]) -> offered.Work | None:
    """What the message asks of the agent's own tools (teaching/offered.py), but never a 'correction' that is a data follow-up
    ('correction: the 75th percentile', 'actually: the median'): that changes the last request, not what the memory keeps."""
    if data_correction(text):
        return None
    return offered.read(text, earlier, tool_schemas)


REQUESTING = {"show", "give", "tell", "get", "find", "compute", "calculate", "report", "do", "again", "redo", "recompute", "check", "help", "list",
          "what", "which", "how", "when", "where", "why", "can", "could", "would", "need", "want", "remember", "note", "use", "try", "send"}
SUB_AGENT_WORDS = {"sub-agent", "sub-agents", "subagent", "subagents", "helper", "helpers", "sub-agent's", "subagent's", "helper's"}
ASKING = {"what", "what's", "whats", "did", "which", "how", "where", "when"}


def no_sub_agent_ran(text: str, visible: list[BaseMessage], tool_schemas: dict[str, dict[str, Any]]) -> str | None:
    """A question about a sub-agent's work ('what did the helper find?', 'did you delegate anything?') when no sub-agent ran in what
    it sees (no call of the delegation tool, and none named by a summary or digest): said, never answered from another figure."""
    words = set(re.findall(r"[\w'-]+", text.lower()))
    if not (words & SUB_AGENT_WORDS or "delegate" in words) or not words & ASKING or offered.delegated(text):
        return None  # no question about a sub-agent, or a hand-over itself
    tool = offered.tool_for("delegate", tool_schemas)[0]
    name = tool[0] if tool else None
    calls = {call["name"] for m in visible if isinstance(m, AIMessage) for call in m.tool_calls}
    if name is not None and (name in calls or any(is_summary_message(m) and name in text_of(m) for m in visible[:-1])):
        return None  # one ran: the rules that read its result answer
    return (f"No sub-agent has run in what I can see of this conversation (no call to {name})" if name else
            "I have no sub-agent tool here, so no sub-agent has run") + ", so there is no sub-agent result to report."


def data_question(text: str) -> str | None:
    """A message naming a catalog series (or an event such as a rate cut), and no file, test or tool, asks about the data: its
    'passed', 'failed' or 'search' are words of the question. The decline says what was read and what was not (teaching/router.py)."""
    toks = tokens(text)
    if workspace.FILE.search(text) or workspace.TEST_NAME.search(text) or TOOL_NOUNS & set(toks.words):
        return None
    if isinstance(reading := read_ask(Tokens(list(toks.words)), None), Decline) and reading.understood.series and reading.unused:
        return decline_text(reading)
    series, events = read_series(toks), set(toks.words) & set(WORDS["events"]["words"])
    if series is None and not events:
        return None
    unread = ", ".join(f"'{phrase}'" for phrase in unread_phrases(toks)) or "the way it is asked"
    return (f"I read this as a question about {series.name if series else 'the data'}, not about files or tests, but I could not use "
            f"{unread}: no column, date, statistic or condition of the catalog I know, so I computed nothing. Ask it another way, "
            "or ask me for the docs.")


def tools_for(intent: str) -> set[str]:
    """The tool names a step of ``intent`` can use (its intent's tools, or the intent itself as a tool name)."""
    return set(TOOL_NAMES_BY_INTENT.get(intent, (intent,)))


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


def requests_in(written: str) -> list[str]:
    """The requests a summary covers, oldest first and word for word (none it had to clip): its goal, then its
    'Requests:' line, so a chain of follow-ups survives it; its last request when it lists none."""
    if (listed := re.search(r"^Requests: (.+)$", written, re.MULTILINE)) is None:
        last = re.search(r"^Last request: (.+?) \((?:answered|not answered yet)\)\.$", written, re.MULTILINE)
        return [last[1]] if last and not last[1].endswith("...") else []
    goal = summary.goal_in(written)
    return [goal] * (goal not in (None, "None")) + [request for request in listed[1].split(" | ") if not request.endswith("...")]


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _fingerprint(messages: list[BaseMessage]) -> str:
    parts = [f"{message.type}\x1f{text_of(message)}\x1f{_json(getattr(message, 'tool_calls', None) or [])}"
             for message in messages]
    return _hash(*parts)


def _hash(*parts: str) -> str:
    return hashlib.sha256("\x1e".join(parts).encode("utf-8")).hexdigest()
