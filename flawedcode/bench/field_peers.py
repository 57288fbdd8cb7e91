"""The field's context strategies as peers, run as their authors document them, on the same model and tools.

Each peer keeps v1's memory (the whole managed history goes back every turn,
as in ``peers.py``) and adds one strategy, with the settings its authors ship
or document (``strategy()`` puts them in ``metadata.agents``). Their summary
calls carry ``SUMMARY_TAG`` and are counted at the model boundary like every
other call. What each does:

- ``swe-agent-last-5``: SWE-agent's ``LastNObservations`` (``n=5``, ``polling=1``,
  the original paper's setting). Before every model call, every tool result but
  the last ``n`` becomes ``Old environment output: (N lines omitted)``; the
  first observation (SWE-agent's instance template: here the user's first
  message) is never elided. With ``polling=p`` the cut only moves every ``p``
  observations (``(count // p) * p - n`` are elided), so that between ``n`` and
  ``n + p`` stay and the prompt prefix changes less often (its docs: "useful for
  caching"). ``swe-agent-last-5-polling-5`` runs that.
- ``anthropic-clear-tool-uses``: the semantics of Anthropic's
  ``clear_tool_uses_20250919`` edit, applied to each request (server-side: the
  client keeps its history): when the request's input tokens exceed
  ``trigger``, every tool result but the ``keep`` most recent (and those of
  ``exclude_tools``) is replaced by ``CLEARED_TEXT``; if that would free fewer
  than ``clear_at_least`` tokens, nothing is cleared. Settings: Anthropic's
  documented example scaled to the budget (trigger 30,000 with
  clear_at_least 5,000 -> trigger = v2's trigger, clear_at_least = a sixth of
  it), keep 3, exclude ``chartbook_list`` (the catalog listing).
- ``openhands-condenser``: OpenHands' default condenser pipeline (its server's
  settings): a ``ConversationWindowCondenser`` for context-window errors (here:
  a request over the budget), which forgets the older half of the events but
  keeps the system message and the first user message and never starts on a
  dangling observation, repeated until the request fits; and an
  ``LLMSummarizingCondenser(max_size=120, keep_first=4)``: when the view holds
  more than ``max_size`` events (the system prompt is event 0), everything
  between the first ``keep_first`` events and the last ``max_size // 2 -
  keep_first - 1`` is summarized (with the previous summary) into one summary
  event after the head.
- ``codex-compaction``: Codex's automatic compaction: when a request reaches
  ``auto_compact_token_limit`` (90% of the window; here the budget), the history
  (cut from its oldest end to 80% of the window) is summarized with its
  compaction prompt, and the history becomes the user's own messages, verbatim,
  newest first up to ``COMPACT_USER_MESSAGE_MAX_TOKENS`` (20,000 tokens), then
  the summary after Codex's handoff prefix. Tool results leave the context
  entirely.
- ``jetbrains-hybrid``: the mask-then-summarize hybrid of "The Complexity
  Trap" (Lindenbauer et al., JetBrains Research, 2025): observation masking with
  a window of the last ``mask_window`` agent steps (10: older tool results
  become the SWE-agent placeholder), and an LLM summary of all but the last
  ``mask_window`` steps every ``summarize_every`` steps (43); the summary reads
  those steps as masked (mask, then summarize).

What the offline teaching model needs changes two things, and only those: a
summary request carries the conversation rendered as message blocks (the form
the offline model reads; a real provider would get Codex's request as the live
messages plus the prompt), and every summary message opens with the summary
line the offline model recognises (``LANGCHAIN_SUMMARY_LINE``) before the
strategy's own text. The prompts are data: ``flawedcode/prompts/peers/``
(flawedcode's words, in each author's structure).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, HumanMessage, RemoveMessage, ToolMessage
from langchain_core.messages.utils import get_buffer_string
from langgraph.graph.message import REMOVE_ALL_MESSAGES

from flawedcode.bench.peers import PeerAgent, v2_trigger_tokens
from flawedcode.config import PROMPTS_DIR
from flawedcode.telemetry import SUMMARY_TAG, EventKind, SessionLog
from flawedcode.tokens import TokenCounter

PEER_PROMPTS = PROMPTS_DIR / "peers"
LANGCHAIN_SUMMARY_LINE = "Here is a summary of the conversation to date:"
"""The line a summary message opens with (LangChain's; the offline model reads such a message as a summary)."""
ELIDED_TEXT = "Old environment output: ({lines} lines omitted)"
"""SWE-agent's placeholder for an elided observation."""
CLEARED_TEXT = "[cleared: this tool result was removed by context editing]"
"""What a cleared tool result becomes (Anthropic does not publish its own text)."""
COMPACT_USER_MESSAGE_MAX_TOKENS = 20_000
CODEX_AUTO_COMPACT_SHARE = 0.9
CODEX_COMPACT_PROMPT_SHARE = 0.8
OPENHANDS_MAX_SIZE = 120
OPENHANDS_KEEP_FIRST = 4
JETBRAINS_MASK_WINDOW = 10
JETBRAINS_SUMMARIZE_EVERY = 43


def prompt_text(name: str) -> str:
    return (PEER_PROMPTS / name).read_text(encoding="utf-8")


def summarize(model: BaseChatModel, template: str, messages: Sequence[BaseMessage], **slots: str) -> str:
    """One summary call (tagged, so it is recorded as ``summary``); returns the summary's text."""
    prompt = template.replace("{messages}", get_buffer_string(list(messages), format="xml"))
    for name, value in slots.items():
        prompt = prompt.replace("{" + name + "}", value)
    reply = model.invoke([HumanMessage(prompt)], config={"tags": [SUMMARY_TAG]})
    return reply.text.strip()


def summary_message(summary: str, preface: str = "") -> HumanMessage:
    return HumanMessage("\n\n".join(part for part in (LANGCHAIN_SUMMARY_LINE, preface.strip(), summary) if part))


def replace_history(messages: Sequence[AnyMessage]) -> dict[str, Any]:
    """A state update that swaps the whole history for ``messages``."""
    return {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *messages]}


