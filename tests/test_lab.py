"""The context lab's Python side, driven as a student drives it: set a value, click, read what changed.

Every lab here runs the lesson's session on the offline model, in a temporary folder.
The widget's pictures are SVG and HTML (``flawedcode.lab.svg``), redrawn once after every input.
"""

from __future__ import annotations

import base64
import html
import re
from pathlib import Path

import pytest

from flawedcode.demo import LESSON_STEPS
from flawedcode.formats import STUB_PREFIX, SUMMARY_PREFIX
from flawedcode.lab import ContextLab
from flawedcode.lab.bar import KIND_COLOURS, plot_context_bar
from flawedcode.lab.window import kind_of
from flawedcode.lessons import lesson_agent

PNG = b"\x89PNG\r\n\x1a\n"


def new_lab(tmp_path: Path, **options) -> ContextLab:
    return ContextLab(steps=LESSON_STEPS, folder=tmp_path, **options)


def last_call_tokens(lab: ContextLab) -> int:
    return lab.agent.token_log[-1].input_tokens


# --- sending a request --------------------------------------------------------------------------
def test_send_updates_the_transcript_the_chart_and_the_context_bar(tmp_path):
    lab = new_lab(tmp_path, version="v1")
    assert lab.transcript == [] and lab.view() is None and lab.chart_data()["v1"]["points"] == []
    lab._inputs.submit("Get docs for yield_curve/repo_public")  # what Enter or Send does in the page

    (exchange,) = lab.transcript
    assert exchange.request == "Get docs for yield_curve/repo_public" and exchange.step == 1 and exchange.scripted is None
    (call,) = exchange.tool_calls
    assert call.name == "chartbook_get_docs" and call.arguments == {"pipeline": "yield_curve", "dataframe": "repo_public"}
    assert call.characters == 5465 and call.tokens > 1000 and call.offloaded_to is None
    assert "repo_public" in exchange.reply and lab._inputs.value == ""
    assert "chartbook_get_docs(pipeline='yield_curve', dataframe='repo_public'): 5,465 chars" in html.unescape(lab._transcript.value)

    points = lab.chart_data()["v1"]["points"]
    assert [y for _, y in points] == [call.input_tokens for call in lab.agent.token_log] and len(points) == 2
    view = lab.view()
    assert view.total_tokens == last_call_tokens(lab), "the bar adds up to exactly what the last call received"
    assert [segment.kind for segment in view.segments] == ["system", "user", "assistant", "tool"]
    assert "<svg" in lab._chart.value and lab._chart.value.count("<circle") == len(points)
    assert lab._bar.value.count("class='fc-segment'") == len(view.segments)


def test_the_bar_shows_a_stub_where_v2_offloaded_a_result_and_v1_kept_it_whole(tmp_path):
    labs = {version: new_lab(tmp_path / version, version=version) for version in ("v1", "v2")}
    for lab in labs.values():
        lab.send("Get docs for yield_curve/repo_public")
        lab.send("What did you just read?")
    kinds = {version: [segment.kind for segment in lab.view().segments] for version, lab in labs.items()}
    assert "tool" in kinds["v1"] and "stub" not in kinds["v1"]
    assert "stub" in kinds["v2"] and "tool" not in kinds["v2"]
    stub = next(segment for segment in labs["v2"].view().segments if segment.kind == "stub")
    result = next(segment for segment in labs["v1"].view().segments if segment.kind == "tool")
    assert stub.tokens * 5 < result.tokens
    (call,) = labs["v2"].transcript[0].tool_calls
    assert call.offloaded_to.startswith("scratch/chartbook_get_docs_yield_curve_repo_public_")
    assert 0 < call.stub_tokens <= stub.tokens, "the stub's own tokens (the segment adds the message framing)"


def test_v1_forgets_the_goal_and_the_bar_and_chart_say_where(tmp_path):
    lab = new_lab(tmp_path, version="v1")
    lab.play()
    view = lab.view()
    goal_segment = next(segment for segment in view.segments if segment.holds_goal)
    assert goal_segment.kind == "user" and not goal_segment.visible and not view.goal_in_window
    assert view.visible_tokens <= lab.agent.budget_tokens < view.total_tokens
    assert [marker[0] for marker in lab.chart_data()["v1"]["markers"]] == ["goal_lost"]
    assert "goal NOT in the window" in lab.text() and "[forgotten]" in lab.text()


