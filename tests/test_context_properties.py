"""Property test: over many generated conversations, summarizing never loses or splits anything.

For random tool-result sizes, triggers and keep policies, after every step:
- every message that ever left the context is in the archive, unchanged and in order
  (archive + context, summaries aside, is exactly the conversation so far);
- no kept AI message lacks any of its tool results, and no tool result is orphaned;
- the original goal is in the context verbatim (as the first message, or in the summary).
"""

from __future__ import annotations

import itertools
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from pydantic import ValidationError

from flawedcode.config import ContextSize, SummarizationConfig
from flawedcode.context import ConversationArchive, maybe_summarize
from flawedcode.context.summarize import GOAL_LINE, is_summary
from flawedcode.tokens import TokenCounter

COUNTER = TokenCounter()

sizes = st.one_of(
    st.tuples(st.just("tokens"), st.integers(200, 3000)),
    st.tuples(st.just("messages"), st.integers(2, 30)),
    st.tuples(st.just("fraction"), st.floats(0.05, 0.9)),
)
turn_shapes = st.lists(st.lists(st.integers(1, 3000), min_size=0, max_size=3), min_size=1, max_size=12)


def build_turn(turn: int, result_sizes: list[int]) -> list:
    messages: list = [HumanMessage(f"request {turn}", id=f"h{turn}")]
    for step, size in enumerate(result_sizes):
        call_ids = [f"c{turn}-{step}-{k}" for k in range(1 + size % 2)]
        messages.append(AIMessage("", id=f"a{turn}-{step}",
                                  tool_calls=[{"name": "chartbook_load_data", "args": {"n": size}, "id": cid} for cid in call_ids]))
        messages += [ToolMessage(f"{cid}: " + "5.31," * (size // 5), tool_call_id=cid, id=f"t{cid}") for cid in call_ids]
    messages.append(AIMessage(f"answer {turn}", id=f"r{turn}"))
    return messages


def model_call_follows(context: list) -> bool:
    """A model is called after a user request, and after the last result of a tool-call batch."""
    last = context[-1]
    if isinstance(last, HumanMessage):
        return True
    if not isinstance(last, ToolMessage):
        return False
    caller = next(m for m in reversed(context) if isinstance(m, AIMessage) and m.tool_calls)
    return last.tool_call_id == caller.tool_calls[-1]["id"]


def assert_no_split(context: list) -> None:
    results = {m.tool_call_id for m in context if isinstance(m, ToolMessage)}
    calls = {c["id"] for m in context if isinstance(m, AIMessage) for c in m.tool_calls}
    assert calls <= results, "a kept AI message lost one of its tool results"
    assert results <= calls, "a tool result was orphaned"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(turns=turn_shapes, trigger=st.lists(sizes, min_size=1, max_size=3), keep=sizes, trim=st.one_of(st.none(), st.integers(100, 4000)))
def test_summaries_lose_nothing_and_split_nothing(turns, trigger, keep, trim) -> None:
    try:
        config = SummarizationConfig(
            trigger=[ContextSize(type=kind, value=value) for kind, value in trigger],
            keep=ContextSize(type=keep[0], value=keep[1]),
            trim_tokens_to_summarize=trim,
        )
    except ValidationError:  # keep at or above a trigger of its kind is refused (config.py)
        assume(False)
    model = GenericFakeChatModel(messages=itertools.repeat(AIMessage("## SESSION INTENT\nsummary")))
    goal = "Goal: chart SOFR minus EFFR for 2024"
    with tempfile.TemporaryDirectory() as folder:
        archive = ConversationArchive(Path(folder), "prop")
        everything: list = [HumanMessage(goal, id="goal")]
        context = list(everything)
        for turn, result_sizes in enumerate(turns):
            for message in build_turn(turn, result_sizes):
                everything.append(message)
                context.append(message)
                if model_call_follows(context):
                    context = maybe_summarize(context, model, archive=archive, config=config, counter=COUNTER, budget_tokens=8192).messages
                    assert [m for m in archive.messages() + context if not is_summary(m)] == everything
                    assert_no_split(context)
                    first = context[0]
                    assert first.content == goal if not is_summary(first) else f"\n{GOAL_LINE}{goal}\n" in first.content
