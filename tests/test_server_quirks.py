"""Real servers' common quirks, end to end against the loopback imitation (``openai_imitation.py``).

Each test is a behaviour seen in a real OpenAI-compatible server or its users'
issue threads, and asserts what a student would notice: the turn works, the
history stays well formed for a strict endpoint, one plain sentence when it
cannot work, nothing printed that the user did not need.
"""

from __future__ import annotations

import time

import openai
import pytest
from langchain_core.exceptions import ContextOverflowError
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from openai_imitation import GEMINI_OVERFLOW, HTML_PAGE, ImitationServer, agent_on, run_chat, send_all

from flawedcode import cli, notices
from flawedcode.agents import AgentError
from flawedcode.demo import LESSON_STEPS
from flawedcode.models import context_overflow_from, explain_model_error, get_model
from flawedcode.models.replies import REASONING_KEY


@pytest.fixture(autouse=True)
def _fresh_notices():
    notices.forget()


# --- 2. tool calls without an id ---------------------------------------------------------------------

@pytest.mark.parametrize("streaming", [False, True])
@pytest.mark.parametrize("ids", ["missing", "empty"])
def test_tool_calls_without_an_id_get_one_and_a_strict_endpoint_accepts_every_later_turn(ids, streaming, tmp_path):
    with ImitationServer(tool_call_ids=ids, strict=True) as server:
        agent = agent_on(server, tmp_path, streaming=streaming)
        replies, failures = send_all(agent, LESSON_STEPS[:4])
    assert failures == [], failures
    assert {status for status, _ in server.responses} == {200}, "the strict endpoint refused nothing"
    calls = [call for message in agent.messages if isinstance(message, AIMessage) for call in message.tool_calls]
    results = [message for message in agent.messages if isinstance(message, ToolMessage)]
    assert calls and all(call["id"] for call in calls) and len({call["id"] for call in calls}) == len(calls)
    assert [result.tool_call_id for result in results] == [call["id"] for call in calls], "every result kept, answered"
    assert "5 dataframes" in replies[0]


# --- 5. malformed tool calls --------------------------------------------------------------------------

@pytest.mark.parametrize("arguments", ["object", "double"])
def test_arguments_sent_as_an_object_or_double_encoded_are_read_as_meant(arguments, tmp_path):
    with ImitationServer(arguments=arguments) as server:
        agent = agent_on(server, tmp_path)
        reply = agent.send("Create a file notes.md containing: SOFR notes")
    assert (agent.workspace.root / "notes.md").read_text() == "SOFR notes\n"
    assert reply and "Traceback" not in reply


def test_a_tool_call_written_as_text_is_run_when_the_tool_was_offered(tmp_path):
    with ImitationServer(text_tool_calls=True, strict=True) as server:
        agent = agent_on(server, tmp_path)
        replies, failures = send_all(agent, ["List ChartBook dataframes", "Create a file notes.md containing: SOFR notes"])
    assert failures == []
    assert "5 dataframes" in replies[0] and "<tool_call>" not in replies[0]
    assert (agent.workspace.root / "notes.md").read_text() == "SOFR notes\n"
    assert {status for status, _ in server.responses} == {200}


def test_a_reply_that_is_only_a_json_tool_call_is_that_call(tmp_path):
    with ImitationServer(text_tool_calls="bare", strict=True) as server:
        agent = agent_on(server, tmp_path)
        replies, failures = send_all(agent, ["List ChartBook dataframes", "Create a file notes.md containing: SOFR notes"])
    assert failures == [] and "5 dataframes" in replies[0]
    assert (agent.workspace.root / "notes.md").read_text() == "SOFR notes\n"


