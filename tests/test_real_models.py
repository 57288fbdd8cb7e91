"""Real models, end to end: the langchain-openai client against loopback servers that imitate
OpenAI, vLLM, Ollama, OpenRouter, LM Studio and llama.cpp (``openai_imitation.py``).

Each test asserts what a student would notice: a turn that does not fail, one
clear line, a warning printed once, a budget that holds, a file that is never
written. No test leaves the machine (pytest-socket allows loopback only).
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import openai
import pytest
from langchain_core.exceptions import ContextOverflowError
from langchain_core.messages import HumanMessage, ToolMessage
from openai_imitation import STYLES, ImitationServer, agent_on, overflow_error, run_chat, send_all

from flawedcode import cli, notices
from flawedcode.agents import make_agent
from flawedcode.bench.tasks import load_tasks
from flawedcode.charts import chart_data
from flawedcode.config import AgentConfig
from flawedcode.context.repair import CUT_OFF_RESULT
from flawedcode.demo import LESSON_STEPS
from flawedcode.formats import COMPACTED_PREFIX
from flawedcode.models import (
    DEFAULT_TIMEOUT_SECONDS,
    context_overflow_from,
    explain_model_error,
    get_model,
    input_window,
)
from flawedcode.tools import Workspace

LONG_SESSION = [step.say for step in load_tasks(["long_session"])[0].all_steps()]


@pytest.fixture(autouse=True)
def _fresh_notices():
    notices.forget()  # every test sees its own warnings


def workspace(tmp_path: Path, name: str = "ws") -> Workspace:
    return Workspace.create(tmp_path / name, tmp_path / "scratch", tmp_path / "archives")


# --- 1. overflow from every provider --------------------------------------------------------

def overflow_exception(style: str, window: int = 4_096, prompt_tokens: int = 5_000) -> openai.APIStatusError:
    """The exception the openai SDK raises for each server's overflow response (built as the SDK builds it)."""
    import httpx2

    status, body = overflow_error(style, window, prompt_tokens)
    request = httpx2.Request("POST", "http://127.0.0.1/v1/chat/completions")
    response = httpx2.Response(status, json=body, request=request)
    client = openai.OpenAI(api_key="x", base_url="http://127.0.0.1/v1")
    return client._make_status_error_from_response(response)


@pytest.mark.parametrize("style", STYLES)
def test_each_providers_overflow_is_recognised_with_the_window_it_names(style):
    error = overflow_exception(style)
    assert "context_length_exceeded" not in str(error) or style != "openai"  # the SDK keeps OpenAI's code out of the text
    overflow = context_overflow_from(error)
    assert isinstance(overflow, ContextOverflowError)
    assert overflow.limit_tokens == (None if style == "ollama" else 4_096)
    assert overflow.excess_tokens == (5_000 - 4_096 if style == "ollama" else None)
    assert "\n" not in explain_model_error(overflow)


@pytest.mark.parametrize("text", ["Rate limit reached for gpt-4o-mini", "Invalid schema for function 'x'",
                                  "max_tokens is too large: 100000", "The model `gpt-9` does not exist"])
def test_other_errors_are_not_taken_for_an_overflow(text):
    import httpx2

    request = httpx2.Request("POST", "http://127.0.0.1/v1/chat/completions")
    response = httpx2.Response(400, json={"error": {"message": text, "type": "invalid_request_error"}}, request=request)
    error = openai.OpenAI(api_key="x", base_url="http://127.0.0.1/v1")._make_status_error_from_response(response)
    assert context_overflow_from(error) is None
    assert explain_model_error(error).startswith("The model server refused the request (400): ")


@pytest.mark.parametrize("style", STYLES)
def test_an_overflow_in_each_format_leads_to_a_summary_and_a_successful_retry(style, tmp_path):
    with ImitationServer(style=style, window=3_400) as server:  # the window is not published: found by overflowing
        agent = agent_on(server, tmp_path)
        replies, failures = send_all(agent, LESSON_STEPS)
    statuses = [status for status, _ in server.responses]
    overflow_at = next(i for i, status in enumerate(statuses) if status != 200)
    assert failures == [], failures
    assert statuses[overflow_at + 1 :] == [200] * len(statuses[overflow_at + 1 :]), "the retry and every later call worked"
    kinds = [event.kind for event in agent.events]
    assert kinds.count("overflow_retry") == 1 and kinds.index("summarize") < kinds.index("overflow_retry") + 1
    assert f'Your original goal was: "{LESSON_STEPS[0]}"' in replies[-1]
    # each error names the window (Ollama's says how many tokens too many): the budget now fits it
    assert "budget_lowered" in kinds and input_window(3_400) == 2_975
    assert agent.log.budget_tokens == 2_975 if style != "ollama" else abs(agent.log.budget_tokens - 2_975) < 40  # estimated


