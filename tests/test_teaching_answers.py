"""The rebuilt teaching model's answers, end to end through the model with the real tools and no agent
(tests/teaching_harness.py): the reading first, then the figure; a follow-up says what it builds on.
One conversation runs its scripts in the real sandbox; the others in this process (``fast_workspace``).
Expected figures come from the parquet files with pandas (tests/corpora/fresh_registers.yaml's truths)."""

from __future__ import annotations

import pytest
from teaching_harness import converse, fast_workspace, fresh_cases, judge, offline_model, workspace_in
from test_teaching import frame

from flawedcode.models.teaching.conversation import read_turn, unseen_base

END_TO_END = ["qualifier-01", "two-asks-04", "relative-01", "after-decline-05",
              "trap-03"]


@pytest.mark.parametrize("case_id", END_TO_END)
def test_fresh_register_requests_are_answered_right_or_declined(case_id, tmp_path):
    case = next(c for c in fresh_cases() if c["id"] == case_id)
    reply = converse(offline_model(), case["turns"], fast_workspace(tmp_path))[-1]
    expected = "right" if case["expect"] == "answer" else "declined"
    assert judge(case, reply) in ((expected,) if expected == "right" else ("right", "declined")), reply


def test_an_answer_gives_its_reading_before_the_figure(tmp_path):
    reply = converse(offline_model(), ["sorry to bother you, could you tell me the min 2y yield in 2024 please"],
                     fast_workspace(tmp_path))[-1]
    days = frame("ty").loc["2024", "yield_2y"]
    assert reply.startswith(f"yield_curve/treasury_yields yield_2y (percent), {days.index[0].date()} to "
                            f"{days.index[-1].date()}, {len(days)} values: min {days.min():.4f}"), reply


def test_a_follow_up_reply_says_which_request_it_builds_on(tmp_path):
    replies = converse(offline_model(), ["average sofr in 2024", "same thing for EFFR"], workspace_in(tmp_path))
    assert "Building on your earlier request: the mean of money_markets/sofr.rate" in replies[-1]
    assert f"{frame('effr').loc['2024', 'rate'].mean():.4f}" in replies[-1]


def test_the_script_names_no_host_folder():
    """The code the model writes reads the same wherever the project is cloned (CI clones it elsewhere)."""
    from flawedcode import paths
    from flawedcode.models.teaching import answers
    from flawedcode.models.teaching.router import read_message

    request = read_message("average sofr in 2024", None)[0]
    code = answers.script(request, None)
    assert str(paths.PROJECT_ROOT) not in code and str(paths.data_dir()) not in code
    assert "'path': 'pipelines/money_markets/_data/" in code, code
    from flawedcode.models.offline_answers import load_script

    load = load_script({"pipeline": "money_markets", "dataframe": "sofr", "limit": 50}, ["rate"], offline_model().vocabulary(), None)
    assert str(paths.PROJECT_ROOT) not in load and str(paths.data_dir()) not in load, load


FALLBACKS = ["negative-03", "negative-05", "after-summary-01", "after-summary-02", "after-summary-03",
             "after-summary-05", "after-summary-06"]


@pytest.mark.parametrize("case_id", FALLBACKS)
def test_negative_thresholds_and_follow_ups_after_a_summary_are_read_here(case_id, tmp_path):
    """Each was left to the old model (tests/corpora/fresh_fallbacks.yaml); the reply is this package's own."""
    case = next(c for c in fresh_cases("fresh_fallbacks") if c["id"] == case_id)
    reply = converse(offline_model(), case["turns"], fast_workspace(tmp_path))[-1]
    if case["expect"] == "answer":
        assert judge(case, reply) == "right" and ("days" in reply or "Building on your earlier request" in reply), reply
    else:
        assert judge(case, reply) == "declined" and "summarized" in reply, reply


def test_a_load_too_large_to_read_back_states_every_column_from_a_script_over_the_same_rows(tmp_path):
    """Issue 43 part 2: a saved (offloaded) load is never answered from its preview, and no asked column is dropped."""
    from langchain_core.messages import HumanMessage, ToolMessage

    from flawedcode.bench.checks import evaluate_figures
    from flawedcode.bench.tasks import Figures
    from flawedcode.context.offload import maybe_offload
    from flawedcode.tools import make_tools

    workspace = workspace_in(tmp_path)
    tools = {tool.name: tool for tool in make_tools(workspace)}
    columns = ["yield_1m", "yield_3m", "yield_6m", "yield_1y", "yield_2y", "yield_5y", "yield_10y", "yield_30y"]
    messages = [HumanMessage(f"Load 50 rows of treasury_yields with columns {', '.join(columns[:-1])} and {columns[-1]}")]
    bound, made = offline_model(4096).bind_tools(list(tools.values())), []
    for _ in range(6):
        reply = bound.invoke(messages)
        messages.append(reply)
        if not reply.tool_calls:
            break
        for call in reply.tool_calls:
            made.append(call["name"])
            output = str(tools[call["name"]].invoke(call["args"]))
            if call["name"] == "chartbook_load_data":  # saved to scratch/, as v2's offload step does
                output = maybe_offload(output, call["name"], call["args"], scratch_dir=workspace.conversation_scratch_dir)
            messages.append(ToolMessage(output, tool_call_id=call["id"], name=call["name"]))
    assert made == ["chartbook_load_data", "run_python"], made
    check = evaluate_figures(Figures(dataframe="yield_curve/treasury_yields", rows=50, columns=columns), messages[-1].text)
    assert check.passed, (check.missing, messages[-1].text)


@pytest.mark.parametrize("name,case_id", [(name, case["id"]) for name in ("fresh_sessions", "fresh_comparisons", "fresh_sessions2")
                                           for case in fresh_cases(name)])
def test_a_fresh_session_turn_is_answered_or_declined_never_confidently_wrong(name, case_id, tmp_path):
    """Sets written before the code changed: fresh_sessions.yaml (corrections, hedges, shorthand, crossings) and
    fresh_comparisons.yaml (one series over two periods compared with a verb; two series set against each other),
    fresh_sessions2.yaml (follow-ups after declined turns, relative days, shorthand, a teacher's and a manager's register)."""
    case = next(c for c in fresh_cases(name) if c["id"] == case_id)
    reply = converse(offline_model(), case["turns"], fast_workspace(tmp_path))[-1]
    outcome = judge(case, reply)
    assert outcome != "wrong", reply
    if name == "fresh_comparisons" and case["id"].startswith("periods"):  # each period's mean, then the change between them
        assert outcome == "right" and " the mean changed by " in reply, reply
    if (name, case["id"]) == ("fresh_sessions", "trap-05"):  # a follow-up after a declined correction says which request it builds on
        assert "Building on your earlier request: the mean of money_markets/sofr.rate" in reply


def test_a_turn_either_rules_declined_never_becomes_the_state(tmp_path):
    """The gap ask is declined by the older rules. 'and in percent?' after it would take what the declined ask named (the
    target range): declined, never the older mean converted. 'and the max?' after a declined ask that named no series of its
    own builds on the request answered before it, and says so."""
    replies = converse(offline_model(), ["what was the average EFFR in March 2023?",
                                         "how far above the bottom of the target range was it on average, in bp?",
                                         "and in percent?", "and in yen?", "and the max?"], fast_workspace(tmp_path))
    assert replies[1].startswith("I read this as") and "computed nothing" in replies[1]
    assert replies[2].startswith("I can't answer that: 'and in percent?' builds on your last request"), replies[2]
    top = frame("effr").loc["2023-03", "rate"].max()
    assert f"max {top:.4f}" in replies[4] and "Building on your earlier request: the mean of money_markets/effr.rate" in replies[4]


@pytest.mark.parametrize("turns", [["sofr on 2024-07-04", "and effr that day?"],  # a holiday, then 'that day'
                                   ["mean sofr in march 2024", "and in february 2025?", "what about effr that month?"],
                                   ["average 5y yield in q3 2024", "now the same in q1 2025", "and the 30y for the same period"],
                                   ["how many days was the 30y above 4.5% in H1 2024?", "what about EFFR on 2024-02-30?",
                                    "then the last day of February"]])
def test_a_follow_up_never_takes_an_older_period_or_series_than_the_declined_ask_before_it(turns, tmp_path):
    """Fresh sessions (fresh_sessions2.yaml, redteam_sessions.yaml): 'that day' after a holiday was all of EFFR's data, 'that
    month' after a month past the data was the month before it, and 'then the last day of February' after the declined
    'EFFR on 2024-02-30' was the 30-year's value that day."""
    reply = converse(offline_model(), turns, fast_workspace(tmp_path))[-1]
    assert reply.startswith(f"I can't answer that: '{turns[-1]}' builds on your last request, which I could not answer"), reply


def test_when_after_a_high_names_its_day_and_a_new_statistic_drops_the_counts_condition(tmp_path):
    """Red-team sessions: 'what was the highest it got that year?' after a count above 5.31 went to the older rules, and
    'same for EFFR' two turns later was EFFR's 2024 max (v2) or all its data (v3)."""
    replies = converse(offline_model(), ["how many days was SOFR above 5.31 in 2023?", "what was the highest it got that year?",
                                         "and when?", "same for EFFR"], fast_workspace(tmp_path))
    assert f"max {frame('sofr').loc['2023', 'rate'].max():.4f} on 2023-09-29" in replies[2], replies[2]
    assert f"max {frame('effr').loc['2023', 'rate'].max():.4f} on 2023-07-27" in replies[3], replies[3]


def test_a_declined_request_never_lends_its_condition_to_a_later_ask(tmp_path):
    """The maintainers' chat: the declined 'first below 5% after the cut' came back as '62 of 62 days below 5%' for
    'by how many bp?' (the older rules replayed it); 'same but for the 2-year' went to an older request ('but' unread)."""
    replies = converse(offline_model(), ["When did SOFR first print below 5% after the September 2024 cut?",
                                         "in Q4 2024 was sofr above effr on average? by how many bp?",
                                         "UST 10s on Oct 19 2023?", "same but for the 2-year"], fast_workspace(tmp_path))
    assert "below 5%" not in replies[1]
    assert f"{frame('ty').loc['2023-10-19', 'yield_2y']:.4f}" in replies[3] and "on 2023-10-19" in replies[3]


@pytest.mark.parametrize("ask", ["how many calendar days passed between 2024-01-02 and the first day sofr fell below 5%?",
                                 "check whether sofr failed to stay under 5.4% in 2024, what was its max?",
                                 "search for the highest sofr volume in 2024"])
def test_a_data_question_is_never_a_test_run_or_a_file_search(ask, tmp_path):
    """Red-team set: 'passed', 'failed' and 'search' in a question about a series and a period ran the demo project's
    tests or searched its files. The question is declined, naming what was not read."""
    reply = converse(offline_model(), [ask], fast_workspace(tmp_path))[-1]
    assert reply.startswith("I read this as") and "computed nothing" in reply, reply
    assert "pytest" not in reply and "No matches" not in reply, reply


def test_the_change_between_two_periods_is_in_the_unit_asked(tmp_path):
    """Red-team set: 'by how many basis points did the average effr drop from Q3 2024 to Q4 2024' gave both means in bp
    and their change in percent (-0.6107)."""
    reply = converse(offline_model(), ["by how many basis points did the average effr drop from Q3 2024 to Q4 2024"],
                     fast_workspace(tmp_path))[-1]
    effr = frame("effr")["rate"]
    change = (effr.loc["2024-10":"2024-12"].mean() - effr.loc["2024-07":"2024-09"].mean()) * 100
    assert f"the mean changed by {change:+.4f} bp" in reply, reply


@pytest.mark.parametrize("ask,expected", [
    ("by what percent did the ON RRP take-up shrink over 2024, first trading day to last?", ("repo", "on_rrp_volume_bn", "2024")),
    ("how many percent did reserves grow in 2023, first day to last?", ("repo", "reserves_bn", "2023")),
    ("how much did the tga grow over 2023, in percent?", ("repo", "tga_bn", "2023"))])
def test_a_percent_asked_of_a_change_is_the_percent_change(ask, expected, tmp_path):
    """Red-team sets: 'by what percent ... shrink', 'how many percent did ... grow' got the change in $bn."""
    name, column_name, year = expected
    values = frame(name).loc[year, column_name]
    reply = converse(offline_model(), [ask], fast_workspace(tmp_path))[-1]
    assert f"percent change {(values.iloc[-1] / values.iloc[0] - 1) * 100:+.4f}%" in reply, reply


def test_a_follow_up_names_its_day_or_period_in_words_it_did_not_read_before(tmp_path):
    """Red-team sessions: 'the previous business day?' repeated the day before it; 'the same quarter' fell back to all the data."""
    replies = converse(offline_model(), ["sofr on 2024-11-29", "the previous business day?", "average 10y in q4 2024",
                                         "And the 2-year for the same quarter."], fast_workspace(tmp_path))
    assert "on 2024-11-27, the last day with a row on or before 2024-11-28: 4.6000" in replies[1], replies[1]  # Thanksgiving has no row
    two = frame("ty").loc["2024-10":"2024-12", "yield_2y"].mean()
    assert f"2024-10-01 to 2024-12-31, 62 values: mean {two:.4f}" in replies[3], replies[3]


@pytest.mark.parametrize("turns,named", [
    (["week-over-week change in sofr on 2024-04-05, in bp"], "week-over-week"),
    (["in how many months of 2024 did the average sofr exceed 5.33%?"], "a count of months"),
    (["sofr 95th percentile column on 2024-06-28"], "a percentile of one value is that value"),
    (["max 2s10s in 2024", "what was the 10y that day?"], "'that day' would be the day of a figure I gave")])
def test_a_qualifier_that_changes_the_figure_is_declined_never_dropped(turns, named, tmp_path):
    """Red-team sets: the daily change for 'week-over-week', 58 days for 'in how many months', a 95th percentile of one
    value, and the 10y's own 2024 max for 'the 10y that day' (the day of the 2s10s max)."""
    reply = converse(offline_model(), turns, fast_workspace(tmp_path))[-1]
    assert named in reply and "computed nothing" in reply or named in reply and reply.startswith("I read this as"), reply


@pytest.mark.parametrize("turns,name,column_name,start,end,stat", [
    (["average libor in q1 2024", "fine, use sofr instead"], "sofr", "rate", "2024-01", "2024-03", "mean"),
    (["average sonia in h2 2024", "ok, effr then"], "effr", "rate", "2024-07", "2024-12", "mean"),
    (["median euribor in march 2024", "try the 2 year instead"], "ty", "yield_2y", "2024-03", "2024-03", "median")])
def test_a_series_named_instead_of_one_not_in_the_catalog_keeps_the_declined_request(turns, name, column_name, start, end, stat,
                                                                                        tmp_path):
    """Red-team sets: after the declined 'average libor in q1 2024', 'fine, use sofr instead' gave SOFR over all the data
    ('no period was given'). The declined request named no series of the catalog: the one named now takes its place."""
    reply = converse(offline_model(), turns, fast_workspace(tmp_path))[-1]
    figure = getattr(frame(name).loc[start:end, column_name], stat)()
    assert f"{stat} {figure:.4f}" in reply and "Building on your earlier request" in reply and "no period" not in reply, reply


def test_same_after_a_declined_request_with_nothing_answered_is_declined(tmp_path):
    replies = converse(offline_model(), ["first below 5% after the September 2024 cut for sofr", "same for effr"],
                       fast_workspace(tmp_path))
    assert replies[1].startswith("I can't answer that: 'same for effr' builds on your last request"), replies[1]


def test_a_turn_the_older_rules_answered_ends_the_state(tmp_path):
    """Red-team sessions: 'same for EFFR' after 'what was the highest it got that year?' (answered by the older rules)
    merged onto the count two turns back: '107 of 249 days above 5.31%' for EFFR's 2023 max."""
    replies = converse(offline_model(), ["how many days was sofr above 5.31% in 2023?", "what was the highest it got that year?",
                                         "same for EFFR"], fast_workspace(tmp_path))
    assert f"max {frame('effr').loc['2023', 'rate'].max():.4f} on 2023-07-27" in replies[-1], replies[-1]


def test_writing_a_file_that_names_a_function_is_a_write_not_a_test_run(tmp_path):
    """Red-team sessions: 'write a file notes.md saying: volatility bug is in annualized_volatility' ran the tests."""
    workspace = fast_workspace(tmp_path)
    reply = converse(offline_model(), ["write a file notes.md saying: volatility bug is in annualized_volatility"], workspace)[-1]
    assert "Wrote" in reply and "notes.md" in reply and "pytest" not in reply, reply
    assert (workspace.root / "notes.md").read_text(encoding="utf-8").strip() == "volatility bug is in annualized_volatility"


def test_that_year_with_no_answered_request_is_declined(tmp_path):
    """Red-team sessions: in a new conversation 'so what was the mean SOFR minus EFFR in that year, in bp?' was answered over
    all the data ('no period was given')."""
    reply = converse(offline_model(), ["so what was the mean SOFR minus EFFR in that year, in bp?"], fast_workspace(tmp_path))[-1]
    assert reply.startswith("I can't answer that: 'that year' is the period of an earlier request"), reply


def test_the_month_end_values_of_a_series_are_averaged_on_those_days_only(tmp_path):
    """Red-team set: 'average of the month-end 10y yields in 2024' was the mean of every day (4.2101), the qualifier dropped."""
    reply = converse(offline_model(), ["average of the month-end 10y yields in 2024"], fast_workspace(tmp_path))[-1]
    ends = frame("ty").loc["2024", "yield_10y"].groupby(frame("ty").loc["2024"].index.to_period("M")).last()
    assert "only on the days yield_curve/repo_public is_month_end marks" in reply and f"mean {ends.mean():.4f}" in reply, reply


def test_by_how_many_after_levels_is_the_gap_never_one_level_converted(tmp_path):
    """Red-team sessions: after the 2023 means of SOFR and EFFR, 'by how many bp?' gave EFFR's mean in bp (502.5382 bp). It is
    the gap between the two means (once declined, now computed, as the pair is one answer of two figures). After a change it is
    that change in bp."""
    replies = converse(offline_model(), ["mean sofr and effr in 2023", "by how many bp?", "how much did sofr change in 2024",
                                         "by how many bp?"], fast_workspace(tmp_path))
    gap = (frame("effr").loc["2023", "rate"].mean() - frame("sofr").loc["2023", "rate"].mean()) * 100
    assert f"money_markets/effr.rate minus money_markets/sofr.rate (mean): {gap:+.4f} bp" in replies[1], replies[1]
    assert "change -82.0000 bp" in replies[3], replies[3]


def test_by_how_many_after_figures_the_model_did_not_compute_itself_is_declined():
    """Red-team sessions (v3): after two sub-agents' means and 'which of the two was higher?', 'by how many bp?' gave EFFR's
    2023 mean in bp (502.5382 bp): no request of its own was in between to build on, and the rule waited for one."""
    turn = read_turn("by how many bp?", ["Delegate to sub-agents: tell me the average SOFR rate in 2023; tell me the average EFFR "
                                         "in 2023", "which of the two was higher?"])
    assert turn.readings[0].reason.startswith("'by how many bp?' asks for a gap between figures"), turn


