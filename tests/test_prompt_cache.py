"""The prompt-cache model: what a provider's cache serves of each request, what that costs, and the physical limit."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from flawedcode.agents import AgentV1, AgentV2
from flawedcode.constants import DEFAULT_BUDGET_TOKENS
from flawedcode.lessons import lesson_model
from flawedcode.models import profile_for
from flawedcode.prompt_cache import (
    CACHE_STEP_TOKENS,
    MIN_CACHED_PREFIX_TOKENS,
    SCHEMES,
    Block,
    BlockMaker,
    CallCache,
    SessionCache,
    analyze,
    break_even_turn,
    breakpoint_positions,
    cache_totals,
    cacheable_share,
    cumulative_by_turn,
    scheme_named,
    servable,
    weighted_input_tokens,
)
from flawedcode.telemetry import SessionLog
from flawedcode.tokens import REPLY_PRIMING_TOKENS, TokenCounter
from flawedcode.tools import Workspace


def blocks(*sizes: int, names: str = "") -> list[Block]:
    """A request: a fixed block of sizes[0] tokens, then one human/ai message per size (digest = its name)."""
    labels = names.split() if names else [f"m{index}" for index in range(len(sizes))]
    roles = ["fixed"] + ["human" if index % 2 else "ai" for index in range(1, len(sizes))]
    return [Block(label, size, role) for label, size, role in zip(labels, sizes, roles, strict=True)]


def prompt(request: list[Block]) -> int:
    return sum(block.tokens for block in request) + REPLY_PRIMING_TOKENS


OPENAI, ANTHROPIC, ANTHROPIC_1H, GEMINI = (SCHEMES[name] for name in ("openai", "anthropic", "anthropic-1h", "gemini"))


def test_servable_needs_1024_tokens_and_rounds_down_to_128():
    assert servable(1_023) == 0
    assert servable(1_024) == 1_024
    assert servable(1_151) == 1_024 and servable(1_152) == 1_152
    assert servable(70_000) == 70_000 // CACHE_STEP_TOKENS * CACHE_STEP_TOKENS
    assert servable(1_800, ANTHROPIC) == 1_800 and servable(1_800, GEMINI) == 0  # no step; Gemini 2.5's 2,048


# --- OpenAI: any earlier prefix, automatically, in 128-token steps from 1,024; 30 minutes -------------------

def test_openai_reads_any_earlier_prefix_in_128_token_steps_and_labels_each_miss():
    cache = SessionCache(OPENAI)
    first = blocks(1_500, 300, names="s.t goal")
    second = [*first, Block("reply", 700, "ai"), Block("next", 200, "human")]
    compacted = [first[0], Block("summary", 400, "human", "summary"), Block("ask", 100, "human")]
    one = cache.observe(first, prompt(first), turn=1, at=0)
    two = cache.observe(second, prompt(second), turn=2, at=60)
    three = cache.observe(compacted, prompt(compacted), turn=3, at=120)
    late = cache.observe(compacted, prompt(compacted), turn=4, at=120 + 30 * 60 + 1)
    assert (one.cached_tokens, one.write_tokens, one.miss_reason) == (0, 1_800, "first request")
    assert (two.shared_tokens, two.cached_tokens, two.write_tokens, two.miss_reason) == (1_800, 1_792, 908, None)
    assert (three.shared_tokens, three.cached_tokens, three.write_tokens) == (1_500, 1_408, 592)
    assert three.miss_reason == "compacted"
    assert (late.shared_tokens, late.cached_tokens, late.miss_reason) == (2_000, 0, "expired")


def test_the_prefix_may_come_from_any_earlier_request_not_only_the_last():
    cache = SessionCache(OPENAI)
    agent = blocks(2_000, 500, 900, names="fixed goal work")
    cache.observe(agent, prompt(agent))
    other = blocks(300, 50, names="summary-prompt text")  # a summary call with its own prefix
    assert cache.observe(other, prompt(other), purpose="summary").miss_reason == "system changed"
    forked = [*agent[:2], Block("different", 100, "human")]
    forked_call = cache.observe(forked, prompt(forked))
    assert forked_call.shared_tokens == 2_500 and forked_call.miss_reason == "messages changed"


def test_a_changed_system_prompt_or_tool_list_is_named_as_the_reason():
    cache = SessionCache(OPENAI)
    request = blocks(1_500, 300, names="system1.tools1 goal")
    cache.observe(request, prompt(request))
    tools = [Block("system1.tools2", 1_400, "fixed"), request[1]]
    assert cache.observe(tools, prompt(tools)).miss_reason == "tools changed"
    system = [Block("system2.tools2", 1_400, "fixed"), request[1]]
    assert cache.observe(system, prompt(system)).miss_reason == "system changed"


def test_a_request_under_the_minimum_neither_reads_nor_writes():
    cache = SessionCache(OPENAI)
    small = blocks(400, 200, names="fixed goal")
    cache.observe(small, prompt(small))
    again = cache.observe(small, prompt(small))
    assert again.shared_tokens == 600 and again.cached_tokens == 0 and again.write_tokens == 0
    assert again.miss_reason == "below minimum"


def test_a_failed_request_is_not_a_cache_entry():
    cache = SessionCache(OPENAI)
    request = blocks(1_500, 500)
    cache.observe(request, prompt(request), failed=True)
    retried = cache.observe(request, prompt(request))
    assert retried.cached_tokens == 0 and retried.write_tokens == 2_000


# --- Anthropic: only up to the breakpoints a request marks (four at most, 20-block lookback); 5 minutes / 1 hour ---

def test_anthropic_reads_only_a_prefix_an_earlier_request_marked():
    cache = SessionCache(ANTHROPIC)
    first = blocks(1_500, 300, names="s.t goal")
    second = [*first, Block("reply", 700, "ai"), Block("next", 200, "human")]
    one = cache.observe(first, prompt(first), at=0, marks=[0, 1])  # end of tools, end of request
    two = cache.observe(second, prompt(second), at=60, marks=[0, 3])
    assert (one.cached_tokens, one.write_tokens, one.miss_reason) == (0, 1_800, "first request")
    assert (two.cached_tokens, two.write_tokens, two.miss_reason) == (1_800, 900, None)  # no 128-token step
    # a request that marks only its tools reads only the tools, however much it re-sends
    third = [*second, Block("reply2", 100, "ai"), Block("next2", 100, "human")]
    three = cache.observe(third, prompt(third), at=120, marks=[0])
    assert (three.shared_tokens, three.cached_tokens, three.write_tokens) == (2_700, 1_500, 0)
    assert three.miss_reason == "not marked"


def test_anthropic_looks_back_at_most_20_blocks_from_a_breakpoint():
    cache = SessionCache(ANTHROPIC)
    first = blocks(1_500, 300, 700, 200, names="s.t goal reply next")
    cache.observe(first, prompt(first), at=0, marks=[0, 3])
    near = [*first, *(Block(f"near{index}", 10, "tool") for index in range(20))]  # the entry is 20 blocks back
    assert cache.observe(near, prompt(near), at=1, marks=[0, 23]).cached_tokens == 2_700
    far = [*first, *(Block(f"far{index}", 10, "tool") for index in range(21))]  # 21 blocks back: out of sight
    missed = cache.observe(far, prompt(far), at=2, marks=[0, 24])
    assert (missed.cached_tokens, missed.write_tokens, missed.miss_reason) == (1_500, 2_700 + 210 - 1_500, "not marked")


def test_anthropic_entries_live_5_minutes_from_their_last_use_or_an_hour_at_2x_writes():
    for scheme, ttl in ((ANTHROPIC, 300), (ANTHROPIC_1H, 3_600)):
        cache = SessionCache(scheme)
        first = blocks(1_500, 300, names="s.t goal")
        second = [*first, Block("reply", 700, "ai"), Block("next", 200, "human")]
        cache.observe(first, prompt(first), at=0, marks=[0, 1])
        kept = cache.observe(second, prompt(second), at=ttl, marks=[0, 3])  # a read at the limit refreshes it
        third = [*second, Block("reply2", 100, "ai"), Block("next2", 100, "human")]
        lost = cache.observe(third, prompt(third), at=2 * ttl + 1, marks=[0, 5])
        assert kept.cached_tokens == 1_800 and (lost.cached_tokens, lost.miss_reason) == (0, "expired")
        assert lost.write_tokens == 2_900
    assert weighted_input_tokens([CallCache(2_903, cached_tokens=0, write_tokens=2_900)], ANTHROPIC_1H) == 3 + 5_800


def test_anthropic_caches_nothing_below_its_minimum_and_models_have_their_own():
    cache = SessionCache(ANTHROPIC)
    small = blocks(500, 300, names="s.t goal")
    cache.observe(small, prompt(small), marks=[0, 1])
    again = [*small, Block("reply", 100, "ai"), Block("next", 50, "human")]
    call = cache.observe(again, prompt(again), marks=[0, 3])
    assert (call.cached_tokens, call.write_tokens, call.miss_reason) == (0, 0, "below minimum")
    assert scheme_named("anthropic", "claude-haiku-4-5").min_prefix_tokens == 4_096
    assert scheme_named("anthropic", "claude-opus-5").min_prefix_tokens == 512
    assert scheme_named("gemini", "gemini-3.5-flash").min_prefix_tokens == 4_096


def test_breakpoints_are_placed_by_policy_at_most_four():
    request = [Block("s.t", 1_500, "fixed"), Block("goal", 40, "human"), Block("d1", 30, "human", "summary"),
               Block("d2", 30, "human", "summary"), Block("ask", 20, "human"), Block("call", 10, "ai"),
               Block("result", 900, "tool")]
    assert breakpoint_positions(request) == [0, 6]  # the default: end of tools, end of request
    assert breakpoint_positions(request, ("tools", "goal", "digests", "request")) == [0, 1, 3, 6]
    assert breakpoint_positions(request, ("request",)) == [6]  # Anthropic's automatic mode
    assert breakpoint_positions(request[:2], ("tools", "goal", "digests", "request")) == [0, 1]


# --- Gemini: implicit, any earlier prefix above the model's minimum (2,048 on 2.5), writes free -------------

def test_gemini_reads_any_earlier_prefix_above_its_minimum():
    cache = SessionCache(GEMINI)
    first = blocks(1_500, 300, names="s.t goal")
    second = [*first, Block("reply", 700, "ai"), Block("next", 200, "human")]
    third = [*second, Block("reply2", 100, "ai"), Block("next2", 100, "human")]
    one = cache.observe(first, prompt(first), at=0)
    two = cache.observe(second, prompt(second), at=1)
    three = cache.observe(third, prompt(third), at=2)
    assert (one.cached_tokens, one.write_tokens) == (0, 0)  # 1,800 tokens: under Gemini 2.5's 2,048
    assert (two.cached_tokens, two.write_tokens, two.miss_reason) == (0, 2_700, "below minimum")
    assert (three.cached_tokens, three.write_tokens, three.miss_reason) == (2_700, 200, None)
    assert weighted_input_tokens([one, two, three], GEMINI) == round(1_803 + 2_703 + 0.1 * 2_700 + 203)


@pytest.mark.parametrize(("scheme", "expected"), [
    ("openai", 1_000 + 0.1 * 8_000 + 1.0 * 1_000),
    ("openai-2026", 1_000 + 0.1 * 8_000 + 1.25 * 1_000),
    ("anthropic", 1_000 + 0.1 * 8_000 + 1.25 * 1_000),
    ("anthropic-1h", 1_000 + 0.1 * 8_000 + 2.0 * 1_000),
    ("gemini", 1_000 + 0.1 * 8_000 + 1.0 * 1_000),
])
def test_each_scheme_prices_reads_and_writes(scheme, expected):
    call = CallCache(10_000, cached_tokens=8_000, write_tokens=1_000)
    assert weighted_input_tokens([call], scheme) == round(expected)
    assert set(SCHEMES) == {"openai", "openai-2026", "anthropic", "anthropic-1h", "gemini"}


def test_break_even_is_the_first_turn_from_which_a_strategy_stays_cheaper():
    reference = [1_000, 2_500, 4_500, 7_000, 10_000]
    assert break_even_turn([1_500, 2_800, 4_000, 5_000, 6_000], reference) == 3
    assert break_even_turn([900, 2_600, 4_000, 5_000, 6_000], reference) == 3  # cheaper at turn 1, not at 2
    assert break_even_turn([2_000, 4_000, 6_000, 8_000, 10_001], reference) is None
    caches = [CallCache(1_000, turn=1), CallCache(500, turn=1), CallCache(2_000, turn=3)]
    assert cumulative_by_turn(caches, "openai") == [1_500, 1_500, 3_500]


def test_the_default_scheme_is_anthropic():
    call = CallCache(10_000, cached_tokens=8_000, write_tokens=2_000)
    assert weighted_input_tokens([call]) == weighted_input_tokens([call], "anthropic") == round(800 + 2_500)
    with pytest.raises(ValueError, match="unknown pricing scheme 'bedrock'; choose from openai"):
        weighted_input_tokens([call], "bedrock")


def test_provider_reported_cached_tokens_win_and_are_compared_with_the_model():
    reported = CallCache(5_000, cached_tokens=4_096, write_tokens=904, reported_cached_tokens=3_072)
    assert reported.billed_cached_tokens == 3_072
    totals = cache_totals([reported, CallCache(2_000)])
    assert totals["cached_input_tokens"] == 3_072 and totals["cacheable_share"] == round(3_072 / 7_000, 4)
    assert totals["reported_cache"] == {"calls": 1, "reported_cached_tokens": 3_072, "model_cached_tokens": 4_096,
                                        "model_over_reported": round(4_096 / 3_072, 4)}


def test_the_limit_is_fixed_plus_goal_plus_current_turn():
    cache = SessionCache()
    goal = Block("goal", 40, "human")
    turn1 = [Block("fixed", 1_500, "fixed"), goal]
    assert cache.observe(turn1, prompt(turn1), turn=1).oracle_tokens == 1_540 + REPLY_PRIMING_TOKENS
    turn2 = [*turn1, Block("a1", 900, "ai"), Block("ask2", 30, "human"), Block("call", 20, "ai"),
             Block("result", 2_000, "tool")]
    limit = cache.observe(turn2, prompt(turn2), turn=2).oracle_tokens
    assert limit == 1_500 + 40 + (30 + 20 + 2_000) + REPLY_PRIMING_TOKENS  # a1 is an earlier turn: not needed
    summary = [Block("summary-fixed", 200, "fixed"), Block("history", 3_000, "human")]
    assert cache.observe(summary, prompt(summary), purpose="summary", turn=2).oracle_tokens == 0


def test_message_identity_is_what_the_provider_receives_not_langchains_id():
    maker = BlockMaker(TokenCounter())
    same = maker.message_block(HumanMessage("hello there", id="a"))
    assert maker.message_block(HumanMessage("hello there", id="b")).digest == same.digest
    assert maker.message_block(HumanMessage("hello there!")).digest != same.digest
    result = maker.message_block(ToolMessage("42", tool_call_id="call_1"))
    assert maker.message_block(ToolMessage("42", tool_call_id="call_2")).digest != result.digest
    call = AIMessage("", tool_calls=[{"id": "c1", "name": "load", "args": {"rows": 30}}])
    other = AIMessage("", tool_calls=[{"id": "c1", "name": "load", "args": {"rows": 50}}])
    assert maker.message_block(call).digest != maker.message_block(other).digest


def test_the_fixed_block_is_system_and_tools_together():
    counter = TokenCounter()
    maker = BlockMaker(counter)
    tool = {"type": "function", "function": {"name": "load", "description": "Load rows", "parameters": {}}}
    request = [SystemMessage("You are an analyst."), HumanMessage("go")]
    with_tool, without = maker.request_blocks(request, [tool]), maker.request_blocks(request, [])
    assert with_tool[0].role == "fixed" and with_tool[0].digest != without[0].digest
    assert with_tool[0].tokens == counter.count_message(request[0]) + counter.count_tools([tool])
    assert [block.role for block in with_tool] == ["fixed", "human"]
    assert sum(block.tokens for block in with_tool) + REPLY_PRIMING_TOKENS == (
        counter.count_message(request[0]) + counter.count_tools([tool]) + counter.count_messages(request[1:]))


def test_an_all_zero_usage_is_unknown_not_free():
    log = SessionLog(price_input_per_million=1.0, price_output_per_million=2.0)
    zero = AIMessage("ok", usage_metadata={"input_tokens": 0, "output_tokens": 0, "total_tokens": 0})
    record = log.record_call(1_000_000, 0, zero, 0.1)
    assert record.reported_input_tokens is None
    assert log.cost_usd() == pytest.approx(1.0)  # priced on the exact count, never $0


def test_reported_cache_reads_are_priced_at_the_cached_price():
    log = SessionLog(price_input_per_million=1.0, price_output_per_million=0.0, price_cached_input_per_million=0.1)
    usage = {"input_tokens": 1_000_000, "output_tokens": 0, "total_tokens": 1_000_000,
             "input_token_details": {"cache_read": 500_000}}
    record = log.record_call(1_000_000, 0, AIMessage("ok", usage_metadata=usage), 0.1)
    assert record.reported_cached_tokens == 500_000
    assert log.cost_usd() == pytest.approx(0.5 + 0.05)
    plain = SessionLog(price_input_per_million=1.0, price_output_per_million=0.0, price_cached_input_per_million=0.1)
    no_cache_said = {"input_tokens": 1_000_000, "output_tokens": 0, "total_tokens": 1_000_000}
    plain.record_call(1_000_000, 0, AIMessage("ok", usage_metadata=no_cache_said), 0.1)
    assert plain.cost_usd() == pytest.approx(1.0)  # it reported usage and no cache read: billed in full


def test_every_priced_model_has_a_cached_price_no_higher_than_its_input_price():
    from flawedcode.models.profiles import KNOWN_PROFILES

    for profile in KNOWN_PROFILES.values():
        if profile.cached_input_per_million is not None:
            assert profile.cached_input_per_million <= profile.input_per_million, profile.name
    gpt5 = profile_for("gpt-5")
    assert gpt5.cached_input_per_million == pytest.approx(0.1 * gpt5.input_per_million)
    assert gpt5.cost(1_000_000, 0, cached_input_tokens=1_000_000) == pytest.approx(gpt5.cached_input_per_million)
    assert profile_for("gpt-4").cost(1_000_000, 0, cached_input_tokens=1_000_000) == pytest.approx(30.0)  # no discount


def run_agent(agent_class, tmp_path, turns):
    workspace = Workspace.create(tmp_path / "project", scratch_dir=tmp_path / "scratch", archive_dir=tmp_path / "archives")
    agent = agent_class(lesson_model("offline", DEFAULT_BUDGET_TOKENS), workspace=workspace, conversation_id=f"cache-{agent_class.version}")
    for text in turns:
        agent.send(text)
    return agent


TURNS = ["List ChartBook dataframes", "Get docs for treasury_yields",
         "Load 30 rows of repo_public with columns sofr, bgcr, tgcr, effr, iorb, on_rrp_rate and sofr_volume_bn",
         "Get docs for fed_yield_curve", "What was my original goal?", "Get docs for money_markets/sofr"]


def test_an_append_only_agent_caches_almost_all_its_input(tmp_path):
    agent = run_agent(AgentV1, tmp_path, TURNS)
    calls = agent.log.calls
    assert all(call.prompt_blocks is not None for call in calls)
    for before, after in zip(calls, calls[1:]):  # each request begins with the whole previous one
        previous_prompt = sum(block.tokens for block in before.prompt_blocks)
        assert after.cached_tokens == servable(previous_prompt)
    totals = agent.log.totals()
    assert totals["cacheable_share"] > 0.8 and totals["cache_unknown_calls"] == 0
    assert totals["cache_weighted_input_tokens"] < 0.4 * totals["input_tokens"]
    assert MIN_CACHED_PREFIX_TOKENS <= totals["oracle_input_tokens"] < totals["input_tokens"]
    # the pure function over what was captured gives the same figures as the live log
    assert agent.log.cache_scheme == "openai"  # the offline model's profile: each call's own figures
    assert [cache.cached_tokens for cache in analyze(agent.log.to_dict()["calls"], "openai")] == [
        call.cached_tokens for call in calls]
    # under Anthropic's rule, v1 marks the end of each request: the next one reads all of it, to the token
    anthropic = analyze(agent.log.to_dict()["calls"], "anthropic")
    for before, after in zip(calls, anthropic[1:]):
        assert after.cached_tokens == sum(block.tokens for block in before.prompt_blocks) and after.miss_reason is None
    assert totals["cache_weighted_input_tokens"] == weighted_input_tokens(anthropic, "anthropic")


def test_a_summary_breaks_the_cache_where_it_rewrites_the_history(tmp_path):
    agent = run_agent(AgentV2, tmp_path, TURNS * 3)
    calls = agent.log.calls
    summaries = [index for index, call in enumerate(calls) if call.purpose == "summary"]
    assert summaries, "v2 should summarize within 18 turns at 8,192 tokens"
    after = next(call for call in calls[summaries[0] + 1:] if call.purpose == "agent")
    assert after.shared_messages <= 2  # only the fixed block (and at most the goal) survives the rewrite
    assert cacheable_share(call.cache() for call in calls) < agent_share_of_v1(tmp_path)


def agent_share_of_v1(tmp_path):
    return run_agent(AgentV1, tmp_path / "v1", TURNS * 3).log.totals()["cacheable_share"]


def test_the_cost_preview_prices_cacheable_input_at_the_cached_price():
    from flawedcode.bench.cost import CostPreview, pricing_of

    pricing = pricing_of("openai:gpt-5-mini")
    plain = CostPreview("openai:gpt-5-mini", 1, 10, 1_000_000, 0, pricing)
    cached = CostPreview("openai:gpt-5-mini", 1, 10, 1_000_000, 0, pricing, cached_input_tokens=800_000)
    assert plain.cost_usd == pytest.approx(0.25)
    assert cached.cost_usd == pytest.approx(0.2 * 0.25 + 0.8 * 0.025)
    assert "800,000 of them cacheable" in cached.text() and "$0.025 per million cached input tokens" in cached.text()


def test_the_summary_compares_the_providers_cached_tokens_with_the_model():
    from flawedcode.bench.scoring import summarize_runs

    def record(run, reported, model):
        totals = {"input_tokens": 10_000, "cached_input_tokens": reported, "cache_write_tokens": 500,
                  "cache_weighted_input_tokens": 4_000, "oracle_input_tokens": 5_000,
                  "reported_cache": {"calls": 2, "reported_cached_tokens": reported, "model_cached_tokens": model}}
        return {"agent": "v2", "task": "t", "run": run, "totals": totals, "yardstick_tokens": 5_000}

    metrics = summarize_runs([record(1, 6_000, 7_000), record(2, 2_000, 1_000)], ["v2"])["agents"]["v2"]
    assert metrics["reported_cache"] == {"calls": 4, "reported_cached_tokens": 8_000, "model_cached_tokens": 8_000,
                                         "model_over_reported": 1.0}
    assert metrics["cacheable_share"] == 0.4 and metrics["input_vs_limit"] == 2.0 and metrics["input_vs_v1"] is None


def test_results_say_per_task_and_scheme_when_compaction_pays():
    from flawedcode.bench.scoring import render_markdown, summarize_runs

    def record(agent, run, turns):
        by_turn = {"anthropic": turns, "gemini": [value * 2 for value in turns]}
        return {"agent": agent, "task": "t", "run": run, "totals": {"input_tokens": 10, "cache_weighted_by_turn": by_turn}}

    runs = [record("v1", 1, [100, 300, 600]), record("v1", 2, [100, 300, 600]), record("v2", 1, [150, 280, 400]),
            record("v2", 2, [150, 330, 400]), record("v3", 1, [200, 400, 700]), record("v3", 2, [200, 400, 500])]
    summary = summarize_runs(runs, ["v1", "v2", "v3"])
    # summed over runs: v1 200/600/1,200; v2 300/610/800 (below from turn 3); v3 400/800/1,200 (equal at the end)
    assert summary["tasks"]["t"]["break_even_vs_v1"] == {"anthropic": {"v2": 3, "v3": 3}, "gemini": {"v2": 3, "v3": 3}}
    text = render_markdown(summary)
    assert "### When compaction pays: the turn from which each agent's cumulative cost stays at or below v1's" in text
    assert "| t | anthropic | 3 | 3 |" in text
    one_run = summarize_runs(runs[:1] + runs[2:3] + runs[4:5], ["v1", "v2", "v3"])
    assert one_run["tasks"]["t"]["break_even_vs_v1"]["anthropic"] == {"v2": 2, "v3": None}
    assert "| t | anthropic | 2 | never |" in render_markdown(one_run)


def test_each_agent_marks_its_declared_breakpoints_and_every_scheme_prices_its_run(tmp_path):
    from flawedcode.agents import AgentV3

    turns = TURNS[:3]
    v1, v3 = run_agent(AgentV1, tmp_path / "v1", turns), run_agent(AgentV3, tmp_path / "v3", turns)
    for call in v1.log.calls:  # the end of the tools and the end of the request
        assert call.cache_marks == [0, len(call.prompt_blocks) - 1]
    assert AgentV3.cache_breakpoints == ("tools", "goal", "digests", "request")
    for call in v3.log.calls:
        assert call.cache_marks == breakpoint_positions(call.prompt_blocks, AgentV3.cache_breakpoints)
        assert 2 <= len(call.cache_marks) <= 4
    for agent in (v1, v3):
        totals = agent.log.totals()
        assert set(totals["cache_weighted_by_scheme"]) == set(SCHEMES) == set(totals["cache_misses_by_scheme"])
        for name in SCHEMES:
            priced = weighted_input_tokens(analyze(agent.log.to_dict()["calls"], name), name)
            assert totals["cache_weighted_by_scheme"][name] == priced
            assert totals["cache_weighted_by_turn"][name][-1] == priced and len(totals["cache_weighted_by_turn"][name]) == 3
            assert totals["cache_misses_by_scheme"][name].get("first request") == 1


def test_a_stated_turn_pace_replaces_the_real_clock():
    first = blocks(1_500, 300, names="s.t goal")
    second = [*first, Block("reply", 700, "ai"), Block("next", 200, "human")]
    calls = [{"prompt_blocks": first, "input_tokens": prompt(first), "turn": 1, "time": 0.0},
             {"prompt_blocks": second, "input_tokens": prompt(second), "turn": 2, "time": 1.0}]
    assert analyze(calls, "anthropic")[1].cached_tokens == 1_800  # one second apart on the real clock
    paced = analyze(calls, "anthropic", turn_pace_seconds=6 * 60)  # a turn every 6 minutes: past 5
    assert (paced[1].cached_tokens, paced[1].miss_reason) == (0, "expired")
    assert analyze(calls, "anthropic-1h", turn_pace_seconds=6 * 60)[1].cached_tokens == 1_800
    assert analyze(calls, "openai", turn_pace_seconds=6 * 60)[1].cached_tokens == 1_792  # 30 minutes
