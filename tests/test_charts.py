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

from flawedcode.agents import make_agent
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
)
from flawedcode.config import AgentConfig, OffloadConfig, SummarizationConfig, V2Config
from flawedcode.demo import LESSON_STEPS, run_session
from flawedcode.models import OfflineModel
from flawedcode.telemetry import SessionLog
from flawedcode.tools import Workspace

BUDGET = 8192
# Pinned here, not taken from the defaults, so the session offloads once and summarizes at least once.
LESSON_OFFLOAD = OffloadConfig(threshold_chars=5000, threshold_tokens=None)
LESSON_SUMMARY = SummarizationConfig(trigger=[{"type": "fraction", "value": 0.6}])


def lesson_agent(version: str, base: Path):
    workspace = Workspace.create(base / version, scratch_dir=base / "scratch", archive_dir=base / "archives")
    config = V2Config(budget_tokens=BUDGET, offload=LESSON_OFFLOAD, summarization=LESSON_SUMMARY) if version == "v2" \
        else AgentConfig(budget_tokens=BUDGET)
    return make_agent(version, model=OfflineModel(max_input_tokens=BUDGET, overflow="truncate"),
                      workspace=workspace, config=config)


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
def test_points_are_the_agent_calls_input_tokens(lesson_logs):
    log = lesson_logs["v2"]
    data = chart_data(log)["v2"]
    assert data["points"] == [(call.index, call.input_tokens) for call in log.calls if call.purpose == "agent"]
    assert len(data["points"]) < len(log.calls), "the summarizer's own call must not be a point on the line"
    assert [x for x, _ in data["points"]] == list(range(len(data["points"])))


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
    assert kinds == [event.kind for event in log.events if event.kind in ("offload", "summarize", "recovery")]
    line = dict(data["points"])
    for (kind, call_index, _before, _after, label), marker in zip(data["events"], data["markers"], strict=True):
        assert marker == (kind, call_index, line[call_index], label)
        assert kind in next(call.events for call in log.agent_calls() if call.index == call_index)
    summaries = [event for event in data["events"] if event[0] == "summarize"]
    assert [event[4] for event in summaries] == [f"summary {n}" for n in range(1, len(summaries) + 1)]
    assert data["events"][0][4] == "offload (5.5k chars)"
    for _kind, call_index, before, after, _label in summaries:
        assert before > after, "a summary shrinks the context"
        assert line[call_index] < before, "the star's call received less than the context held before the summary"


def test_v1_has_no_markers_and_crosses_the_budget(lesson_logs):
    data = chart_data(lesson_logs["v1"])["v1"]
    assert data["events"] == [] and data["markers"] == []
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
    drawn = [(line.get_gid().split(":")[2], line.get_marker(), *map(int, xy(line)[0]))
             for line in ax.get_lines() if line.get_gid().startswith("event:v2:")]
    shapes = {"offload": "v", "summarize": "*", "recovery": "o"}
    assert drawn == [(kind, shapes[kind], x, y) for kind, x, y, _ in data["v2"]["markers"]]
    labels = {text.get_text() for text in ax.texts}
    assert {label for *_, label in data["v2"]["markers"]} <= labels


def test_axes_are_labelled_with_units_in_projector_sizes(lesson_logs):
    figure = plot_context(lesson_logs["v2"])
    ax = figure.axes[0]
    assert ax.get_xlabel() == X_LABEL == "model call (#)"
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
        assert xy(line) == [(float(call.index), float(call.input_tokens)) for call in agent.token_log]
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


def test_comparison_has_four_panels_with_the_summary_values():
    figure = plot_comparison(SUMMARY)
    panels = {ax.get_title(): ax for ax in figure.axes}
    assert set(panels) == {"Peak context", "Total input tokens", "Success rate", "Goal retention"}
    expected = {
        "Peak context": [2100, 8600, 6000],
        "Total input tokens": [30000, 91000, 60000],
        "Success rate": [50, 75, 100],
        "Goal retention": [0, 25, 100],
    }
    for title, values in expected.items():
        ax = panels[title]
        assert [round(bar.get_height(), 6) for bar in ax.patches] == values
        assert [label.get_text() for label in ax.get_xticklabels()] == ["v0", "v1", "v2"]
        assert ax.get_ylabel()
    assert "100%" in {text.get_text() for text in panels["Success rate"].texts}


def test_comparison_png_is_saved(tmp_path):
    path = save_comparison_chart(SUMMARY, tmp_path / "comparison.png")
    assert path.read_bytes()[:4] == b"\x89PNG"