def test_on_which_day_with_no_request_in_view_is_declined():
    """Red-team sessions (v3): after v3's digest kept only 'I meant the min', 'on which day?' gave the minimum of all SOFR's data
    (the older rules, with nothing to build on). After a high or a low in view it repeats it; after an older rules' turn they answer."""
    assert read_turn("on which day?", ["I meant the min"]).readings[0].reason.startswith("'on which day?' asks about a figure")
    assert read_turn("and when?", ["max sofr in 2024"]).readings[0].stat().value == "max"
    assert read_turn("and the date of it?", ["average 10y", "and its max?"]).readings is None


@pytest.mark.parametrize("ask", ["on how many days that month was it above 4.75%?", "and in percent?", "what about the 30y on that day"])
def test_a_follow_up_whose_request_was_summarized_away_is_declined(ask):
    """The maintainers' register set (v3, p3_sess_corrections): with the earlier requests gone into a digest, 'on how many days
    that month was it above 4.75%?' was read by the older rules as a count of repo_public's is_month_end flag over all the data
    (0 of 500 days). The check read follow-ups against a request over all the data, which this package leaves to them."""
    assert unseen_base(ask) is not None and unseen_base("what did I ask first?") is None


def test_docs_shown_for_a_data_question_answer_nothing_a_follow_up_can_build_on(tmp_path):
    """The maintainers' register set (p3_sess_tenors): after 'so what's the spread between them in bp?' got the docs, 'and one year
    later?' gave the 2-year on 2024-12-31 (4.28, not the spread) and 'the 30y on that day' the 30-year a year too early."""
    replies = converse(offline_model(), ["10y yield on the last trading day of 2023?", "same but for the 2-year",
                                         "so what's the spread between them in bp?", "and one year later?",
                                         "what about the 30y on that day"], fast_workspace(tmp_path))
    assert "yield_10y minus yield_curve/treasury_yields.yield_2y (value): -35.0000 bp" in replies[2], replies[2]  # two turns' gap
    assert replies[3].startswith("I can't answer that: 'and one year later?' would move both figures"), replies[3]  # never one leg
    assert replies[4].startswith("I can't answer that: 'what about the 30y on that day' builds on"), replies[4]


def test_a_period_named_with_a_possessive_is_that_period():
    """Red-team sessions (v3): "what about that month's max?" left "month's" unread, so it went to the older rules, and under v3's
    digest the chain after it ended in the minimum of all SOFR's data for 'on which day?'."""
    turn = read_turn("what about that month's max?", ["average EFFR in March 2024", "and in yen?"])
    assert turn.readings[0].stat().value == "max" and str(turn.readings[0].period.first) == "2024-03-01", turn


def test_a_day_written_in_words_then_a_unit_asked_in_a_follow_up(tmp_path):
    """Fresh sessions (nonnative-03): 'the day 2 of May 2024' left 'day' unread (the older rules loaded the row), and 'In
    millions of dollar, please' repeated the $bn figure without saying the unit was not used."""
    replies = converse(offline_model(), ["Please to give me the volume of EFFR in the day 2 of May 2024",
                                         "In millions of dollar, please"], fast_workspace(tmp_path))
    assert replies[1].startswith(f"money_markets/effr volume_bn ($bn) on 2024-05-02: {frame('effr').loc['2024-05-02', 'volume_bn'] * 1000:.4f} "
                                 "millions"), replies[1]


def test_a_follow_up_naming_what_the_data_does_not_hold_is_declined(tmp_path):
    """Fresh sessions (trap-06): 'which bank borrowed the most that day?' after EFFR's volume on a day repeated that volume:
    the older rules took 'bank' and 'borrowed' from EFFR's docs as naming EFFR, though the follow-up took EFFR from the
    request before it and those words ask for something else."""
    replies = converse(offline_model(), ["effr volume on 2024-03-15", "which bank borrowed the most that day?"], fast_workspace(tmp_path))
    assert "could not use 'bank', 'borrowed'" in replies[1] and "computed nothing" in replies[1], replies[1]


@pytest.mark.parametrize("turns,expected", [
    (["average on rrp volume in december 2023", "how many times bigger was it than in december 2024?"], "could not use 'than in december 2024'"),
    (["average sofr in 2024", "mean 2y in 2023", "Recap for the class: what did we compute first today?"],
     "The mean of money_markets/sofr was 5.1548"),
    (["what files are in this project?", "list the files again"], "analyze.py"),
    (["what was the median EFFR volume in Q3 2024?", "ok and the same median but for SOFR volume", "what did I ask first?",
      "which of those two volumes was bigger, and by how much?"],  # not SOFR's median over all the data: the two medians' gap
     "money_markets/sofr.volume_bn minus money_markets/effr.volume_bn (median): +1996.5000 $bn"),
    (["SOFR on 2024-07-03?", "what was EFFR on 2024-07-02?", "and the spread SOFR minus EFFR that day in bp"],
     "sofr_minus_effr_bp (bp) on 2024-07-02: 1.0000")])  # 'that day' was dropped: the spread over all the data
def test_older_rules_never_answer_a_nearby_question(turns, expected, tmp_path):
    """Fresh and red-team sessions: 'than in december 2024' after a December 2023 mean was dropped (the ratio of December 2024's
    last and first days was given); 'what did we compute first today?' computed the spread's latest value; 'list the files
    again' was read as a question about a note ('again')."""
    reply = converse(offline_model(), turns, fast_workspace(tmp_path))[-1]
    assert expected in reply, reply


def test_a_correction_of_year_and_day_then_that_whole_month(tmp_path):
    """Red-team sessions (rs_corrections_tenor): 'I meant 2023, the last trading day of June' after the 5y on 2024-06-28 was
    'latest 4.48 on 2024-06-28', and every later turn built on it. 'that whole month' after a day is that day's month, 'that
    year' after a month is that month's year; 'Mar–May 2024' after a 2023 request is March to May 2024, not two months apart."""
    replies = converse(offline_model(), ["2-year yield on 2024-06-28?", "no, the 5-year", "I meant 2023, the last trading day of June",
                                         "and the average 5-year over that whole month?", "in bp please", "now the 10 year, same month",
                                         "and the max that year", "avg effr Mar–May 2024"], fast_workspace(tmp_path))
    ty = frame("ty")
    assert "on 2023-06-30: 4.2600" in replies[2], replies[2]
    assert f"2023-06-01 to 2023-06-30, 21 values: mean {ty.loc['2023-06', 'yield_5y'].mean():.4f}" in replies[3], replies[3]
    assert f"mean {ty.loc['2023-06', 'yield_5y'].mean() * 100:.4f} bp" in replies[4], replies[4]
    assert f"mean {ty.loc['2023-06', 'yield_10y'].mean() * 100:.4f} bp" in replies[5], replies[5]
    assert f"2023-01-03 to 2023-12-29, 249 values: max {ty.loc['2023', 'yield_10y'].max() * 100:.4f} bp" in replies[6], replies[6]
    assert f"2024-03-01 to 2024-05-31, 65 values: mean {frame('effr').loc['2024-03':'2024-05', 'rate'].mean():.4f}" in replies[7], replies[7]


def test_a_series_alone_after_a_declined_request_that_named_periods_is_declined(tmp_path):
    """A new user's session: 'fine, sofr then' after the declined 'libor over the same quarters' was SOFR's change from the
    first quarter's first day to the last quarter's last day (the older rules). A series alone cannot say what it replaces."""
    replies = converse(offline_model(), ["how far did the 10 year fall between Q4 2023 and Q4 2024, in bp?",
                                         "ok what about libor over the same quarters", "fine, sofr then"], fast_workspace(tmp_path))
    assert replies[2].startswith("I can't answer that: 'fine, sofr then' builds on your last request"), replies[2]


def test_a_dictated_request_is_read_with_its_years_percents_and_tickers_said_in_words(tmp_path):
    """Fresh chats (redteam_chats.yaml, rc_voice_dictation): 'twenty twenty four', 'five percent', 's o f r', 'the twenty year' and
    'new years eve' were left unread, so the older rules declined 'thank' and then answered a stale request (the 2-year's March mean)."""
    effr, sofr = frame("effr").loc["2023", "rate"], frame("sofr").loc["2024", "volume_bn"]
    replies = converse(offline_model(), ["how many days in twenty twenty three was e f f r below five percent",
                                         "okay thanks um last one the highest s o f r volume in twenty twenty four and which day was that",
                                         "um what about the twenty year on new years eve twenty twenty three"], fast_workspace(tmp_path))
    assert f"{(effr < 5).sum()} of {len(effr)} days below 5%" in replies[0], replies[0]
    assert f"max {sofr.max():.4f} on {sofr.idxmax():%Y-%m-%d}" in replies[1], replies[1]
    assert replies[2].startswith("yield_curve/treasury_yields has no row for 2023-12-31 (a Sunday)") and "2023-12-29" in replies[2], replies[2]


def test_after_a_declined_turn_a_question_that_is_no_data_follow_up_is_not_declined_as_one(tmp_path):
    """Fresh chats (rc_instructor_live, rc_code_data_switch): 'what was the first question I asked today?' and 'the highest close in
    data.csv' after a declined ask were declined as building on it; the CSV's statistic then got its line count instead."""
    replies = converse(offline_model(), ["what's the 3-month bill yield on February 30, 2024 in basis points?",
                                         "Let's see if it remembers: what was the first question I asked today?",
                                         "back to the stock: what's the highest close in data.csv and on what date?",
                                         "and effr that day?"], fast_workspace(tmp_path))
    assert "February 30, 2024" in replies[1] and "builds on" not in replies[1], replies[1]
    assert replies[2].startswith("I can't compute a statistic of a CSV file's columns (data.csv)"), replies[2]
    assert replies[3].startswith("I can't answer that: 'that day' is the period of an earlier request, and I see none I answered"), replies[3]


def test_a_correction_with_i_meant_takes_the_period_after_it(tmp_path):
    """Fresh chats (rc_voice_dictation): 'wait no i said march i meant april' was read as a comparison of March and April by the
    new reader, and by the older rules as a note ('I can't see that you told me that')."""
    replies = converse(offline_model(), ["what was the average ten year treasury yield in march 2024", "and the two year same month",
                                         "wait no i said march i meant april sorry april twenty twenty four"], fast_workspace(tmp_path))
    april = frame("ty").loc["2024-04", "yield_2y"]
    assert replies[2].startswith(f"yield_curve/treasury_yields yield_2y (percent), 2024-04-01 to 2024-04-30, {len(april)} values: mean "
                                 f"{april.mean():.4f}."), replies[2]


def test_a_turn_the_older_rules_answered_leaves_the_state_to_them_and_a_decline_says_its_true_reason():
    """Fresh chats (rc_instructor_live, v3): after 'the median 20-year yield in the second quarter of 2023' (read by the older rules),
    'how much did the 20-year move over that quarter' was declined as having no answered request; under v3's digests, 'what was sofa on
    july third' and a follow-up of a declined turn were declined as 'summarized away'."""
    assert read_turn("how much did the 20-year move over that quarter?", ["the median 20-year yield in Q2 2023 por favor"]).readings is None
    assert "I could not use 'sofa'" in unseen_base("okay what was sofa on july third 2024").reason
    assert "builds on your last request, which I could not answer" in unseen_base("and in 2024?", after_declined=True).reason
    assert "summarized away" in unseen_base("and in 2024?").reason


def test_two_periods_compared_by_a_ratio_or_a_percent_are_each_periods_mean_then_their_ratio_or_change(tmp_path):
    """Fresh registers (fresh_registers2.yaml ratio-02, ratio-03): 'how many times bigger ... in December 2024 than in January 2023'
    gave each month's latest / first; 'by what percentage did it shrink from its 2023 average to its 2024 average' gave each year's
    own percent change and their difference."""
    sofr, rrp = frame("sofr")["volume_bn"], frame("repo")["on_rrp_volume_bn"]
    replies = converse(offline_model(), ["How many times bigger was the average SOFR volume in December 2024 than in January 2023?",
                                         "By what percentage did ON RRP take-up shrink from its 2023 average to its 2024 average?"],
                       fast_workspace(tmp_path))
    assert f"is {sofr.loc['2024-12'].mean() / sofr.loc['2023-01'].mean():.4f} times the second's" in replies[0], replies[0]
    assert "latest / first" not in replies[0], replies[0]
    assert f"({(rrp.loc['2024'].mean() / rrp.loc['2023'].mean() - 1) * 100:+.4f}%)" in replies[1] and "percent change" not in replies[1], replies[1]


def test_a_learners_english_and_a_spread_written_as_two_tenors_are_read_as_meant(tmp_path):
    """Fresh registers (nonnative-06) and a probe of it: 'How much days ... was negative' gave the spread's mean, min and max; 'the 10y
    minus 3m spread' gave the 10y-2y spread column minus the 10y-3m one (0 of 251 days)."""
    ty = frame("ty").loc["2024"]
    negative = int((ty["yield_10y"] - ty["yield_3m"] < 0).sum())
    for number, ask in enumerate(["How much days the curve of 10 years less 3 months was negative in 2024?",
                                  "how many days was the 10y minus 3m spread negative in 2024"]):
        reply = converse(offline_model(), [ask], fast_workspace(tmp_path / str(number)))[0]
        assert f"{negative} of {len(ty)} days" in reply and "spread_10y_2y_bp" not in reply, reply


def test_a_long_chatty_message_and_a_second_ask_over_the_same_year_are_not_read_as_other_asks(tmp_path):
    """Fresh registers (long-01, long-02): a coffee machine that 'broke' in a long data message ran the demo project's tests; 'the same
    year' of the first ask in the same message was declined as an earlier request's period."""
    replies = converse(offline_model(), [
        "Hi there! Mine has been a blur of meetings, and the coffee machine on our floor broke again, so apologies if this rambles. "
        "I'm putting together a short note for my team. Could you tell me the average 2-year Treasury yield for 2024?",
        "Good afternoon! Two things. What was the median SOFR volume in 2024? And what was the average 3-month LIBOR over the same year?"],
        fast_workspace(tmp_path))
    assert "tests failed" not in replies[0] and "test_volatility" not in replies[0], replies[0]
    assert f"median {frame('sofr').loc['2024', 'volume_bn'].median():.4f}" in replies[1] and "I see none I answered" not in replies[1], replies[1]


def test_demo_project_asks_in_a_students_words(tmp_path):
    """Fresh registers (demo-02, demo-06, session-07): 'how many checks pass and which ones fail?' named one failing test (its name
    holds 'stock'); ACME's dividend yield got a file listing; 'if that's fixed, what vol should the report print?' ran the report with
    annualized_volatility given report() and printed a TypeError."""
    replies = converse(offline_model(), ["In the demo stock project, how many of the checks in test_analyze.py pass right now, and which ones fail?",
                                         "In the demo project, what's ACME's dividend yield?"], fast_workspace(tmp_path))
    assert replies[0].startswith("2 tests failed") and "one_percent" in replies[0] and "for_a_stock" in replies[0], replies[0]
    assert replies[1].startswith("I can't compute a dividend yield"), replies[1]
    replies = converse(offline_model(), ["can you look at the demo stock project and tell me why the volatility test fails?",
                                         "if that's fixed, roughly what vol should the report print?"], fast_workspace(tmp_path / "again"))
    assert "given daily_returns(its input)" in replies[1] and "Annualized volatility:  25.0%" in replies[1], replies[1]


def test_without_a_memory_tool_a_correction_is_a_note_and_a_recalled_figure_is_of_the_subject_asked(tmp_path):
    """Fresh v3 sessions run under v2 (redteam_v3tools.yaml rv_reviewer_false_claims, rv_teacher_plan_change): 'Correction: the
    deadline is 22 March, not 15 March.' was not kept, so 'when is the deadline?' gave only 15 March; 'what was the reserves figure
    again?' gave the ON RRP median (the only figure in view)."""
    replies = converse(offline_model(), ["Correction: the deadline is 22 March, not 15 March.", "So when is the deadline?"],
                       fast_workspace(tmp_path / "notes"))
    assert replies[0].startswith('Noted: "Correction: the deadline is 22 March') and "22 March" in replies[1], replies
    replies = converse(offline_model(), ["what was the median ON RRP volume in 2024?", "What was the reserves figure again, in trillions?"],
                       fast_workspace(tmp_path / "recall"))
    assert "415.3" not in replies[1] and replies[1].startswith("I don't know"), replies[1]
    replies = converse(offline_model(), ["Please you remember: my bank use only the 5 year tenor.",  # rv_nonnative_tenor
                                         "Sorry, I make mistake: my bank use the 7 year, not 5 year.", "Which tenor my bank use?"],
                       fast_workspace(tmp_path / "tenor"))
    assert "my bank use the 7 year" in replies[2], replies[2]


def test_a_question_about_a_helper_is_never_answered_from_another_request(tmp_path):
    """Fresh chats (redteam_chats.yaml rc_v3_todos_memory under v2): 'what did the helper find for the 20y?' with no helper run was
    read as a hand-over and gave the 20-year over all the data."""
    replies = converse(offline_model(), ["what was the max 20y in 2023?", "what did the helper find for the 20y?"], fast_workspace(tmp_path))
    assert replies[1].startswith("I have no sub-agent tool here, so no sub-agent has run"), replies[1]


@pytest.mark.parametrize("ask,counted", [
    ("was the 30-year average above or below the 10-year in 2024, and by how many bp?", False),
    ("in 2024 did the 20-year sit above or under the 10-year on average?", False),
    ("how many days in 2024 was the 30-year above the 10-year?", True),
    ("did the 2-year ever go above the 10-year in 2024?", True)])
def test_a_tenor_after_a_comparison_is_a_series_never_a_threshold(ask, counted, tmp_path):
    """fresh_registers2 ratio-01 and the chats: 'above the 10-year' read '10' as a threshold (0 of 251 days above 10%)."""
    ty = frame("ty").loc["2024"]
    reply = converse(offline_model(), [ask], fast_workspace(tmp_path))[-1]
    assert "10%" not in reply and "above 10" not in reply, reply
    longer = "yield_2y" if "2-year" in ask else "yield_20y" if "20-year" in ask else "yield_30y"
    gap = ty[longer] - ty["yield_10y"]
    if counted:
        assert f"{(gap > 0).sum()} of {len(gap)} days" in reply, reply
    elif "sit" in ask:  # a verb the readers do not know: an honest decline is fine, a threshold is not
        assert "computed nothing" in reply or f"mean {gap.mean():.4f}" in reply, reply
    else:
        assert f"mean {gap.mean():.4f} ({gap.mean() * 100:.4f} bp)" in reply, reply


@pytest.mark.parametrize("turns", [["hello there", "same thing for sofr"], ["average effr over all the data", "the whole year"],
                                   ["mean tgcr", "and the full month?"], ["the 5y average in 2023", "the whole month"]])
def test_a_period_of_an_earlier_request_that_has_none_is_declined_never_all_the_data(turns, tmp_path):
    """redteam_chats2 (v3, v2): 'Whole year.', 'Fed funds effective, same quarter.' and 'Same for SOFR.' with no period in view were
    answered over all the data ('no period was given')."""
    reply = converse(offline_model(), turns, fast_workspace(tmp_path))[-1]
    assert ("computed nothing" in reply or "can't answer" in reply) and "values:" not in reply, reply


def test_a_reply_length_asked_is_no_qualifier(tmp_path):
    """redteam_chats2 manager: 'One line please: average 10-year Treasury yield, 2024.' was declined naming 'line'."""
    reply = converse(offline_model(), ["in one line: the median sofr in 2023", "same for effr, briefly"], fast_workspace(tmp_path))
    assert "median 5.0700" in reply[0] and f"median {frame('effr').loc['2023', 'rate'].median():.4f}" in reply[1], reply


