"""Summaries for any agent that asks (teaching/summary.py): the model is called directly, no agent is built."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage, get_buffer_string
from teaching_harness import offline_model

from flawedcode.models.teaching import summary

GOAL = "I want the average SOFR in 2024 and a note of where the data came from."
FIGURE = "The mean of money_markets/sofr rate (percent) was 5.3550 over 2 values."


def conversation() -> list:
    load = {"name": "chartbook_load_data", "args": {"pipeline": "money_markets", "dataframe": "sofr"}, "id": "c1", "type": "tool_call"}
    return [HumanMessage(GOAL), AIMessage("", tool_calls=[load]),
            ToolMessage("[Offloaded: scratch/sofr.txt | 5,465 characters, 1,571 tokens]\nPreview (table)", tool_call_id="c1"),
            AIMessage(FIGURE), HumanMessage("remember that I prefer basis points"), AIMessage("Noted.")]


def reply_to(messages: list) -> str:
    return offline_model().invoke(messages).text


@pytest.mark.parametrize("ask", ["tl;dr of this chat pls, a handful of lines:", "Recap what happened below for whoever picks this up next.",
                                 "Write a handoff note of the work below.", "Summarize the conversation below."])
def test_a_rendered_conversation_is_summarized_whatever_words_ask_for_it(ask: str) -> None:
    written = reply_to([HumanMessage(f"{ask}\n<conversation>\n{get_buffer_string(conversation(), format='xml')}\n</conversation>")])
    assert f"Original goal (verbatim): {GOAL}" in written and FIGURE in written
    assert "- scratch/sofr.txt" in written and "- remember that I prefer basis points" in written


def test_a_summary_asked_in_plain_words_is_of_the_messages_before_it_and_keeps_its_length() -> None:
    written = reply_to([*conversation(), HumanMessage("Please summarize our chat so far for a handoff, under 400 characters.")])
    assert written.startswith("## SESSION INTENT") and GOAL in written and len(written) <= 400
    assert "## SESSION INTENT" in reply_to([*conversation(), HumanMessage("can you recap our conversation so far?")])


def test_a_count_of_messages_is_counted_after_the_goal_and_the_earlier_summaries() -> None:
    block = HumanMessage("[Conversation summary 1]\n## SUMMARY\nNumbers reported:\n- effr mean 4.6150")
    messages = [HumanMessage(GOAL), block, *conversation()[1:], HumanMessage("[Plan reminder: - [pending] x]"), HumanMessage("and effr?")]
    written = reply_to([*messages, HumanMessage("Summarize the 5 messages after them. The goal is pinned above: do not repeat it.")])
    assert "## SESSION INTENT" not in written and FIGURE in written and "Plan reminder" not in written
    assert "effr mean 4.6150" not in written and "and effr?" not in written  # neither the block nor the kept message
    merged = reply_to([*messages, HumanMessage("Summarize the earlier summary blocks and the 5 messages after them. Consolidate: yes.")])
    assert "effr mean 4.6150" in merged and FIGURE in merged
    blocks_only = reply_to([*messages, HumanMessage("Summarize the 1 summary blocks after the first 1 messages.")])
    assert "effr mean 4.6150" in blocks_only and FIGURE not in blocks_only


def test_a_data_ask_that_says_summary_is_not_a_summary_request() -> None:
    for ask in ("give me summary stats for the 10y yield in 2024", "goal = summarise effr in 2024. first step: describe effr"):
        assert summary.reply([HumanMessage(ask)], 0) is None


def test_with_nothing_before_it_there_is_nothing_to_summarize() -> None:
    assert "nothing to summarize yet" in reply_to([HumanMessage("can you recap our conversation so far?")])


def test_a_summary_cut_to_fit_drops_empty_headings_first_and_the_sessions_first_figure_last() -> None:
    written = ("## SESSION INTENT\nOriginal goal (verbatim): List ChartBook dataframes\n\n## SUMMARY\n"
               "Numbers reported:\n- sofr rate: mean 4.8944\n- effr rate: mean 4.6150\n- tgcr: mean 4.5297\n\n"
               "## ARTIFACTS\n\n## NEXT STEPS\nLast request: answered.")
    fitted = summary.fit(written, "under 200 characters")
    assert "## ARTIFACTS" not in fitted and "- tgcr: mean 4.5297" in fitted
    fitted = summary.fit(written, "under 170 characters")
    assert "- sofr rate: mean 4.8944" in fitted and "- effr rate" not in fitted and len(fitted) <= 170
    tighter = summary.fit(written, "keep it within 130 chars")
    assert "Numbers reported:" not in tighter or "- " in tighter.split("Numbers reported:", 1)[1], "no empty heading"
