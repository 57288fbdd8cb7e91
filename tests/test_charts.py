"""The context chart draws exactly the session's numbers; the comparison chart draws the summary's.

The session is a real run of the lesson's six requests through v1 and v2 on the
offline model (window = budget = 8,192 tokens), so v2 offloads once and
summarizes once. Each test compares what is on the Axes with ``chart_data`` and
with the ``SessionLog`` itself, not only that a PNG was written.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib.image
import pytest
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.text import Text

from flawedcode import lessons
from flawedcode.charts import (
    OKABE_ITO,
    X_LABEL,
    Y_LABEL,
    LiveChart,
    chart_data,
    plot_comparison,
    plot_context,
    save_comparison_chart,
    save_context_chart,
    step_positions,
)
from flawedcode.config import OffloadConfig, SummarizationConfig, V2Config
from flawedcode.demo import LESSON_STEPS, run_session
from flawedcode.telemetry import SessionLog

BUDGET = 8192
# Pinned here, not taken from the defaults, so the session offloads once and summarizes at least once.
LESSON_OFFLOAD = OffloadConfig(threshold_chars=5000, threshold_tokens=None)
LESSON_SUMMARY = SummarizationConfig(trigger=[{"type": "fraction", "value": 0.6}])
LONG_SESSION = ["Get docs for money_markets/effr", "Load 50 rows of EFFR data", "Get docs for fed_yield_curve",
                "Load 30 rows of treasury_yields", "Get docs for money_markets/sofr", "Get docs for money_markets/effr",
                "Load 40 rows of fed_yield_curve", "Get docs for yield_curve/repo_public", "Load 50 rows of SOFR data"]


def lesson_agent(version: str, base: Path):
    config = V2Config(budget_tokens=BUDGET, offload=LESSON_OFFLOAD, summarization=LESSON_SUMMARY) if version == "v2" else None
    return lessons.lesson_agent(version, budget_tokens=BUDGET, config=config, folder=base)


@pytest.fixture(scope="module")
def lesson_logs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, SessionLog]:
    base = tmp_path_factory.mktemp("lesson")
    logs = {}
    for version in ("v1", "v2"):
        agent = lesson_agent(version, base)
        run_session(agent, LESSON_STEPS)
        logs[version] = agent.log
    return logs


def lines_by_gid(ax: Axes) -> dict[str, list]:
    found: dict[str, list] = {}
    for line in ax.get_lines():
        found.setdefault(line.get_gid(), []).append(line)
    return found


def xy(line) -> list[tuple[float, float]]:
    return list(zip(map(float, line.get_xdata()), map(float, line.get_ydata())))


# --- chart_data against the session log -----------------------------------------------------------
def test_points_are_the_agent_calls_input_tokens_placed_in_their_step(lesson_logs):
    log = lesson_logs["v2"]
    data = chart_data(log)["v2"]
    agent_calls = [call for call in log.calls if call.purpose == "agent"]
    assert data["calls"] == [(call.index, call.turn, call.input_tokens) for call in agent_calls]
    assert [y for _, y in data["points"]] == [call.input_tokens for call in agent_calls]
    assert len(data["points"]) < len(log.calls), "the summarizer's own call must not be a point on the line"
    xs = [x for x, _ in data["points"]]
    assert xs == sorted(xs) and len(set(xs)) == len(xs), "calls go left to right, one dot each"
    for x, call in zip(xs, agent_calls):
        assert call.turn - 0.5 < x < call.turn + 0.5, "each call sits inside its own step"
    assert {round(x) for x in xs} == set(range(1, len(LESSON_STEPS) + 1))


def test_step_positions_spread_the_calls_of_a_step_around_it():
    assert step_positions([1, 2, 2, 3, 3, 3]) == [1.0, 1.825, 2.175, 2.7667, 3.0, 3.2333]
    assert step_positions([]) == []


def test_budget_and_trigger_are_the_logs_lines(lesson_logs):
    data = chart_data(list(lesson_logs.values()))
    assert data["v1"]["budget"] == data["v2"]["budget"] == BUDGET
    assert data["v1"]["trigger"] is None
    assert data["v2"]["trigger"] == lesson_logs["v2"].trigger_tokens == int(0.6 * BUDGET)


def test_event_markers_sit_on_the_line_where_the_call_saw_the_event(lesson_logs):
    log = lesson_logs["v2"]
    data = chart_data(log)["v2"]
    kinds = [kind for kind, *_ in data["events"]]
    assert kinds[0] == "offload" and "summarize" in kinds
    assert kinds == [event.kind for event in log.events if event.kind in ("offload", "summarize", "recovery", "goal_recalled")]
    assert kinds[-1] == "goal_recalled", "the lesson's last reply gives the goal back: the chart marks v2's recovery"
    line = {index: point for (index, _step, _tokens), point in zip(data["calls"], data["points"])}
    steps = {index: step for index, step, _tokens in data["calls"]}
    for (kind, call_index, _before, _after, label), marker in zip(data["events"], data["markers"], strict=True):
        assert marker == (kind, *line[call_index], marker[3]) and marker[3] in (label, "")
        assert kind in next(call.events for call in log.agent_calls() if call.index == call_index)
        assert label.endswith(f"\nstep {steps[call_index]}"), "events are labelled with the lesson's step"
    summaries = [event for event in data["events"] if event[0] == "summarize"]
    assert [event[4].split("\n")[0] for event in summaries] == [f"summary {n}" for n in range(1, len(summaries) + 1)]
    assert data["events"][0][4] == "offload\nstep 2"
    for _kind, call_index, before, after, _label in summaries:
        assert before > after, "a summary shrinks the context"
        assert line[call_index][1] < before, "the star's call received less than the context held before the summary"


def test_v1_marks_only_where_its_goal_was_lost_and_crosses_the_budget(lesson_logs):
    data = chart_data(lesson_logs["v1"])["v1"]
    assert [event[0] for event in data["events"]] == ["goal_lost"], "v1 manages nothing: its one event is losing the goal"
    assert max(y for _, y in data["points"]) > BUDGET


# --- the Axes draw exactly chart_data ----------------------------------------------------------------
def test_axes_lines_and_markers_equal_chart_data(lesson_logs):
    logs = [lesson_logs["v1"], lesson_logs["v2"]]
    data = chart_data(logs)
    figure = plot_context(logs, title="lesson")
    ax = figure.axes[0]
    lines = lines_by_gid(ax)
    for name in ("v1", "v2"):
        (agent_line,) = lines[f"line:{name}"]
        assert xy(agent_line) == [(float(x), float(y)) for x, y in data[name]["points"]]
    (budget,) = [line for gid, found in lines.items() if gid.startswith("budget:") for line in found]
    assert set(budget.get_ydata()) == {BUDGET} and budget.get_linestyle() == "--"
    (trigger,) = lines["trigger:v2"]
    assert set(trigger.get_ydata()) == {data["v2"]["trigger"]} and trigger.get_linestyle() == ":"
    assert "trigger:v1" not in lines
    drawn = [(line.get_gid().split(":")[2], line.get_marker(), *xy(line)[0])
             for line in ax.get_lines() if line.get_gid().startswith("event:v2:")]
    shapes = {"offload": "v", "summarize": "*", "recovery": "o", "goal_recalled": "^"}
    assert drawn == [(kind, shapes[kind], x, y) for kind, x, y, _ in data["v2"]["markers"]]
    numbers = [text.get_text() for text in ax.texts if (text.get_gid() or "").startswith("label:")]
    marked = [label for name in ("v1", "v2") for *_, label in data[name]["markers"] if label]
    assert numbers == [str(number) for number in range(1, len(marked) + 1)], "each labelled marker gets a number"
    (key,) = [text for text in figure.texts if text.get_gid() == "marker-key"]
    for number, label in enumerate(marked, start=1):  # listed beside the chart, never over a line
        assert f"{number}  {label.replace(chr(10), ', ')}" in key.get_text()


def test_axes_are_labelled_with_units_in_projector_sizes(lesson_logs):
    figure = plot_context(lesson_logs["v2"])
    ax = figure.axes[0]
    assert ax.get_xlabel() == X_LABEL == "step (each dot is one model call)"
    assert ax.get_ylabel() == Y_LABEL == "tokens sent to the model"
    assert ax.xaxis.label.get_fontsize() >= 14
    assert min(tick.label1.get_fontsize() for tick in ax.xaxis.get_major_ticks() + ax.yaxis.get_major_ticks()) >= 14
    legend = [text.get_text() for text in ax.get_legend().get_texts()]
    assert "v2" in legend and "budget (8,192 tokens)" in legend


def test_agents_get_distinct_okabe_ito_colours(lesson_logs):
    ax = plot_context(list(lesson_logs.values())).axes[0]
    lines = lines_by_gid(ax)
    colours = {name: lines[f"line:{name}"][0].get_color().upper() for name in ("v1", "v2")}
    assert colours["v1"] != colours["v2"]
    assert set(colours.values()) <= set(OKABE_ITO.values())


def test_plot_draws_on_a_given_axes(lesson_logs):
    figure = Figure()
    ax = figure.add_subplot()
    assert plot_context(lesson_logs["v2"], ax=ax) is figure
    assert lines_by_gid(ax)["line:v2"]


def test_an_empty_session_still_draws():
    figure = plot_context(SessionLog(agent_name="v2", budget_tokens=BUDGET))
    assert chart_data(SessionLog(agent_name="v2"))["v2"]["points"] == []
    assert figure.axes[0].get_xlabel() == X_LABEL


def test_png_is_saved_and_large_enough_for_a_projector(lesson_logs, tmp_path):
    path = save_context_chart(list(lesson_logs.values()), tmp_path / "charts" / "context.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    height, width, _ = matplotlib.image.imread(path).shape
    assert width >= 1200 and height >= 700


# --- the live chart -----------------------------------------------------------------------------
class RecordingHandle:
    def __init__(self) -> None:
        self.updates = 0

    def update(self, figure: Figure) -> None:
        self.updates += 1


def test_live_chart_redraws_after_each_turn_of_each_agent(tmp_path):
    agents = [lesson_agent("v1", tmp_path), lesson_agent("v2", tmp_path)]
    chart = LiveChart(agents, title="live")
    chart.handle = RecordingHandle()
    for agent in agents:
        agent.send(LESSON_STEPS[0])
    assert chart.handle.updates == 2
    lines = lines_by_gid(chart.ax)
    for agent in agents:
        (line,) = lines[f"line:{agent.version}"]
        assert [y for _, y in xy(line)] == [float(call.input_tokens) for call in agent.token_log]
    chart.detach()
    agents[0].send(LESSON_STEPS[1])
    assert chart.handle.updates == 2


# --- the comparison chart ---------------------------------------------------------------------------
SUMMARY = {"agents": {
    "v0": {"success_rate": 0.5, "goal_retention": 0.0, "tokens_per_success": 9000, "peak_context_tokens": 2100,
           "total_input_tokens": 30000, "total_output_tokens": 900, "fact_retention": 0.0, "summaries": 0, "offloads": 0},
    "v1": {"success_rate": 0.75, "goal_retention": 0.25, "tokens_per_success": None, "peak_context_tokens": 8600,
           "total_input_tokens": 91000, "total_output_tokens": 950, "fact_retention": 1.0, "summaries": 0, "offloads": 0},
    "v2": {"success_rate": 1.0, "goal_retention": 1.0, "tokens_per_success": 6000, "peak_context_tokens": 6000,
           "total_input_tokens": 60000, "total_output_tokens": 1200, "fact_retention": 1.0, "summaries": 2, "offloads": 1},
}}


def test_comparison_has_six_panels_with_the_summary_values():
    figure = plot_comparison(SUMMARY, budget_tokens=BUDGET)
    panels = {ax.get_title(): ax for ax in figure.axes}
    assert set(panels) == {"Peak context", "Tokens per success", "Success rate", "Goal retention",
                           "Input ÷ v1: raw, and with caching (hatched)", "Input ÷ the yardstick"}
    (budget,) = [line for line in panels["Peak context"].get_lines() if line.get_gid() == "budget"]
    assert set(budget.get_ydata()) == {BUDGET} and budget.get_linestyle() == "--"
    assert panels["Peak context"].get_ylim()[1] > BUDGET, "the budget line is inside the panel"
    assert "n/a" in {text.get_text() for text in panels["Tokens per success"].texts}, "v1 had no success to divide by"
    expected = {
        "Peak context": [2100, 8600, 6000],
        "Tokens per success": [9000, 0, 6000],
        "Success rate": [50, 75, 100],
        "Goal retention": [0, 25, 100],
    }
    for title, values in expected.items():
        ax = panels[title]
        assert [round(bar.get_height(), 6) for bar in ax.patches] == values
        assert [label.get_text() for label in ax.get_xticklabels()] == ["v0", "v1", "v2"]
        assert ax.get_ylabel()
    assert "100%" in {text.get_text() for text in panels["Success rate"].texts}


def test_comparison_shows_the_ratio_to_v1_raw_and_with_caching_and_to_the_limit():
    ratios = {"v1": (1.0, 1.0, 17.9), "v2": (0.098, 0.243, 2.0)}
    summary = {"agents": {name: {"input_vs_v1": raw, "cached_vs_v1_cached": cached, "input_vs_limit": limit}
                          for name, (raw, cached, limit) in ratios.items()}}
    panels = {ax.get_title(): ax for ax in plot_comparison(summary).axes}
    paired = panels["Input ÷ v1: raw, and with caching (hatched)"]
    assert [round(bar.get_height(), 6) for bar in paired.patches] == [1.0, 0.098, 1.0, 0.243]
    assert [bool(bar.get_hatch()) for bar in paired.patches] == [False, False, True, True]
    assert {"0.10", "0.24", "1.00"} <= {text.get_text() for text in paired.texts}
    assert [round(bar.get_height(), 6) for bar in panels["Input ÷ the yardstick"].patches] == [17.9, 2.0]


def test_comparison_png_is_saved(tmp_path):
    path = save_comparison_chart(SUMMARY, tmp_path / "comparison.png")
    assert path.read_bytes()[:4] == b"\x89PNG"


# --- what a projector shows: nothing hides anything ------------------------------------------------
def boxes(figure: Figure, artists) -> list:
    renderer = figure.canvas.get_renderer()
    return [artist.get_window_extent(renderer) for artist in artists]


def test_event_labels_never_overlap_in_a_long_v2_session(tmp_path):
    agent = lesson_agent("v2", tmp_path)
    run_session(agent, [*LESSON_STEPS[:-1], *LONG_SESSION, LESSON_STEPS[-1]])
    assert agent.log.count("summarize") >= 2 and agent.log.count("offload") >= 3, "precondition: crowded markers"
    figure = plot_context(agent.log)
    ax = figure.axes[0]
    labels = [text for text in ax.texts if (text.get_gid() or "").startswith("label:")]
    assert len(labels) == len([marker for marker in chart_data(agent.log)["v2"]["markers"] if marker[3]])
    renderer = figure.canvas.get_renderer()
    found = [Text.get_window_extent(label, renderer) for label in labels]  # the text, not its connecting line
    markers = boxes(figure, [line for line in ax.get_lines() if line.get_gid().startswith("event:")])
    for label, box in zip(labels, found):
        assert not any(box.overlaps(marker) for marker in markers), f"{label.get_text()!r} covers a marker"
    for first in range(len(found)):
        for second in range(first + 1, len(found)):
            assert not found[first].overlaps(found[second]), (labels[first].get_text(), labels[second].get_text())


def test_the_legend_sits_below_the_axes_and_covers_no_line(lesson_logs):
    figure = plot_context(list(lesson_logs.values()))
    ax = figure.axes[0]
    (legend_box,) = boxes(figure, [ax.get_legend()])
    axes_box = ax.get_window_extent(figure.canvas.get_renderer())
    assert legend_box.y1 <= axes_box.y0, "the legend is under the plot, not on it"


def test_the_first_live_frame_has_step_ticks_and_room_for_the_budget(tmp_path):
    chart = LiveChart([lesson_agent("v1", tmp_path)], steps=len(LESSON_STEPS))
    assert chart.ax.get_xlim() == (0.5, len(LESSON_STEPS) + 0.5)
    ticks = [tick for tick in chart.ax.get_xticks() if 0.5 <= tick <= len(LESSON_STEPS) + 0.5]
    assert ticks and all(float(tick).is_integer() and tick >= 1 for tick in ticks)
    assert chart.ax.get_ylim()[0] == 0 and chart.ax.get_ylim()[1] > BUDGET


def test_the_goal_lost_marker_sits_on_v1s_line_where_the_goal_left_the_window(tmp_path):
    agent = lesson_agent("v1", tmp_path)
    run_session(agent, LESSON_STEPS)
    data = chart_data(agent.log)["v1"]
    lost = [marker for marker in data["markers"] if marker[0] == "goal_lost"]
    assert len(lost) == 1
    views = agent.context_watcher.views
    first_lost = next(view for view in views if not view.goal_in_window)
    assert views[views.index(first_lost) - 1].goal_in_window
    (index, step, tokens), point = next((call, point) for call, point in zip(data["calls"], data["points"])
                                        if call[0] == first_lost.call_index)
    assert lost[0] == ("goal_lost", *point, f"goal lost\nstep {step}")
    ax = plot_context(agent.log).axes[0]
    assert [line.get_marker() for line in ax.get_lines() if line.get_gid() == "event:v1:goal_lost"] == ["D"]


def test_a_live_chart_without_auto_redraws_only_when_asked(tmp_path):
    agents = [lesson_agent("v1", tmp_path), lesson_agent("v2", tmp_path)]
    chart = LiveChart(agents, steps=2, auto=False)
    chart.handle = RecordingHandle()
    for agent in agents:
        agent.send(LESSON_STEPS[1])
    assert chart.handle.updates == 0 and chart.redraws == 1, "only the first frame so far"
    chart.update()
    assert chart.handle.updates == 1
    assert [len(line.get_xdata()) for gid, lines in lines_by_gid(chart.ax).items() if gid.startswith("line:") for line in lines] == [2, 2]


# --- linear time: labels are bounded, and the live chart redraws only what changed --------------------
def test_only_the_first_and_the_last_events_of_each_kind_are_labelled():
    from flawedcode.charts import LAST_LABELS_PER_KIND, MAX_LABELS, labelled_events

    kinds = ["offload"] * 30 + ["summarize"] * 6 + ["offload"] * 30 + ["recovery"]
    keep = labelled_events(kinds)
    chosen = [index for index, kept in enumerate(keep) if kept]
    offloads = [index for index, kind in enumerate(kinds) if kind == "offload"]
    assert offloads[0] in chosen and set(offloads[-LAST_LABELS_PER_KIND:]) <= set(chosen)
    assert len([index for index in chosen if kinds[index] == "offload"]) == 1 + LAST_LABELS_PER_KIND
    assert kinds.index("recovery") in chosen and len(chosen) <= MAX_LABELS
    assert labelled_events(kinds * 10).count(True) <= MAX_LABELS, "no more labels at 10x the events"


def test_the_live_chart_redraws_only_when_what_it_shows_changed(tmp_path):
    agent = lesson_agent("v2", tmp_path)
    chart = LiveChart(agent, steps=3)
    drawn = chart.redraws
    agent.log.end_turn()  # a turn that added nothing
    assert chart.redraws == drawn
    agent.send(LESSON_STEPS[0])
    assert chart.redraws == drawn + 1
    assert not chart.redraw() and chart.redraw(force=True)


def test_the_cache_chart_splits_each_call_into_cached_and_billed_in_full(tmp_path):
    from flawedcode.charts import cache_data, plot_cache

    agent = lesson_agent("v2", tmp_path)
    run_session(agent, [*LESSON_STEPS[:-1], *LONG_SESSION])
    data = cache_data(agent.log)
    assert [(cached, uncached) for _, _, cached, uncached in data["calls"]] == [
        (call.cached_tokens, call.input_tokens - call.cached_tokens) for call in agent.log.calls]
    summary_calls = [number for number, purpose, *_ in data["calls"] if purpose == "summary"]
    assert summary_calls and data["breaks"] and all(any(b > s for s in summary_calls) for b in data["breaks"])
    (ax,) = plot_cache(agent.log).axes
    cached_bars = [patch for patch in ax.patches if patch.get_gid() == "cached:v2"]
    assert [round(patch.get_height()) for patch in cached_bars] == [cached for _, _, cached, _ in data["calls"]]
    assert "cacheable" in ax.get_title()