# --- 2. window versus budget --------------------------------------------------------------------

@pytest.mark.parametrize(("style", "published_as"), [("vllm", "max_model_len 4,096"),
                                                     ("openrouter", "context_length 4,096"),
                                                     ("ollama", "context_length 4,096 on http")])
def test_a_published_window_lowers_the_budget_before_the_first_call(style, published_as, tmp_path, capsys):
    with ImitationServer(style=style, model="my-local-model", window=4_096, publish_window=True) as server:
        agent = agent_on(server, tmp_path)
        assert server.requests == [], "no call has gone out yet"
        assert agent.budget_tokens == 3_584
        assert agent.log.trigger_tokens == agent.config.summarization.trigger_tokens(3_584)
        send_all(agent, LESSON_STEPS[:2])
    err = capsys.readouterr().err
    lowered = [line for line in err.splitlines() if "lowered it to 3,584 tokens" in line]
    assert len(lowered) == 1 and published_as in lowered[0] and "8,192" in lowered[0]
    assert all(line.startswith("warning: ") for line in err.splitlines())


def test_a_4096_token_server_completes_a_long_session_with_the_default_budget(tmp_path):
    with ImitationServer(style="vllm", model="meta-llama/Llama-3.1-8B-Instruct", window=4_096, publish_window=True) as server:
        agent = agent_on(server, tmp_path)
        replies, failures = send_all(agent, LONG_SESSION)
    totals = agent.log.totals()
    assert failures == [] and len(replies) == 54
    assert {status for status, _ in server.responses} == {200}
    assert agent.budget_tokens == 3_584 and totals["calls_over_budget"] == 0
    assert totals["peak_context_tokens"] <= 3_584
    assert max(payload["usage"]["prompt_tokens"] for _, payload in server.responses) <= 4_096
    assert "5.0825" in replies[-2] and "List ChartBook dataframes" in replies[-1]


def test_the_window_option_is_the_servers_window(tmp_path, capsys):
    with ImitationServer(style="ollama", model="granite3.3") as server:
        model = get_model("openai:granite3.3", base_url=server.base_url, window_tokens=8_192)
    assert model.profile["max_input_tokens"] == 7_168
    assert "--window 8,192" in capsys.readouterr().err


# --- 3. reported versus counted ---------------------------------------------------------------------

def test_a_truncating_server_is_noticed_once_marked_on_the_chart_and_v2_fits_itself_to_it(tmp_path, capsys):
    with ImitationServer(style="ollama", model="granite3.3", window=4_096, truncate=True) as server:
        v1 = agent_on(server, tmp_path, "v1")
        send_all(v1, LESSON_STEPS)
    with ImitationServer(style="ollama", model="granite3.3", window=3_000, truncate=True) as server:  # under v2's trigger
        v2 = agent_on(server, tmp_path, "v2")
        replies, failures = send_all(v2, [*LESSON_STEPS[:-1], "Load 50 rows of EFFR data", "Get docs for fed_yield_curve",
                                          LESSON_STEPS[-1]])
    err = capsys.readouterr().err
    warnings = [line for line in err.splitlines() if "truncated the prompt" in line]
    assert len(warnings) == 1 and warnings[0].startswith("warning: the model (granite3.3) truncated the prompt: it reported ")
    truncated = [call for call in v1.token_log if call.truncated]
    assert truncated and all(call.reported_input_tokens < call.input_tokens for call in truncated)
    markers = chart_data([v1.log])["v1"]["markers"]
    assert [marker[0] for marker in markers].count("truncated") == 1
    assert v1.log.totals()["truncated_calls"] == len(truncated)
    assert "I don't know" in v1.messages[-1].content, "v1 lost its goal to the server's truncation"
    assert failures == [] and v2.calibration.truncated_window_tokens < 4_000
    assert v2.log.budget_tokens == input_window(v2.calibration.truncated_window_tokens), "v2 fitted its budget to what it takes"
    assert f'Your original goal was: "{LESSON_STEPS[0]}"' in replies[-1]
    assert sum(call.truncated for call in v2.token_log) <= 2, "the budget is lowered on the second reading"