def test_a_tool_call_written_as_text_for_a_tool_not_offered_is_said_not_run(monkeypatch, capsys):
    from flawedcode.models.replies import reply_notes, tidy_reply

    message = tidy_reply(AIMessage('<tool_call>\n{"name": "delete_everything", "arguments": {}}\n</tool_call>'),
                         ["read_file"])
    assert message.tool_calls == [] and "<tool_call>" in message.content
    assert reply_notes(message) == ["the model wrote a tool call as text (delete_everything), not one offered to it: "
                                    "not run"]
    unreadable = tidy_reply(AIMessage('<tool_call>{"name": "read_file", "arguments": {"path": </tool_call>'), ["read_file"])
    assert unreadable.tool_calls == [] and "could not be read" in reply_notes(unreadable)[0]
    bare = tidy_reply(AIMessage('```json\n{"name": "read_file", "parameters": {"path": "a.py"}}\n```'), ["read_file"])
    assert [(call["name"], call["args"]) for call in bare.tool_calls] == [("read_file", {"path": "a.py"})]
    prose = tidy_reply(AIMessage('{"name": "Ada", "parameters": {}}'), ["read_file"])
    assert prose.tool_calls == [] and prose.content.startswith("{"), "JSON naming no offered tool is an answer"
    thinking = tidy_reply(AIMessage("<thinking>plan it</thinking>\nThe answer."))
    assert thinking.content == "The answer." and thinking.additional_kwargs[REASONING_KEY] == "plan it"


# --- 4. reasoning ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("streaming", [False, True])
@pytest.mark.parametrize("style", ["think", "field"])
def test_reasoning_is_kept_with_the_reply_but_out_of_the_context(style, streaming, tmp_path):
    with ImitationServer(reasoning=style, reasoning_words=300) as server:
        agent = agent_on(server, tmp_path, streaming=streaming)
        replies, failures = send_all(agent, ["List ChartBook dataframes", "What was my original goal?"])
    assert failures == [] and "5 dataframes" in replies[0] and "<think>" not in replies[0]
    answers = [message for message in agent.messages if isinstance(message, AIMessage)]
    assert all("Let me think" in message.additional_kwargs[REASONING_KEY] for message in answers)
    assert not any("think" in message.text for message in answers)
    sent = [message for request in server.requests for message in request["messages"] if message["role"] == "assistant"]
    assert sent and not any("think" in str(message.get("content") or "") for message in sent), "never sent back"
    assert all(call.input_tokens < 3_000 for call in agent.token_log), "reasoning is not context"


@pytest.mark.parametrize("style", ["think", "field"])
def test_reasoning_is_shown_folded_in_the_repl(style, monkeypatch, capsys):
    with ImitationServer(reasoning=style, reasoning_words=300) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        code, out, err = run_chat(monkeypatch, capsys, "List ChartBook dataframes\nWhat was my original goal?\n",
                                  "--model", "openai:gpt-4o-mini")
    assert code == 0 and "error" not in err
    assert "<think>" not in out and "Let me think" not in out
    folded = [line for line in out.splitlines() if line.startswith("[reasoning: ")]
    assert len(folded) >= 2 and all(line.endswith(" tokens, hidden]") for line in folded)
    sent = [message for request in server.requests for message in request["messages"] if message["role"] == "assistant"]
    assert sent and not any("think" in str(message.get("content") or "") for message in sent), "never sent back"
    assert 'Your original goal was: "List ChartBook dataframes"' in out


def test_an_answer_only_in_reasoning_says_there_was_no_answer_text(monkeypatch, capsys, tmp_path):
    with ImitationServer(reasoning="only") as server:
        agent = agent_on(server, tmp_path)
        agent.send("List ChartBook dataframes")
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        code, out, _ = run_chat(monkeypatch, capsys, "List ChartBook dataframes\n", "--model", "openai:gpt-4o-mini")
    last = agent.messages[-1]
    assert last.content == "" and "5 dataframes" in last.additional_kwargs[REASONING_KEY], "kept, out of the context"
    assert code == 0 and "  * the model gave no answer text (only reasoning)" in out


# --- 7. a reply that is not a reply ----------------------------------------------------------------------

def test_geminis_overflow_list_is_an_overflow():
    import httpx2

    request = httpx2.Request("POST", "http://127.0.0.1/v1/chat/completions")
    response = httpx2.Response(400, json=GEMINI_OVERFLOW, request=request)
    error = openai.OpenAI(api_key="x", base_url="http://127.0.0.1/v1")._make_status_error_from_response(response)
    overflow = context_overflow_from(error)
    assert isinstance(overflow, ContextOverflowError) and overflow.limit_tokens == 1_048_576
    assert "1250231" in explain_model_error(error)