# --- settings ---------------------------------------------------------------------------------
def test_changing_the_budget_starts_a_fresh_conversation(tmp_path):
    lab = new_lab(tmp_path, version="v1")
    lab._step.click()
    lab._step.click()
    old_agent = lab.agent
    lab._controls["budget_tokens"].value = 12_288

    assert lab.agent is not old_agent and lab.agent.budget_tokens == 12_288
    assert lab.agent.model.max_input_tokens == 12_288, "offline, the window follows the budget"
    assert lab.transcript == [] and lab.agent.messages == [] and lab.agent.log.calls == []
    assert lab.session.position == 0 and lab.session.next_step == LESSON_STEPS[0]
    assert lab.chart_data()["v1"]["points"] == [] and lab.view() is None
    assert "budget 12,288 tokens" in lab._status.value and "scripted session: 0 of 6 sent" in lab._status.value


@pytest.mark.parametrize(("control", "value", "check"), [
    ("version", "v2", lambda agent: agent.version == "v2"),
    ("trigger_fraction", "50", lambda agent: agent.log.trigger_tokens == 4096),
    ("offload_tokens", 500, lambda agent: agent.config.offload.threshold_tokens == 500),
])
def test_every_control_restarts_with_its_setting(tmp_path, control, value, check):
    lab = new_lab(tmp_path, version="v2" if control != "version" else "v1")
    lab.step()
    lab._controls[control].value = value
    assert check(lab.agent) and lab.transcript == [] and lab.session.position == 0


def test_v2_controls_are_hidden_in_v1s_lab_and_shown_for_v2(tmp_path):
    lab = new_lab(tmp_path, version="v1")
    v2_only = [lab._controls[name] for name in ("trigger_fraction", "offload_tokens", "summarize")]
    assert all(control.layout.display == "none" for control in v2_only) and not lab._inputs.summarize_shown
    lab._controls["version"].value = "v2"
    assert all(control.layout.display is None for control in v2_only) and lab._inputs.summarize_shown
    assert not lab._controls["trigger_fraction"].disabled


# --- Step, instructor mode, Reset ----------------------------------------------------------------
def test_step_sends_exactly_the_next_scripted_request(tmp_path):
    lab = new_lab(tmp_path, version="v1")
    lab._step.click()
    assert [exchange.request for exchange in lab.transcript] == [LESSON_STEPS[0]]
    assert lab.transcript[0].step == 1 and lab.agent.log.turn == 1 and lab.session.position == 1
    lab._step.click()
    assert [exchange.step for exchange in lab.transcript] == [1, 2] and lab.agent.log.turn == 2
    lab.play()
    assert lab.session.next_step is None and lab._inputs.step_disabled
    assert lab.step() is None and lab.session.requests_sent == len(LESSON_STEPS), "past the end, Step sends nothing"
    assert lab.transcript[-1].note.startswith("Step refused: the scripted session is over"), "and says so"


def test_instructor_mode_shows_the_next_request_and_sends_one_per_next(tmp_path):
    lab = new_lab(tmp_path, version="v2")
    lab._instructor.value = True
    assert lab._inputs.step_label == "Next" and lab._inputs.disabled
    assert lab._inputs.value == LESSON_STEPS[0], "the class sees the request before it is sent"
    assert lab.transcript == [], "turning instructor mode on sends nothing"
    for number in range(1, 4):
        lab._step.click()
        assert len(lab.transcript) == number and lab.agent.log.turn == number
        assert lab._inputs.value == LESSON_STEPS[number]
    assert "17px" in lab._transcript.value, "larger text for a projector"
    lab._instructor.value = False
    assert lab._inputs.step_label == "Step" and not lab._inputs.disabled


def test_reset_starts_over_with_the_same_settings(tmp_path):
    lab = new_lab(tmp_path, version="v2", trigger_fraction=0.6)
    lab.play(2)
    lab._reset.click()
    assert lab.transcript == [] and lab.agent.messages == [] and lab.session.position == 0
    assert lab.agent.version == "v2" and lab.agent.log.trigger_tokens == int(0.6 * lab.agent.budget_tokens)