def test_a_high_or_low_asked_is_that_statistic_and_a_week_of_a_year_is_that_week(tmp_path):
    """redteam_chats2: 'Then give me the 20-year's high too.' loaded the last 20 rows ('give me' read as a load, 'high' as nothing);
    'sofr's rate ... for every day in the first week of 2024' gave all of 2024 and no rows."""
    ty, sofr = frame("ty"), frame("sofr")
    replies = converse(offline_model(), ["could you give me the 7-year low", "the average effr in the last two weeks of 2023",
                                         "show me the sofr rate on every day of the first week of 2024"], fast_workspace(tmp_path))
    assert f"min {ty['yield_7y'].min():.4f}" in replies[0] and "Loaded" not in replies[0], replies[0]
    assert f"mean {frame('effr').loc['2023-12-18':'2023-12-31', 'rate'].mean():.4f}" in replies[1], replies[1]
    week = sofr.loc["2024-01-01":"2024-01-07", "rate"]
    assert "2024-01-02 to 2024-01-05" in replies[2] and all(f"{day:%Y-%m-%d},{value}" in replies[2] for day, value in week.items()), replies[2]


@pytest.mark.parametrize("ask", ["Please explain why SOFR jumped at the end of September 2023.",
                                 "ok so why was the curve inverted for most of 2023?", "what caused the 2-year to fall in August 2024?"])
def test_a_cause_asked_of_the_data_is_declined_never_a_figure_or_the_catalog(ask, tmp_path):
    """redteam_chats2 homework: 'explain why the yield curve was inverted in mid-2023' listed 3 of the 5 dataframes as 'the catalog';
    fresh_sessions3: 'why was it so high?' asked which target_high column was meant."""
    reply = converse(offline_model(), ["average sofr in 2024", ask], fast_workspace(tmp_path))[-1]
    assert reply.startswith("I can't say why") and "values:" not in reply and "catalog has" not in reply, reply


def test_after_a_cause_is_declined_a_follow_up_takes_its_series_and_period(tmp_path):
    """fresh_sessions3 sess-06 / ad-05: the why-question's series and period are no problem; only the cause is."""
    reply = converse(offline_model(), ["what caused the 5-year to climb in April 2024?", "fine, just its highest close that month then"],
                     fast_workspace(tmp_path))[-1]
    assert f"max {frame('ty').loc['2024-04', 'yield_5y'].max():.4f}" in reply and "2024-04-01 to 2024-04-30" in reply, reply


def test_a_learners_more_low_is_the_lowest_and_the_value_of_a_series_is_its_main_column(tmp_path):
    """fresh_registers3 learner-03: 'the value more low of the EFFR' gave target_low's figures; 'the value ... of the sofr' took
    index_value (the word 'value' outweighed the main column)."""
    replies = converse(offline_model(), ["what is the value most low of the effr in the first half of 2024?",
                                         "and the value more high of sofr in that period?"], fast_workspace(tmp_path))
    effr, sofr = frame("effr").loc["2024-01":"2024-06", "rate"], frame("sofr").loc["2024-01":"2024-06", "rate"]
    assert "effr rate (percent)" in replies[0] and f"min {effr.min():.4f}" in replies[0], replies[0]
    assert "sofr rate (percent)" in replies[1] and f"max {sofr.max():.4f}" in replies[1], replies[1]


def test_demo_project_code_questions_name_the_line_and_run_a_quoted_call(tmp_path):
    """redteam_chats2: 'what line would I change to fix the volatility' said it could not find the function; 'which function computes
    the total return?' gave daily_returns; 'what does moving_average([2, 4, 6, 8, 10], window=3) return?' showed the source."""
    replies = converse(offline_model(), ["in the demo project, which line should I change to fix the volatility?",
                                         "which function of analyze.py works out the total return?",
                                         "what would moving_average([1, 2, 3, 4], window=2) give me?", "and daily_returns([50.0, 55.0])?"],
                       fast_workspace(tmp_path))
    assert "analyze.annualized_volatility" in replies[0] and "daily_returns(prices)" in replies[0], replies[0]
    assert replies[1].startswith("report in analyze.py") and "total_return = prices[-1] / prices[0] - 1" in replies[1], replies[1]
    assert "returns [1.5, 2.5, 3.5]" in replies[2], replies[2]
    assert f"returns [{55.0 / 50.0 - 1!r}]" in replies[3], replies[3]


@pytest.mark.parametrize("doubt", ["are you sure?", "That can't be right, check again.", "that's wrong, recompute", "hmm, do it again"])
def test_a_doubted_figure_is_computed_again_never_declined_as_a_new_ask(doubt, tmp_path):
    """redteam_chats2 arguer: 'That can't be right, check again.' was declined naming 'right'; 'that's wrong, recompute' was read
    as a question about the demo project's functions."""
    reply = converse(offline_model(), ["median effr in the second half of 2023", doubt], fast_workspace(tmp_path))[-1]
    assert f"median {frame('effr').loc['2023-07':'2023-12', 'rate'].median():.4f}" in reply, reply


def test_a_year_written_before_its_half_a_month_range_and_a_number_that_names_no_column(tmp_path):
    """fresh_registers4: '2023, first half: effr, median' gave the whole year's median (the half was taken and dropped);
    '=MEDIAN(effr volume, Jan-2024:Jun-2024)' gave each month's median and their change; 'Question 1: what was the average EFFR
    in 2023?' gave percentile_1's mean."""
    effr = frame("effr")
    replies = converse(offline_model(), ["2024, second half -- sofr, max", "median effr volume, feb-2024:apr-2024",
                                         "Question 25: what was the mean effr in 2024?"], fast_workspace(tmp_path))
    assert f"max {frame('sofr').loc['2024-07':'2024-12', 'rate'].max():.4f}" in replies[0] and "2024-07-01" in replies[0], replies[0]
    assert f"median {effr.loc['2024-02':'2024-04', 'volume_bn'].median():.4f}" in replies[1] and "changed" not in replies[1], replies[1]
    assert "percentile_25" not in replies[2] and ("computed nothing" in replies[2] or f"mean {effr.loc['2024', 'rate'].mean():.4f}" in
                                                 replies[2]), replies[2]


def test_which_series_was_used_is_answered_from_the_last_call(tmp_path):
    """redteam_chats2 what_did_you_do / arguer: 'which series did you use?' got the help text."""
    reply = converse(offline_model(), ["What was the lowest 7-year yield in 2024?", "what data did you use for that?"], fast_workspace(tmp_path))[-1]
    assert reply.startswith("The last thing I did was call") and "yield_curve/treasury_yields.yield_7y" in reply, reply


def test_two_doubts_in_one_message_recompute_once(tmp_path):
    """A chat: 'are you sure? check again' was declined naming 'sure' and 'check' (each half alone was recomputed)."""
    reply = converse(offline_model(), ["the lowest 5-year yield in 2023", "you sure?? double check"], fast_workspace(tmp_path))[-1]
    expected = f"min {frame('ty').loc['2023', 'yield_5y'].min():.4f}"
    assert reply.count(expected) == 1 and "could not use" not in reply, reply


@pytest.mark.parametrize("label", ["Exercise 4, part b:", "Q12, sent in by Priya:", "Homework problem 2 asks:"])
def test_a_label_numbering_the_ask_is_not_part_of_it(label, tmp_path):
    """fresh_registers3/4: 'Question 7, part a:', 'Problem 3 reads:', 'Q9, from our listener Dave:' were declined naming the label."""
    reply = converse(offline_model(), [f"{label} what was the highest effr in 2023?"], fast_workspace(tmp_path))[-1]
    assert f"max {frame('effr').loc['2023', 'rate'].max():.4f}" in reply, reply


def test_a_label_never_takes_a_year_or_an_unknown_lower_case_word_with_it(tmp_path):
    """A colon heading that holds a year or a qualifier is part of the ask: never dropped to answer a nearby question."""
    replies = converse(offline_model(), ["Question 3, 2023: what was the mean sofr?", "Question 3, trimmed: what was the mean sofr in 2023?"],
                       fast_workspace(tmp_path))
    assert "2024" not in replies[0] and ("computed nothing" in replies[0] or "2023-01-03 to 2023-12-29" in replies[0]), replies[0]
    assert "computed nothing" in replies[1] and "trimmed" in replies[1], replies[1]


def test_a_threshold_said_in_words_with_a_fraction(tmp_path):
    """fresh_registers4: 'more than five and a quarter percent' was declined as 'five' not being a column."""
    sofr = frame("sofr").loc["2024", "rate"]
    reply = converse(offline_model(), ["days with sofr below five and three quarters percent in 2024"], fast_workspace(tmp_path))[-1]
    assert f"{(sofr < 5.75).sum()} of {len(sofr)} days below 5.75%" in reply, reply


def test_a_name_in_backticks_is_a_name_and_a_declined_piece_never_crashes_the_next(tmp_path):
    """fresh_registers5: '@databot avg `sofr` in 2023?' ran `sofr` as Python (NameError); a message whose first piece was declined
    and whose second named its own series hit "'Decline' object has no attribute 'period'"."""
    replies = converse(offline_model(), ["what was the min `yield_30y` in 2023?", "@bot avg `estr` in 2024?",
                                         "> anyone?\n\n@bot can you do jo's q? `yield_2y`, calendar 2023, the min"], fast_workspace(tmp_path))
    assert f"min {frame('ty').loc['2023', 'yield_30y'].min():.4f}" in replies[0] and "NameError" not in replies[0], replies[0]
    assert "estr" in replies[1].lower() and "Error" not in replies[1] and "computed nothing" in replies[1], replies[1]
    assert "internal error" not in replies[2] and "Error" not in replies[2], replies[2]


def test_rounding_asked_with_the_ask_or_after_it_is_applied(tmp_path):
    """fresh_registers5: 'round that to the nearest whole number' repeated 5.1797; 'to 2 decimals' gave 4 decimals."""
    ty = frame("ty")
    replies = converse(offline_model(), ["mean 7-year yield in 2023 to 1 decimal", "and 2024, 3dp", "round it to a whole number",
                                         "the 7-year average in 2024 as a decimal"], fast_workspace(tmp_path))
    assert f"mean {ty.loc['2023', 'yield_7y'].mean():.1f}." in replies[0], replies[0]
    assert f"mean {ty.loc['2024', 'yield_7y'].mean():.3f}." in replies[1], replies[1]
    assert f"mean {ty.loc['2024', 'yield_7y'].mean():.0f}." in replies[2], replies[2]
    assert f"{ty.loc['2024', 'yield_7y'].mean() / 100:.6f}" in replies[3], replies[3]


def test_a_gap_to_a_threshold_is_never_answered_with_a_count_of_days(tmp_path):
    """fresh_registers5: 'By how many basis points over 5% did EFFR average in 2023?' gave '164 of 249 days above 5%'."""
    reply = converse(offline_model(), ["how many bp above 4% was the 2-year on average in 2024"], fast_workspace(tmp_path))[-1]
    assert "days above" not in reply and "computed nothing" in reply, reply


def test_a_chain_of_relative_periods_moves_from_the_last_answer(tmp_path):
    """fresh_sessions4 rp-01 / rp-04: 'and the month after that' repeated April; 'and a week after that day' moved from the first day,
    not from the same day a year earlier."""
    repo, sofr = frame("repo"), frame("sofr")
    replies = converse(offline_model(), ["mean reserves in june 2024", "the month before", "and the month before that"],
                       fast_workspace(tmp_path / "months"))
    assert f"mean {repo.loc['2024-05', 'reserves_bn'].mean():.4f}" in replies[1], replies[1]
    assert f"mean {repo.loc['2024-04', 'reserves_bn'].mean():.4f}" in replies[2], replies[2]
    replies = converse(offline_model(), ["sofr on 2024-05-15", "same day one year earlier", "then two days after that"],
                       fast_workspace(tmp_path / "days"))
    assert "2023-05-15" in replies[1] and f"{sofr.loc['2023-05-15', 'rate']:.4f}" in replies[1], replies[1]
    assert "2023-05-17" in replies[2] and f"{sofr.loc['2023-05-17', 'rate']:.4f}" in replies[2], replies[2]


def test_a_week_a_year_earlier_keeps_its_weekdays(tmp_path):
    """fresh_sessions4 rp-02: 'the same week a year earlier' got the help text; a year's calendar move would start on a weekend."""
    sofr = frame("sofr")
    replies = converse(offline_model(), ["median sofr from 2024-06-10 to 2024-06-14", "the same week a year earlier"], fast_workspace(tmp_path))
    assert "2023-06-12 to 2023-06-16" in replies[1] and f"median {sofr.loc['2023-06-12':'2023-06-16', 'rate'].median():.4f}" in replies[1]


def test_a_range_of_days_written_with_a_dash_or_its_year_once(tmp_path):
    """fresh_sessions4 rg-03: 'tgcr average, 16 Sep 2024 - 31 Oct 2024' gave the two days' values, and 'and the median' the last day's;
    redteam_chats3: 'SOFR average, 11 Nov to 15 Nov 2024' was declined naming '11', 'nov'."""
    repo = frame("repo")
    replies = converse(offline_model(), ["bgcr mean, 2 Jul 2024 - 15 Aug 2024", "and the median", "bgcr max, 3 Jun thru 7 Jun 2024",
                                         "bgcr on 3 June and 4 June 2024"], fast_workspace(tmp_path))
    assert f"mean {repo.loc['2024-07-02':'2024-08-15', 'bgcr'].mean():.4f}" in replies[0], replies[0]
    assert f"median {repo.loc['2024-07-02':'2024-08-15', 'bgcr'].median():.4f}" in replies[1], replies[1]
    assert f"max {repo.loc['2024-06-03':'2024-06-07', 'bgcr'].max():.4f}" in replies[2], replies[2]
    assert all(f"on 2024-06-0{day}: {repo.loc[f'2024-06-0{day}', 'bgcr']:.4f}" in replies[3] for day in (3, 4)), replies[3]


@pytest.mark.parametrize("aside", ["k", "kk thx", "brb", "back.", "morning!", "hmm"])
def test_an_aside_between_asks_is_no_request_and_keeps_the_chain(aside, tmp_path):
    """fresh_sessions4 / redteam_chats3: 'k', 'brb', 'hmm', 'morning!' were declined as unknown words or read as qualifiers."""
    replies = converse(offline_model(), ["max 3-month bill yield in 2023", aside, "and in 2024?"], fast_workspace(tmp_path))
    assert "could not use" not in replies[1] and "computed nothing" not in replies[1], replies[1]
    assert f"max {frame('ty').loc['2024', 'yield_3m'].max():.4f}" in replies[2], replies[2]


def test_a_high_or_low_held_on_several_days_says_so(tmp_path):
    """redteam_chats3 bullets 4 / fresh_sessions4 ch-01: 'min 3187.0000 on 2024-12-11' named one of five days that held it."""
    effr = frame("effr").loc["2024-05", "rate"]
    reply = converse(offline_model(), ["highest effr in may 2024"], fast_workspace(tmp_path))[-1]
    assert f"(the first of {int((effr == effr.max()).sum())} days at that value)" in reply, reply


def test_a_figure_from_another_conversation_is_never_this_ones(tmp_path):
    """fresh_sessions4 tr-05: 'how does it compare with the figure you told me yesterday?' quoted this session's figure as yesterday's."""
    replies = converse(offline_model(), ["median sofr in 2023", "is that the same number you gave me last time?",
                                         "what did you tell me this morning about effr?"], fast_workspace(tmp_path))
    assert all("other conversations" in reply and "5.0" not in reply for reply in replies[1:]), replies


def test_two_answers_set_side_by_side_give_both_figures_and_their_gap(tmp_path):
    """fresh_sessions4 cm-01/cm-02/cm-03: 'how does that compare to the first figure?' restated one figure; 'which is higher, and by how
    much?' and 'the gap between the two?' got the help text."""
    ty = frame("ty")
    one, two = ty.loc["2023-06", "yield_5y"].mean(), ty.loc["2024-06", "yield_5y"].mean()
    replies = converse(offline_model(), ["average 5-year yield in june 2023", "same for june 2024", "so which one was bigger, and by how much?",
                                         "and the 7-year over june 2024", "what's the difference between the last two?"], fast_workspace(tmp_path))
    assert f"mean {one:.4f}" in replies[2] and f"mean {two:.4f}" in replies[2] and f"{two - one:+.4f}" in replies[2], replies[2]
    seven = ty.loc["2024-06", "yield_7y"].mean()
    assert f"yield_7y minus yield_curve/treasury_yields.yield_5y (mean): {seven - two:+.4f}" in replies[4], replies[4]


def test_going_back_to_an_earlier_answer_builds_on_it(tmp_path):
    """fresh_sessions4 gb-01/gb-02/gb-04: 'ok go back to the first one, but the median' and 'back to the first series, Q2 please'
    were declined naming 'back'; 'what was the one before that again?' said it could not see it."""
    repo = frame("repo")
    replies = converse(offline_model(), ["tgcr mean in 2024", "and bgcr", "back to the first one, the max", "what was the one before that again?"],
                       fast_workspace(tmp_path))
    assert f"tgcr (percent), 2024-01-02 to 2024-12-31, 251 values: max {repo.loc['2024', 'tgcr'].max():.4f}" in replies[2], replies[2]
    assert f"bgcr (percent), 2024-01-02 to 2024-12-31, 251 values: mean {repo.loc['2024', 'bgcr'].mean():.4f}" in replies[3], replies[3]


def test_a_bare_day_of_the_month_after_a_day_is_that_day_of_its_month(tmp_path):
    """fresh_sessions4 gb-03 / redteam_chats3 smalltalk: 'and the 16th' / 'and the 19th?' after one day asked which column."""
    effr = frame("effr")
    replies = converse(offline_model(), ["effr on 2023-11-14", "and the 16th?", "the 31st"], fast_workspace(tmp_path))
    assert f"on 2023-11-16: {effr.loc['2023-11-16', 'rate']:.4f}" in replies[1], replies[1]
    assert "no 31st" in replies[2] and "computed nothing" not in replies[2][:0], replies[2]


def test_a_possessive_tenor_and_a_leap_day_moved_a_year(tmp_path):
    """fresh_sessions4 ts-02: "the 3-year's min in H2?" was declined naming 's'; 'now change just the year' on February 2024 lost the month."""
    ty, sofr = frame("ty"), frame("sofr")
    replies = converse(offline_model(), ["min 20-year yield in H1 2024", "the 5-year's max in H2?", "median sofr feb 2024",
                                         "now change just the year, 2023"], fast_workspace(tmp_path))
    assert f"max {ty.loc['2024-07':'2024-12', 'yield_5y'].max():.4f}" in replies[1], replies[1]
    assert f"median {sofr.loc['2023-02', 'rate'].median():.4f}" in replies[3] and "2023-02-28" in replies[3], replies[3]


def test_an_emails_greeting_and_sign_off_and_chat_mentions_are_not_the_ask(tmp_path):
    """fresh_registers5 mail-02 / sess-03 / slack-01: the sign-off ('Kind regards, Priya Shah') and 'cc @maria :pray:' made a second
    piece declined as 'it builds on the ask before it'; 'send' and '@databot' were named as unread."""
    sofr = frame("sofr")
    replies = converse(offline_model(), ["Hello Sam,\n\nCould you send over the max SOFR volume in 2023?\n\nBest regards,\nJo Park\nRisk",
                                         "@ratesbot :wave: min `sofr` in Q3 2024? cc @lee :thumbsup:"], fast_workspace(tmp_path))
    assert f"max {sofr.loc['2023', 'volume_bn'].max():.4f}" in replies[0] and "builds on" not in replies[0], replies[0]
    assert f"min {sofr.loc['2024-07':'2024-09', 'rate'].min():.4f}" in replies[1] and "builds on" not in replies[1], replies[1]