@pytest.mark.parametrize(("reply", "expected", "retried"), [
    ((200, {"id": "x", "object": "chat.completion", "model": "gpt-4o-mini", "choices": []}),
     "The model server answered with no reply (an empty 'choices' list).", True),
    ((200, {"error": {"message": "Upstream provider returned 502 Bad Gateway", "code": 502}}),
     "The model server answered 200 but with an error (502): Upstream provider returned 502 Bad Gateway", True),
    ((200, {"error": {"message": "No endpoints found that support tool use.", "code": 404}}),
     "The model server answered 200 but with an error (404): No endpoints found that support tool use.", False),
    ((200, HTML_PAGE), "answered with a web page (HTML), not the OpenAI API: check the base URL", False),
])
def test_a_200_without_a_reply_is_one_sentence_and_retried_when_it_may_pass(reply, expected, retried, tmp_path):
    with ImitationServer(errors={1: reply, 2: reply} if retried else {1: reply}) as server:
        agent = agent_on(server, tmp_path, max_retries=1)
        with pytest.raises(AgentError) as failed:
            agent.send("List ChartBook dataframes")
        assert len(server.requests) == (2 if retried else 1)
        assert agent.send("List ChartBook dataframes"), "a later turn works"
    line = str(failed.value)
    assert expected in line and "\n" not in line and "{" not in line.split(":", 2)[-1][:3]


def test_a_retried_200_error_then_answers(tmp_path):
    bad = (200, {"error": {"message": "Upstream provider returned 502 Bad Gateway", "code": 502}})
    with ImitationServer(errors={1: bad}) as server:
        agent = agent_on(server, tmp_path, max_retries=2)
        reply = agent.send("List ChartBook dataframes")
    assert "5 dataframes" in reply and [status for status, _ in server.responses][:2] == [200, 200]


@pytest.mark.parametrize(("finish", "note"), [
    ("content_filter", "  * the provider's content filter stopped this reply: no answer text"),
    ("length", "  * the answer was cut off at the output token limit (finish_reason: length)"),
])
def test_a_content_filter_or_a_cut_text_answer_is_said(finish, note, monkeypatch, capsys):
    with ImitationServer(finish={2: finish}) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        code, out, _ = run_chat(monkeypatch, capsys, "List ChartBook dataframes\n", "--model", "openai:gpt-4o-mini")
    assert code == 0 and out.count(note) == 1


# --- 6. a timeout that is a deadline; waits that are said --------------------------------------------------

def test_a_trickling_server_fails_within_the_deadline_with_one_line(monkeypatch, capsys):
    with ImitationServer(trickle=(1,), trickle_interval=0.3) as server:  # ~100 reads of 8 bytes: 30 s in all
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        started = time.monotonic()
        code, out, err = run_chat(monkeypatch, capsys, "List ChartBook dataframes\n", "--model", "openai:gpt-4o-mini",
                                  "--timeout", "2")
        elapsed = time.monotonic() - started
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert code == 0 and elapsed < 6, elapsed
    assert errors == ["error: v2: the turn failed: The model server did not answer within 2 s: it may be stalled or "
                      "overloaded. Try again, or raise the timeout (--timeout, or timeout_seconds in the config)."]


def test_a_trickling_stream_fails_within_the_deadline_too(tmp_path):
    with ImitationServer(trickle=(1,), trickle_interval=0.3) as server:
        agent = agent_on(server, tmp_path, streaming=True, timeout_seconds=2)
        started = time.monotonic()
        with pytest.raises(AgentError) as failed:
            agent.send("List ChartBook dataframes")
        elapsed = time.monotonic() - started
    assert elapsed < 6, elapsed
    assert "The model server did not answer within 2 s" in str(failed.value)


@pytest.mark.parametrize(("status", "advice"), [(404, "check the base URL"), (200, "check the base URL"),
                                                (502, "try again later")])
def test_a_web_page_instead_of_the_api_is_said_in_one_sentence(status, advice, tmp_path):
    with ImitationServer(errors={n: (status, HTML_PAGE) for n in (1, 2, 3)}) as server:
        agent = agent_on(server, tmp_path, max_retries=0)
        with pytest.raises(AgentError) as failed:
            agent.send("List ChartBook dataframes")
    line = str(failed.value)
    assert "web page (HTML)" in line and advice in line and "<" not in line