# --- Summarize now ----------------------------------------------------------------------------
def test_summarize_now_archives_the_history_and_puts_a_summary_in_its_place(tmp_path):
    lab = new_lab(tmp_path, version="v2")
    lab.play(3)
    before = list(lab.agent.messages)
    tokens_before = lab.agent.context_tokens()
    lab._summarize.click()

    (part,) = lab.agent.archive.parts()
    archived = lab.agent.archive.messages()
    assert [message.content for message in archived] == [message.content for message in before[:len(archived)]]
    assert lab.agent.messages[0].content.startswith(SUMMARY_PREFIX)
    assert f"Original goal (verbatim): {LESSON_STEPS[0]}" in lab.agent.messages[0].content
    assert lab.agent.context_tokens() < tokens_before
    view = lab.view()
    assert view.call_index is None, "the bar shows what the next call will receive"
    assert [segment.kind for segment in view.segments][:2] == ["system", "summary"] and view.goal_in_window
    assert view.total_tokens == lab.agent.context_tokens()
    note = lab.transcript[-1].note
    assert note.startswith(f"Summarized: {len(archived)} messages archived to {part.display_path}")
    assert lab.agent.log.count("summarize") == 1 and lab.agent.log.count("archive") == 1
    reply = lab.send(LESSON_STEPS[-1]).reply
    assert LESSON_STEPS[0] in reply, "after the summary, the goal question is still answered"


def test_summarize_now_on_v1_changes_nothing_and_says_why(tmp_path):
    lab = new_lab(tmp_path, version="v1")
    lab.play(2)
    before = list(lab.agent.messages)
    exchange = lab.summarize_now()
    assert lab.agent.messages == before and "switch the agent to v2" in exchange.note


# --- errors ---------------------------------------------------------------------------------------
def test_a_failed_turn_is_one_line_in_the_transcript(tmp_path):
    lab = ContextLab(folder=tmp_path, make_agent=lambda settings, folder: lesson_agent(
        settings.version, model="offline:300", folder=folder))
    exchange = lab.send("List ChartBook dataframes")
    assert exchange.error and "\n" not in exchange.error and "300" in exchange.error
    assert f"error: {exchange.error}" in lab.text()


# --- without a widget front end -------------------------------------------------------------------
def test_the_static_fallback_is_a_picture_and_the_same_state_as_text(tmp_path):
    lab = new_lab(tmp_path, version="v2")
    lab.play(2)
    bundle = lab._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle, "a widget front end shows the widgets"
    images = re.findall(r"data:image/png;base64,([A-Za-z0-9+/=]+)", bundle["text/html"])
    assert len(images) == 2 and all(base64.b64decode(image).startswith(PNG) for image in images)
    text = bundle["text/plain"]
    assert text == lab.text()
    assert text.startswith("ContextLab: agent v2 | model offline | budget 8,192 tokens")
    assert f"step 1 (scripted 1): {LESSON_STEPS[0]}" in text and "step 2 (scripted 2): Get docs for yield_curve/repo_public" in text
    assert "offloaded to scratch/" in text and re.search(r"stub +\d+", text)
    assert "Context window at call" in text


def test_a_snapshot_saves_the_pictures_and_the_text(tmp_path):
    lab = new_lab(tmp_path / "lab", version="v1")
    lab.step()
    written = lab.snapshot().save(tmp_path / "snapshot")
    assert [path.name for path in written] == ["chart.png", "bar.png", "state.txt"]
    assert written[0].read_bytes().startswith(PNG) and written[1].read_bytes().startswith(PNG)
    assert written[2].read_text() == lab.text() == repr(lab.snapshot())


def test_every_input_redraws_the_pictures_once_after_the_agents_step(tmp_path):
    lab = new_lab(tmp_path, version="v2")
    drawn_at_turn = []
    draw = lab._chart
    lab._chart = type("Spy", (), {})()  # records the turn the agent was at when each picture was drawn
    type(lab._chart).value = property(lambda self: draw.value,
                                      lambda self, value: (drawn_at_turn.append(lab.agent.log.turn), setattr(draw, "value", value)))
    for _ in range(3):
        lab._step.click()
    lab._inputs.submit("List ChartBook dataframes")
    lab._summarize.click()
    assert drawn_at_turn == [1, 2, 3, 4, 4], "one redraw per input, each after the agent's step"


# --- the bar itself ---------------------------------------------------------------------------------
def test_the_bar_draws_one_segment_per_message_coloured_by_kind_and_hatches_the_forgotten(tmp_path):
    agent = lesson_agent("v1", folder=tmp_path)
    for step in LESSON_STEPS:
        agent.send(step)
    view = agent.context_watcher.latest
    figure = plot_context_bar(view)
    ax = figure.axes[0]
    bars = [patch for patch in ax.patches if (patch.get_gid() or "").startswith("segment:")]
    assert len(bars) == len(view.segments)
    for patch, segment in zip(bars, view.segments):
        assert patch.get_width() == segment.tokens
        assert patch.get_facecolor()[:3] == pytest.approx(_rgb(KIND_COLOURS[segment.kind]))
        assert (patch.get_hatch() == "//") == (not segment.visible)
    assert [line.get_xdata()[0] for line in ax.get_lines() if line.get_gid() == "budget"] == [agent.budget_tokens]
    assert "forgotten" in ax.get_title() and any(text.get_text() == "goal" for text in ax.texts)


