"""Questions about the conversation, answered only from what the model sees (teaching/introspect.py).

The model is called directly with a message list; no agent is built."""

from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from teaching_harness import offline_model

from flawedcode.models.teaching.introspect import Seen, answer

CALL = {"name": "chartbook_get_docs", "args": {"pipeline": "money_markets", "dataframe": "sofr"}, "id": "c1", "type": "tool_call"}
HISTORY = [HumanMessage("I want the 2024 SOFR mean."), AIMessage("", tool_calls=[CALL]),
           ToolMessage("# Secured Overnight Financing Rate\nrows...", tool_call_id="c1"), AIMessage("Here are the docs.")]


def test_the_goal_is_the_first_request_it_sees_a_summarys_goal_or_unknown_when_cut() -> None:
    assert answer("goal", Seen(HISTORY)) == 'Your original goal was: "I want the 2024 SOFR mean." (your first message in this conversation).'
    summary = HumanMessage("[Conversation summary 1]\n## SESSION INTENT\nOriginal goal (verbatim): find the 2024 SOFR mean\n")
    assert "find the 2024 SOFR mean" in answer("goal", Seen([summary, *HISTORY[1:]]))
    assert "no longer in my context window" in answer("goal", Seen(HISTORY, truncated=True))
    assert "I don't know" in answer("goal", Seen([]))


def test_the_last_call_the_previous_request_and_the_calls_are_read_from_the_messages() -> None:
    assert answer("last_action", Seen(HISTORY)) == ("The last thing I did was call chartbook_get_docs(pipeline='money_markets', "
                                                     "dataframe='sofr'); it returned: # Secured Overnight Financing Rate.")
    assert 'Your last request before this one was: "I want the 2024 SOFR mean."' in answer("previous_request", Seen(HISTORY))
    assert "- chartbook_get_docs x1" in answer("tool_calls", Seen(HISTORY))
    assert "no offload stub" in answer("offloaded", Seen(HISTORY))
    assert "No archive file is named in what I can see" in answer("archived", Seen(HISTORY))


def test_the_model_answers_them_in_a_conversation() -> None:
    reply = offline_model().invoke([*HISTORY, HumanMessage("What did you just read?")]).text
    assert reply.startswith("The last thing I did was call chartbook_get_docs(")
    assert "Try: 'List ChartBook dataframes'" in offline_model().invoke([HumanMessage("what can you do?")]).text


def test_a_summary_or_digest_in_view_is_never_nothing_fell_out():
    """Red-team sessions: under v3 (a turn digest every turn) and v2 at 4,096 tokens, 'what's in scratch?' and 'has anything
    been summarized?' were answered 'nothing has fallen out of my window yet' beside the digests."""
    digest = HumanMessage("[Conversation summary 3 | turn digest]\nRequest: load the last 100 rows of sofr\nAnswer: done.")
    for kind in ("offloaded", "archived", "context_window", "previous_request"):
        said = answer(kind, Seen([digest, HumanMessage("what's in scratch now?")], window_tokens=8192))
        assert "nothing has fallen out" not in said and "replaced by 1 summary or digest message" in said, said


def test_a_file_saved_to_scratch_named_only_by_a_summary_is_still_reported():
    """redteam_chats3 v3: 'what did you save to scratch just now?' said no stub was seen while its turn digest named the file."""
    digest = HumanMessage("[Conversation summary 3 | turn digest]\nTools: chartbook_load_data, read_file\n"
                          "Saved: scratch/chartbook_load_data_money_markets_effr_2023_ab12.txt\nLast request: effr rows for 2023 (answered).")
    reply = answer("offloaded", Seen([digest, HumanMessage("hi"), AIMessage("Hello.")]))
    assert "scratch/chartbook_load_data_money_markets_effr_2023_ab12.txt" in reply and "no offload stub in my context" not in reply, reply
    assert "no offload stub" in answer("offloaded", Seen(HISTORY))
