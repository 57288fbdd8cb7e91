"""The exercise checks: no guess, constant or placeholder passes; a wrong answer says what kind of thing is wrong
(never the expected value); hints come only from hint(n); build-it checks run the lesson's session through the
student's function. The solutions notebook (run by nbval) passes every check with real work.
"""

from __future__ import annotations

import inspect
import json
import re

import pytest

from flawedcode import exercises
from flawedcode.demo import LESSON_STEPS
from flawedcode.exercises import (
    check_call_growth,
    check_config_file,
    check_memory,
    check_preview,
    check_recall_source,
    check_session_cost,
    check_smallest_budget,
    check_summarizer,
    check_task_file,
    check_tokens_per_success,
    check_tool_calls,
    check_trimmer,
    goal_recalled,
    hint,
    reference_trim,
)
from flawedcode.lab.window import text_of
from flawedcode.lessons import LESSON_BUDGET, lesson_agent
from flawedcode.paths import PROJECT_ROOT
from flawedcode.tokens import count_text

CHECKS = [getattr(exercises, name) for name in exercises.__all__ if name.startswith("check_")]
CONSTANTS = [..., None, 0, 1, -1, 42, 3.5, True, False, "", " ", "x", "...", "TODO", "a", "a, b, c, d", [], {}, (), ["x"],
             {"v1": {}, "v2": {}}, ("x", 1), b"", 10**9]


def verdict(capsys, outcome) -> tuple[bool, str]:
    return bool(outcome), capsys.readouterr().out


def required_parameters(check) -> list[str]:
    return [name for name, parameter in inspect.signature(check).parameters.items() if parameter.default is inspect.Parameter.empty]


@pytest.fixture(scope="module")
def fresh_agents(tmp_path_factory):
    """One untouched agent of each version: an agent that has done nothing must not pass either."""
    folder = tmp_path_factory.mktemp("fresh")
    return [lesson_agent(version, folder=folder, watch=False) for version in ("v0", "v1", "v2")]


@pytest.mark.parametrize("check", CHECKS, ids=lambda check: check.__name__)
def test_no_check_passes_on_constants_placeholders_or_an_agent_that_did_nothing(check, fresh_agents, capsys):
    names = required_parameters(check)
    tried = 0
    for constant in [*CONSTANTS, *fresh_agents]:
        for agent in (None, *fresh_agents):  # every argument the constant, or the agent argument a fresh agent
            arguments = [agent if name == "agent" and agent is not None else constant for name in names]
            passed, out = verdict(capsys, check(*arguments))
            assert not passed, f"{check.__name__}{tuple(arguments)!r} passed:\n{out}"
            assert out.startswith("NOT YET: Exercise "), out
            tried += 1
    assert tried >= len(CONSTANTS)


@pytest.mark.parametrize("check", CHECKS, ids=lambda check: check.__name__)
def test_an_exercise_not_tried_yet_says_so_and_points_to_its_hint(check, capsys):
    arguments = [... for _ in required_parameters(check)]
    passed, out = verdict(capsys, check(*arguments))
    number = re.match(r"NOT YET: Exercise (\d+\.\d+)", out).group(1)
    assert not passed and "not tried yet" in out and f"hint({number})" in out
    assert repr(check(*arguments)) == "NOT YET"


def test_every_exercise_has_hints_ending_in_code_or_a_choice_and_hint_shows_them_in_turn(capsys):
    assert len(exercises.EXERCISES) == len(CHECKS) >= 22
    for number, item in exercises.EXERCISES.items():
        assert len(item.hints) >= 2, number
    hint(1.2)
    hint("1.2")
    hint(1.2)
    out = capsys.readouterr().out
    assert out.count("Hint 1 of 3") == 1 and out.count("Hint 2 of 3") == 1 and out.count("Hint 3 of 3") == 1
    assert "per_step[call.turn]" in out.split("Hint 3 of 3")[1], "the last hint is the code"
    hint(7.7)
    assert "There is no exercise 7.7" in capsys.readouterr().out


def test_every_choice_question_has_true_and_false_options_and_a_reason_for_each_false_one():
    questions = exercises.questions()
    choices = {check.__doc__.split(":")[0] for check in CHECKS if "(multiple choice)" in check.__doc__}
    assert set(questions) == choices, "every question has its check, and every choice check its question"
    assert {"0.4", "1.5", "2.4", "3.5", "4.4"} <= choices, "one checked why-question per lesson"
    for number, item in questions.items():
        options = item["options"]
        true = [letter for letter, option in options.items() if option.get("correct")]
        assert 2 <= len(true) < len(options), number
        assert all(option.get("why") for option in options.values() if not option.get("correct")), number
        assert item["explain"] and item["question"].endswith("?")
        stated = re.findall(r"(\w+) statements are true", " ".join(exercises.EXERCISES[number].hints))
        assert all(word == {2: "Two", 3: "Three"}[len(true)] for word in stated), f"{number}'s hint counts them wrong"