def test_a_server_counting_more_tokens_calibrates_the_trigger(tmp_path, capsys):
    with ImitationServer(style="openai", token_scale=1.3) as server:
        agent = agent_on(server, tmp_path)
        send_all(agent, LESSON_STEPS)
    assert agent.calibration.token_factor == pytest.approx(1.3, abs=0.02)
    first_summary = next(event for event in agent.events if event.kind == "summarize")
    trigger = agent.log.trigger_tokens
    assert first_summary.tokens_before * 1.3 >= trigger > first_summary.tokens_before, "summarized on the server's count"
    assert max(payload["usage"]["prompt_tokens"] for _, payload in server.responses) <= 8_192
    assert "counts 1.30x the input tokens" in capsys.readouterr().err


def test_reasoning_tokens_count_in_output_and_cost(tmp_path):
    with ImitationServer(model="gpt-5-mini", reasoning_tokens=800) as server:
        agent = agent_on(server, tmp_path)
        send_all(agent, LESSON_STEPS[:2])
    calls = agent.log.calls
    assert all(call.reasoning_tokens == 800 for call in calls)
    totals = agent.log.totals()
    assert totals["reasoning_tokens"] == 800 * len(calls)
    assert totals["output_tokens"] == sum(call.output_tokens for call in calls) + 800 * len(calls)
    billed_in = sum(payload["usage"]["prompt_tokens"] for _, payload in server.responses)
    billed_out = sum(payload["usage"]["completion_tokens"] for _, payload in server.responses)
    assert totals["estimated_cost_usd"] == pytest.approx((billed_in * 0.25 + billed_out * 2.00) / 1e6, abs=1e-6)


def test_prices_a_server_publishes_are_used_and_unknown_prices_are_not_guessed(tmp_path):
    with ImitationServer(style="openrouter", model="meta-llama/llama-3.1-8b-instruct", pricing=(0.02, 0.05)) as server:
        priced = agent_on(server, tmp_path, "v1")
        send_all(priced, LESSON_STEPS[:1])
    with ImitationServer(style="vllm", model="my-fine-tune") as server:
        unpriced = agent_on(server, tmp_path, "v2")
        send_all(unpriced, LESSON_STEPS[:1])
    assert priced.log.price_input_per_million == pytest.approx(0.02) and priced.log.totals()["estimated_cost_usd"] > 0
    assert unpriced.log.totals()["estimated_cost_usd"] is None


# --- 4. timeouts and bounded retries ----------------------------------------------------------------

def test_a_stalled_server_gives_one_clear_line_within_the_timeout_and_the_repl_goes_on(monkeypatch, capsys):
    # the imitation's brain, the offline model, loads its catalog and word lists on its first call (over 1 s cold): warmed here,
    # so only the stalled request meets the 0.5 s timeout
    get_model("offline").invoke([HumanMessage("List ChartBook dataframes"), HumanMessage("What was my original goal?")])
    with ImitationServer(stall=(1,), stall_seconds=5) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        started = time.monotonic()
        code, out, err = run_chat(monkeypatch, capsys, "List ChartBook dataframes\nWhat was my original goal?\n",
                                  "--model", "openai:gpt-4o-mini", "--timeout", "0.5")
        elapsed = time.monotonic() - started
    assert code == 0
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert errors == ["error: v2: the turn failed: The model server did not answer within 0.5 s: it may be stalled or "
                      "overloaded. Try again, or raise the timeout (--timeout, or timeout_seconds in the config)."]
    assert 'Your original goal was: "List ChartBook dataframes"' in out, "the conversation kept the stalled request"
    assert len(server.requests) == 2, "a timeout is not retried"
    assert elapsed < 5, "the REPL did not wait for the stalled server"


def test_timeouts_have_a_default_a_config_setting_and_retries_only_for_transient_errors(monkeypatch, tmp_path):
    with ImitationServer(errors={1: (503, {"error": {"message": "overloaded"}})}) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        assert get_model("openai:gpt-4o-mini").request_timeout == DEFAULT_TIMEOUT_SECONDS == 120
        configured = make_agent("v1", workspace=workspace(tmp_path),
                                config=AgentConfig(model="openai:gpt-4o-mini", timeout_seconds=7))
        assert configured.model.request_timeout == 7
        retrying = get_model("openai:gpt-4o-mini", max_retries=1, timeout_seconds=5)
        assert retrying.invoke([HumanMessage("List ChartBook dataframes")]).usage_metadata["input_tokens"] > 0
    assert [status for status, _ in server.responses] == [503, 200], "one 503, retried once, then answered"


