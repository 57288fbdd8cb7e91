"""Costs that cannot go negative, huge or NaN: every usage figure and price is checked where it enters.

A provider's (or a recording's) usage, a server's published prices and the prices a log or profile is
made with: a figure no bill can hold (negative, NaN, infinite, fractional, absurdly large) is refused with
one line, and the cost is priced from what flawedcode counted itself (``prompt_cache.token_figure``,
``price_figure``).
"""

from __future__ import annotations

import io
import json
import math
import sys

import pytest
from langchain_core.messages import AIMessage
from openai_imitation import ImitationServer, agent_on, send_all

from flawedcode import cli, notices
from flawedcode.bench import pricing_of
from flawedcode.bench.cost import CostGuard, CostLimitReached
from flawedcode.demo import LESSON_STEPS
from flawedcode.models import ModelProfile
from flawedcode.prompt_cache import MAX_TOKEN_FIGURE, BadFigure, price_figure, token_figure
from flawedcode.telemetry import SessionLog

INPUT_PRICE, OUTPUT_PRICE = 2.50, 10.00  # gpt-4o's list prices per million tokens


@pytest.fixture(autouse=True)
def _fresh_notices():
    notices.forget()  # every test sees its own warnings


def priced_log() -> SessionLog:
    return SessionLog(price_input_per_million=INPUT_PRICE, price_output_per_million=OUTPUT_PRICE)


def counted_cost(input_tokens: int, output_tokens: int) -> float:
    return round((input_tokens * INPUT_PRICE + output_tokens * OUTPUT_PRICE) / 1e6, 6)


@pytest.mark.parametrize("reported", [-1_500_000, -1, 10**28, MAX_TOKEN_FIGURE + 1])
def test_a_reported_input_count_no_bill_can_hold_is_ignored_with_one_line(reported):
    log = priced_log()
    usage = {"input_tokens": reported, "output_tokens": 20, "total_tokens": 20}
    with notices.capture() as lines:
        log.record_call(1_000, 20, AIMessage("ok", usage_metadata=usage), 0.1)
        log.record_call(1_200, 20, AIMessage("ok", usage_metadata=usage), 0.1)
    cost = log.cost_usd()
    assert cost == counted_cost(2_200, 40)  # priced from flawedcode's own count, never negative, NaN or huge
    assert len(lines) == 1 and lines[0].startswith("ignored a usage figure the model reported: usage input_tokens = ")
    assert "is not a token count (a whole number from 0 to 100,000,000)" in lines[0]
    assert [call.reported_input_tokens for call in log.calls] == [None, None]


@pytest.mark.parametrize(("field", "value"), [
    (("output_tokens",), -5_000_000), (("output_token_details", "reasoning"), -10**9),
    (("input_token_details", "cache_read"), 10**30), (("input_token_details", "cache_read"), -3),
])
def test_every_other_usage_figure_is_checked_too(field, value):
    usage: dict = {"input_tokens": 1_000, "output_tokens": 20, "total_tokens": 1_020}
    if len(field) == 1:
        usage[field[0]] = value
    else:
        usage[field[0]] = {field[1]: value}
    log = priced_log()
    with notices.capture() as lines:
        log.record_call(1_000, 20, AIMessage("ok", usage_metadata=usage), 0.1)
    totals = log.totals()
    assert totals["estimated_cost_usd"] == counted_cost(1_000, 20)
    assert totals["output_tokens"] == 20 and totals["cached_input_tokens"] == 0
    assert len(lines) == 1 and f"usage {'.'.join(field)} = " in lines[0]


def test_a_server_reporting_negative_prompt_tokens_no_longer_defeats_max_cost(tmp_path, capsys, monkeypatch):
    tasks = tmp_path / "tasks.yaml"
    tasks.write_text("tasks:\n  - name: catalog\n    category: chartbook\n    steps:\n      - say: List ChartBook "
                     "dataframes\n        checks:\n          - contains: catalog\n", encoding="utf-8")
    one_run = pricing_of("openai:gpt-4o-mini").profile.cost(3_000, 0)  # less than one run's tokens
    with ImitationServer(token_scale=-1_000.0) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setattr(sys, "stdin", io.StringIO(""))
        code = cli.main(["bench", "--agents", "v1", "--tasks-file", str(tasks), "--runs", "4", "--model",
                         "openai:gpt-4o-mini", "--out", str(tmp_path / "out"), "--yes", "--max-cost", f"{one_run:.6f}"])
    err = capsys.readouterr().err
    runs = [json.loads(line) for line in (tmp_path / "out" / "runs.jsonl").read_text().splitlines()]
    assert code == 0 and "reached --max-cost" in err and "usage input_tokens = -" in err
    assert len(runs) == 1 and runs[0]["totals"]["estimated_cost_usd"] > one_run


def test_a_published_price_of_nan_gives_an_unknown_cost_not_nan(tmp_path):
    with notices.capture() as lines, ImitationServer(style="openrouter", model="meta-llama/llama-3.1-8b-instruct",
                                                     pricing=(math.nan, 0.05)) as server:
        agent = agent_on(server, tmp_path, "v1")
        send_all(agent, LESSON_STEPS[:1])
    assert agent.log.price_input_per_million is None and agent.log.totals()["estimated_cost_usd"] is None
    assert any(line.startswith("ignored the prices the server published: published prompt price = nan is not a price")
               for line in lines)


@pytest.mark.parametrize("price", [math.nan, -1.0, math.inf, 1e12, "free"])
def test_a_log_or_a_profile_cannot_be_made_with_a_price_no_bill_can_hold(price):
    with pytest.raises(BadFigure, match="is not a price"):
        SessionLog(price_input_per_million=price, price_output_per_million=1.0)
    with pytest.raises(BadFigure, match="my-model input_per_million = .* is not a price"):
        ModelProfile("my-model", 8_192, price, 1.0)


def test_the_checks_accept_every_real_figure():
    assert token_figure(0, "x") == 0 and token_figure(2_000_000.0, "x") == 2_000_000
    for bad in (math.nan, math.inf, 12.5, "12", None):
        with pytest.raises(BadFigure, match="is not a token count"):
            token_figure(bad, "usage input_tokens")
    assert price_figure(None, "x") is None and price_figure("0.15", "x") == 0.15 and price_figure(600, "x") == 600.0
    with pytest.raises(BadFigure):
        token_figure(True, "x")


def test_a_spend_that_is_not_a_number_stops_the_benchmark():
    guard = CostGuard(1.0)
    with pytest.raises(CostLimitReached):
        guard.check(math.nan)
    with pytest.raises(ValueError, match="--max-cost"):
        CostGuard(math.nan)