def is_summary(message: BaseMessage) -> bool:
    return isinstance(message, HumanMessage) and message.text.startswith(LANGCHAIN_SUMMARY_LINE)


def line_count(message: BaseMessage) -> int:
    return len(message.text.splitlines())


# --- SWE-agent: LastNObservations -------------------------------------------------------------

def elide_observations(messages: Sequence[AnyMessage], n: int, polling: int = 1) -> list[AnyMessage]:
    """SWE-agent's ``LastNObservations``: all tool results but the last ``n`` (moving every ``polling``) elided.

    Observations are the first user message (the instance template, never elided) and every tool result.
    """
    first_user = next((index for index, message in enumerate(messages) if isinstance(message, HumanMessage)), None)
    observations = ([first_user] if first_user is not None else []) + [
        index for index, message in enumerate(messages) if isinstance(message, ToolMessage)]
    observations.sort()
    last_removed = max(0, (len(observations) // polling) * polling - n)
    omit = set(observations[1:last_removed])
    return [message.model_copy(update={"content": ELIDED_TEXT.format(lines=line_count(message))})
            if index in omit and isinstance(message, ToolMessage) else message
            for index, message in enumerate(messages)]


class ViewEditMiddleware(AgentMiddleware):
    """Edits each request's messages (the history itself is kept); records a ``mask`` event when more were edited."""

    def __init__(self, edit: Callable[[list[AnyMessage], int], list[AnyMessage]], log: SessionLog,
                 counter: TokenCounter, marker: str) -> None:
        super().__init__()
        self.edit, self.log, self.counter, self.marker = edit, log, counter, marker
        self.edited_before = 0

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]) -> Any:
        with self.log.timing_wrapper():
            fixed = self.counter.count_system(request.system_prompt) + self.counter.count_tools(request.tools)
            edited = self.edit(list(request.messages), fixed)
            count = sum(1 for message in edited if isinstance(message, ToolMessage) and self.marker in message.text)
            if count > self.edited_before:
                self.log.record_event(EventKind.MASK, self.counter.count_messages(request.messages),
                                      self.counter.count_messages(edited), tool_results_cleared=count - self.edited_before)
            self.edited_before = count
        return handler(request.override(messages=edited))