# --- 5. a failing summarizer backs off; compaction holds the budget -------------------------------------

@pytest.mark.parametrize("failure", ["500", "400", "empty"])
def test_with_every_summary_failing_no_call_goes_over_the_budget(failure, tmp_path):
    with ImitationServer(fail_summaries=failure) as server:
        agent = agent_on(server, tmp_path)
        replies, failures = send_all(agent, LONG_SESSION)
    totals = agent.log.totals()
    kinds = Counter(event.kind for event in agent.events)
    assert failures == []
    assert totals["calls_over_budget"] == 0 and totals["peak_context_tokens"] <= 8_192
    assert server.summary_requests * 3 < totals["agent_calls"], (server.summary_requests, totals["agent_calls"])
    assert kinds["summary_failed"] == server.summary_requests and kinds["compact"] >= 1 and kinds["summarize"] == 0
    assert {"compact", "summary_failed"} <= {marker[0] for marker in chart_data([agent.log])["v2"]["markers"]}
    assert "List ChartBook dataframes" in replies[-1], "the goal survives compaction"
    archived = [message for message in agent.archive.messages() if isinstance(message, ToolMessage)]
    stubbed = sum(event.detail["stubbed"] for event in agent.events if event.kind == "compact")
    assert len(archived) >= stubbed > 0, "every tool result compaction removed is in the archive"
    assert not any(message.content.startswith(COMPACTED_PREFIX) for message in archived), "word for word, not stubs"


# --- 6. reading back stays within budget ----------------------------------------------------------------

def test_reading_an_offloaded_result_back_fits_under_the_trigger_and_pages_through_everything(tmp_path):
    with ImitationServer(style="vllm", window=8_192, publish_window=True) as server:
        agent = agent_on(server, tmp_path)
        replies, failures = send_all(agent, LESSON_STEPS[:5])
        saved = next(event.detail["path"] for event in agent.events if event.kind == "offload"
                     and "repo_public" in event.detail["path"])
        more, failed = send_all(agent, [f"Read {saved}", "What was my original goal?"])
        failures += failed
    assert failures == [] and {status for status, _ in server.responses} == {200}
    history = [*agent.archive.messages(), *agent.messages]  # what the model read, summarized away or not
    reads = [message for message in history if isinstance(message, ToolMessage) and message.name == "read_file"]
    paged = [event for event in agent.events if event.kind == "readback_paged"]
    assert reads and paged, [event.kind for event in agent.events]
    assert all(call.input_tokens <= agent.log.budget_tokens for call in agent.token_log)
    page = next(message.content for message in reads if "more lines: read_file(" in message.content)
    assert page.splitlines()[-1].startswith("# ... ") and "offset=" in page.splitlines()[-1]


def test_paging_reads_every_line_of_the_file_in_order(tmp_path):
    from langgraph.prebuilt.tool_node import ToolCallRequest

    from flawedcode.config import ContextSize, SummarizationConfig
    from flawedcode.context.budget import ContextBudget
    from flawedcode.context.readback import ReadBackPagingMiddleware
    from flawedcode.telemetry import SessionLog
    from flawedcode.tokens import TokenCounter
    from flawedcode.tools import make_tools

    ws = workspace(tmp_path)
    ws.conversation_scratch_dir.mkdir(parents=True, exist_ok=True)  # scratch/ is the conversation's own folder
    (ws.conversation_scratch_dir / "big.txt").write_text("".join(f"line {n}: {'x' * 40}\n" for n in range(300)), encoding="utf-8")
    read_file = next(tool for tool in make_tools(ws) if tool.name == "read_file")
    log = SessionLog()
    budget = ContextBudget(2_000, 1_000, SummarizationConfig(trigger=[ContextSize(type="tokens", value=1_500)]), log)
    middleware = ReadBackPagingMiddleware(log, TokenCounter(), budget)

    def handler(request):
        return ToolMessage(read_file.invoke(request.tool_call["args"]), tool_call_id="c", name="read_file")

    seen, offset = [], 0
    while True:
        call = {"name": "read_file", "args": {"path": "scratch/big.txt", "offset": offset}, "id": "c"}
        page = middleware.wrap_tool_call(ToolCallRequest(call, read_file, {"messages": []}, None), handler).content
        assert TokenCounter().count_message(ToolMessage(page, tool_call_id="c")) <= 500
        lines = page.splitlines()
        more = lines[-1] if lines[-1].startswith("# ... ") else None
        seen += lines[1:-1] if more else lines[1:]
        if more is None:
            break
        offset = int(more.rsplit("offset=", 1)[1].rstrip(")"))
    assert seen == [f"line {n}: {'x' * 40}" for n in range(300)]