@pytest.mark.parametrize(("ask", "stat", "quoted"), [
    ("a student of mine says the 2024 median SOFR was 5.33, right?", "median", 5.33),
    ("my answer for the lowest 2-year yield in 2023 was 3.77, correct?", "min", 3.77),
    ("student B wrote the 2023 mean effr as 5.1 - true?", "mean", 5.1),
])
def test_a_figure_quoted_to_check_is_answered_and_checked(ask, stat, quoted, tmp_path):
    """redteam_chats3 TA session: 'a student says the 2023 median EFFR was 5.33, right?' was declined naming 'student', 'says', '5.33'."""
    frames = {"SOFR": ("sofr", "rate", "2024"), "2-year": ("ty", "yield_2y", "2023"), "effr": ("effr", "rate", "2023")}
    name, column, year = next(value for key, value in frames.items() if key in ask)
    values = frame(name).loc[year, column]
    truth = {"median": values.median(), "min": values.min(), "mean": values.mean()}[stat]
    reply = converse(offline_model(), [ask], fast_workspace(tmp_path))[-1]
    places = len(f"{quoted:g}".partition(".")[2])
    assert f"{stat} {truth:.4f}" in reply and f"You quoted {quoted:g}" in reply, reply
    assert ("that is right" in reply) == (round(truth, places) == quoted), reply


def test_a_quoted_figure_is_never_carried_to_a_follow_up(tmp_path):
    replies = converse(offline_model(), ["a student says the 2024 max 10y was 4.8, right?", "and in 2023?"], fast_workspace(tmp_path))
    assert "You quoted" in replies[0] and "You quoted" not in replies[1], replies


def test_a_count_asked_as_a_share_of_the_days_keeps_its_condition(tmp_path):
    """fresh_registers6 sess-12: 'As a percent of the trading days, please.' after a count gave 'count 251' (the threshold dropped)."""
    ty = frame("ty").loc["2023", "yield_10y"]
    above = int((ty > 4.2).sum())
    replies = converse(offline_model(), ["on how many days in 2023 was the 10y above 4.2%?", "and as a share of the days?"],
                       fast_workspace(tmp_path))
    assert f"{above} of {len(ty)} days above 4.2% ({100 * above / len(ty):.2f}% of the days)" in replies[1], replies[1]


def test_a_day_of_the_month_after_a_month_and_asides_about_the_askers_day(tmp_path):
    """fresh_registers6 sess-06 / pm-01 / cur-03: 'what about on the 3rd' after May 2024 was declined naming '3rd'; 'Just the number,
    I'm walking into a meeting.' was declined as an event no column dates; 'no decimals' was unread."""
    repo = frame("repo")
    replies = converse(offline_model(), ["median bgcr in october 2024", "what about on the 8th", "Get me the average TGA in 2024, "
                                         "no decimals. Just the number, I'm in a meeting."], fast_workspace(tmp_path))
    assert f"on 2024-10-08: {repo.loc['2024-10-08', 'bgcr']:.4f}" in replies[1], replies[1]
    assert f"mean {repo.loc['2024', 'tga_bn'].mean():.0f}." in replies[2] and "event" not in replies[2], replies[2]


def test_the_next_day_past_a_weekend_or_holiday_says_which_day_it_took(tmp_path):
    """fresh_sessions4 ad-03 / tr-08: 'and the next day?' after a Friday gave Monday's value without saying Saturday has no row."""
    sofr = frame("sofr")
    replies = converse(offline_model(), ["sofr on 2024-06-28", "and the next day?", "and the day before that?"], fast_workspace(tmp_path))
    assert f"on 2024-07-01, the first day with a row on or after 2024-06-29: {sofr.loc['2024-07-01', 'rate']:.4f}" in replies[1], replies[1]
    assert f"on 2024-06-28, the last day with a row on or before 2024-06-30: {sofr.loc['2024-06-28', 'rate']:.4f}" in replies[2], replies[2]


def test_a_dollar_amount_is_never_a_threshold_of_a_rate(tmp_path):
    """fresh_registers6 cur-02 (after this stop's own change): 'the ON RRP balance above $1,000,000,000,000' gave on_rrp_rate's
    '0 of 249 days above 1e+12%'."""
    reply = converse(offline_model(), ["How many days in 2024 was the reverse repo balance above $500,000,000,000?"], fast_workspace(tmp_path))[-1]
    assert "on_rrp_rate" not in reply and "e+" not in reply, reply


def test_an_answer_to_the_models_own_question_completes_the_request_it_asked_about(tmp_path):
    """fresh_registers7 sess-01 / fresh_sessions5 cq-05: 'the sofr one' or '10s2s' after 'Which one do you mean?' was declined as building
    on a request never answered, and the turn after it lost the period ('yes that one. and the minimum?' gave all the data's low)."""
    effr, ty = frame("effr"), frame("ty")
    replies = converse(offline_model(), ["What was the lowest volume in 2023?", "the effr one", "and in 2024?"], fast_workspace(tmp_path / "a"))
    replies += converse(offline_model(), ["mean spread over H2 2023", "the 10s/2s one", "right, and the max?"], fast_workspace(tmp_path / "b"))
    assert replies[0].startswith("Which"), replies[0]
    assert f"volume_bn ($bn), 2023-01-03 to 2023-12-29, {len(effr.loc['2023'])} values: min {effr.loc['2023', 'volume_bn'].min():.4f}" \
        in replies[1], replies[1]
    assert f"min {effr.loc['2024', 'volume_bn'].min():.4f}" in replies[2] and "money_markets/effr" in replies[2], replies[2]
    spread = ty.loc["2023-07":"2023-12", "spread_10y_2y_bp"]
    assert replies[3].startswith("Which") and f"mean {spread.mean():.4f}" in replies[4] and f"max {spread.max():.4f}" in replies[5], replies[3:]


def test_a_series_alone_or_a_change_said_with_but_or_again_keeps_the_last_period(tmp_path):
    """fresh_registers7 sess-12 / fresh_sessions5 sw-02: 'and sfor' (two letters swapped), '2y?' and '10y again but the min' went to the
    older rules, which took all the data instead of the period just asked."""
    ty, sofr = frame("ty").loc["2024-07":"2024-09"], frame("sofr")
    replies = converse(offline_model(), ["highest 5y yield in Q3 2024", "30y?", "the 5y again, but the lowest", "median efrf in march 2024",
                                         "and sfor"], fast_workspace(tmp_path))
    assert f"max {ty['yield_30y'].max():.4f}" in replies[1] and "2024-07-01 to 2024-09-30" in replies[1], replies[1]
    assert f"min {ty['yield_5y'].min():.4f}" in replies[2] and "no period was given" not in replies[2], replies[2]
    assert f"median {sofr.loc['2024-03', 'rate'].median():.4f}" in replies[4] and "money_markets/sofr" in replies[4], replies[4]


def test_back_to_a_series_the_edges_of_a_period_and_one_statistic_for_two_series(tmp_path):
    """fresh_sessions5 sw-01 / sp-01 / sp-02 / cq-04: 'back to effr, Q2' was declined naming 'back'; 'what was it at the start of that period?'
    gave the first message back as the goal and 'and at the end?' the mean again; '2y and 10y average in 2023' left the 2y for the older rules."""
    sofr, repo, ty = frame("sofr"), frame("repo"), frame("ty").loc["2024-01":"2024-06"]
    replies = converse(offline_model(), ["sofr median Q3 2024", "and effr?", "back to sofr, Q4", "mean bgcr in Oct 2024",
                                         "what was it at the beginning of that month?", "and at the close?", "5y and 7y median in H1 2024",
                                         "the first one, but the max"], fast_workspace(tmp_path))
    assert f"median {sofr.loc['2024-10':'2024-12', 'rate'].median():.4f}" in replies[2] and "money_markets/sofr" in replies[2], replies[2]
    october = repo.loc["2024-10", "bgcr"]
    assert f"on {october.index[0].date()}: {october.iloc[0]:.4f}" in replies[4], replies[4]
    assert f"on {october.index[-1].date()}: {october.iloc[-1]:.4f}" in replies[5], replies[5]
    assert f"median {ty['yield_5y'].median():.4f}" in replies[6] and f"median {ty['yield_7y'].median():.4f}" in replies[6], replies[6]
    assert f"max {ty['yield_5y'].max():.4f}" in replies[7] and "yield_5y" in replies[7], replies[7]


def test_a_threshold_in_dollars_is_read_in_billions_or_declined_against_a_rate(tmp_path):
    """fresh_registers7 (found while fixing it): '$500,000,000,000' on a $bn column gave '0 of 251 days above 5e+11 $bn', and 'sofr above $5bn'
    gave '181 of 251 days above 5%' (the unit dropped)."""
    volume = frame("repo").loc["2024", "on_rrp_volume_bn"]
    replies = converse(offline_model(), ["How many days in 2024 was the reverse repo balance above $400,000,000,000?",
                                         "days in 2024 with effr above $5bn", "How many firms used the ON RRP on 2024-05-01?"],
                       fast_workspace(tmp_path))
    assert f"{int((volume > 400).sum())} of {len(volume)} days above 400 $bn" in replies[0], replies[0]
    assert "can't answer" in replies[1] and "of 2" not in replies[1], replies[1]
    assert f"on_rrp_counterparties (count) on 2024-05-01: {frame('repo').loc['2024-05-01', 'on_rrp_counterparties']:.4f}" in replies[2], replies[2]


def test_a_reply_pasted_back_is_context_and_those_same_days_are_the_last_period(tmp_path):
    """fresh_sessions5 pa-01 / pa-02: a reply of the model pasted back (in quotes, or as a '> ' line) was read as part of the ask: the
    older rules restated the mean, or declined naming the pasted figure."""
    tgcr = frame("repo").loc["2024-01":"2024-03", "tgcr"]
    replies = converse(offline_model(), ["median tgcr in Q1 2024", "ok", "> yield_curve/repo_public tgcr (percent), 2024-01-02 to "
                                         "2024-03-28: median 5.3100\n\nand the max over those same days?", 'you wrote "yield_curve/repo_public '
                                         'tgcr (percent) ... max 5.4" -- what was the min over those days?'], fast_workspace(tmp_path))
    assert f"max {tgcr.max():.4f}" in replies[2] and f"2024-01-02 to {tgcr.index[-1].date()}" in replies[2], replies[2]
    assert f"min {tgcr.min():.4f}" in replies[3] and "5.4" not in replies[3].split("min")[0], replies[3]


def test_an_answer_set_against_another_period_and_a_threshold_alone_changes_the_count(tmp_path):
    """fresh_registers7 sess-03 / fresh_sessions5 yb-01 / nm-01: 'was it higher than in 2023?' and 'how does that compare with the year
    before?' were declined naming 'higher than' or asked which column; '5.33?' after a count above 5.3% was declined naming '5.33'. A change
    runs forward in time, from H1 2023 to H1 2024, whichever was asked first (said backwards it reads as a fall)."""
    repo, effr = frame("repo"), frame("effr").loc["2024", "rate"]
    replies = converse(offline_model(), ["median bgcr in H1 2024", "was it lower than in H1 2023?", "count of days effr was above 5.3% in 2024",
                                         "5.32?"], fast_workspace(tmp_path))
    first, second = repo.loc["2024-01":"2024-06", "bgcr"].median(), repo.loc["2023-01":"2023-06", "bgcr"].median()
    assert f"median {first:.4f}" in replies[1] and f"median {second:.4f}" in replies[1] and f"{first - second:+.4f}" in replies[1], replies[1]
    assert f"{int((effr > 5.32).sum())} of {len(effr)} days above 5.32%" in replies[3], replies[3]


def test_dollar_thresholds_with_a_unit_word_and_a_threshold_that_could_be_a_decimal(tmp_path):
    """fresh_registers8 s-15 / usd-01 / usd-02 (and this stop's own change): '$3.5 trillion' was read as $3.5 (divided by 1e9) before the
    unit word; 'and above 0.044?' after a count above 4.5% counted the days above 0.044% (all of them)."""
    repo, ty = frame("repo").loc["2024"], frame("ty").loc["2023", "yield_2y"]
    replies = converse(offline_model(), ["How many days in 2024 were bank reserves above $3.4 trillion?", "days in 2023 the 2-year was above 4.8%",
                                         "and above 0.049?", "and 4.9?", "Number of days in 2024 on which the Treasury General Account held "
                                         "more than $750 billion?"], fast_workspace(tmp_path))
    assert f"{int((repo['reserves_bn'] > 3400).sum())} of {len(repo)} days above 3400 $bn" in replies[0], replies[0]
    assert "could be 0.049% or, as a decimal, 4.9%" in replies[2] and " of 249 days" not in replies[2], replies[2]
    assert f"{int((ty > 4.9).sum())} of 249 days above 4.9%" in replies[3], replies[3]
    assert f"{int((repo['tga_bn'] > 750).sum())} of {len(repo)} days above 750 $bn" in replies[4], replies[4]


@pytest.mark.parametrize("ask", [
    "(3 marks) State the lowest 5-year Treasury yield recorded in 2024 and the date on which it occurred.",
    "effr %>% filter(year(date) == 2024) %>% summarise(min(rate))",
    "Q3 (2 marks): the minimum EFFR in 2024, to 4 decimals.",
])
def test_an_exam_question_and_r_pipe_code_are_read(ask, tmp_path):
    """fresh_registers8 exam-02 / fresh_registers7 r-01: '(2 marks)', 'state', 'occurred', 'filter', 'summarise' and 'year(date)' were named
    as words it could not use."""
    column, name = ("yield_5y", "ty") if "5-year" in ask else ("rate", "effr")
    values = frame(name).loc["2024", column]
    reply = converse(offline_model(), [ask], fast_workspace(tmp_path))[-1]
    assert f"min {values.min():.4f} on {values.idxmin().date()}" in reply, reply


def test_a_percentile_follow_up_is_never_a_day_and_a_fortnight_is_two_weeks(tmp_path):
    """fresh_sessions5 nw-02 / fresh_registers7 sess-05: 'the 75th percentile' after June 2024 was declined as 'June 2024 has no 75th' (read
    on sofr.percentile_1); 'and a fortnight later?' was declined naming 'fortnight'."""
    ty, sofr = frame("ty").loc["2024-05", "yield_2y"], frame("sofr")
    replies = converse(offline_model(), ["2y mean in may 2024", "the 90th percentile", "sofr on 3 June 2024", "and a fortnight later?"],
                       fast_workspace(tmp_path))
    assert f"90th percentile {ty.quantile(0.9):.4f}" in replies[1] and "percentile_1" not in replies[1], replies[1]
    assert f"on 2024-06-17: {sofr.loc['2024-06-17', 'rate']:.4f}" in replies[3], replies[3]


def test_the_first_of_two_answers_and_a_paraphrased_reply_pasted_back(tmp_path):
    """fresh_sessions5 cq-04 / fresh_registers8 s-11: 'the first, but the median' after two answers was read as a column; a paraphrased
    reply pasted after '> ' was declined naming its figure."""
    ty, sofr = frame("ty").loc["2024-01":"2024-03"], frame("sofr").loc["2024-02", "rate"]
    replies = converse(offline_model(), ["3y and 7y max in Q1 2024", "the first, but the min"], fast_workspace(tmp_path / "a"))
    replies += converse(offline_model(), ["median sofr in february 2024", "> The median of money_markets/sofr rate over February 2024 was "
                                          "5.3100. ok, and the lowest day in that month?"], fast_workspace(tmp_path / "b"))
    assert f"min {ty['yield_3y'].min():.4f}" in replies[1] and "yield_3y" in replies[1], replies[1]
    assert f"min {sofr.min():.4f} on {sofr.idxmin().date()}" in replies[3], replies[3]


def test_an_option_of_the_models_question_picked_by_its_number(tmp_path):
    """fresh_registers8 s-03: 'option 2, the total one' after 'Which one do you mean: A; B?' gave the help text."""
    repo = frame("repo").loc["2023"]
    replies = converse(offline_model(), ["lowest tri-party repo volume in 2023?", "the second please", "and the first?"], fast_workspace(tmp_path))
    assert replies[0].startswith("Which one do you mean: ") and "tri_party_total_volume_bn; " not in replies[0], replies[0]
    assert f"tri_party_total_volume_bn ($bn), 2023-01-03 to 2023-12-29, {len(repo)} values: min {repo['tri_party_total_volume_bn'].min():.4f}" \
        in replies[1], replies[1]


def test_a_series_name_with_its_first_two_letters_swapped(tmp_path):
    """fresh_registers8 typo-01: 'osfr' was declined as not in the catalog."""
    sofr = frame("sofr").loc["2024-07", "rate"]
    reply = converse(offline_model(), ["osfr max in july 2024"], fast_workspace(tmp_path))[-1]
    assert f"money_markets/sofr rate (percent), 2024-07-01 to {sofr.index[-1].date()}, {len(sofr)} values: max {sofr.max():.4f}" in reply, reply


def test_a_series_with_an_opener_after_a_declined_series_replaces_it(tmp_path):
    """fresh_registers after-decline-02 (this stop's own change broke it): 'ok and the 2 year?' after the declined 'what about the 50 year?'
    was declined as building on it; the declined turn named only a series, so the one before it stands."""
    ty = frame("ty").loc["2024", "yield_7y"]
    reply = converse(offline_model(), ["max 5y in 2024", "what about the 40 year?", "ok and the 7 year?"], fast_workspace(tmp_path))[-1]
    assert f"max {ty.max():.4f}" in reply and "yield_7y" in reply, reply


def test_two_counts_compared_change_by_the_days_counted(tmp_path):
    """fresh_sessions6 cmp-03: 'vs 2023?' after '38 of 251 days above 4.5%' gave both counts (39 of 249 for 2023) and then 'the count
    changed by -2.0000' (the values in each year, 251 and 249), not +1. The change runs forward in time, from 2023 to 2024."""
    ty = frame("ty")["yield_5y"]
    replies = converse(offline_model(), ["how many days was the 5y above 4% in 2024", "vs 2023?"], fast_workspace(tmp_path))
    first, second = int((ty.loc["2024"] > 4).sum()), int((ty.loc["2023"] > 4).sum())
    assert f"{first} of " in replies[1] and f"{second} of " in replies[1] and f"changed by {first - second:+.4f}" in replies[1], replies[1]


def test_vs_last_year_after_a_series_changed_in_trader_shorthand(tmp_path):
    """fresh_sessions6 td-01: '2s avg 2024' / 'and 1s?' / 'vs last yr?' gave the 1-year's 2024 mean again, read as 'the data's latest year'.
    The change runs forward in time, from 2023 to 2024."""
    ty = frame("ty")["yield_7y"]
    reply = converse(offline_model(), ["3s avg 2024", "and 7s?", "vs last yr?"], fast_workspace(tmp_path))[-1]
    first, second = ty.loc["2024"].mean(), ty.loc["2023"].mean()
    assert f"mean {first:.4f}" in reply and f"mean {second:.4f}" in reply and f"changed by {first - second:+.4f}" in reply, reply