def test_kinds_follow_the_marker_texts():
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

    assert kind_of(SystemMessage("rules")) == "system"
    assert kind_of(HumanMessage("Load SOFR")) == "user"
    assert kind_of(HumanMessage(f"{SUMMARY_PREFIX} 1 | archive: archives/c/0001.md]\n...")) == "summary"
    assert kind_of(AIMessage("", tool_calls=[{"name": "read_file", "args": {}, "id": "1"}])) == "assistant"
    assert kind_of(ToolMessage("rows", tool_call_id="1")) == "tool"
    assert kind_of(ToolMessage(f"{STUB_PREFIX}scratch/x.txt | 9 characters]", tool_call_id="1")) == "stub"


def _rgb(colour: str) -> tuple[float, float, float]:
    from matplotlib.colors import to_rgb

    return to_rgb(colour)


# --- over any agent, on any model ------------------------------------------------------------------------
def test_the_lab_runs_over_a_peer_and_shows_its_summaries_as_summaries(tmp_path):
    from flawedcode.bench.peers import PEERS
    from flawedcode.lessons import lesson_model

    peer = PEERS["lc-summarization"](lesson_model(), name="lc-summarization")
    lab = ContextLab(agent=peer, steps=LESSON_STEPS, folder=tmp_path)
    lab.play()
    assert peer.log.count("summarize") >= 1, "precondition: LangChain's summarizer ran"
    assert "summary" in [segment.kind for segment in lab.view().segments]
    assert lab.view().total_tokens == last_call_tokens(lab)