class SweAgentLastNPeer(PeerAgent):
    """SWE-agent's LastNObservations: only the last n tool results are shown (n=5, polling=1)."""

    version = "swe-agent-last-5"
    n: ClassVar[int] = 5
    polling: ClassVar[int] = 1

    def strategy(self) -> dict[str, Any]:
        return {"source": "SWE-agent sweagent/agent/history_processors.py LastNObservations",
                "n": self.n, "polling": self.polling, "placeholder": ELIDED_TEXT,
                "never_elided": "the first observation (the instance template: the user's first message)"}

    def build_middleware(self) -> list[AgentMiddleware]:
        return [ViewEditMiddleware(lambda messages, _fixed: elide_observations(messages, self.n, self.polling),
                                   self.log, self.counter, "Old environment output")]


class SweAgentPollingPeer(SweAgentLastNPeer):
    """The same with polling=5: the cut moves every 5 observations (5 to 10 shown), so the prefix changes less often."""

    version = "swe-agent-last-5-polling-5"
    polling: ClassVar[int] = 5


# --- Anthropic: clear_tool_uses_20250919 ----------------------------------------------------------

def clear_tool_uses(messages: Sequence[AnyMessage], request_tokens: int, counter: TokenCounter, *, trigger: int,
                    keep: int, clear_at_least: int = 0, exclude_tools: Sequence[str] = (),
                    clear_tool_inputs: bool = False) -> list[AnyMessage]:
    """Anthropic's ``clear_tool_uses_20250919``: over ``trigger`` input tokens, clear every tool result but the
    ``keep`` most recent (``exclude_tools`` never); when that frees fewer than ``clear_at_least`` tokens, clear none."""
    if request_tokens <= trigger:
        return list(messages)
    names = {call["id"]: call["name"] for message in messages if isinstance(message, AIMessage) for call in message.tool_calls}
    results = [index for index, message in enumerate(messages) if isinstance(message, ToolMessage)
               and message.text != CLEARED_TEXT and names.get(message.tool_call_id, message.name) not in exclude_tools]
    chosen = set(results[:-keep] if keep else results) if len(results) > keep else set()
    edited = list(messages)
    for index in chosen:
        edited[index] = messages[index].model_copy(update={"content": CLEARED_TEXT})
    if clear_tool_inputs:
        cleared_ids = {messages[index].tool_call_id for index in chosen}
        edited = [message.model_copy(update={"tool_calls": [{**call, "args": {}} if call["id"] in cleared_ids else call
                                                            for call in message.tool_calls]})
                  if isinstance(message, AIMessage) and message.tool_calls else message for message in edited]
    freed = counter.count_messages(messages) - counter.count_messages(edited)
    return edited if chosen and freed >= clear_at_least else list(messages)