def test_a_choice_is_scored_as_a_whole_and_its_reasons_come_with_pass(capsys):
    check = exercises.check_why_goal_lost
    for wrong in ("a, b, c, d", "b", "a, b, d"):
        passed, out = verdict(capsys, check(wrong))
        assert not passed and "not right yet" in out and " is false" not in out and "v1 deletes nothing" not in out
    passed, out = verdict(capsys, check("z"))
    assert not passed and "not among the options" in out
    assert check("b and d") and check(["d", "b"]) and check("B, D")
    passed, out = verdict(capsys, check("b, d"))
    assert passed and "a is false: v1 deletes nothing" in out and "c is false: v1 never summarizes" in out


def test_memory_needs_a_follow_up_question_in_a_second_request_to_an_agent_with_memory(tmp_path, capsys):
    agent = lesson_agent("v0", folder=tmp_path)
    agent.send("Get docs for money_markets/sofr")
    passed, out = verdict(capsys, check_memory(agent, agent.send("What did you just read?")))
    assert not passed and "needs a v1 or v2 agent" in out
    one_turn = lesson_agent("v1", folder=tmp_path)
    passed, out = verdict(capsys, check_memory(one_turn, one_turn.send("Get docs for money_markets/sofr")))
    assert not passed and "one request" in out, "reading the docs is not remembering them"
    reread = lesson_agent("v1", folder=tmp_path)
    reread.send("Get docs for money_markets/sofr")
    passed, out = verdict(capsys, check_memory(reread, reread.send("Get docs for money_markets/sofr again")))
    assert not passed and "read the docs again" in out
    memory = lesson_agent("v1", folder=tmp_path)
    memory.send("Get docs for money_markets/sofr")
    passed, out = verdict(capsys, check_memory(memory, memory.send("What did you just read?")))
    assert passed and out.startswith("PASS: Exercise 0.1 (give the agent memory): v1 answered")


def test_a_check_for_any_agent_takes_v3_too(tmp_path, capsys):
    """0.2, 0.3, 1.2 and 1.3 take any version's agent: v3 (lesson 6's) as well as v0 to v2."""
    agent = lesson_agent("v3", folder=tmp_path)
    agent.send("Get docs for money_markets/sofr and money_markets/effr")
    names = [call["name"] for message in agent.messages for call in getattr(message, "tool_calls", None) or []]
    passed, out = verdict(capsys, check_tool_calls(agent, names))
    assert passed, out


def test_a_wrong_number_says_what_kind_of_mistake_never_the_value(tmp_path, capsys):
    agent = lesson_agent("v0", folder=tmp_path)
    agent.send("Get docs for money_markets/sofr and money_markets/effr")
    passed, out = verdict(capsys, check_tool_calls(agent, ["chartbook_get_docs"]))
    assert not passed and "your list has 1 names (too low)" in out and "['chartbook_get_docs', 'chartbook_get_docs']" not in out
    assert check_tool_calls(agent, ["chartbook_get_docs", "chartbook_get_docs"])
    first_result = next(message for message in agent.messages if message.type == "tool")
    tokens = agent.counter.count_message(first_result)
    growth = agent.token_log[1].input_tokens - agent.token_log[0].input_tokens
    capsys.readouterr()
    for given, words in ((growth + 1, "too high"), (growth - 1, "too low"), (agent.token_log[1].input_tokens, "second call's size")):
        passed, out = verdict(capsys, check_call_growth(agent, tokens, given))
        assert not passed and words in out and f"{growth:,}" not in out and str(growth) not in out
    passed, out = verdict(capsys, check_call_growth(agent, len(first_result.content), growth))
    assert not passed and "counts characters" in out
    assert check_call_growth(agent, tokens, growth)
    capsys.readouterr()
    passed, out = verdict(capsys, check_session_cost(agent, agent.token_log[-1].input_tokens, {1: 1}))
    assert not passed and "the last call alone" in out


def test_the_smallest_budget_is_checked_by_running_v1_both_sides_of_it(capsys):
    passed, out = verdict(capsys, check_smallest_budget(LESSON_BUDGET))
    assert not passed and "still loses its goal: too low" in out
    passed, out = verdict(capsys, check_smallest_budget(LESSON_BUDGET + 512))
    assert not passed and "is not one of the budgets" in out
    passed, out = verdict(capsys, check_smallest_budget(LESSON_BUDGET + 16 * 1024))
    assert not passed and "one step lower: too high" in out