def test_a_sum_of_two_series_is_never_answered_as_each_and_their_gap(tmp_path):
    """fresh_redteam3 total-02 (after this stop's rule for '2y and 10y average in 2023'): 'reserves plus the tga on 2024-06-28' gave each
    value and the TGA minus reserves."""
    reply = converse(offline_model(), ["the tga plus reserves on 2024-03-28"], fast_workspace(tmp_path))[-1]
    assert " minus " not in reply and "$bn) on 2024-03-28:" not in reply, reply


@pytest.mark.parametrize(("turns", "column", "month", "stat"), [
    (["2y avg in May 2024", "not the avg, the median"], "yield_2y", "2024-05", "median"),
    (["min 5y in feb 2023", "the max rather than the min please"], "yield_5y", "2023-02", "max"),
    (["30y median Oct 2023", "hmm, instead of the median give me the mean"], "yield_30y", "2023-10", "mean"),
])
def test_a_statistic_ruled_out_beside_another_is_no_ask(turns, column, month, stat, tmp_path):
    """fresh_sessions6 mx-01: 'not the avg, the median' after '10y avg Sep 2024' was asked back as 'which column ...?'."""
    values = frame("ty").loc[month, column]
    reply = converse(offline_model(), turns, fast_workspace(tmp_path))[-1]
    assert f"{values.index[-1].date()}, {len(values)} values: {stat} {getattr(values, stat)():.4f}" in reply, reply


@pytest.mark.parametrize(("turns", "months"), [
    (["effr max in Nov 2024", "and the same month last year?"], ("2024-11", "2023-11")),
    (["mean 10y in q3 2024", "what about the previous quarter"], (slice("2024-07", "2024-09"), slice("2024-04", "2024-06"))),
    (["median 3m in June 2024", "and a year ago?"], ("2024-06", "2023-06")),
])
def test_last_previous_or_ago_moves_the_last_period_back(turns, months, tmp_path):
    """fresh_sessions6 mx-01: 'and the same month last year?' after a month went to the older rules, which loaded a year's rows into an
    8,192-token window (ContextOverflowError in the corpus harness)."""
    column = {"effr": "rate"}.get(turns[0].split()[0], None)
    data = frame("effr")["rate"] if column else frame("ty")[{"mean": "yield_10y", "median": "yield_3m"}[turns[0].split()[0]]]
    stat = {"effr": "max", "mean": "mean", "median": "median"}[turns[0].split()[0]]
    reply = converse(offline_model(), turns, fast_workspace(tmp_path))[-1]
    values = data.loc[months[1]]
    assert f"{values.index[0].date()} to {values.index[-1].date()}, {len(values)} values: {stat} {getattr(values, stat)():.4f}" in reply, reply


def test_the_previous_year_as_a_second_ask_is_the_year_before_the_first(tmp_path):
    """'mean sofr in 2024 and the previous year' answered 2024 twice (the second 'read as the data's latest year')."""
    sofr = frame("sofr")["rate"]
    reply = converse(offline_model(), ["mean sofr in 2024 and the previous year"], fast_workspace(tmp_path))[-1]
    assert f"mean {sofr.loc['2024'].mean():.4f}" in reply and f"mean {sofr.loc['2023'].mean():.4f}" in reply, reply


@pytest.mark.parametrize(("message", "column", "year", "threshold", "above"), [
    ("how many sessions in 2023 had the 7-year no more than 4%?", "yield_7y", "2023", 4.0, False),
    ("days in 2024 with the 1y no less than 4.8%", "yield_1y", "2024", 4.8, True),
    ("count 2024 days where the 20y was not greater than 4.5%", "yield_20y", "2024", 4.5, False),
])
def test_a_negated_comparison_is_never_read_as_the_comparison(message, column, year, threshold, above, tmp_path):
    """fresh_registers9 cnt-02: 'no more than 5.25%' counted the days above 5.25% (the 'no' dropped as a discourse word)."""
    values = frame("ty").loc[year, column]
    count = int((values >= threshold).sum() if above else (values <= threshold).sum())
    reply = converse(offline_model(), [message], fast_workspace(tmp_path))[-1]
    assert f" {count} of {len(values)} days at or {'above' if above else 'below'} " in reply, reply


def test_an_ask_written_as_fields_is_one_request(tmp_path):
    """fresh_registers9 sess-16: 'series: sofr / stat: mean / period: 2024' on three lines was answered line by line: all the data twice
    ('no period was given'), then 2024."""
    effr = frame("effr").loc["2023", "rate"]
    reply = converse(offline_model(), ["series: effr\nstat: median\nperiod: calendar 2023"], fast_workspace(tmp_path))[-1]
    assert reply.startswith(f"money_markets/effr rate (percent), {effr.index[0].date()} to {effr.index[-1].date()}, {len(effr)} values: "
                            f"median {effr.median():.4f}") and "no period was given" not in reply, reply


def test_no_part_of_a_message_with_a_period_is_answered_over_all_the_data(tmp_path):
    """fresh_registers9 md-01: a markdown list ('- **series:** EFFR', '- **statistic:** standard deviation', '- **period:** calendar 2023')
    was answered over all the data, said to have 'no period', before declining the period's line."""
    reply = converse(offline_model(), ["Need one figure:\n- **series:** 2y\n- **statistic:** max\n- **window:** the whole of 2024"],
                     fast_workspace(tmp_path))[-1]
    assert "no period was given" not in reply and "2023-01-03 to 2024-12-31" not in reply, reply


def test_a_turn_digest_of_a_declined_turn_is_never_built_on(tmp_path):
    """register set 3, tenors session under v3: after 'and one year later?' was declined and v3 wrote every turn as a digest ('Last request:
    ... (answered). Answer: I can't answer that ...'), 'what about the 30y on that day' answered the older day."""
    replies = converse(offline_model(), ["the 5y on 2024-03-28", "and the 3y that day", "and two years later?", "<digest>",
                                         "the 20y on that day?"], fast_workspace(tmp_path))
    assert replies[-1].startswith("I can't answer that") and "2024-03-28" not in replies[-1], replies[-1]


def test_an_ask_after_a_declined_ask_in_the_same_message_never_builds_on_an_older_request(tmp_path):
    """register set 3's chat, reply 18: 'in Q4 2024 was sofr above effr on average? by how many bp?' declined its first ask, then answered
    'by how many bp?' with the whole of an older request (the 2s10s in 2024)."""
    replies = converse(offline_model(), ["mean 10y in 2023", "in Q1 2024 was the 2y below the 5y on average? by how many bp?"],
                       fast_workspace(tmp_path))
    assert "yield_10y" not in replies[-1], replies[-1]


def test_a_follow_up_of_a_declined_turn_that_refers_to_its_figure_is_declined(tmp_path):
    """fresh_sessions7 tq-01: after a declined 'Bonus question - the lowest 1-month yield in 2024?', 'and the first day it got that low?'
    gave the fed funds target's low in 2023 (the older rules read 'low' as the column target_low)."""
    replies = converse(offline_model(), ["max 3m yield in 2024", "the lowest 50-year yield in 2023?", "and when did it first get that low?"],
                       fast_workspace(tmp_path))
    assert replies[-1].startswith("I can't answer that") and "target_low" not in replies[-1], replies[-1]


def test_a_follow_up_never_drops_the_period_a_declined_turn_named(tmp_path):
    """fresh_sessions7 mx-02: 'and 2024, same threshold?' was asked back, then 'and 4.5?' counted over 2023, the older request's year."""
    replies = converse(offline_model(), ["How many days in 2024 was the 5y above 4.2%?", "and 2023 for the 40y?", "and 4.3?"],
                       fast_workspace(tmp_path))
    assert replies[-1].startswith("I can't answer that") and "2023" in replies[-1] and " of 251 days" not in replies[-1], replies[-1]


def test_a_spread_written_with_a_hyphen_over_that_month_after_a_day(tmp_path):
    """fresh_sessions7 ac-06: 'Tick. The average SOFR-IORB spread for that month?' after IORB on 2024-10-15 declined 'tick' and gave the
    spread on 2024-10-15 alone (the older rules), not the month's mean."""
    spread = frame("repo").loc["2024-06", "sofr_minus_iorb_bp"]
    reply = converse(offline_model(), ["iorb on 2024-06-14", "Tick. Mean SOFR-IORB spread over that month?"], fast_workspace(tmp_path))[-1]
    assert f"{len(spread)} values: mean {spread.mean():.4f}" in reply, reply


def test_the_business_day_before_a_day_of_an_earlier_request(tmp_path):
    """fresh_sessions7 rc-04: 'And TGCR on the business day before that?' was declined for 'before'."""
    tgcr = frame("repo")["tgcr"]
    reply = converse(offline_model(), ["bgcr on 2024-02-20", "And TGCR on the business day before that?"], fast_workspace(tmp_path))[-1]
    day = tgcr.loc[:"2024-02-19"].index[-1]  # 2024-02-19 is Presidents' Day
    assert f"on {day.date()}" in reply and f"{tgcr.loc[day]:.4f}" in reply, reply


@pytest.mark.parametrize(("message", "name", "column", "period", "count", "top"), [
    ("Which 4 days in 2024 had the busiest effr volume?", "effr", "volume_bn", "2024", 4, True),
    ("which two sessions of Q3 2024 saw the thinnest sofr volume", "sofr", "volume_bn", slice("2024-07", "2024-09"), 2, False),
    ("the 3 lowest 2y yields of 2023", "ty", "yield_2y", "2023", 3, False),
])
def test_the_days_ranked_by_a_superlative(message, name, column, period, count, top, tmp_path):
    """register set 3 (its 'which 5 days in 2023 had the thinnest fed funds volume?' read '5 days' as a 5d column) and fresh words: the N
    highest or lowest values with their days, earlier days first on ties."""
    values = frame(name).loc[period, column]
    ranked = values.sort_values(ascending=not top, kind="stable").head(count)
    reply = converse(offline_model(), [message], fast_workspace(tmp_path))[-1]
    shown = "; ".join(f"{day.date()} {value:.4f}" for day, value in ranked.items())
    assert f"the {count} {'highest' if top else 'lowest'}: {shown}" in reply, reply


def test_exactly_and_spoken_fillers_are_no_part_of_the_ask(tmp_path):
    """fresh_registers9 rel-02 ('exactly one week before the last day in the data' read 'one week' as a 1w column) and voice-02 ('above uh
    four and a half percent': the filler stood between the comparison and its number)."""
    ty = frame("ty")
    day = ty.loc[:"2024-12-17"].index[-1]
    replies = converse(offline_model(), ["the 2-year yield exactly two weeks before the last day in the data?", "um how many days was the "
                                         "five year uh below uh four percent in twenty twenty three"], fast_workspace(tmp_path))
    assert f"on {day.date()}: {ty.loc[day, 'yield_2y']:.4f}" in replies[0], replies[0]
    assert f"{int((ty.loc['2023', 'yield_5y'] < 4).sum())} of 249 days below 4%" in replies[1], replies[1]


def test_a_follow_up_with_nothing_answered_never_gets_a_summary_for_the_statistic_it_leaves_out(tmp_path):
    """fresh_sessions7 gs-01: after three declined turns asking for a standard deviation, 'and 2023 for EFFR too, for the table' gave EFFR's
    mean, min, max and latest in 2023 (a summary, not the statistic the user had been asking for)."""
    replies = converse(offline_model(), ["For my dissertation: the variance-ish spread of the libor in 2024", "and 2023 for the 5y too"],
                       fast_workspace(tmp_path))
    assert replies[-1].startswith("I can't answer that") and "mean" not in replies[-1], replies[-1]


@pytest.mark.parametrize(("first", "name", "column"), [
    ("mean sofr volume in 2024", "effr", "volume_bn"), ("top 3 days for effr volume in 2023", "sofr", "volume_bn")])
def test_a_dataframe_named_alone_keeps_the_kind_of_column_asked(first, name, column, tmp_path):
    """'and effr' after SOFR's volume gave EFFR's rate (its main column): a nearby question, not the one asked."""
    reply = converse(offline_model(), [first, f"and {name}"], fast_workspace(tmp_path))[-1]
    assert reply.startswith(f"money_markets/{name} {column}"), reply


def test_small_talk_is_acknowledged_and_never_hides_a_declined_turn(tmp_path):
    """fresh_sessions7: 'lol sorry, long day' declined 'lol' and 'sorry', 'hmm interesting' after a declined turn was 'builds on your last
    request', 'Tick.' alone was asked which column; and small talk after a declined holiday let 'and effr that day?' take the day before it."""
    replies = converse(offline_model(), ["max 2y in 2023", "haha sorry, rough morning", "effr on 2024-11-28", "mm ok, makes sense",
                                         "and sofr that day?"], fast_workspace(tmp_path))
    assert replies[1].startswith("Noted.") and replies[3].startswith("Noted."), replies
    assert replies[-1].startswith("I can't answer that") and "2024-11-27" not in replies[-1], replies[-1]


def test_docs_and_a_figure_joined_by_and_also_are_both_answered(tmp_path):
    """register set 3: 'show me the effr docs, and also what was its highest print in 2023' declined 'docs' (it was read as one ask)."""
    effr = frame("effr").loc["2023", "rate"]
    reply = converse(offline_model(), ["pull up the effr docs, and also what was its median in 2023?"], fast_workspace(tmp_path))[-1]
    assert "Docs from" in reply and f"median {effr.median():.4f}" in reply, reply


@pytest.mark.parametrize(("turns", "stat"), [
    (["median 7y in 2023", 'earlier you told me "the 7-year sat around 4.1% in 2023" - what was the highest it got that year?'], "max"),
    (["mean 20y in 2024", "you said roughly 4.6: what was the lowest that year?"], "min")])
def test_a_figure_the_user_says_the_model_gave_is_context_and_the_question_after_it_is_answered(turns, stat, tmp_path):
    """fresh_sessions6 pa-01: 'earlier you told me "... averaged about 5.18% in 2024" - what was the highest it got that year?' restated the
    mean (the older rules' recall); 'you said about 3.96 - what was the lowest that year?' was 'I can't see the min you are asking about'."""
    column, year = ("yield_7y", "2023") if "7y" in turns[0] else ("yield_20y", "2024")
    values = frame("ty").loc[year, column]
    reply = converse(offline_model(), turns, fast_workspace(tmp_path))[-1]
    assert f"{stat} {getattr(values, stat)():.4f}" in reply and column in reply, reply


def test_a_greeting_word_beside_a_follow_up_of_the_older_rules_never_loads_a_year_of_rows(tmp_path):
    """fresh_sessions7 pod-01, after this stop's first change: 'Great, and 2024?' after a request the older rules answered loaded all of
    EFFR's 2024 rows into an 8,192-token window (ContextOverflowError) once 'great' was no longer named as unknown."""
    replies = converse(offline_model(), ["Drafting show notes on the Fed. What was the median SOFR in 2023?", "Great, and 2024?"],
                       fast_workspace(tmp_path))
    assert "computed nothing" in replies[-1] or f"median {frame('sofr').loc['2024', 'rate'].median():.4f}" in replies[-1], replies[-1]


def test_how_many_days_past_a_threshold_after_a_mean_is_a_count(tmp_path):
    """register set 3, corrections session under v3: 'on how many days that month was it above 4.75%?' after a month's mean (and two declined
    turns, digested) was declined: 'days' went to the condition, so 'how many' set no count and the mean stayed the statistic."""
    effr = frame("effr").loc["2023-04", "rate"]
    replies = converse(offline_model(), ["mean effr in april 2023", "<digest>", "on how many days that month was it above 4.8%?"],
                       fast_workspace(tmp_path))
    assert f"{int((effr > 4.8).sum())} of {len(effr)} days above 4.8%" in replies[-1], replies[-1]


@pytest.mark.parametrize(("text", "scene"), [
    ("Coach here, bear with my locker-room lingo. What was the lowest EFFR in 2023?", "'Coach here, bear with my locker-room lingo'"),
    ("What was the lowest EFFR in 2023? (it's going on a slide)", "'it's going on a slide'"),
    ("Newsroom brain on: what was the lowest EFFR in 2023?", "'Newsroom brain on'")])
def test_a_sentence_that_only_sets_the_scene_is_set_aside_and_said(text, scene, tmp_path):
    """fresh_sessions8/9, fresh_registers10: a register's framing ('Stat-head here, so bear with the baseball talk.', '(Oven's preheating.)',
    'Weather-desk brain here:') blocked the ask it framed (its words named as unread), and the conversation after it chained on the decline."""
    reply = converse(offline_model(), [text], fast_workspace(tmp_path))[-1]
    assert f"min {frame('effr').loc['2023', 'rate'].min():.4f}" in reply and f"(I set aside {scene}:" in reply, reply


@pytest.mark.parametrize("text", ["Weekends excluded. What was the mean EFFR in 2024?", "Tuesdays only. What was the mean EFFR in 2024?",
                                  "Net of fees: what was the mean EFFR in 2024?"])
def test_a_sentence_that_may_change_the_answer_is_never_set_aside(text, tmp_path):
    """The older rules dropped any sentence no rule read when another one asked something ('Mondays only. What was the mean ...?' gave the
    mean over every day): one with a word that may change an answer ('only', 'excluded', 'net') now stops the figure."""
    reply = converse(offline_model(), [text], fast_workspace(tmp_path))[-1]
    assert f"{frame('effr').loc['2024', 'rate'].mean():.4f}" not in reply and "computed nothing" in reply, reply


def test_a_turn_that_answered_one_ask_and_declined_another_is_built_on(tmp_path):
    """fresh_sessions8 bc-01/bc-02: a reply that declined a pasted error's words and then gave the figure counted as declined, so 'ok and the
    max?' was 'builds on your last request, which I could not answer'."""
    effr = frame("effr").loc["2023", "rate"]
    replies = converse(offline_model(), ["What was the SONIA median in 2023? And the EFFR median in 2023?", "and the highest?"],
                       fast_workspace(tmp_path))
    assert f"median {effr.median():.4f}" in replies[0] and "sonia" in replies[0].lower(), replies[0]
    assert f"max {effr.max():.4f}" in replies[-1], replies[-1]


def test_accented_words_are_named_whole(tmp_path):
    """fresh_sessions8 es-01/es-04: 'cuál', 'então' were split at their accents and named as 'cu', 'l', 'ent', 'o'."""
    reply = converse(offline_model(), ["qual foi o máximo do SOFR em 2024?"], fast_workspace(tmp_path))[-1]
    assert "'máximo'" in reply and "'ximo'" not in reply and "computed nothing" in reply, reply


def test_by_how_much_between_two_periods_it_names_is_the_change_of_the_last_figure(tmp_path):
    """fresh_sessions9 pa-01: 'Part (c): by how much did it change from 2023 to 2024, in percentage points?' after the 2023 and 2024 means
    was 'I can't subtract one answer from another', though it names both periods."""
    effr = frame("effr")["rate"]
    change = effr.loc["2024"].mean() - effr.loc["2023"].mean()
    replies = converse(offline_model(), ["median effr in 2023", "by how much did it move from 2023 to 2024?"], fast_workspace(tmp_path))
    change = effr.loc["2024"].median() - effr.loc["2023"].median()
    assert f"the median changed by {change:+.4f}" in replies[-1], replies[-1]