class AnthropicClearToolUsesPeer(PeerAgent):
    """Anthropic's clear_tool_uses_20250919 semantics: trigger, keep, clear_at_least, exclude_tools."""

    version = "anthropic-clear-tool-uses"
    keep: ClassVar[int] = 3
    exclude_tools: ClassVar[tuple[str, ...]] = ("chartbook_list",)

    def settings_now(self) -> dict[str, Any]:
        trigger = self.trigger_tokens()
        return {"trigger": trigger, "keep": self.keep, "clear_at_least": trigger // 6,
                "exclude_tools": list(self.exclude_tools), "clear_tool_inputs": False}

    def strategy(self) -> dict[str, Any]:
        return {"source": "Anthropic context editing, clear_tool_uses_20250919 (semantics; applied to each request)",
                **self.settings_now(), "placeholder": CLEARED_TEXT,
                "scaled_from": "Anthropic's documented example: trigger 30,000 input tokens, clear_at_least 5,000"}

    def build_middleware(self) -> list[AgentMiddleware]:
        settings = self.settings_now()
        self.log.trigger_tokens = settings["trigger"]

        def edit(messages: list[AnyMessage], fixed: int) -> list[AnyMessage]:
            tokens = fixed + self.counter.count_messages(messages)
            return clear_tool_uses(messages, tokens, self.counter, **settings)

        return [ViewEditMiddleware(edit, self.log, self.counter, CLEARED_TEXT)]


# --- OpenHands: the default condenser pipeline ----------------------------------------------------