def test_a_long_wait_is_said_before_it_starts(tmp_path, capsys):
    limited = (429, {"error": {"message": "Rate limit reached for requests", "type": "requests", "code": "rate_limit_exceeded"}})
    with ImitationServer(errors={1: limited}, headers={1: {"Retry-After": "3"}}) as server:
        model = get_model("openai:gpt-4o-mini", base_url=server.base_url, max_retries=1, timeout_seconds=5)
        started = time.monotonic()
        model.invoke([HumanMessage("List ChartBook dataframes")])
        waited = time.monotonic() - started
    assert waited >= 3 and "rate limited: retrying in 3 s" in capsys.readouterr().err


@pytest.mark.parametrize(("body", "headers", "expected"), [
    ({"error": {"message": "You exceeded your current quota", "type": "insufficient_quota", "code": "insufficient_quota"}},
     {}, "Out of quota (429): check your plan and billing; waiting will not help."),
    ({"error": {"message": "Rate limit reached for requests", "type": "requests", "code": "rate_limit_exceeded"}},
     {"Retry-After": "7"}, "Rate limited (429): the server asks to wait 7 s, then try again."),
])
def test_a_429_says_whether_waiting_helps(body, headers, expected, tmp_path):
    with ImitationServer(errors={1: (429, body)}, headers={1: headers}) as server:
        agent = agent_on(server, tmp_path, max_retries=0)
        with pytest.raises(AgentError) as failed:
            agent.send("List ChartBook dataframes")
    assert expected in str(failed.value) and len(server.requests) == 1


def test_a_retry_after_beyond_the_cap_fails_at_once(tmp_path):
    limited = (429, {"error": {"message": "Rate limit reached for requests", "type": "requests", "code": "rate_limit_exceeded"}})
    with ImitationServer(errors={1: limited}, headers={1: {"Retry-After": "120"}}) as server:
        agent = agent_on(server, tmp_path, max_retries=2)
        started = time.monotonic()
        with pytest.raises(AgentError) as failed:
            agent.send("List ChartBook dataframes")
    assert time.monotonic() - started < 2 and len(server.requests) == 1
    assert "asks to wait 120 s before trying again, longer than flawedcode waits (20 s): try again later" in str(failed.value)


# --- 9. names a server lists ------------------------------------------------------------------------------

def test_a_tagged_name_on_the_models_list_is_matched_and_said(capsys):
    with ImitationServer(style="vllm", model="qwen2.5-coder:7b", window=16_384, publish_window=True,
                         strict_model=True) as server:
        model = get_model("openai:qwen2.5-coder", base_url=server.base_url, max_retries=0)
        reply = model.invoke([HumanMessage("List ChartBook dataframes")])
    err = capsys.readouterr().err
    assert model.profile["max_input_tokens"] == 14_336 and reply.content
    assert "lists 'qwen2.5-coder' as 'qwen2.5-coder:7b': using 'qwen2.5-coder:7b'" in err
    assert server.requests[0]["model"] == "qwen2.5-coder:7b"


def test_a_404_names_the_models_the_server_serves(tmp_path, capsys):
    with ImitationServer(style="ollama", model="llama3.1", served=["llama3.1:8b", "qwen2.5-coder:7b"],
                         strict_model=True) as server:
        agent = agent_on(server, tmp_path, "v1")
        agent.model.model_name = "llama3"  # what a typo would send
        with pytest.raises(AgentError) as failed:
            agent.send("List ChartBook dataframes")
    assert "has no model 'llama3' (404); it serves: llama3.1:8b, qwen2.5-coder:7b." in str(failed.value)


# --- 1. no false truncation alarms; a real truncation still found ---------------------------------------

LONGER_SESSION = [*LESSON_STEPS, "Load 50 rows of EFFR data", "Get docs for fed_yield_curve", "Load 30 rows of SOFR data",
                  "Get docs for money_markets/effr", "What was my original goal?"]