class LoopbackOpenAI:
    """An OpenAI-compatible server on 127.0.0.1: a tool call first, then an answer quoting the tool's result."""

    def __init__(self) -> None:
        import json
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        def reply(body: dict) -> dict:
            last = body["messages"][-1]
            if body.get("tools") and last["role"] == "user":
                message = {"role": "assistant", "content": None, "tool_calls": [
                    {"id": f"call_{len(body['messages'])}", "type": "function", "function": {"name": "chartbook_list", "arguments": "{}"}}]}
            else:
                message = {"role": "assistant", "content": "Answer: " + str(last.get("content", ""))[:60]}
            return {"id": "x", "object": "chat.completion", "created": 0, "model": "gpt-4o-mini",
                    "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}}

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                data = json.dumps(reply(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def test_the_lab_works_the_same_on_a_real_client(tmp_path):
    from langchain_openai import ChatOpenAI

    server = LoopbackOpenAI()
    try:
        model = ChatOpenAI(model="gpt-4o-mini", base_url=server.base_url, api_key="test", max_retries=0, timeout=10)
        lab = ContextLab(folder=tmp_path, make_agent=lambda settings, folder: lesson_agent(
            settings.version, model=model, config=settings.agent_config(), folder=folder))
        exchange = lab.send("List ChartBook dataframes")
    finally:
        server.close()
    assert [call.name for call in exchange.tool_calls] == ["chartbook_list"] and exchange.reply.startswith("Answer: ")
    view = lab.view()
    assert view.total_tokens == last_call_tokens(lab) and all(segment.visible for segment in view.segments)
    assert [segment.kind for segment in view.segments] == ["system", "user", "assistant", "tool"]
    assert view.goal_in_window and "model gpt-4o-mini" in lab.text()


# --- what a student sees while it works, and the controls' edges ------------------------------------
def test_clicks_in_quick_succession_each_send_one_request_in_order(tmp_path):
    steps = [*LESSON_STEPS[1:-1]] * 2
    lab = ContextLab(steps=steps, folder=tmp_path, version="v2")  # as a front end's queued clicks reach the kernel: back to back
    for _ in steps:
        lab._step.click()
    assert [exchange.request for exchange in lab.transcript] == steps, "every click on Step sent its request"
    lab._step.click()  # one more than the script has: refused, with the reason, in the transcript
    assert lab.transcript[-1].note.startswith("Step refused: the scripted session is over (all 8 of its requests were sent)")
    assert "Step refused" in lab.text() and lab.session.requests_sent == len(steps)


def test_input_that_arrives_while_a_turn_runs_waits_and_runs_next_in_order(tmp_path):
    lab = new_lab(tmp_path, version="v2")
    seen = []
    original_send = lab.session.agent.send

    def send_with_inputs_arriving(text):
        if not seen:  # during the first turn: two clicks on Step, a typed request with Enter, Summarize now
            lab._step.click()
            lab._step.click()
            lab._inputs.submit("List ChartBook dataframes")
            lab._summarize.click()
        seen.append((html.unescape(lab._status.value), [lab._inputs.step_disabled, lab._inputs.disabled]))
        return original_send(text)

    lab.session.agent.send = send_with_inputs_arriving
    lab._step.click()
    assert [exchange.request for exchange in lab.transcript] == [*LESSON_STEPS[:3], "List ChartBook dataframes", "(Summarize now)"]
    assert lab.transcript[-1].note.startswith("Summarized:") and lab._inputs.value == ""
    assert seen[0][0].startswith(f"<b>working… sending \"{LESSON_STEPS[0][:20]}") and "(4 more inputs waiting)" in seen[0][0]
    assert all(not any(disabled) for _, disabled in seen), "the controls stay enabled: a click is never lost to a disabled button"
    assert "working" not in lab._status.value and not lab.pending


def test_a_failed_setting_in_the_queue_is_refused_visibly_and_the_next_input_still_runs(tmp_path):
    lab = new_lab(tmp_path, version="v2")
    lab._controls["budget_tokens"].value = 100
    assert "below what every call costs" in html.unescape(lab._status.value) and lab._controls["budget_tokens"].value == 8192
    lab._step.click()
    assert [exchange.request for exchange in lab.transcript] == [LESSON_STEPS[0]] and lab.agent.budget_tokens == 8192


def test_enter_in_the_request_box_sends_it_and_in_instructor_mode_sends_the_next_step(tmp_path):
    lab = new_lab(tmp_path, version="v1")
    type_in_page(lab, "List ChartBook dataframes")  # what the page sends on Enter
    assert [exchange.request for exchange in lab.transcript] == ["List ChartBook dataframes"] and lab._inputs.value == ""
    lab._instructor.value = True
    lab._inputs.submit()
    assert lab.transcript[-1].request == LESSON_STEPS[0] and lab.transcript[-1].scripted == 1
    lab._instructor.value = False
    assert lab._inputs.value == "", "leaving instructor mode clears the pre-filled request"


def test_one_step_counter_typed_and_scripted_requests_alike(tmp_path):
    lab = new_lab(tmp_path, version="v1")
    lab.send("List ChartBook dataframes")
    lab.step()
    assert [(exchange.step, exchange.scripted) for exchange in lab.transcript] == [(1, None), (2, 1)]
    assert lab.agent.log.turn == 2 and "| step 2 |" in lab._status.value and "scripted session: 1 of 6 sent" in lab._status.value
    assert "step 2 (scripted 1)" in lab._transcript.value and "step 1 (typed)" in lab._transcript.value
    view = lab.view()
    assert f"call {view.call_index + 1} (step 2)" in lab.text(), "calls are counted from 1 on screen"


def test_the_transcript_shows_the_newest_exchange_first_with_each_tool_call_on_one_expandable_line(tmp_path):
    lab = new_lab(tmp_path, version="v1")
    lab.play(3)
    page = lab._transcript.value
    newest, oldest = page.index(html.escape(LESSON_STEPS[2])), page.index(html.escape(LESSON_STEPS[0]))
    assert newest < oldest, "the newest exchange is at the top, in view"
    assert page.count("<details><summary>&#8627; ") == sum(len(exchange.tool_calls) for exchange in lab.transcript)
    assert "chartbook_get_docs(…) 1,5" in page


def test_the_trigger_takes_a_percentage_or_a_fraction_and_the_budget_cannot_go_below_the_fixed_cost(tmp_path):
    lab = new_lab(tmp_path, version="v2")
    for typed, fraction in (("45", 0.45), ("60%", 0.6), ("0.5", 0.5), (" 0.35 ", 0.35)):
        lab._controls["trigger_fraction"].value = typed
        assert lab.session.settings.trigger_fraction == fraction and lab.agent.log.trigger_tokens == int(fraction * 8192), typed
    assert lab._controls["trigger_fraction"].value == "35%", "the control shows what was read"
    lab._controls["trigger_fraction"].value = "half"
    assert lab.session.settings.trigger_fraction == 0.35 and lab._controls["trigger_fraction"].value == "35%"
    assert "is not a number" in html.unescape(lab._status.value)
    floor = lab.session.budget_floor()
    assert floor > lab.agent.fixed_tokens
    lab._controls["budget_tokens"].value = 1024
    assert lab.agent.budget_tokens == 8192 and lab._controls["budget_tokens"].value == 8192, "refused, and put back"
    status = html.unescape(lab._status.value)
    assert "below what every call costs" in status and f"{lab.agent.fixed_tokens:,} tokens" in status and f"{floor:,}" in status
    with pytest.raises(ValueError, match="system prompt and tool schemas"):
        lab.change(budget_tokens=1024)
    lab.change(budget_tokens=floor * 2, trigger_fraction=0.6)
    assert lab.agent.budget_tokens == floor * 2


def test_a_trigger_below_the_fixed_cost_is_refused_as_the_budget_is(tmp_path):
    lab = new_lab(tmp_path, version="v2")
    lab._controls["trigger_fraction"].value = "10%"  # 819 tokens of 8,192: under the system prompt and tools alone
    assert lab.session.settings.trigger_fraction != 0.10 and lab._controls["trigger_fraction"].value != "10%"
    status = html.unescape(lab._status.value)
    assert "summarize before every call" in status and f"{lab.agent.fixed_tokens:,} tokens" in status
    with pytest.raises(ValueError, match="summarize before every call"):
        lab.change(trigger_fraction=0.1)
    lowest = -(-100 * lab.session.budget_floor() // 8192)
    lab.change(trigger_fraction=lowest / 100)
    assert lab.session.settings.trigger_fraction == lowest / 100


def test_lessons_name_the_colours_the_bar_draws():
    from flawedcode.lab.bar import COLOUR_NAMES, colour_key, colour_name

    assert set(KIND_COLOURS.values()) <= set(COLOUR_NAMES)
    assert colour_name("tool") == "vermillion" and colour_name("user") == "orange" and "sky blue: assistant" in colour_key()


def test_the_widget_pictures_are_drawn_at_twice_the_screen_resolution(tmp_path):
    import struct

    lab = new_lab(tmp_path, version="v1")
    lab.step()
    def width(png: bytes) -> int:
        return struct.unpack(">I", png[16:20])[0]

    assert width(lab.chart_png()) >= 1.9 * width(lab.chart_png(dpi=72)), "twice a 72-dpi screen's pixels"


def test_lesson_3s_summary_lists_real_files_once_and_never_calls_the_pinned_goal_the_last_request(tmp_path):
    agent = lesson_agent("v2", folder=tmp_path, watch=False)
    for step in [*LESSON_STEPS[:-1], "Get docs for money_markets/effr", "Load 50 rows of EFFR data", "Get docs for fed_yield_curve",
                 "Load 30 rows of treasury_yields", "Get docs for money_markets/sofr", "Get docs for money_markets/effr"]:
        agent.send(step)
    summaries = [message.text for message in agent.messages if message.text.startswith(SUMMARY_PREFIX)]
    assert summaries
    parts = {part.display_path for part in agent.archive.parts()}
    for summary in summaries:
        artifacts = re.findall(r"^- ((?:scratch|archives)/\S+)$", summary.split("## ARTIFACTS")[1], re.MULTILINE)
        assert len(artifacts) == len(set(artifacts)) and artifacts
        for path in artifacts:  # every path the summary names is a file the agent can read back
            if path.startswith("scratch/"):
                assert (agent.workspace.conversation_scratch_dir / path.removeprefix("scratch/")).is_file(), path
            else:
                assert path in parts, path
        assert f"Last request: {LESSON_STEPS[0]}" not in summary


def test_the_bar_labels_the_goal_once_even_when_two_segments_hold_it(tmp_path):
    from dataclasses import replace as changed

    lab = new_lab(tmp_path, version="v2")
    lab.play(5)
    lab.summarize_now()
    view = lab.view()
    holding = [segment for segment in view.segments if segment.holds_goal]
    if len(holding) < 2:  # make the case: a second segment that also holds the goal
        view.segments.append(changed(holding[0]))
    figure = plot_context_bar(view)
    assert [text.get_text() for text in figure.axes[0].texts if text.get_gid() == "goal"] == ["goal"]


# --- the small things a class hit (issue 42) ----------------------------------------------------------
def test_a_request_typed_before_step_is_not_the_goal_and_no_reply_falsely_recalls_it(tmp_path):
    lab = new_lab(tmp_path, version="v2")
    lab.send("Load 50 rows of SOFR data")  # a student types before pressing Step
    lab.play()
    assert lab.session.watcher.goal == LESSON_STEPS[0], "the script's goal, not the typed aside"
    recalled = [event.turn for event in lab.agent.log.events if event.kind == "goal_recalled"]
    assert 2 not in recalled, "the reply to the goal's own request recalls nothing"
    assert all(turn == 1 + len(LESSON_STEPS) for turn in recalled), "only the goal question's reply can recall the goal"


def test_the_chart_title_names_the_agent_shown_after_a_switch(tmp_path):
    lab = new_lab(tmp_path, version="v2", title="Lesson 3: v2 on a longer session")
    lab.step()
    assert lab.chart_title().startswith("v2:") and "Lesson 3: v2" in lab.widget.children[0].value
    lab._controls["version"].value = "v1"
    lab.step()
    assert lab.chart_title().startswith("v1:") and "v1: tokens sent" in lab._chart.value and "v2:" not in lab._chart.value
    assert lab.chart_figure().axes[0].get_title().startswith("v1:"), "the saved picture too"


def test_the_marked_events_list_names_every_summary(tmp_path):
    lab = new_lab(tmp_path, version="v2")
    lab.play()
    for _ in range(4):
        lab.summarize_now()
        lab.send("Get docs for yield_curve/repo_public")
    summaries = [event for event in lab.agent.log.events if event.kind == "summarize"]
    assert len(summaries) >= 4
    listed = re.search(r"data-gid='marked:summarize'>(.*?)</div>", lab._chart.value).group(1)
    assert f"summary</b> ({len(summaries)})" in listed
    assert [int(number) for number in re.findall(r"(\d+) step \d+", listed)] == list(range(1, len(summaries) + 1))


def test_the_widgets_text_keeps_its_size_at_any_width_and_buttons_keep_their_words(tmp_path):
    lab = new_lab(tmp_path, version="v2")
    lab.step()
    for picture in (lab._chart.value, lab._bar.value):
        legend = re.search(r"<div style='font-size:(\d+)px[^']*' data-gid='(?:chart|bar)-legend'>", picture)
        assert legend and int(legend.group(1)) >= 12, "the legend is HTML text in a fixed size, not scaled with the picture"
    assert ".fc-inputs .fc-button { width: auto; min-width: fit-content; white-space: nowrap; }" in lab._inputs._css, \
        "every button is sized to its words"


# --- v3 in the lab ---------------------------------------------------------------------------------------
V3_SESSION = [*LESSON_STEPS[:-1], "Remember that I prefer basis points",
              "Use a sub-agent to get docs for money_markets/effr and report its columns",
              "Write a plan: 1. load sofr 2. load effr 3. compare", *LESSON_STEPS[1:]]


def test_v3_is_offered_and_its_plan_memory_and_sub_agents_are_drawn(tmp_path):
    lab = ContextLab(steps=V3_SESSION, folder=tmp_path, version="v1")
    assert "v3" in lab._controls["version"].options
    lab._controls["version"].value = "v3"
    assert lab.agent.version == "v3" and lab._inputs.summarize_shown, "v3 has an archive: Summarize now shows"
    for _ in V3_SESSION:
        lab._step.click()
    assert lab.session.requests_sent == len(V3_SESSION) and LESSON_STEPS[0] in lab.transcript[-1].reply
    kinds_seen = {segment.kind for view in lab.session.watcher.views for segment in view.segments}
    assert {"plan", "subagent", "summary"} <= kinds_seen, "v3's plan and sub-agent result in the bar"
    for view in lab.session.watcher.views:
        assert view.total_tokens == lab.agent.log.agent_calls()[view.call_index].input_tokens, "the segments still add up"
    chart = lab._chart.value
    for marked in ("tool:save_memory", "tool:task", "tool:write_todos", "plan_reminder", "digest"):
        assert f"data-gid='marked:{marked}'" in chart and f"data-gid='event:{marked}'" in chart, marked
    assert any(call.purpose == "internal" for call in lab.agent.log.calls) and "data-gid='side'" in chart, "the sub-agent's calls"
    assert "plan" in lab._bar.value
    assert lab.summarize_now().note.startswith(("Summarized:", "Not summarized: ")), "Summarize now runs on v3 and says what it did"
    lab._reset.click()  # a new conversation starts with what the last one saved to memory
    lab._step.click()
    memory = [segment for segment in lab.view().segments if segment.kind == "memory"]
    assert len(memory) == 1 and memory[0].tokens > 0 and "memory " in lab._bar.value, "the memory block, in black"
    assert lab.view().total_tokens == lab.agent.log.agent_calls()[-1].input_tokens


def test_the_bars_v3_kinds_follow_v3s_marker_texts():
    from langchain_core.messages import HumanMessage, ToolMessage

    from flawedcode.context.memory import memory_message
    from flawedcode.context.todos import REMINDER_PREFIX
    from flawedcode.formats import COMPACTED_PREFIX

    assert kind_of(HumanMessage(f"{REMINDER_PREFIX}your todo list (0 of 3 done)]")) == "plan"
    assert kind_of(ToolMessage("Todo list saved (0 of 3 done)", tool_call_id="1", name="write_todos")) == "plan"
    assert kind_of(ToolMessage("Docs from ...", tool_call_id="1", name="task")) == "subagent"
    assert kind_of(ToolMessage(f"{COMPACTED_PREFIX}this chartbook_get_docs result ...]", tool_call_id="1")) == "stub"
    assert kind_of(memory_message("<memory facts=\"1 of 1\">\n- I prefer basis points\n</memory>")) == "memory"


class Page:
    """What the page's half of the input bar sends: each input numbered in the order made, typed words included."""

    def __init__(self, lab: ContextLab) -> None:
        self.lab, self.sent = lab, lab._inputs.taken

    def message(self, name: str, text: str = "") -> dict:
        self.sent += 1
        return {"input": name, "text": text, "number": self.sent}

    def deliver(self, *messages: dict) -> None:
        for message in messages:
            self.lab._inputs._handle_custom_msg(message, [])

    def type(self, text: str) -> None:
        self.deliver(self.message("send", text))


def type_in_page(lab: ContextLab, text: str) -> None:
    Page(lab).type(text)


def test_three_requests_typed_during_one_busy_turn_each_reach_the_agent_in_order(tmp_path):
    lab = new_lab(tmp_path, version="v2")
    page = Page(lab)
    typed = ["List ChartBook dataframes", "Get docs for money_markets/effr", "Load 30 rows of treasury_yields"]
    received, statuses = [], []
    original_send = lab.session.agent.send

    def send_while_three_are_typed(text):
        received.append(text)
        if len(received) == 1:  # the first turn runs; the page sends three requests, each with its own words
            for text_typed in typed:
                page.type(text_typed)
            statuses.append(html.unescape(lab._status.value))
        return original_send(text)

    lab.session.agent.send = send_while_three_are_typed
    page.deliver(page.message("step"))
    assert received == [LESSON_STEPS[0], *typed], "every typed request reached the agent, in the order typed"
    assert [exchange.request for exchange in lab.transcript] == received
    assert "(3 more inputs waiting)" in statuses[0], "the status shows the queue while the turn runs"
    assert lab._inputs.taken == 4 and lab._inputs.value == "", "the page stops listing each once the lab took it"


def test_inputs_that_reach_the_lab_out_of_order_are_taken_in_the_order_made(tmp_path):
    lab = new_lab(tmp_path, version="v2")
    page = Page(lab)
    made = [page.message("step"), page.message("send", "List ChartBook dataframes"), page.message("summarize"),
            page.message("send", "Get docs for money_markets/effr"), page.message("step")]
    page.deliver(made[0], made[3], made[2])  # a kernel handed on messages that piled up during a turn out of order
    assert len(lab.transcript) == 1 and lab._inputs.taken == 1, "the later inputs wait for the request typed before them"
    page.deliver(made[4], made[1])
    assert [exchange.request for exchange in lab.transcript] == [
        LESSON_STEPS[0], "List ChartBook dataframes", "(Summarize now)", "Get docs for money_markets/effr", LESSON_STEPS[1]]
    assert lab._inputs.taken == 5 and not lab._inputs._held


def test_the_page_sends_each_input_with_its_words_and_number_and_lists_those_not_yet_taken():
    from flawedcode.lab.inputs import ESM

    assert "model.send({ input: name, text, number: sent })" in ESM and "model.set(" not in ESM, \
        "the words travel with their Enter; no typed value is synced (a front end merges held-back value updates)"
    assert "waiting for the lab, in order" in ESM and 'model.on("change:taken", showQueue)' in ESM


def test_send_without_words_sends_nothing_and_send_with_words_sends_them(tmp_path):
    lab = new_lab(tmp_path, version="v1")
    type_in_page(lab, "   ")
    assert lab.transcript == []
    type_in_page(lab, " Get docs for money_markets/effr ")
    assert [exchange.request for exchange in lab.transcript] == ["Get docs for money_markets/effr"]
    assert lab._inputs.value == ""