# --- 9. truncated tool calls -----------------------------------------------------------------------------

@pytest.mark.parametrize("streaming", [False, True])
@pytest.mark.parametrize("version", ["v1", "v2"])
def test_a_cut_off_tool_call_is_never_run_and_the_model_is_told(version, streaming, tmp_path):
    with ImitationServer(cut_off=(1,)) as server:  # the first try ends mid-content: '{"path": "notes.md", "content": "SOFR'
        agent = agent_on(server, tmp_path, version, streaming=streaming)
        reply = agent.send("Create a file notes.md containing: SOFR notes")
    assert server.requests[0].get("stream", False) == streaming
    first_try, second_try = [message for message in agent.messages if isinstance(message, ToolMessage)]
    assert first_try.content == CUT_OFF_RESULT.format(tool="write_file", why="the reply reached the output token limit")
    assert second_try.content.startswith("Wrote 11 characters")
    assert (agent.workspace.root / "notes.md").read_text() == "SOFR notes\n", "never half the content"
    assert [event.kind for event in agent.events] == ["tool_call_cut_off"]
    assert reply, "the turn does not end blank"


def test_the_repl_shows_a_cut_off_call_in_one_line(monkeypatch, capsys):
    with ImitationServer(cut_off=(1,)) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        code, out, _ = run_chat(monkeypatch, capsys, "Create a file notes.md containing: SOFR notes\n",
                                "--model", "openai:gpt-4o-mini")
    assert code == 0
    assert [line for line in out.splitlines() if "write_file" in line and line.startswith("  ")] == [
        "  -> write_file(path='notes.md', content='SOFR notes\\n')  [31 chars]",  # the second, whole, call
        "  * tool call cut off: write_file not run (the reply reached the output token limit); the model was told"]


# --- 7, 8. one model setting everywhere; costs in view ---------------------------------------------------

def test_flawedcode_model_reaches_demo_and_bench_and_model_overrides_it(monkeypatch, tmp_path, capsys):
    with ImitationServer() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("FLAWEDCODE_MODEL", "openai:gpt-4o-mini")
        assert cli.main(["demo", "--out", str(tmp_path / "demo")]) == 0
        after_demo = len(server.requests)
        assert cli.main(["bench", "--agents", "v2", "--tasks", "goal_short", "--runs", "1", "--yes",
                         "--out", str(tmp_path / "bench")]) == 0
        after_bench = len(server.requests)
        assert cli.main(["demo", "--model", "offline", "--out", str(tmp_path / "offline")]) == 0
    out = capsys.readouterr().out
    assert after_demo >= 2 * len(LESSON_STEPS) and after_bench > after_demo
    assert len(server.requests) == after_bench, "--model offline overrides FLAWEDCODE_MODEL"
    assert "model gpt-4o-mini, budget 8,192 tokens" in out


def test_the_meter_shows_the_sessions_cost_on_priced_models(monkeypatch, capsys):
    with ImitationServer() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        _, priced, _ = run_chat(monkeypatch, capsys, "List ChartBook dataframes\nclear\nWhat did you just read?\n",
                                "--model", "openai:gpt-4o-mini")
    with ImitationServer(model="my-fine-tune") as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        _, unknown, err = run_chat(monkeypatch, capsys, "List ChartBook dataframes\n", "--model", "openai:my-fine-tune")
    _, offline, _ = run_chat(monkeypatch, capsys, "List ChartBook dataframes\n")
    costs = [float(line.rsplit("$", 1)[1]) for line in priced.splitlines() if "| cost $" in line]
    assert len(costs) == 2 and 0 < costs[0] < costs[1], "the session's cost so far, growing"
    assert unknown.count("| cost unknown") == 1
    assert err.count("unknown model 'my-fine-tune'") == 1 and "Traceback" not in err
    assert "cost" not in offline