@pytest.mark.parametrize("role_scales", [
    {"tool": 1.2, "system": 0.8, "human": 0.8, "ai": 0.8},  # counts tool output high, prose low
    {"tool": 0.8, "system": 1.2, "human": 1.2, "ai": 1.2},  # the other way round
    {"tool": 1.0, "system": 1.6, "human": 1.6, "ai": 1.6},  # always counts more than was sent, less so as results pile up
    {"usage": "uncached"},  # counts only what it had not cached (a reused prefix is skipped)
    {"usage": "fixed"},  # a proxy's placeholder usage: 17 prompt tokens, whatever was sent
])
@pytest.mark.parametrize("version", ["v1", "v2"])
def test_a_server_with_its_own_tokenizer_is_never_taken_for_truncating(role_scales, version, tmp_path, capsys):
    scales = dict(role_scales)
    usage = scales.pop("usage", "normal")
    with ImitationServer(role_scales=scales, usage=usage) as server:
        agent = agent_on(server, tmp_path, version)
        replies, failures = send_all(agent, LONGER_SESSION)
    err = capsys.readouterr().err
    assert failures == [] and "truncated the prompt" not in err
    assert agent.log.totals()["truncated_calls"] == 0 and agent.calibration.truncated_window_tokens is None
    assert agent.log.budget_tokens == 8_192 and "budget_lowered" not in [event.kind for event in agent.events]


def usage_reply(reported: int) -> AIMessage:
    return AIMessage("ok", usage_metadata={"input_tokens": reported, "output_tokens": 5, "total_tokens": reported + 5},
                     response_metadata={"model_provider": "openai", "model_name": "my-model"})


def test_one_surprising_count_is_not_truncation_two_in_a_row_are_and_the_warning_says_how_it_was_read(capsys):
    from flawedcode.telemetry import ServerCalibration, SessionLog

    log = SessionLog(agent_name="v2", budget_tokens=8_192)
    calibration = ServerCalibration.watching(log)
    surprise = [(1_000, 1_050), (1_600, 1_690), (2_300, 1_480)]  # one surprising count, then back to normal
    normal = [(2_500 + 100 * n, int((2_500 + 100 * n) * 1.06)) for n in range(10)]
    flat = [(4_000, 3_400), (4_900, 3_410)]  # then a flat count while the prompt grows: truncation
    for sent, reported in [*surprise, *normal]:
        log.record_call(sent, 5, usage_reply(reported), 0.1)
    assert not any(call.truncated for call in log.calls) and "truncated" not in capsys.readouterr().err
    for sent, reported in flat:
        log.record_call(sent, 5, usage_reply(reported), 0.1)
    assert [call.index for call in log.calls if call.truncated] == [13, 14]
    assert calibration.truncated_window_tokens == int(3_410 / calibration.steady_ratio())
    err = capsys.readouterr().err
    assert err.count("truncated the prompt") == 1
    assert ("it reported 3,400 input tokens for the 4,000 flawedcode sent (v2, call 13) and 3,410 for 4,900 (call 14). "
            "Read as truncation on two calls in a row (call 13: the prompt grew by 600 tokens and the server's count "
            "fell by 204; call 14: the prompt grew by 900 tokens and the server's count grew by 10; its other calls "
            "counted 1.06x") in err
    truncated = [event for event in log.events if event.kind == "truncated"]
    assert len(truncated) == 1 and truncated[0].call_index == 13, "the chart marks where it started"


def test_a_count_at_or_above_what_was_sent_is_never_truncation(capsys):
    from flawedcode.telemetry import SessionLog

    log = SessionLog(agent_name="v1", budget_tokens=8_192)
    for sent, reported in [(1_000, 1_300), (2_000, 2_600), (2_611, 2_730), (3_500, 3_510), (4_400, 4_420)]:
        log.record_call(sent, 5, usage_reply(reported), 0.1)
    assert not any(call.truncated for call in log.calls) and "truncated" not in capsys.readouterr().err


# --- 3. the cost guard -------------------------------------------------------------------------------------

@pytest.mark.parametrize("usage", ["zeros", "no_prompt"])
def test_a_usage_of_zeros_is_priced_from_the_exact_count(usage, tmp_path):
    with ImitationServer(usage=usage) as server:
        agent = agent_on(server, tmp_path, "v1")
        agent.send("List ChartBook dataframes")
    calls = agent.log.calls
    assert all(call.reported_input_tokens is None for call in calls), "zero is 'not reported', never 'free'"
    counted_in = sum(call.input_tokens for call in calls)
    assert agent.log.cost_usd() >= counted_in * 0.15 / 1e6 > 0


