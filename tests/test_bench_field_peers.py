"""The field's strategies behave as their authors document them (the rules of bench/field_peers.py)."""

from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from flawedcode.bench.agent_specs import KNOWN_AGENTS
from flawedcode.bench.field_peers import (
    CLEARED_TEXT,
    FIELD_PEERS,
    clear_tool_uses,
    elide_observations,
    mask_old_steps,
    user_messages_within,
    window_condensed,
)
from flawedcode.tokens import TokenCounter


def session(results: int, size: int = 40) -> list:
    """The user's goal, then ``results`` steps of (tool call, tool result of ``size`` lines), then an answer."""
    messages = [HumanMessage("Load the SOFR data")]
    for number in range(results):
        messages.append(AIMessage("", tool_calls=[{"id": f"c{number}", "name": "chartbook_load_data" if number else "chartbook_list",
                                                     "args": {"n": number}}]))
        messages.append(ToolMessage("\n".join(f"row {number}.{line}" for line in range(size)), tool_call_id=f"c{number}"))
    return messages


def elided(messages) -> list[int]:
    tools = [message for message in messages if isinstance(message, ToolMessage)]
    return [number for number, message in enumerate(tools) if message.text.startswith("Old environment output")]


def test_swe_agent_keeps_the_last_n_observations_and_never_the_first_is_the_template():
    messages = session(8)
    edited = elide_observations(messages, n=5)
    # observations: the goal (template) + 8 results = 9; 9 - 5 = 4 -> observations 1..3 (results 0..2) elided
    assert elided(edited) == [0, 1, 2]
    assert edited[0] == messages[0] and edited[2].text == "Old environment output: (40 lines omitted)"
    assert elide_observations(session(4), n=5) == session(4)


def test_swe_agent_polling_moves_the_cut_only_every_p_observations():
    cuts = [len(elided(elide_observations(session(results), n=5, polling=5))) for results in range(4, 16)]
    assert cuts == [0] * 5 + [4] * 5 + [9] * 2  # 10 observations (9 results): (10//5)*5-5 = 5 -> 4 results, until 15
    for results in range(4, 16):
        shown = results - len(elided(elide_observations(session(results), n=5, polling=5)))
        assert shown >= min(results, 5) and shown <= 5 + 5


def test_anthropic_clearing_keeps_the_last_k_and_excluded_tools_and_needs_clear_at_least():
    counter = TokenCounter()
    messages = session(6)
    tokens = counter.count_messages(messages)
    assert clear_tool_uses(messages, tokens, counter, trigger=tokens, keep=3) == messages  # not over the trigger
    edited = clear_tool_uses(messages, tokens, counter, trigger=100, keep=3, exclude_tools=["chartbook_list"])
    cleared = [number for number, message in enumerate(m for m in edited if isinstance(m, ToolMessage))
               if message.text == CLEARED_TEXT]
    assert cleared == [1, 2]  # result 0 is the excluded catalog listing; 3..5 are the 3 most recent
    freed = tokens - counter.count_messages(edited)
    assert clear_tool_uses(messages, tokens, counter, trigger=100, keep=3, clear_at_least=freed + 1,
                           exclude_tools=["chartbook_list"]) == messages  # cannot free enough: nothing cleared
    without_inputs = clear_tool_uses(messages, tokens, counter, trigger=100, keep=3, clear_tool_inputs=True)
    assert without_inputs[1].tool_calls[0]["args"] == {} and without_inputs[-2].tool_calls[0]["args"] == {"n": 5}


def test_openhands_window_keeps_the_first_user_message_and_the_recent_half_without_a_dangling_result():
    messages = session(6)  # 13 messages: goal + 6 x (call, result)
    condensed = window_condensed(messages)
    assert condensed[0] == messages[0]
    assert not isinstance(condensed[1], ToolMessage)
    assert condensed[-1] == messages[-1] and len(condensed) <= 1 + 6


def test_codex_keeps_the_users_own_messages_newest_first_within_its_budget():
    counter = TokenCounter()
    messages = [HumanMessage(f"request {number} " + "word " * 50) for number in range(5)]
    each = counter.count_message(messages[0])
    kept = user_messages_within(messages, counter, max_tokens=3 * each)
    assert [message.text.split()[1] for message in kept] == ["2", "3", "4"]
    assert user_messages_within(messages, counter) == messages  # 20,000 tokens hold them all


def test_jetbrains_masking_keeps_the_results_of_the_last_window_steps():
    messages = session(12)
    assert elided(mask_old_steps(messages, window=10)) == [0, 1]
    assert mask_old_steps(session(5), window=10) == session(5)


def test_at_least_ten_strategies_are_built_in_each_with_its_settings():
    strategies = [name for name in KNOWN_AGENTS if name != "v0"]
    assert len(strategies) >= 12 and set(FIELD_PEERS) <= set(KNOWN_AGENTS)
    assert {"swe-agent-last-5", "anthropic-clear-tool-uses", "openhands-condenser", "codex-compaction",
            "jetbrains-hybrid"} <= set(FIELD_PEERS)