def test_tl_dr_is_no_ask_of_its_own(tmp_path):
    """fresh_sessions9 rd-01/rd-04: 'TL;DR: on how many days ...' split at its ';' and declined 'dr'."""
    reply = converse(offline_model(), ["long thread, sorry. TL;DR: the median 3-month bill yield in 2023?"], fast_workspace(tmp_path))[-1]
    assert f"median {frame('ty').loc['2023', 'yield_3m'].median():.4f}" in reply, reply


@pytest.mark.parametrize(("turns", "figure"), [
    (["the median gazpacho in march 2024", "*effr (phone autocorrect)"], lambda: f"median {frame('effr').loc['2024-03', 'rate'].median():.4f}"),
    (["the 5y yield bumblebee in 2023", "average** argh keyboard"], lambda: f"mean {frame('ty').loc['2023', 'yield_5y'].mean():.4f}")])
def test_a_starred_word_after_a_declined_turn_mends_its_one_unknown_word(turns, figure, tmp_path):
    """fresh_sessions8 mb-01: '*SOFR. autocorrect sorry' after the declined 'sofa avg aug 2024' gave SOFR over all its data ('no period was
    given'); mb-02: 'median** ugh phone' after '10 year yield medina 2024?' declined 'ugh', 'phone'. The starred word replaces the one word
    the declined turn could not use, and that turn is read again."""
    reply = converse(offline_model(), turns, fast_workspace(tmp_path))[-1]
    assert figure() in reply and "no period" not in reply, reply


@pytest.mark.parametrize("label", ["Entry 7:", "Run 12:", "Re:", "Obs. 3:"])
def test_a_numbered_label_is_no_part_of_the_ask(label, tmp_path):
    """fresh_sessions9 lb-01/lb-03 and fresh_registers10: 'Run 3:', 'Entry 15:', 'Obs. 1:' were named as unread words."""
    reply = converse(offline_model(), [f"{label} the highest EFFR in 2023?"], fast_workspace(tmp_path))[-1]
    assert reply.startswith("money_markets/effr rate") and f"max {frame('effr').loc['2023', 'rate'].max():.4f}" in reply, reply


@pytest.mark.parametrize(("turns", "figure"), [
    (["mean bitcoin rate in q2 2024", "ok, effr then", "and the lowest?"], lambda: f"min {frame('effr').loc['2024-04':'2024-06', 'rate'].min():.4f}"),
    (["the median 2y yield in Q3 2025", "oops, Q3 2024 then", "and for the 10y?"],
     lambda: f"median {frame('ty').loc['2024-07':'2024-09', 'yield_10y'].median():.4f}"),
    (["the mean gazpacho in june 2023", "*sofr sorry", "and the highest?"], lambda: f"max {frame('sofr').loc['2023-06', 'rate'].max():.4f}")])
def test_a_follow_up_after_a_corrected_request_builds_on_the_corrected_request(turns, figure, tmp_path):
    """Red-team sets, this stop: after 'fine, use sofr instead' answered the declined 'average libor in q1 2024' with Q1, 'and the max?' gave
    SOFR's max over all the data, 'no period was given' (the correction, read alone, named no period); 'sorry, Q1 2024 then' after the
    declined 'avg 10y yield in Q1 2025' (past the data) was 'Which data do you mean?' (fresh_sessions9 gm-02)."""
    reply = converse(offline_model(), turns, fast_workspace(tmp_path))[-1]
    assert figure() in reply and "no period" not in reply, reply


@pytest.mark.parametrize("turns", [["which quarter of 2023 had the highest median effr?", "and the lowest quarter?"],
                                   ["the bottom month for the 5y in 2024?"]])