def test_the_trimmer_runs_through_the_lesson_session_and_must_not_orphan_a_tool_result(capsys):
    passed, out = verdict(capsys, check_trimmer(lambda messages, keep: messages[-keep:]))
    assert not passed and "starts with a tool result whose call was cut off" in out
    passed, out = verdict(capsys, check_trimmer(lambda messages, keep: messages))
    assert not passed and "more than" in out
    passed, out = verdict(capsys, check_trimmer(lambda messages, keep: messages[:keep]))
    assert not passed and "not the newest messages" in out
    passed, out = verdict(capsys, check_trimmer(reference_trim))
    assert passed and "could not give the goal back" in out, "keep-last-N loses the goal: the lesson's point"


def test_a_preview_of_your_own_is_run_on_every_large_result_of_the_session(capsys):
    def head_and_tail(text: str, max_tokens: int) -> str:
        lines = [line for line in text.splitlines() if line.strip()]
        return "\n".join([lines[0], lines[-1]])

    assert check_preview(head_and_tail)
    capsys.readouterr()
    for wrong, words in ((lambda text, limit: text, "too long"), (lambda text, limit: text.splitlines()[0], "leaves out its last line"),
                         (lambda text, limit: "Preview: a document", "not in the result"),
                         (lambda text, limit: text[:limit], "leaves out its last line")):
        passed, out = verdict(capsys, check_preview(wrong))
        assert not passed and words in out


@pytest.fixture(scope="module")
def summarized_agent(tmp_path_factory):
    agent = lesson_agent("v2", folder=tmp_path_factory.mktemp("summary"), watch=False)
    for step in [*LESSON_STEPS[:-1], "Get docs for money_markets/effr", "Load 50 rows of EFFR data", "Get docs for fed_yield_curve",
                 "Load 30 rows of treasury_yields", LESSON_STEPS[-1]]:
        agent.send(step)
    assert agent.log.count("summarize") >= 1
    return agent


def test_a_summarizer_of_your_own_is_run_on_every_archived_part_and_must_keep_the_figures(summarized_agent, capsys):
    def keeps_calls_and_replies(messages):
        lines = [f"called {call['name']} {call['args']}" for m in messages for call in getattr(m, "tool_calls", None) or []]
        asked = [f"user asked: {text_of(m)}" for m in messages if m.type == "human"]
        return "\n".join(asked + lines + [text_of(m) for m in messages if m.type == "ai" and text_of(m).strip()])

    assert check_summarizer(keeps_calls_and_replies, summarized_agent)
    capsys.readouterr()
    everything = lambda messages: "\n".join(text_of(m) for m in messages)  # noqa: E731
    calls_only = lambda messages: "\n".join(str(getattr(m, "tool_calls", "")) for m in messages)  # noqa: E731
    without_requests = lambda messages: "\n".join(line for line in keeps_calls_and_replies(messages).splitlines()  # noqa: E731
                                                 if not line.startswith("user asked"))
    lost = ("figure(s) the agent reported", "does not name the dataframe(s)", "what the user asked")  # the first it meets
    for wrong, words in ((everything, ("too long",)), (lambda messages: "A summary.", lost), (calls_only, lost),
                         (without_requests, ("what the user asked",))):
        passed, out = verdict(capsys, check_summarizer(wrong, summarized_agent))
        assert not passed and any(word in out for word in words), out


def test_a_preview_must_not_land_in_the_repository_and_a_config_must_change_something(tmp_path, capsys):
    from flawedcode.config import load_config

    agent = lesson_agent("v2", folder=tmp_path)
    passed, out = verdict(capsys, check_config_file(PROJECT_ROOT / "flawedcode" / "flawedcode.yaml", agent, {"agent": "v2"}))
    assert not passed and "inside the repository" in out
    path = tmp_path / "same.yaml"
    path.write_text("budget_tokens: 8192\n", encoding="utf-8")
    same = lesson_agent("v2", folder=tmp_path, config=load_config(path))
    passed, out = verdict(capsys, check_config_file(path, same, {"agent": "v2", "success": True}))
    assert not passed and "changes neither summarization nor offloading" in out


def test_the_recall_source_comes_from_the_last_requests_tool_calls(tmp_path, capsys):
    agent = lesson_agent("v2", folder=tmp_path)
    agent.send("Load 50 rows of SOFR data")
    agent.send("What was the average SOFR rate you found?")
    actual = exercises.recall_source(agent)
    wrong = next(source for source in exercises.SOURCES if source != actual)
    passed, out = verdict(capsys, check_recall_source(agent, wrong))
    assert not passed and f"not the {wrong}" in out and f"from the {actual}" not in out
    assert check_recall_source(agent, actual)