def window_condensed(messages: Sequence[AnyMessage]) -> list[AnyMessage]:
    """OpenHands' ``ConversationWindowCondenser``: the first user message, then the recent half of the rest
    (never starting on a tool result whose call was forgotten)."""
    first = next((index for index, message in enumerate(messages) if isinstance(message, HumanMessage)
                  and not is_summary(message)), None)
    if first is None:
        return list(messages)
    rest = [index for index in range(len(messages)) if index != first]
    keep_recent = max(1, len(rest) // 2)
    start = len(messages) - keep_recent
    while start < len(messages) and isinstance(messages[start], ToolMessage):
        start += 1
    return [messages[first], *(messages[index] for index in range(start, len(messages)) if index != first)]


class OpenHandsCondenserMiddleware(AgentMiddleware):
    """OpenHands' default pipeline: window condensation on overflow, then LLMSummarizingCondenser on event count."""

    def __init__(self, agent: PeerAgent, max_size: int = OPENHANDS_MAX_SIZE, keep_first: int = OPENHANDS_KEEP_FIRST) -> None:
        super().__init__()
        self.agent, self.max_size, self.keep_first = agent, max_size, keep_first

    def before_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        agent, messages = self.agent, list(state["messages"])
        original = list(messages)
        with agent.log.timing_wrapper():
            while agent.fixed_tokens + agent.counter.count_messages(messages) > agent.budget_tokens:
                shorter = window_condensed(messages)
                if len(shorter) >= len(messages):
                    break
                messages = shorter
            if len(messages) < len(original):
                agent.log.record_event(EventKind.SUMMARIZE, agent.counter.count_messages(original),
                                       agent.counter.count_messages(messages), strategy="openhands-window")
        events = len(messages) + 1  # the system prompt is OpenHands' first event
        if events > self.max_size:
            messages = self.summarized(messages)
        return replace_history(messages) if messages != original else None

    def summarized(self, messages: list[AnyMessage]) -> list[AnyMessage]:
        head = messages[: self.keep_first - 1]  # keep_first counts the system prompt, event 0
        tail_size = self.max_size // 2 - self.keep_first - 1
        previous = messages[len(head)] if len(messages) > len(head) and is_summary(messages[len(head)]) else None
        forgotten = [message for message in messages[len(head): len(messages) - tail_size] if not is_summary(message)]
        tail = messages[len(messages) - tail_size:]
        while tail and isinstance(tail[0], ToolMessage):  # a result whose call was forgotten goes with it
            forgotten.append(tail.pop(0))
        text = summarize(self.agent.model, prompt_text("openhands_condenser.md"), forgotten,
                         previous_summary=previous.text if previous is not None else "No events summarized")
        condensed = [*head, summary_message(text), *tail]
        self.agent.log.record_event(EventKind.SUMMARIZE, self.agent.counter.count_messages(messages),
                                    self.agent.counter.count_messages(condensed), strategy="openhands-llm")
        return condensed


class OpenHandsCondenserPeer(PeerAgent):
    """OpenHands' default condenser (its server's pipeline): window on overflow, LLM summary over 120 events."""

    version = "openhands-condenser"

    def strategy(self) -> dict[str, Any]:
        return {"source": "OpenHands openhands/server/session/session.py default pipeline",
                "pipeline": ["ConversationWindowCondenser (on a request over the budget, the context-window error)",
                             f"LLMSummarizingCondenser(max_size={OPENHANDS_MAX_SIZE}, keep_first={OPENHANDS_KEEP_FIRST})"],
                "events": "the system prompt is event 0, then one event per message",
                "summary_prompt": "prompts/peers/openhands_condenser.md"}

    def build_middleware(self) -> list[AgentMiddleware]:
        return [OpenHandsCondenserMiddleware(self)]


# --- Codex: automatic compaction ------------------------------------------------------------------

def user_messages_within(messages: Sequence[AnyMessage], counter: TokenCounter,
                         max_tokens: int = COMPACT_USER_MESSAGE_MAX_TOKENS) -> list[HumanMessage]:
    """The user's own messages (not summaries), newest first up to ``max_tokens``, returned oldest first."""
    chosen: list[HumanMessage] = []
    remaining = max_tokens
    for message in reversed(messages):
        if not isinstance(message, HumanMessage) or is_summary(message):
            continue
        tokens = counter.count_message(message)
        if tokens > remaining:
            break
        chosen.append(message)
        remaining -= tokens
    return list(reversed(chosen))


def trimmed_to(messages: Sequence[AnyMessage], counter: TokenCounter, max_tokens: int) -> list[AnyMessage]:
    """Codex's ``trim_history_to_budget``: drop the oldest items (a call with its results) until they fit."""
    kept = list(messages)
    while kept and counter.count_messages(kept) > max_tokens:
        dropped = kept.pop(0)
        if isinstance(dropped, AIMessage):
            ids = {call["id"] for call in dropped.tool_calls}
            while kept and isinstance(kept[0], ToolMessage) and kept[0].tool_call_id in ids:
                kept.pop(0)
    return kept


class CodexCompactionMiddleware(AgentMiddleware):
    """Codex's auto-compaction: at 90% of the window, the history becomes the user's messages + a summary."""

    def __init__(self, agent: PeerAgent) -> None:
        super().__init__()
        self.agent = agent

    def limit(self) -> int:
        return int(CODEX_AUTO_COMPACT_SHARE * self.agent.budget_tokens)

    def before_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        agent, messages = self.agent, list(state["messages"])
        if agent.fixed_tokens + agent.counter.count_messages(messages) < self.limit():
            return None
        template = prompt_text("codex_compact.md")
        room = int(CODEX_COMPACT_PROMPT_SHARE * agent.budget_tokens) - agent.counter.count_system(template)
        text = summarize(agent.model, template, trimmed_to(messages, agent.counter, max(room, 0)))
        compacted = [*user_messages_within(messages, agent.counter),
                     summary_message(text, prompt_text("codex_summary_prefix.md"))]
        agent.log.record_event(EventKind.SUMMARIZE, agent.counter.count_messages(messages),
                               agent.counter.count_messages(compacted), strategy="codex")
        return replace_history(compacted)


class CodexCompactionPeer(PeerAgent):
    """Codex's automatic compaction: the user's own messages kept verbatim (up to 20,000 tokens) + a summary."""

    version = "codex-compaction"

    def strategy(self) -> dict[str, Any]:
        return {"source": "openai/codex codex-rs/core/src/compact.rs",
                "auto_compact_token_limit": int(CODEX_AUTO_COMPACT_SHARE * self.budget_tokens),
                "compact_prompt_budget": f"{CODEX_COMPACT_PROMPT_SHARE:.0%} of the window (oldest items dropped first)",
                "user_messages_kept_tokens": COMPACT_USER_MESSAGE_MAX_TOKENS,
                "prompts": ["prompts/peers/codex_compact.md", "prompts/peers/codex_summary_prefix.md"]}

    def build_middleware(self) -> list[AgentMiddleware]:
        self.log.trigger_tokens = int(CODEX_AUTO_COMPACT_SHARE * self.budget_tokens)
        return [CodexCompactionMiddleware(self)]


# --- JetBrains: mask, then summarize ------------------------------------------------------------------

def steps_of(messages: Sequence[AnyMessage]) -> list[int]:
    """Indexes of the agent's steps (its AI messages)."""
    return [index for index, message in enumerate(messages) if isinstance(message, AIMessage)]


def mask_old_steps(messages: Sequence[AnyMessage], window: int) -> list[AnyMessage]:
    """Observation masking: tool results before the last ``window`` agent steps become SWE-agent's placeholder."""
    steps = steps_of(messages)
    if len(steps) <= window:
        return list(messages)
    cut = steps[-window]
    return [message.model_copy(update={"content": ELIDED_TEXT.format(lines=line_count(message))})
            if index < cut and isinstance(message, ToolMessage) and not message.text.startswith("Old environment output")
            else message for index, message in enumerate(messages)]


class JetBrainsSummaryMiddleware(AgentMiddleware):
    """Every ``summarize_every`` agent steps, all but the last ``mask_window`` steps become one summary."""

    def __init__(self, agent: PeerAgent, window: int = JETBRAINS_MASK_WINDOW, every: int = JETBRAINS_SUMMARIZE_EVERY) -> None:
        super().__init__()
        self.agent, self.window, self.every = agent, window, every
        self.steps_since_summary = 0

    def before_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        messages = list(state["messages"])
        steps = steps_of(messages)
        if len(steps) - self.steps_since_summary < self.every:
            return None
        cut = steps[-self.window]
        first = next((message for message in messages if isinstance(message, HumanMessage) and not is_summary(message)), None)
        masked = mask_old_steps(messages, self.window)  # mask, then summarize: the summary reads the masked steps
        text = summarize(self.agent.model, prompt_text("jetbrains_summary.md"), masked[:cut])
        kept = [*([first] if first is not None and first not in messages[cut:] else []), summary_message(text), *messages[cut:]]
        self.steps_since_summary = len(steps_of(kept))
        self.agent.log.record_event(EventKind.SUMMARIZE, self.agent.counter.count_messages(messages),
                                    self.agent.counter.count_messages(kept), strategy="jetbrains-hybrid")
        return replace_history(kept)


class JetBrainsHybridPeer(PeerAgent):
    """"The Complexity Trap"'s hybrid: observation masking (last 10 steps) + an LLM summary every 43 steps."""

    version = "jetbrains-hybrid"

    def strategy(self) -> dict[str, Any]:
        return {"source": "Lindenbauer et al., The Complexity Trap (JetBrains Research, 2025): the hybrid",
                "mask_window_steps": JETBRAINS_MASK_WINDOW, "summarize_every_steps": JETBRAINS_SUMMARIZE_EVERY,
                "placeholder": ELIDED_TEXT, "summary_prompt": "prompts/peers/jetbrains_summary.md",
                "kept_verbatim": "the user's first message"}

    def build_middleware(self) -> list[AgentMiddleware]:
        return [JetBrainsSummaryMiddleware(self),
                ViewEditMiddleware(lambda messages, _fixed: mask_old_steps(messages, JETBRAINS_MASK_WINDOW),
                                   self.log, self.counter, "Old environment output")]


FIELD_PEERS: dict[str, type[PeerAgent]] = {
    peer.version: peer
    for peer in (SweAgentLastNPeer, SweAgentPollingPeer, AnthropicClearToolUsesPeer, OpenHandsCondenserPeer,
                 CodexCompactionPeer, JetBrainsHybridPeer)
}
"""The field's strategies, by name (see the module docstring for each one's settings)."""

__all__ = ["FIELD_PEERS", "clear_tool_uses", "elide_observations", "mask_old_steps", "user_messages_within",
           "window_condensed", "v2_trigger_tokens"]
