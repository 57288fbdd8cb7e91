"""The exercise checks: a wrong or missing answer gets NOT YET and a hint; the right one gets PASS.

The solutions notebook (run by nbval) passes every check with real work; these tests
feed each check the mistakes students make.
"""

from __future__ import annotations

import inspect
import json

import pytest

from flawedcode import exercises
from flawedcode.demo import LESSON_STEPS
from flawedcode.exercises import (
    check_call_growth,
    check_config_file,
    check_memory,
    check_recall_source,
    check_smallest_budget,
    check_task_file,
    check_text_preview,
    check_tokens_per_success,
    check_tool_calls,
    goal_recalled,
)
from flawedcode.lessons import LESSON_BUDGET, lesson_agent
from flawedcode.paths import PROJECT_ROOT

CHECKS = [getattr(exercises, name) for name in exercises.__all__ if name.startswith("check_")]


def verdict(capsys, outcome) -> tuple[bool, str]:
    return bool(outcome), capsys.readouterr().out


@pytest.mark.parametrize("check", CHECKS, ids=lambda check: check.__name__)
def test_an_exercise_not_tried_yet_says_so_and_does_not_raise(check, capsys):
    arguments = [... for name, parameter in inspect.signature(check).parameters.items() if parameter.default is inspect.Parameter.empty]
    passed, out = verdict(capsys, check(*arguments))
    assert not passed and out.startswith("NOT YET: ") and "not tried yet" in out and "\nHint: " in out
    assert repr(check(*arguments)) == "NOT YET"


def test_there_are_three_checks_per_lesson():
    assert len(CHECKS) == 15


def test_memory_needs_an_agent_with_memory(tmp_path, capsys):
    agent = lesson_agent("v0", folder=tmp_path)
    agent.send("Get docs for money_markets/sofr")
    reply = agent.send("What did you just read?")
    passed, out = verdict(capsys, check_memory(agent, reply))
    assert not passed and "needs v1 or v2" in out
    memory = lesson_agent("v1", folder=tmp_path)
    memory.send("Get docs for money_markets/sofr")
    passed, out = verdict(capsys, check_memory(memory, memory.send("What did you just read?")))
    assert passed and out.startswith("PASS: memory: v1 remembered")


def test_tool_calls_and_their_cost_are_read_from_the_agent(tmp_path, capsys):
    agent = lesson_agent("v0", folder=tmp_path)
    agent.send("Get docs for money_markets/sofr and money_markets/effr")
    passed, out = verdict(capsys, check_tool_calls(agent, ["chartbook_get_docs"]))
    assert not passed and "the messages hold ['chartbook_get_docs', 'chartbook_get_docs']" in out
    assert check_tool_calls(agent, ["chartbook_get_docs", "chartbook_get_docs"])
    capsys.readouterr()
    first_result = next(message for message in agent.messages if message.type == "tool")
    tokens = agent.counter.count_message(first_result)
    growth = agent.token_log[1].input_tokens - agent.token_log[0].input_tokens
    passed, out = verdict(capsys, check_call_growth(agent, tokens, growth + 1))
    assert not passed and f"{growth:,} tokens bigger, not {growth + 1:,}" in out
    assert check_call_growth(agent, tokens, growth)


def test_the_smallest_budget_is_checked_by_running_v1_both_sides_of_it(capsys):
    passed, out = verdict(capsys, check_smallest_budget(LESSON_BUDGET))
    assert not passed and f"at {LESSON_BUDGET:,} tokens v1 still loses its goal" in out, "the suggested budget loses the goal"
    passed, out = verdict(capsys, check_smallest_budget(LESSON_BUDGET + 512))
    assert not passed and "is not one of" in out
    passed, out = verdict(capsys, check_smallest_budget(LESSON_BUDGET + 16 * 1024))
    assert not passed and "v1 already keeps its goal at" in out


def test_a_preview_must_not_land_in_the_repository(capsys):
    passed, out = verdict(capsys, check_text_preview("[Offloaded: scratch/x.txt | 1 characters]", "x", PROJECT_ROOT / "scratch"))
    assert not passed and "inside the repository" in out