def test_cached_tokens_are_priced_at_the_cached_rate(tmp_path):
    from flawedcode.models import profile_for

    profile = profile_for("gpt-4o-mini")
    with ImitationServer(cached_tokens=1_024) as server:
        agent = agent_on(server, tmp_path, "v1")
        agent.send("List ChartBook dataframes")
    usages = [payload["usage"] for _, payload in server.responses]
    cached = sum(usage["prompt_tokens_details"]["cached_tokens"] for usage in usages)
    billed = sum((usage["prompt_tokens"] - usage["prompt_tokens_details"]["cached_tokens"]) * profile.input_per_million
                 + usage["prompt_tokens_details"]["cached_tokens"] * profile.cached_input_per_million
                 + usage["completion_tokens"] * profile.output_per_million for usage in usages) / 1e6
    assert cached > 0 and profile.cached_input_per_million < profile.input_per_million
    assert agent.log.cost_usd() == pytest.approx(billed, abs=1e-6)


@pytest.mark.parametrize("usage", ["zeros", "no_prompt"])
def test_bench_max_cost_trips_on_a_server_that_reports_zero_prompt_tokens(usage, monkeypatch, capsys, tmp_path):
    with ImitationServer(usage=usage) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        code = cli.main(["bench", "--agents", "v2", "--tasks", "goal_short", "--runs", "3", "--yes", "--max-cost", "0.002",
                         "--model", "openai:gpt-4o-mini", "--out", str(tmp_path / "bench")])
        sent = len(server.requests)
    err = capsys.readouterr().err
    # one run is 9 calls, ~25,500 input and ~740 output tokens: ~$0.0043 at $0.15 / $0.60 per million
    assert code == 0 and "reached --max-cost $0.0020" in err
    assert sent <= 9, "it stopped within the first run, as the real spend passed the cap"


# --- 8. the terminal ----------------------------------------------------------------------------------------

TERMINAL_ATTACKS = ("\x1b[2J\x1b[H", "\x1b]52;c;cm0gLXJmIH4=\x07", "\x1b]0;pwned\x07", "\x00", "\x9b31m",
                    "\u202egnp.exe", "\u2066hidden\u2069", "\u200b", "line\roverwritten", "\x08\x08\x08")


def unsafe_characters(text: str) -> set[str]:
    import unicodedata

    return {character for character in text if character not in "\n\t"
            and unicodedata.category(character) in ("Cc", "Cf", "Cs", "Zl", "Zp")}


def test_nothing_a_model_or_a_server_writes_reaches_the_terminal_as_a_control(monkeypatch, capsys):
    attack = "".join(TERMINAL_ATTACKS)
    bad = (500, {"error": {"message": f"backend down {attack}", "type": "server_error"}})
    with ImitationServer(inject=attack, errors={3: bad, 4: bad, 5: bad}) as server:  # failed, retried twice
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        code, out, err = run_chat(monkeypatch, capsys, f"List ChartBook dataframes\nRead notes{attack}.txt\n"
                                  "What was my original goal?\n", "--model", "openai:gpt-4o-mini")
    assert code == 0
    assert unsafe_characters(out) == set() and unsafe_characters(err) == set()
    assert "\\x1b[2J" in out and "\\u202egnp.exe" in out, "shown, escaped, not dropped"
    assert "backend down \\x1b[2J" in err
    assert "5 dataframes" in out and "\n" in out and "\t" not in attack


def test_printable_keeps_text_newlines_and_tabs():
    from flawedcode.infra.safe_text import printable

    text = "Résumé: 中文, emoji 🙂, math ∑, a\ttab\nand a new line"
    assert printable(text) == text
    assert printable("\x1b[31mred\x1b[0m") == "\\x1b[31mred\\x1b[0m"
    assert printable("\u202e\U000e0041") == "\\u202e\\U000e0041"


def test_a_server_given_model_name_with_terminal_escapes_is_never_shown_raw(capsys):
    hostile = "qwen2.5-coder:7b\x1b[2J\x1b]0;owned\x07\u202e"
    with ImitationServer(style="vllm", model=hostile, window=16_384, publish_window=True) as server:
        model = get_model("openai:qwen2.5-coder", base_url=server.base_url, max_retries=0)
        model.invoke([HumanMessage("List ChartBook dataframes")])
    err = capsys.readouterr().err
    assert model.model_name == "qwen2.5-coder"  # a listed name with escapes is never adopted
    assert "\x1b" not in err and "\x07" not in err and "\u202e" not in err
    assert all("\x1b" not in name for name in model.served_models)