def test_tokens_per_success_is_a_function_run_on_every_set_of_runs_and_names_the_usual_mistakes(tmp_path, capsys):
    runs = [{"agent": agent, "task": task, "run": 1, "success": success, "error": None,
             "totals": {"input_tokens": tokens, "output_tokens": 100}}
            for agent, task, success, tokens in (("v2", "a", True, 1900), ("v2", "b", False, 2900), ("v2", "c", True, 900),
                                                 ("v1", "a", True, 4000), ("v1", "b", False, 9000))]
    (tmp_path / "runs.jsonl").write_text("".join(json.dumps(run) + "\n" for run in runs), encoding="utf-8")

    def tokens(records, keys=("input_tokens", "output_tokens")):
        return sum(record.totals[key] for record in records for key in keys)

    assert check_tokens_per_success(tmp_path, lambda records: tokens(records) / sum(record.success for record in records))
    capsys.readouterr()
    for wrong, words in ((lambda records: 3000, "too "),  # v2's figure, copied from the table: right for v2 alone
                         (lambda records: tokens(records, ("input_tokens",)) / sum(r.success for r in records), "input tokens only"),
                         (lambda records: tokens(records) / len(records), "divides by every run"),
                         (lambda records: tokens(records) / 0, "raised ZeroDivisionError (division by zero) on all the runs"),
                         (3000, "should be a function")):
        passed, out = verdict(capsys, check_tokens_per_success(tmp_path, wrong))
        assert not passed and words in out and "3,000" not in out, out


TASK = """tasks:
  - name: {name}
    category: recall
    steps:
      - My account number is 4417. Remember it.
{fillers}
      - say: What was my account number?
        checks:
          - {check}
"""
FILLERS = ["Get docs for money_markets/sofr", "Load 5 rows of SOFR data", "List ChartBook dataframes",
           "Get docs for money_markets/effr", "Load 5 rows of EFFR data", "Get docs for treasury_yields"]


def task_text(check: str, fillers: list[str], name: str = "recall_account") -> str:
    return TASK.format(name=name, fillers="\n".join(f"      - {filler}" for filler in fillers), check=check)


@pytest.mark.parametrize(("check", "fillers", "words"), [
    ('contains: ""', FILLERS * 2, "would pass a reply that recalls nothing"),
    ("contains: account", FILLERS * 2, "would pass a reply that recalls nothing"),
    ("has_number: true", FILLERS * 2, "would pass a reply that recalls nothing"),
    ('regex: "\\\\d"', FILLERS * 2, "would pass a reply that recalls nothing"),
    ('contains: "4417"', ["hello"] * 12, "1 different text(s)"),
    ('contains: "4417"', FILLERS[:3], "only 4 requests after the start"),
    ("contains: account number", FILLERS * 2, "the question echoed back"),
])
def test_a_task_of_your_own_must_plant_a_number_vary_the_session_and_check_the_recall(tmp_path, check, fillers, words, capsys):
    path = tmp_path / "tasks.yaml"
    path.write_text(task_text(check, fillers), encoding="utf-8")
    passed, out = verdict(capsys, check_task_file(path, {"v1": {"task": "recall_account", "agent": "v1", "success": False},
                                                         "v2": {"task": "recall_account", "agent": "v2", "success": True}}))
    assert not passed and words in out, out


def test_a_good_task_passes_with_results_of_that_task(tmp_path, capsys):
    path = tmp_path / "tasks.yaml"
    path.write_text(task_text("has_number: {min: 4417, max: 4417}", FILLERS * 2), encoding="utf-8")
    results = {"v1": {"task": "recall_account", "agent": "v1", "success": False}, "v2": {"task": "recall_account", "agent": "v2", "success": True}}
    assert check_task_file(path, results)
    passed, out = verdict(capsys, check_task_file(path, {**results, "v2": {"task": "another", "agent": "v2", "success": True}}))
    assert not passed and "not run_task's results" in out


def test_the_goal_is_recalled_word_for_word_or_by_its_names_and_year():
    goal = LESSON_STEPS[0]
    assert goal_recalled(f'Your original goal was: "{goal}"')
    assert goal_recalled("You wanted to compare SOFR with EFFR over 2024 and explain their spread.")
    assert not goal_recalled("I don't know: the start of our conversation is no longer in my context window.")
    assert not goal_recalled("You asked about SOFR.")


def test_an_answer_of_the_wrong_shape_is_not_yet_never_a_traceback(tmp_path, capsys):
    agent = lesson_agent("v1", folder=tmp_path)
    agent.send("Get docs for money_markets/sofr")
    passed, out = verdict(capsys, exercises.check_session_cost(agent, "a lot", {1: 1}))
    assert not passed and "`total_input` should be a whole number" in out
    passed, out = verdict(capsys, exercises.check_largest_result(agent, 42))
    assert not passed and "should be a pair" in out
    passed, out = verdict(capsys, check_preview(lambda text: text))  # one parameter too few
    assert not passed and "could not be checked (TypeError" in out
    assert count_text("x") == 1