def test_a_config_inside_the_repository_is_refused(tmp_path, capsys):
    agent = lesson_agent("v2", folder=tmp_path)
    passed, out = verdict(capsys, check_config_file(PROJECT_ROOT / "flawedcode" / "flawedcode.yaml", agent, {}))
    assert not passed and "inside the repository" in out


def test_a_config_file_that_changes_nothing_is_not_enough(tmp_path, capsys):
    from flawedcode.config import load_config

    path = tmp_path / "same.yaml"
    path.write_text("budget_tokens: 8192\n", encoding="utf-8")
    agent = lesson_agent("v2", folder=tmp_path, config=load_config(path))
    passed, out = verdict(capsys, check_config_file(path, agent, {"agent": "v2", "success": True}))
    assert not passed and "changes neither summarization nor offloading" in out


def test_the_recall_source_comes_from_the_last_requests_tool_calls(tmp_path, capsys):
    agent = lesson_agent("v2", folder=tmp_path)
    agent.send("Load 50 rows of SOFR data")
    agent.send("What was the average SOFR rate you found?")
    actual = exercises.recall_source(agent)
    wrong = next(source for source in exercises.SOURCES if source != actual)
    passed, out = verdict(capsys, check_recall_source(agent, wrong))
    assert not passed and f"the answer came from the {actual}, not the {wrong}" in out
    assert check_recall_source(agent, actual)


def test_tokens_per_success_is_recomputed_from_runs_jsonl(tmp_path, capsys):
    runs = [{"agent": "v2", "task": task, "run": 1, "success": success, "error": None,
             "totals": {"input_tokens": tokens, "output_tokens": 100}}
            for task, success, tokens in (("a", True, 1900), ("b", False, 2900), ("c", True, 900))]
    (tmp_path / "runs.jsonl").write_text("".join(json.dumps(run) + "\n" for run in runs), encoding="utf-8")
    assert check_tokens_per_success(tmp_path, "v2", 3000)
    capsys.readouterr()
    passed, out = verdict(capsys, check_tokens_per_success(tmp_path, "v2", 5900))
    assert not passed and "6,000 tokens / 2 successes = 3,000, not 5,900" in out


def test_a_task_file_needs_a_recall_well_after_the_plant(tmp_path, capsys):
    path = tmp_path / "tasks.yaml"
    path.write_text("tasks:\n  - name: quick\n    category: multi_step\n    steps:\n      - What is the average SOFR rate in 2024?\n"
                    "      - say: What was the average SOFR rate you found?\n        checks:\n          - has_number: true\n",
                    encoding="utf-8")
    passed, out = verdict(capsys, check_task_file(path, {"v1": {}, "v2": {}}))
    assert not passed and "the recall is only 1 requests after the start" in out
    path.write_text("tasks: [", encoding="utf-8")
    passed, out = verdict(capsys, check_task_file(path, {}))
    assert not passed and "the task file does not load" in out


def test_the_goal_is_recalled_word_for_word_or_by_its_names_and_year():
    goal = LESSON_STEPS[0]
    assert goal_recalled(f'Your original goal was: "{goal}"')
    assert goal_recalled("You wanted to compare SOFR with EFFR over 2024 and explain their spread.")
    assert not goal_recalled("I don't know: the start of our conversation is no longer in my context window.")
    assert not goal_recalled("You asked about SOFR.")


def test_an_answer_of_the_wrong_shape_is_not_yet_never_a_traceback(tmp_path, capsys):
    agent = lesson_agent("v1", folder=tmp_path)
    agent.send("Get docs for money_markets/sofr")
    passed, out = verdict(capsys, exercises.check_session_cost(agent, "a lot", {}))
    assert not passed and out.startswith("NOT YET: what the session cost: your answer could not be checked (ValueError")
    passed, out = verdict(capsys, exercises.check_largest_result(agent, 42))
    assert not passed and "could not be checked (TypeError" in out
