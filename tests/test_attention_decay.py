"""The offline model's attention decay: calibrated, seeded, off by default, never dropping the question."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from flawedcode.models.offline import OfflineModel
from flawedcode.models.offline_attention import AttentionDecay, attention_chance, decay_window
from flawedcode.tokens import TokenCounter

COUNTER = TokenCounter()


@pytest.mark.parametrize(("position", "published"), [(0.0, 0.76), (0.5, 0.54), (1.0, 0.63)])
def test_at_4k_tokens_it_reproduces_lost_in_the_middle(position: float, published: float) -> None:
    assert attention_chance(position, 4_000) == pytest.approx(published, abs=0.01)


def test_length_follows_context_rot_and_a_focused_prompt_has_no_middle() -> None:
    assert [attention_chance(x, 300) for x in (0, 0.5, 1)] == pytest.approx([0.873] * 3)
    assert attention_chance(0, 113_000) == pytest.approx(0.624)
    chances = [attention_chance(0.5, tokens) for tokens in (300, 1_000, 4_000, 16_000, 64_000, 113_000)]
    assert chances == sorted(chances, reverse=True)


def test_it_is_off_by_default_and_reproducible_run_to_run() -> None:
    assert OfflineModel().attention_decay is None
    messages = [HumanMessage(f"note number {n}: the value is {n}.5") for n in range(40)] + [HumanMessage("what?")]
    first = AttentionDecay(3).attended(messages, 20_000, COUNTER)
    assert first == AttentionDecay(3).attended(messages, 20_000, COUNTER)
    assert first != AttentionDecay(4).attended(messages, 20_000, COUNTER)
    assert first[-1].content == "what?" and len(first) < len(messages)


def test_the_middle_is_lost_more_often_than_the_ends() -> None:
    messages = [HumanMessage(f"fact {n}: " + "filler words " * 40) for n in range(30)] + [HumanMessage("question")]
    kept = {"start": 0, "middle": 0, "end": 0}
    for seed in range(200):
        attended = {m.content for m in AttentionDecay(seed).attended(messages, 8_000, COUNTER)}
        kept["start"] += messages[0].content in attended
        kept["middle"] += messages[15].content in attended
        kept["end"] += messages[29].content in attended
    assert kept["middle"] < kept["end"] < kept["start"]


def test_the_current_turn_is_never_decayed_and_a_result_without_its_call_is_dropped_too() -> None:
    call = AIMessage("", tool_calls=[{"name": "t", "args": {}, "id": "c1", "type": "tool_call"}])
    earlier = [HumanMessage("goal"), call, ToolMessage("r" * 400, tool_call_id="c1")] * 1
    current = [HumanMessage("now"), AIMessage("", tool_calls=[{"name": "t", "args": {}, "id": "c2", "type": "tool_call"}]),
               ToolMessage("result", tool_call_id="c2")]
    for seed in range(50):
        attended = AttentionDecay(seed).attended([*earlier, *current], 50_000, COUNTER)
        assert attended[-3:] == current
        if call not in attended:
            assert earlier[2] not in attended


def test_a_decayed_request_is_marked_as_cut_so_the_model_says_it_does_not_know() -> None:
    model = OfflineModel(attention_decay=AttentionDecay(1))
    messages = [SystemMessage("sys"), *[HumanMessage(f"Remember that item {n} costs {n}.25") for n in range(60)],
                HumanMessage("What was my original goal?")]
    window = decay_window(model.attention_decay, model.see(messages, []), COUNTER)
    assert window.truncated and len(window.visible) < len(messages) - 1
    assert decay_window(None, window, COUNTER) is window