def test_a_superlative_of_a_period_ranks_the_periods_never_the_days(turns, tmp_path):
    """fresh_sessions10 re-03: 'And the lowest month?' after 'which month of 2024 had the highest average 30-year yield?' gave the lowest day
    (min 4.03 on 2024-01-02), not the month with the lowest mean (January, 4.1138, listed in the turn before)."""
    reply = converse(offline_model(), turns, fast_workspace(tmp_path))[-1]
    if len(turns) == 2:
        by_quarter = frame("effr").loc["2023", "rate"].groupby(lambda day: (day.month - 1) // 3).median()
        assert f"the quarter with the lowest median is 2023-Q{by_quarter.idxmin() + 1}: {by_quarter.min():.4f}" in reply, reply
    else:
        by_month = frame("ty").loc["2024", "yield_5y"].groupby(lambda day: day.month).mean()
        assert f"the month with the lowest mean is 2024-{by_month.idxmin():02d}: {by_month.min():.4f}" in reply, reply


@pytest.mark.parametrize(("ask", "figure"), [
    ("the median effr in 2024, not the mean", lambda: f"median {frame('effr').loc['2024', 'rate'].median():.4f}"),
    ("2y yield, Q2 2023: the max rather than the min", lambda: f"max {frame('ty').loc['2023-04':'2023-06', 'yield_2y'].max():.4f}")])
def test_a_statistic_ruled_out_at_the_very_end_is_no_internal_error(ask, figure, tmp_path):
    """'... use the median instead of the average.' (a reviewer's comment, this stop): the reader of 'not the mean' looked three words past
    the end of the message and raised IndexError, so the reply was 'my rules hit an internal error'."""
    reply = converse(offline_model(), [ask], fast_workspace(tmp_path))[-1]
    assert figure() in reply and "internal error" not in reply, reply


@pytest.mark.parametrize("remark", ["(population)", "(unadjusted)", "(lagged a day)", "(pre-tax)", "(revised)", "(geometric)"])
def test_a_qualifier_in_brackets_is_declined_never_set_aside_as_the_scene(remark, tmp_path):
    """A remark in brackets that no reader reads was set aside as the scene and the figure given: '(population)' got the sample standard
    deviation, '(geometric)' the arithmetic mean, each with 'I set aside ...: no series, day, statistic or condition in it', which is false."""
    reply = converse(offline_model(), [f"What was the standard deviation of the 2y yield in 2023 {remark}?"], fast_workspace(tmp_path))[-1]
    assert "values:" not in reply and "set aside" not in reply and remark.strip("()").split()[0] in reply, reply


def test_by_how_many_bp_after_one_ask_over_two_periods_is_their_change_in_bp(tmp_path):
    """fresh_sessions11 sc-01: 'By how many basis points?' after 'Was the average 2-year yield higher in Q1 2024 or in Q2 2024?' was
    declined ('I can't subtract one answer from another'), though that turn had just given both means and their change."""
    replies = converse(offline_model(), ["was the mean 30y yield higher in H1 2023 or in H2 2023?", "by how many basis points?"],
                       fast_workspace(tmp_path))
    column = frame("ty")["yield_30y"]
    change = (column.loc["2023-07":"2023-12"].mean() - column.loc["2023-01":"2023-06"].mean()) * 100
    assert f"the mean changed by {change:+.4f} bp" in replies[-1], replies[-1]


@pytest.mark.parametrize(("ranking", "follow_up"), [("which quarter of 2023 had the lowest average 5y yield?", "and its max in that quarter?"),
                                                    ("the month of 2024 with the highest median sofr?", "the min over that same month?")])
def test_that_month_after_a_ranking_of_months_is_declined_never_the_ranked_period(ranking, follow_up, tmp_path):
    """fresh_sessions11 kt-03: 'what was the 10-year's peak in that month?' after 'which month of 2023 had the highest average 10-year
    yield?' (October) gave the max over all of 2023: 'that month' is the month of the answer, which the model does not keep. 'The month of
    2024 with the highest median sofr?' gave the year's median and max, never a month."""
    replies = converse(offline_model(), [ranking, follow_up], fast_workspace(tmp_path))
    assert " with the " in replies[0] and replies[1].startswith("I can't answer that: 'that") and "values:" not in replies[1], replies


@pytest.mark.parametrize(("turns", "figure"), [
    (["the median 5y yield in 2022", "Apologies, a misprint on my side: 2024."],
     lambda: f"median {frame('ty').loc['2024', 'yield_5y'].median():.4f}"),
    (["whoa, the min effr in Q1 2023, mate?"], lambda: f"min {frame('effr').loc['2023-01':'2023-03', 'rate'].min():.4f}"),
    (["max sofr in 2023", "gotcha. roger, and the median?"], lambda: f"median {frame('sofr').loc['2023', 'rate'].median():.4f}")])
def test_apologies_and_radio_or_social_words_are_no_part_of_the_ask(turns, figure, tmp_path):
    """fresh_sessions11 pr-02 ('Apologies, a typo in our report: 2023.' declined 'apology', 'typo') and other registers: words of apology,
    radio talk and praise ('roger', 'gotcha', 'whoa', 'mate') cannot change a figure; they were named as words it could not use."""
    reply = converse(offline_model(), turns, fast_workspace(tmp_path))[-1]
    assert figure() in reply, reply



@pytest.mark.parametrize(("ask", "one", "other"), [("During H1 2024, was TGCR above BGCR on average? by how many bp?", "tgcr", "bgcr"),
                                                  ("in H2 2023 was the 2y higher than the 10y on average, and by how many basis points?", "yield_2y",
                                                   "yield_10y")])
def test_was_one_series_above_another_after_a_leading_period_is_their_mean_gap(ask, one, other, tmp_path):
    """Register set 3 ('in Q4 2024 was sofr above effr on average? by how many bp?'): a period before 'was' hid the comparison, so
    'above' was named as a word it could not use (or, with ', by how many bp?', the days above were counted, not the gap)."""
    reply = converse(offline_model(), [ask], fast_workspace(tmp_path))[-1]
    first, last = ("2023-07", "2023-12") if "2023" in ask else ("2024-01", "2024-06")
    rows = frame("ty" if one.startswith("yield") else "repo").loc[first:last]
    assert f"({(rows[one] - rows[other]).mean() * 100:.4f} bp)" in reply, reply


@pytest.mark.parametrize(("turns", "name", "column", "year", "highest"), [
    (["the median effr in 2024", "and the lowest month?"], "effr", "rate", "2024", False),
    (["median 2y yield, 2023", "ok and the top month?"], "ty", "yield_2y", "2023", True)])
def test_the_month_ranked_after_a_median_ranks_the_medians_and_names_every_tie(turns, name, column, year, highest, tmp_path):
    """'and the lowest month?' after a median ranked the months by their mean (the median asked was not carried), and a ranking with two
    months at the same figure named the first alone ('the month with the lowest median is 2024-11' where December ties at 4.61)."""
    reply = converse(offline_model(), turns, fast_workspace(tmp_path))[-1]
    values = frame(name).loc[year, column]
    by_month = values.groupby(values.index.month).median()
    best = by_month.max() if highest else by_month.min()
    months = [f"{year}-{month:02d}" for month in by_month[by_month == best].index]
    side = "highest" if highest else "lowest"
    expected = (f"the months with the {side} median are {' and '.join(months)}, tied at {best:.4f}" if len(months) > 1 else
                f"the month with the {side} median is {months[0]}: {best:.4f}")
    assert expected in reply, reply



def test_a_correction_that_names_the_catalog_and_a_period_is_never_a_catalog_listing(tmp_path):
    """fresh_sessions11 au-03: 'My apologies, the catalogue has a misprint - that lot is August 2024, not 2023.' after a declined
    ask was answered with the list of the catalog's dataframes, a reply to another question. 'list the catalog' still lists it."""
    replies = converse(offline_model(), ["Per our catalog, item 9 is the mean sofr in May 2023.", "The catalog erred: May 2024, not May 2023.",
                                         "list the catalog"], fast_workspace(tmp_path))
    assert "dataframes:" not in replies[1], replies[1]
    assert replies[2].startswith("The ChartBook catalog has"), replies[2]


def test_an_ask_restated_with_a_unit_is_computed_once(tmp_path):
    """Register set 3 (v3): 'in Q4 2024 was sofr above effr on average? by how many bp?' planned the same loads and script twice, once per
    ask; v3 re-read its offloaded copies for the second and stopped after 25 steps with no answer. The second ask only adds its unit."""
    reply = converse(offline_model(), ["During Q3 2024 was TGCR below BGCR on average? by how many basis points?"], fast_workspace(tmp_path))[-1]
    rows = frame("repo").loc["2024-07":"2024-09"]
    assert reply.count("values:") == 1 and f"({(rows['tgcr'] - rows['bgcr']).mean() * 100:.4f} bp)" in reply, reply


def test_by_how_many_bp_after_a_speaker_label_is_the_gap_never_the_last_level_in_bp(tmp_path):
    """fresh_registers12 sr-02 (confidently wrong at 341228d): 'DENISE: By how many bp?' after 'Was the average SOFR higher in the first
    quarter of 2024 or in the third?' gave Q3's mean in bp (528.0312 bp): the speaker's name hid 'by how', so it was read as a unit change."""
    replies = converse(offline_model(), ["MARCO: was the median effr higher in Q2 2023 or in Q4 2023?", "MARCO: By how many bp?"],
                       fast_workspace(tmp_path))
    effr = frame("effr")["rate"]
    change = (effr.loc["2023-10":"2023-12"].median() - effr.loc["2023-04":"2023-06"].median()) * 100
    assert f"the median changed by {change:+.4f} bp" in replies[-1], replies[-1]


def test_a_story_before_anyway_is_set_aside_and_said(tmp_path):
    """Register set 3's rambling ask: the story before 'anyway what I'd like to know is' (money funds, the Fed's reverse repo facility, a
    professor) was read as part of the ask, and its words named as unread."""
    ask = ("so my manager forwarded me a thread about repo and money funds and I got lost halfway, anyway what I need is the average "
           "sofr in h1 2024")
    reply = converse(offline_model(), [ask], fast_workspace(tmp_path))[-1]
    assert f"mean {frame('sofr').loc['2024-01':'2024-06', 'rate'].mean():.4f}" in reply and "(I set aside 'so my manager" in reply, reply
    kept = converse(offline_model(), ["we only look at weekdays here, anyway the mean effr in 2023?"], fast_workspace(tmp_path / "b"))[-1]
    assert "values:" not in kept and "weekdays" in kept, kept  # a story with a qualifier in it is never set aside


@pytest.mark.parametrize(("ask", "expected"), [
    ("mean effr in 2024 in bp please, not in percent", lambda: f"mean {frame('effr').loc['2024', 'rate'].mean() * 100:.4f} bp"),
    ("max 10y in 2023 as a decimal rather than percent", lambda: f"max {frame('ty').loc['2023', 'yield_10y'].max() / 100:.6f} (as a decimal)"),
    ("median effr Q3-23", lambda: f"median {frame('effr').loc['2023-07':'2023-09', 'rate'].median():.4f}"),
    ("2y max H2-24?", lambda: f"max {frame('ty').loc['2024-07':'2024-12', 'yield_2y'].max():.4f}"),
    ("sofr on the 5th of June '24", lambda: f"on 2024-06-05: {frame('sofr').loc['2024-06-05', 'rate']:.4f}")])
def test_a_refused_unit_and_a_two_digit_year_are_read(ask, expected, tmp_path):
    """'in bp please, not in percent' was declined on 'not' (a negation it could not apply); 'Q3-23', 'H2-24' and "June '24" named the
    year's two digits as a word it could not use."""
    reply = converse(offline_model(), [ask], fast_workspace(tmp_path))[-1]
    assert expected() in reply, reply


@pytest.mark.parametrize(("ask", "expected"), [
    ("ok long story short, the max sofr in Q2 2024?", lambda: f"max {frame('sofr').loc['2024-04':'2024-06', 'rate'].max():.4f}"),
    ("median effr in 2024 if it's easy", lambda: f"median {frame('effr').loc['2024', 'rate'].median():.4f}")])
def test_a_pivot_with_no_story_before_it_and_a_polite_condition_are_read_past(ask, expected, tmp_path):
    """'long story short' with nothing told before it was read as a request for prose ('I can't write prose'), and 'if it's easy' (register
    set 3's rambling ask) was named as words it could not use."""
    reply = converse(offline_model(), [ask], fast_workspace(tmp_path))[-1]
    assert expected() in reply and "set aside" not in reply, reply


@pytest.mark.parametrize(("ask", "sign"), [("the average 2s10s in 2023 when it was positive", "positive"),
                                           ("median 10y minus 2y in 2024 on negative days", "negative")])
def test_a_sign_of_the_days_with_another_statistic_is_named_never_dropped(ask, sign, tmp_path):
    """'the average 2s10s in 2023 when it was positive' gave the mean of all 249 days (-63.8795): the older rules read 'positive' only as
    a count's condition, and with a mean it was silently dropped. One day's value still answers 'was it positive on ...?' itself."""
    replies = converse(offline_model(), [ask, "was the 2s10s positive on 2024-03-15?"], fast_workspace(tmp_path))
    assert "values:" not in replies[0] and f"'{sign}'" in replies[0] and "keep only the days a condition" in replies[0], replies[0]
    assert f"on 2024-03-15: {frame('ty').loc['2024-03-15', 'spread_10y_2y_bp']:.4f}" in replies[1], replies[1]


@pytest.mark.parametrize("ask", ["the sofr max minus the effr min in 2024", "highest tgcr minus highest bgcr over Q1 2024"])
def test_a_statistic_on_each_side_of_minus_is_declined_never_the_gaps_statistic(ask, tmp_path):
    """'the sofr max minus the effr min in 2024' gave the max and the min of the daily SOFR-EFFR gap (18 and -2 bp): a statistic of
    another series. The max of one minus the max of the other is not the max of their gap; a mean of each side still is the gap's mean."""
    replies = converse(offline_model(), [ask, "average sofr minus average effr for 2024"], fast_workspace(tmp_path))
    assert "values:" not in replies[0] and "a statistic of each side" in replies[0], replies[0]
    assert f"mean {frame('repo').loc['2024', 'sofr_minus_effr_bp'].mean():.4f}" in replies[1], replies[1]


@pytest.mark.parametrize(("ask", "expected"), [
    ("=AVERAGE(SOFR[rate]) - AVERAGE(EFFR[rate]) for H1 2024, result in bp",
     lambda: f"sofr_minus_effr_bp (bp), {_figure('repo', 'sofr_minus_effr_bp', '2024-01', '2024-06', 'mean')}"),
    ("avg(sofr)-avg(effr) over 2024", lambda: f"mean {frame('repo').loc['2024', 'sofr_minus_effr_bp'].mean():.4f}"),
    ("=MAX(EFFR[rate]) for Q3 2024", lambda: f"max {frame('effr').loc['2024-07':'2024-09', 'rate'].max():.4f}"),
    ("effr (the overnight rate) - in 2023 - on average?", lambda: f"mean {frame('effr').loc['2023', 'rate'].mean():.4f}")])
def test_a_formula_subtracts_and_a_dash_between_words_does_not(ask, expected, tmp_path):
    """A spreadsheet's '=AVERAGE(SOFR[rate]) - AVERAGE(EFFR[rate])' gave the two means and dropped the subtraction: its ' - ' was read
    as a dash. A '-' between two calls subtracts (the mean of each side, on the same days, is their gap's mean); a dash between words
    still sets a remark apart."""
    reply = converse(offline_model(), [ask], fast_workspace(tmp_path))[-1]
    assert expected() in reply and "values:" in reply and reply.count("values:") == 1, reply


def test_a_formula_with_another_statistic_on_each_side_is_declined(tmp_path):
    """'=MEDIAN(SOFR) - MEDIAN(EFFR)' gave two medians: the median of each side is not their gap's median, so it is declined by name."""
    reply = converse(offline_model(), ["=MEDIAN(SOFR) - MEDIAN(EFFR) in 2024"], fast_workspace(tmp_path))[-1]
    assert "values:" not in reply and "a statistic of each side" in reply, reply


def _figure(name: str, column: str, first: str, last: str, statistic: str) -> str:
    values = frame(name).loc[first:last, column]
    return f"{values.index[0]:%Y-%m-%d} to {values.index[-1]:%Y-%m-%d}, {len(values)} values: {statistic} {getattr(values, statistic)():.4f}"


@pytest.mark.parametrize(("ask", "expected"), [
    ("median sofr in the first quarter of the dataset", lambda: _figure("sofr", "rate", "2023-01", "2023-03", "median")),
    ("max effr in the final month of the data", lambda: _figure("effr", "rate", "2024-12", "2024-12", "max")),
    ("mean 2y in the quarter before the last one in the data", lambda: _figure("ty", "yield_2y", "2024-07", "2024-09", "mean")),
    ("average effr the month before June 2024", lambda: _figure("effr", "rate", "2024-05", "2024-05", "mean")),
    ("max sofr in the quarter after Q2 2023", lambda: _figure("sofr", "rate", "2023-07", "2023-09", "max")),
    ("median 10y in the month after 2023", lambda: _figure("ty", "yield_10y", "2024-01", "2024-01", "median"))])
def test_a_period_at_an_edge_of_the_data_or_next_to_another_is_that_period(ask, expected, tmp_path):
    """'the first month of the data' gave the mean of all 500 days, 'the month before december 2024' every day before December 2024, and
    'the month after the last one in the data' the mean of all the data: each an answer to another question."""
    reply = converse(offline_model(), [ask], fast_workspace(tmp_path))[-1]
    assert expected() in reply, reply


@pytest.mark.parametrize(("ask", "said"), [("mean 10y in the month after the last one in the data", "I don't have data for 2025-01-01 to 2025-01-31"),
                                           ("the average sofr the year before march 2024", "I can't count 'year before' from 'march 2024'")])
def test_a_period_past_the_data_or_counted_from_a_shorter_one_is_declined(ask, said, tmp_path):
    """A month after the data ends has no values; 'the year before march 2024' could be March 2023 or all of 2023: neither is guessed."""
    reply = converse(offline_model(), [ask], fast_workspace(tmp_path))[-1]
    assert said in reply and "values:" not in reply, reply


def test_two_series_with_one_statistic_and_their_gap_between_them(tmp_path):
    """'the median 5y and 30y in H2 2023' went to the older rules (the first ask had no period of its own), so 'the difference between
    them in bp?' got the docs. Now both medians, then their gap in bp."""
    replies = converse(offline_model(), ["the median 5y and 30y in H2 2023", "what's the difference between them in bp?"], fast_workspace(tmp_path))
    h2 = frame("ty").loc["2023-07":"2023-12"]
    assert f"median {h2['yield_5y'].median():.4f}" in replies[0] and f"median {h2['yield_30y'].median():.4f}" in replies[0], replies[0]
    gap = (h2["yield_30y"].median() - h2["yield_5y"].median()) * 100
    assert f"yield_30y minus yield_curve/treasury_yields.yield_5y (median): {gap:+.4f} bp" in replies[1], replies[1]


def test_a_unit_asked_after_a_change_between_periods_is_the_changes(tmp_path):
    """'How did the average sofr change from Q1 2024 to Q4 2024? In bp.': the unit was read as a follow-up of the second period only,
    and the change was never given."""
    reply = converse(offline_model(), ["How did the average sofr change from Q1 2024 to Q4 2024? In bp."], fast_workspace(tmp_path))[-1]
    change = (frame("sofr").loc["2024-10":"2024-12", "rate"].mean() - frame("sofr").loc["2024-01":"2024-03", "rate"].mean()) * 100
    assert f"the mean changed by {change:+.4f} bp" in reply, reply


def test_a_follow_up_naming_a_word_of_several_columns_takes_the_last_series_or_asks(tmp_path):
    """'what about the spread?' after SOFR's mean gave SOFR's mean again, 'spread' dropped. A word several columns share is the last
    series' own column when it has one ('the volume' after EFFR: EFFR's volume), else declined."""
    replies = converse(offline_model(), ["mean effr in 2024", "and the volume?", "how about the spread?"], fast_workspace(tmp_path))
    assert f"money_markets/effr volume_bn ($bn), {_figure('effr', 'volume_bn', '2024', '2024', 'mean')}" in replies[1], replies[1]
    assert "'spread' fits more than one column" in replies[2] and "values:" not in replies[2], replies[2]


def test_a_second_period_written_without_its_year_takes_the_first_ones(tmp_path):
    """'higher in the first half of 2023 or the second half?' named 'the second half' as words it could not use: the year is written once."""
    reply = converse(offline_model(), ["was the average 7y higher in the first half of 2023 or the second half, by how many bp?"],
                     fast_workspace(tmp_path))[-1]
    h1, h2 = frame("ty").loc["2023-01":"2023-06", "yield_7y"].mean(), frame("ty").loc["2023-07":"2023-12", "yield_7y"].mean()
    assert f"mean {h1 * 100:.4f} bp" in reply and f"mean {h2 * 100:.4f} bp" in reply and f"changed by {(h2 - h1) * 100:+.4f} bp" in reply, reply


@pytest.mark.parametrize(("ask", "expected"), [
    ("how many days in 2023 was the 10-year minus 3-month spread negative?",
     lambda: f"{(frame('ty').loc['2023', 'yield_10y'] < frame('ty').loc['2023', 'yield_3m']).sum()} of 249 days"),
    ("average 20y minus 7y spread over 2024 in bp",
     lambda: f"mean {(frame('ty').loc['2024', 'yield_20y'] - frame('ty').loc['2024', 'yield_7y']).mean():.4f}")])
def test_a_difference_of_two_tenors_called_a_spread_is_their_difference(ask, expected, tmp_path):
    """'the 10-year minus 2-year spread' read 'the 2-year spread' as the spread_10y_2y_bp column and declined 10y (percent) minus a bp
    column: the trailing 'spread' names the difference itself."""
    reply = converse(offline_model(), [ask], fast_workspace(tmp_path))[-1]
    assert expected() in reply and "units differ" not in reply, reply


def test_thanks_between_asks_and_a_follow_up_in_trillions_or_the_same_two(tmp_path):
    """'thanks, that's helpful' was read as a request naming 'helpful'; 'and in $tn?' named 'tn'; 'same two for SOFR' after a mean and a
    median named 'two'."""
    replies = converse(offline_model(), ["max effr volume in 2023 in $bn", "thanks, that's helpful", "and in $tn?",
                                         "what were the mean and the median tgcr in Q4 2024?", "same two for bgcr"], fast_workspace(tmp_path))
    assert "could not use" not in replies[1] and "values:" not in replies[1], replies[1]
    assert f"max {frame('effr').loc['2023', 'volume_bn'].max() / 1000:.4f} trillions" in replies[2], replies[2]
    q4 = frame("repo").loc["2024-10":"2024-12", "bgcr"]
    assert f"mean {q4.mean():.4f}, median {q4.median():.4f}" in replies[4], replies[4]


def test_compare_it_to_another_series_for_the_same_period_is_the_pair_and_its_gap(tmp_path):
    """'the median sofr for march 2024 and compare it with the median effr for the same month' was left to the older rules on 'compare',
    which declined 'the same month' as an earlier request's period."""
    reply = converse(offline_model(), ["the median sofr for march 2024 and compare it with the median effr for the same month"],
                     fast_workspace(tmp_path))[-1]
    sofr, effr = frame("sofr").loc["2024-03", "rate"].median(), frame("effr").loc["2024-03", "rate"].median()
    assert f"median {sofr:.4f}" in reply and f"median {effr:.4f}" in reply and f"(median): {effr - sofr:+.4f} percent" in reply, reply


@pytest.mark.parametrize(("ask", "expected"), [
    ("the minimal effr in 2024", lambda: f"min {frame('effr').loc['2024', 'rate'].min():.4f}"),
    ("maximal 10y over 2023", lambda: f"max {frame('ty').loc['2023', 'yield_10y'].max():.4f}"),
    ("mean 3-month T-bill yield in 2023", lambda: f"mean {frame('ty').loc['2023', 'yield_3m'].mean():.4f}"),
    ("the low point of tgcr in 2023?", lambda: f"min {frame('repo').loc['2023', 'tgcr'].min():.4f}"),
    ("high-water mark for the 3y over 2024", lambda: f"max {frame('ty').loc['2024', 'yield_3y'].max():.4f}"),
    ("how many bips did the 5y move over Q3 2024", lambda: f"change {frame('ty').loc['2024-07':'2024-09', 'yield_5y'].diff().sum() * 100:+.4f} bp")])
def test_odd_names_of_a_statistic_and_a_unit_are_read(ask, expected, tmp_path):
    """'Low point for EFFR in 2024?' read 'low' as the target_low column (its figures answered another question); 'minimal', 'maximal',
    'T-bill' (split at its hyphen: 't'), 'high-water mark' and 'basis pts' / 'bips' were named as words it could not use."""
    reply = converse(offline_model(), [ask], fast_workspace(tmp_path))[-1]
    assert expected() in reply and "target_low" not in reply, reply


@pytest.mark.parametrize("ask", ["what was effr two days after the data ends?", "the 10y a month after the data end"])
def test_a_day_counted_past_the_end_of_the_data_is_declined(ask, tmp_path):
    """'What was SOFR a week after the data ends?' gave the mean, min and max of all the data: the day asked is past the data."""
    reply = converse(offline_model(), [ask], fast_workspace(tmp_path))[-1]
    assert "I don't have data for 2025-" in reply and "values:" not in reply, reply


def test_a_follow_up_after_two_asks_answered_together_is_each_ones(tmp_path):
    """'and both for 2024?' after a mean and a count named 'both'; a follow-up of a turn that answered two asks took only the last one.
    'the full year' after a quarter is that quarter's year."""
    replies = converse(offline_model(), ["the median 1y in 2023 and on how many days was it below 5%?", "and both for 2024?",
                                         "median bgcr in Q2 2024", "and the median for the full year"], fast_workspace(tmp_path))
    y24 = frame("ty").loc["2024", "yield_1y"]
    assert f"median {y24.median():.4f}" in replies[1] and f"{(y24 < 5).sum()} of {len(y24)} days below 5%" in replies[1], replies[1]
    assert f"median {frame('repo').loc['2024', 'bgcr'].median():.4f}" in replies[3] and "2024-01-02 to 2024-12-31" in replies[3], replies[3]


def test_a_list_of_tenors_is_each_tenor_and_its_follow_up_is_each_ones(tmp_path):
    """'the average 2-year, 5-year and 10-year yields in 2024' went to the older rules, and the follow-up 'and what was its highest value?'
    then gave the 10-year's max alone, as if 'its' could only be the last one named."""
    replies = converse(offline_model(), ["median 3-month, 1-year and 30-year yields over H1 2023?", "and its lowest value?"],
                       fast_workspace(tmp_path))
    h1 = frame("ty").loc["2023-01":"2023-06"]
    for tenor in ("yield_3m", "yield_1y", "yield_30y"):
        assert f"{tenor} (percent), 2023-01-03 to 2023-06-30, {len(h1)} values: median {h1[tenor].median():.4f}" in replies[0], replies[0]
        assert f"{tenor} (percent), 2023-01-03 to 2023-06-30, {len(h1)} values: min {h1[tenor].min():.4f}" in replies[1], replies[1]


def test_which_period_was_higher_and_by_how_many_bips_is_the_change_in_bp(tmp_path):
    """'SOFR Q2 2024 average vs Q2 2023 average, which one higher? Higher by how many bp?' was left to the older rules on 'which', and
    they dropped the unit: the gap came in percent, unlabelled (+0.3629 for 36.29 bp). 'bips' and 'basis pts' are bp for both rule sets."""
    reply = converse(offline_model(), ["effr Q1 2024 median vs Q1 2023 median, which one was lower? Lower by how many bips?"],
                     fast_workspace(tmp_path))[-1]
    q23, q24 = frame("effr").loc["2023-01":"2023-03", "rate"].median(), frame("effr").loc["2024-01":"2024-03", "rate"].median()
    assert f"the median changed by {(q24 - q23) * 100:+.4f} bp" in reply, reply


def test_the_gap_between_two_tenors_is_the_longer_minus_the_shorter(tmp_path):
    """Two tenors' gap follows the curve's convention, whichever was asked first: the 20y asked before the 7y is still the 20y minus the 7y."""
    replies = converse(offline_model(), ["the 20-year and the 7-year on 2023-10-19", "the spread between them?"], fast_workspace(tmp_path))
    gap = frame("ty").loc["2023-10-19", "yield_20y"] - frame("ty").loc["2023-10-19", "yield_7y"]
    assert all(f"yield_20y minus yield_curve/treasury_yields.yield_7y (value): {gap:+.4f} percent" in reply for reply in replies), replies


def test_that_day_after_a_move_the_older_rules_answered_is_the_moved_day(tmp_path):
    """Register set 3's tenor session: after a gap, 'and one year later?' went to the older rules (2024-12-31), and 'the 30y on that
    day' then gave 2023-12-29's figure: the teaching package still held the request before the move, a stale day."""
    replies = converse(offline_model(), ["the 5y on the last trading day of 2023?", "same but for the 30-year", "what's the gap between them?",
                                         "and a year later?", "what about the 3m on that day"], fast_workspace(tmp_path))
    assert replies[3].startswith("I can't answer that: 'and a year later?' would move both figures"), replies[3]  # the gap's pair: never one leg
    assert replies[4].startswith("I can't answer that") and "2023-12-29" not in replies[4], replies[4]


@pytest.mark.parametrize(("ask", "expected"), [
    ("Pardon me, could you teach me the median SOFR in May 2024?", lambda: _figure("sofr", "rate", "2024-05", "2024-05", "median")),
    ("My client would like the max 2y in Q3 2024, if it's no trouble.", lambda: _figure("ty", "yield_2y", "2024-07", "2024-09", "max")),
    ("reckon you could grab the mean EFFR for the back half of 2024?", lambda: _figure("effr", "rate", "2024-07", "2024-12", "mean")),
    ("g'day, righto, what's the 5y low for the front half of 2023?", lambda: _figure("ty", "yield_5y", "2023-01", "2023-06", "min")),
    ("The patron is asking for the average TGA balance in March 2024.", lambda: _figure("repo", "tga_bn", "2024-03", "2024-03", "mean")),
    ("For the background section of my memo: what was the median EFFR in Q3 2023?", lambda: _figure("effr", "rate", "2023-07", "2023-09", "median")),
    ("The committee wants the max 10y in 2024 for the staff packet.", lambda: _figure("ty", "yield_10y", "2024", "2024", "max")),
    ("Drafting a paragraph for the council newsletter - mean SOFR in October 2024?", lambda: _figure("sofr", "rate", "2024-10", "2024-10", "mean")),
    ("what goes in the table for the lowest 2y in H2 2023?", lambda: _figure("ty", "yield_2y", "2023-07", "2023-12", "min")),
    ("for the article: mean 30y in 2023", lambda: _figure("ty", "yield_30y", "2023", "2023", "mean")),
    ("Sports-radio segment tonight, my co-host bet me a coffee: what was the highest 30-year Treasury yield in 2023?",
     lambda: _figure("ty", "yield_30y", "2023", "2023", "max")),
    ("Museum docent here, prepping the exhibit placard: the average SOFR in 2024, please.",
     lambda: _figure("sofr", "rate", "2024", "2024", "mean")),
    ("For my investor update email to the board: median EFFR in Q1 2024?",
     lambda: _figure("effr", "rate", "2024-01", "2024-03", "median")),
    ("Writing a screenplay where my character checks the lowest 2-year Treasury yield of 2023: what was it?",
     lambda: _figure("ty", "yield_2y", "2023", "2023", "min")),
    ("My wife and I have a bet riding on this: what was the max EFFR in 2023?",
     lambda: _figure("effr", "rate", "2023", "2023", "max")),
    ("Drafting the board slide tomorrow - what's the median 10-year Treasury yield in Q3 2024?",
     lambda: _figure("ty", "yield_10y", "2024-07", "2024-09", "median")),
    ("for my thesis chapter: mean sofr in h2 2023",
     lambda: _figure("sofr", "rate", "2023-07", "2023-12", "mean")),
    ("wats the lowest 2yr tsy yld in 2024 thx",
     lambda: _figure("ty", "yield_2y", "2024", "2024", "min")),
    ("For the podcast episode tonight: mean 10-year Treasury yield in June 2024",
     lambda: _figure("ty", "yield_10y", "2024-06", "2024-06", "mean")),
    ("quick one for the group chat - lowest 5-year yield in Q4 2023?",
     lambda: _figure("ty", "yield_5y", "2023-10", "2023-12", "min"))])
def test_politeness_slang_a_relayed_ask_and_where_the_figure_goes_are_no_part_of_the_question(ask, expected, tmp_path):
    """'teach me', 'reckon', 'if it isn't too much trouble', a patron or a client who asks, 'the back half of 2023', a memo's background
    section, a council, an answer key's table, an article were each named as words the model could not use (and 'no' in 'no trouble' as a
    negation; 'article' made the older rules say they can't write prose), though the question itself was read. So were the registers
    fresh_registers19 found the class in (a reporter's draft, a quiz, a client's text, a novel's scene): a co-host, a docent, a board slide,
    a screenplay, a group chat, texting shorthand."""
    reply = converse(offline_model(), [ask], fast_workspace(tmp_path))[-1]
    assert expected() in reply and "could not use" not in reply and "prose" not in reply, reply


def test_a_correction_and_a_relayed_follow_up_build_on_the_last_answer(tmp_path):
    """'Forgive me, I meant the first half.' and 'He'd also like it for EFFR.' were declined on 'forgive' and 'he'd'."""
    replies = converse(offline_model(), ["average sofr in Q1 2024", "Forgive me, I meant Q2.", "She'd also like the maximum."],
                       fast_workspace(tmp_path))
    assert _figure("sofr", "rate", "2024-04", "2024-06", "mean") in replies[1], replies[1]
    assert _figure("sofr", "rate", "2024-04", "2024-06", "max") in replies[2], replies[2]


def test_its_after_a_declined_ask_naming_an_unknown_series_is_declined(tmp_path):
    """'and the UK gilt same year?' was declined, then 'and its max?' gave the US 10-year's max: 'its' was the gilt."""
    replies = converse(offline_model(), ["median 5y in 2024", "and the bund that year?", "and its min?"], fast_workspace(tmp_path))
    assert "values:" not in replies[2] and "'its' may be the bund" in replies[2], replies[2]


def test_the_gap_between_two_statistics_just_answered_is_their_difference_in_the_unit_asked(tmp_path):
    """'the gap between those two in basis points' after a max and then a min gave both again, in percent: the subtraction dropped."""
    replies = converse(offline_model(), ["lowest 30y in Q2 2023", "and the highest?", "what's the difference between those two, in bp?"],
                       fast_workspace(tmp_path))
    q2 = frame("ty").loc["2023-04":"2023-06", "yield_30y"]
    assert f"The max minus the min (yield_curve/treasury_yields.yield_30y): {(q2.max() - q2.min()) * 100:+.4f} bp" in replies[2], replies[2]


def test_one_tenor_minus_another_that_day_is_the_day_of_the_last_answer(tmp_path):
    """'what's the 10y minus 2y that day in bp?' after two tenors on one day got the dataframe's docs."""
    replies = converse(offline_model(), ["5y on 2024-03-15?", "and the 30y?", "what's the 30y minus the 5y that day, in bp?"],
                       fast_workspace(tmp_path))
    gap = (frame("ty").loc["2024-03-15", "yield_30y"] - frame("ty").loc["2024-03-15", "yield_5y"]) * 100
    assert "on 2024-03-15" in replies[2] and f"{gap:.4f} bp" in replies[2] and "Docs" not in replies[2], replies[2]


def test_the_last_question_on_a_sheet_is_no_question_about_this_conversation(tmp_path):
    """'the last question on the sheet asks what the 10-year will be at the end of 2025' recalled the previous request and its figures."""
    reply = converse(offline_model(), ["the average sofr in 2024?", "the last question on the worksheet asks for the mean sofr in 2025"],
                     fast_workspace(tmp_path))[-1]
    assert "earlier request" not in reply and "last request" not in reply and "values:" not in reply, reply


def test_the_gap_between_two_turns_answers_is_kept_as_a_pair_for_the_next_follow_up(tmp_path):
    """'so what's the spread between them in bp?' after two tenors asked in two turns got the docs; a follow-up that moves the day then
    gave one leg alone. Now the gap is given, and a new day gives both legs and their gap again."""
    replies = converse(offline_model(), ["3m on 2024-02-01", "and the 20y", "what's the gap between them in bp?", "and on 2024-08-01?"],
                       fast_workspace(tmp_path))
    for reply, day in ((replies[2], "2024-02-01"), (replies[3], "2024-08-01")):
        gap = (frame("ty").loc[day, "yield_20y"] - frame("ty").loc[day, "yield_3m"]) * 100
        assert f"yield_20y minus yield_curve/treasury_yields.yield_3m (value): {gap:+.4f}" in reply, reply


def test_the_year_changed_is_a_new_period_never_a_change_statistic(tmp_path):
    """'she now wants just the year changed, 2024' after a count gave the rate's change over 2024 ('changed' read as the statistic)."""
    replies = converse(offline_model(), ["on how many days was sofr at or above 5.31% in 2023?", "same thing with the year changed, 2024 please",
                                         "median effr in June 2023", "ok now just the year changed: 2024"], fast_workspace(tmp_path))
    sofr = frame("sofr").loc["2024", "rate"]
    assert f"{(sofr >= 5.31).sum()} of {len(sofr)} days at or above 5.31%" in replies[1], replies[1]
    assert _figure("effr", "rate", "2024-06", "2024-06", "median") in replies[3], replies[3]


def test_growth_and_ratio_after_two_periods_answered_in_two_turns_are_between_them(tmp_path):
    """'by what percent did it grow?' after the 2023 and the 2024 means gave the change inside 2024; 'how many times bigger was the first
    one?' gave a change, not the ratio asked."""
    replies = converse(offline_model(), ["mean tga balance in Q1 2023", "and in Q1 2024?", "by what percent did it rise?"], fast_workspace(tmp_path))
    q1 = [frame("repo").loc[f"{year}-01":f"{year}-03", "tga_bn"].mean() for year in (2023, 2024)]
    assert f"the mean changed by {q1[1] - q1[0]:+.4f} ({(q1[1] / q1[0] - 1) * 100:+.4f}%)" in replies[2], replies[2]
    replies = converse(offline_model(), ["median sofr volume in March 2023", "and in March 2024?", "how many times larger was the second one?"],
                       fast_workspace(tmp_path / "ratio"))
    march = [frame("sofr").loc[f"{year}-03", "volume_bn"].median() for year in (2023, 2024)]
    assert f"(the second over the first: {march[1] / march[0]:.4f} times)" in replies[2], replies[2]


def test_the_upper_end_of_the_target_range_and_its_follow_up_stay_on_that_column(tmp_path):
    """'the upper end of the fed funds target range at the end of 2024' went to the older rules ('range' read as max minus min), and
    'and at the start of 2024?' then gave the EFFR rate itself: another series."""
    replies = converse(offline_model(), ["upper end of the effr target range at the end of 2023?", "and at the start of 2023?"],
                       fast_workspace(tmp_path))
    assert f"effr target_high (percent) on 2023-01-03: {frame('effr').loc['2023-01-03', 'target_high']:.4f}" in replies[1], replies[1]


def test_a_named_colleague_who_passes_on_a_follow_up_is_no_part_of_it(tmp_path):
    """'Leo wants the standard deviation instead, same year' and 'Dev says we also need Q2' were declined on 'leo' and 'dev'."""
    replies = converse(offline_model(), ["stdev of the 2y in 2023", "Priya wants the median instead, same year",
                                         "Okay. Tomas says he also needs it for 2024"], fast_workspace(tmp_path))
    assert _figure("ty", "yield_2y", "2023", "2023", "median") in replies[1], replies[1]
    assert _figure("ty", "yield_2y", "2024", "2024", "median") in replies[2], replies[2]


@pytest.mark.parametrize(("ask", "expected"), [
    ("min 3m Mar-24", lambda: _figure("ty", "yield_3m", "2024-03", "2024-03", "min")),
    ("the 7y on 14-Nov-23", lambda: f"yield_7y (percent) on 2023-11-14: {frame('ty').loc['2023-11-14', 'yield_7y']:.4f}"),
    ("median effr Feb-23:Apr-23", lambda: _figure("effr", "rate", "2023-02", "2023-04", "median"))])
def test_a_month_or_a_day_with_a_two_digit_year_is_read(ask, expected, tmp_path):
    """A desk's 'Jun-24', '05-Aug-24' and '29-Dec-23' were named as words the model could not use."""
    reply = converse(offline_model(), [ask], fast_workspace(tmp_path))[-1]
    assert expected() in reply, reply


def test_a_change_asked_after_two_days_or_two_months_is_between_them(tmp_path):
    """'so how much did it fall over the year, in bp?' after SOFR on the last days of 2023 and 2024 was declined ('a change needs two
    days'); 'the difference between those two months' read 'two months' as the 2-month yield."""
    replies = converse(offline_model(), ["the 3m on the last trading day of 2023?", "and on the last trading day of 2024?",
                                         "how much did it drop over the year, in bp?"], fast_workspace(tmp_path))
    drop = (frame("ty").loc["2024-12-31", "yield_3m"] - frame("ty").loc["2023-12-29", "yield_3m"]) * 100
    assert f"From 2023-12-29 to 2024-12-31 the value changed by {drop:+.4f} bp" in replies[2], replies[2]
    replies = converse(offline_model(), ["median bgcr in May 2023", "and in August 2023?", "the gap between those two months, in bp?"],
                       fast_workspace(tmp_path / "months"))
    may, august = (frame("repo").loc[month, "bgcr"].median() for month in ("2023-05", "2023-08"))
    assert f"the median changed by {(august - may) * 100:+.4f} bp" in replies[2], replies[2]


def test_who_the_question_is_for_is_no_word_either_rule_set_names(tmp_path):
    """'My son's economics homework asks ...', 'Helping my daughter with her worksheet ... Can you help us?': the older rules named
    'son', 'homework', 'help' (their own list of filler words was not the teaching package's)."""
    reply = converse(offline_model(), ["My daughter's homework asks for the max 30y in 2024. Can you help us?"], fast_workspace(tmp_path))[-1]
    assert _figure("ty", "yield_30y", "2024", "2024", "max") in reply and "could not use" not in reply, reply


def test_a_range_written_as_max_minus_min_and_a_drop_after_two_days_are_read(tmp_path):
    """'Range instead (max minus min), bp.' after a quarter's standard deviation gave the range of all the data (the older rules, no
    period); 'so how much did it drop, in bp?' after two days' values gave the daily change into the first day."""
    replies = converse(offline_model(), ["median 5y in Q1 2024", "high minus low instead, in bp"], fast_workspace(tmp_path))
    q1 = frame("ty").loc["2024-01":"2024-03", "yield_5y"]
    assert f"{q1.index[-1]:%Y-%m-%d}, {len(q1)} values: range (max minus min) {(q1.max() - q1.min()) * 100:.4f} bp" in replies[1], replies[1]
    replies = converse(offline_model(), ["the 1m on 2024-03-19?", "and on the 20th?", "so how much did it drop, in bp?"],
                       fast_workspace(tmp_path / "days"))
    days = frame("ty").loc[["2024-03-19", "2024-03-20"], "yield_1m"]
    assert f"From 2024-03-19 to 2024-03-20 the value changed by {(days.iloc[1] - days.iloc[0]) * 100:+.4f} bp" in replies[2], replies[2]


@pytest.mark.parametrize(("turns", "name", "column", "periods"), [
    (["what was the 20-year yield on 2024-07-15?", "and a week before that?", "how much did it change between the two, in bp?"],
     "ty", "yield_20y", ("2024-07-08", "2024-07-15")),
    (["average SOFR in Q2 2024", "what about Q1?", "the difference?"], "sofr", "rate", ("2024-01:2024-03", "2024-04:2024-06")),
])
def test_a_change_between_two_answers_runs_forward_in_time(turns, name, column, periods, tmp_path):
    """fresh_sessions15 ja-02 / fresh_sessions16 rm-03: after a day and then 'the day before', the change was said 'From 2024-09-30 to
    2024-09-27 ... -328.4': true as written, but read as a fall. Whichever was asked first, the change runs from the earlier period."""
    values = frame(name)[column]
    (earlier, later), unit = ((values.loc[slice(*p.split(":"))].mean() if ":" in p else values.loc[p]) for p in periods), "bp" in turns[-1]
    reply = converse(offline_model(), turns, fast_workspace(tmp_path))[-1]
    change = f"{(later - earlier) * (100 if unit else 1):+.4f}{' bp' * unit}"
    assert f"changed by {change}" in reply and reply.index(periods[0][:7]) < reply.index("changed by"), reply
    assert reply.split("From ")[-1].startswith(periods[0].split(":")[0][:7]), reply


@pytest.mark.parametrize("last", ["so how much higher was the 2024 one, in bp?", "how much lower was the 2023 one in bp"])
def test_the_year_of_one_of_two_days_picks_it_and_never_a_year(last, tmp_path):
    """fresh_sessions16 gc-03: 'how much higher the 2024 one was, in basis points' after a day in 2024 and the same day in 2023 set the
    day against all of 2024 as a 'value', and gave the change from a year to a day."""
    replies = converse(offline_model(), ["the 10-year on July 3 2024", "and the same day in 2023?", last], fast_workspace(tmp_path))
    days = frame("ty").loc[["2023-07-03", "2024-07-03"], "yield_10y"]
    assert f"From 2023-07-03 to 2024-07-03 the value changed by {(days.iloc[1] - days.iloc[0]) * 100:+.4f} bp" in replies[2], replies[2]
    assert "251 values" not in replies[2], replies[2]


def test_a_days_value_moved_to_a_year_is_that_day_in_it_or_declined(tmp_path):
    """Found beside fresh_sessions16 gc-03: 'and the same day in 2023?' after one day of 2024 gave 'value' over all of 2023 (its last
    value, said beside '249 values'); 'and in 2023?' did the same. A year has no one value: the same day in it, or a decline."""
    sofr = frame("sofr")["rate"]
    replies = converse(offline_model(), ["sofr on 2024-05-15", "and the same day in 2023?"], fast_workspace(tmp_path / "a"))
    assert f"on 2023-05-15: {sofr.loc['2023-05-15']:.4f}" in replies[1], replies[1]
    replies = converse(offline_model(), ["sofr on 2024-05-15", "and in 2023?"], fast_workspace(tmp_path / "b"))
    assert "values:" not in replies[1] and f"{sofr.loc['2023-12-29']:.4f}" not in replies[1] and "a value is one day's" in replies[1], replies[1]


@pytest.mark.parametrize(("ask", "name", "column", "first", "last", "statistic"), [
    ("My textbook says SOFR averaged 5.02% in 2023. What was the average SOFR in 2023?", "sofr", "rate", "2023", "2023", "mean"),
    ('The brochure claims "the 30-year topped out at 5.2% in 2024." What was the highest 30-year Treasury yield in 2024?', "ty", "yield_30y",
     "2024", "2024", "max"),
])
def test_a_claim_stated_before_a_question_that_names_its_series_is_set_aside_and_said(ask, name, column, first, last, statistic, tmp_path):
    """fresh_registers19 fc-01 / fc-02: a reporter's draft quoted before the question ('says the 10-year "ended 2023 at 3.88%." What was
    ...?') was read as one ask with the question, and declined naming the claim's words."""
    reply = converse(offline_model(), [ask], fast_workspace(tmp_path))[-1]
    claim = ask.split(". ")[0].split(' "')[0]
    assert _figure(name, column, first, last, statistic) in reply and "set aside" in reply and claim.split()[1] in reply, reply


def test_a_unit_after_a_comma_is_never_a_years_amount(tmp_path):
    """fresh_sessions17 hk-01: 'tri-party repo volume on the last trading day of 2024, $bn' read '2024 $bn' as an amount, so no period."""
    reply = converse(offline_model(), ["overnight tri-party repo volume on the last trading day of 2023, $bn"], fast_workspace(tmp_path))[-1]
    assert "on 2023-12-29" in reply and f"{frame('repo').loc['2023-12-29', 'tri_party_on_volume_bn']:.4f}" in reply, reply


@pytest.mark.parametrize(("turns", "name", "column", "first", "last", "statistic"), [
    (["What was the mean BBSW in 2024?", "ok, what about EFFR then?"], "effr", "rate", "2024", "2024", "mean"),
    (["median €STR in Q2 2024", "fine, tgcr for the same quarter instead"], "repo", "tgcr", "2024-04", "2024-06", "median"),
])
def test_a_catalog_series_standing_in_for_a_declined_unknown_one_keeps_the_rest(turns, name, column, first, last, statistic, tmp_path):
    """fresh_sessions12 dc-01 / dc-04, fresh_sessions15 sb-04: after 'the average SONIA rate in 2024' was declined, 'ok, what about SOFR
    then?' and 'fine, give me EFFR for the same quarter' were refused as building on it; the user named the stand-in, the rest is kept."""
    replies = converse(offline_model(), turns, fast_workspace(tmp_path))
    assert _figure(name, column, first, last, statistic) in replies[1] and f"the {statistic} over" in replies[1], replies[1]
    replies = converse(offline_model(), [turns[0], "ok, what about the max EFFR then?"], fast_workspace(tmp_path / "max"))
    assert " values: mean" not in replies[1], replies[1]


def test_the_highest_close_in_a_year_is_a_max_never_the_close_of_the_year(tmp_path):
    """fresh_sessions13 tc-02: 'A student wrote that the 10-year's highest close in 2024 was 4.81%. Can you check?' read 'close in 2024'
    as the year's last day, so a max of one day (left to the older rules, which declined it)."""
    reply = converse(offline_model(), ["My classmate claims the 5-year's lowest close in 2023 was 3.5%. Is that right?"],
                     fast_workspace(tmp_path))[-1]
    values = frame("ty").loc["2023", "yield_5y"]
    assert f"min {values.min():.4f} on {values.idxmin():%Y-%m-%d}" in reply and "You quoted 3.5" in reply, reply


@pytest.mark.parametrize(("ask", "name", "column", "day"), [
    ("5y cls 2/27/24?", "ty", "yield_5y", "2024-02-27"), ("sofr on 27/2/24 pls", "sofr", "rate", "2024-02-27"),
    ("3m bill chg on 11/15/23, bp", "ty", "yield_3m", None)])
def test_a_day_written_with_slashes_and_a_two_digit_year_is_read_when_only_one_order_is_a_date(ask, name, column, day, tmp_path):
    """fresh_sessions18 dt-01: '2s10s cls 3/28/24, bp' was split into '3', '28', '24' (and 'cls' declined); '3/1/24' stays ambiguous, and
    a day's 'chg' is never answered with the day's level."""
    reply = converse(offline_model(), [ask], fast_workspace(tmp_path))[-1]
    assert f"on {day}: {frame(name).loc[day, column]:.4f}" in reply if day else "on 2023-11-15:" not in reply, reply  # a change: no level
    replies = converse(offline_model(), ["10y on 3/4/24"], fast_workspace(tmp_path / "ambiguous"))
    assert "could be" in replies[0] and "values" not in replies[0] and ": 4." not in replies[0], replies[0]


def test_a_statement_naming_no_slot_before_a_question_with_its_own_series_is_context(tmp_path):
    """fresh_sessions18 mg-01: 'Our broker says mortgage rates follow the 10-year Treasury. What was the average 10-year Treasury yield in
    June 2024?' was declined naming 'mortgage' (a word of the context, not of the question). A statement with an ask of its own
    ('Load data.csv.') or a word that may change the answer ('Only weekdays.') is never set aside."""
    reply = converse(offline_model(), ["My flatmate reckons the bund tracks the 10-year Treasury. What was the median 10-year Treasury yield "
                                       "in Q2 2024?"], fast_workspace(tmp_path))[-1]
    assert _figure("ty", "yield_10y", "2024-04", "2024-06", "median") in reply and "I set aside" in reply and "bund" in reply, reply
    reply = converse(offline_model(), ["Only Mondays. What was the median 10-year Treasury yield in Q2 2024?"], fast_workspace(tmp_path / "b"))[-1]
    assert _figure("ty", "yield_10y", "2024-04", "2024-06", "median") not in reply, reply


def test_a_percent_change_between_the_two_periods_just_answered_is_between_their_figures(tmp_path):
    """fresh_sessions16 lc-02: 'percent change from June 2023 to June 2024?' after those two months' means gave the change from the span's
    first day to its last (-65.1%), not between the two means (-78.0%)."""
    replies = converse(offline_model(), ["median TGA balance in March 2023", "and March 2024", "percent change from March 2023 to March 2024?"],
                       fast_workspace(tmp_path))
    first, second = (frame("repo").loc[month, "tga_bn"].median() for month in ("2023-03", "2024-03"))
    assert f"({(second / first - 1) * 100:+.4f}%)" in replies[2] and "values: percent change" not in replies[2], replies[2]


@pytest.mark.parametrize("ask", ["how many days in 2024 were both the 2y and the 10y above 4.5%?",
                                 "days in 2023 when the 3m and the 10y were both below 4%"])
def test_two_tenors_under_one_condition_are_never_their_spread_nor_two_counts_subtracted(ask, tmp_path):
    """fresh_redteam3 cond-01: 'how many days in 2024 were both sofr and effr above 5.32%?' gave SOFR's count of all days, EFFR's count above
    5.32%, and 'effr minus sofr (count): -79'; with two tenors the words read as their spread column (every day 'below 400 bp')."""
    reply = converse(offline_model(), [ask], fast_workspace(tmp_path))[-1]
    assert "spread_" not in reply and " minus " not in reply and "count 25" not in reply and "of 249 days" not in reply, reply


def test_an_ask_no_rule_reads_is_never_dropped_for_the_thanks_after_it(tmp_path):
    """fresh_registers20 fh-01 (my own variant, with a season no reader knows): 'Good day. I would like to know ... I thank you in advance.'
    got only "You're welcome.": the older rules noted the ask as a goal and dropped it beside the thanks."""
    reply = converse(offline_model(), ["Good evening. I would like to know what was the median of the yield of 2 years of the Treasury during "
                                       "the cherry-blossom season of 2024. I thank you in advance."], fast_workspace(tmp_path))[-1]
    assert not reply.startswith("You're welcome") and "values:" not in reply, reply
