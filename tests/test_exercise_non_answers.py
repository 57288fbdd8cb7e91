"""Every exercise fails every non-answer, and says so without giving the answer away.

For each exercise (0.1 ... 6.3) the table below feeds its check five kinds of non-answer, on runs like the
lesson's own (real agents on the offline model):

- **empty**: ``...``, None, ``""``, ``[]``, a function whose body is still ``...``;
- **constant**: a fixed value that ignores the run (0, 1, 42, "a, b, c, d", a function returning a constant);
- **bare list**: a list of values of the right kinds without the work (numbers and dataframe names, tool names);
- **do nothing**: the strategy that does nothing (``[]``, the unchanged input, an agent that did not do the step);
- **copied**: the answer of an earlier exercise (for multiple choice: every earlier question's right letters).

Each must print NOT YET with a hint pointer, and the line must not hold the answer (the expected figure, the
right letters, the last hint's code). ``non_answer_matrix()`` prints the exercise x kind table the issue asks for.
"""

from __future__ import annotations

import ast
import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage, ToolMessage

from flawedcode import exercises
from flawedcode.agents import AgentV1
from flawedcode.demo import GOAL_QUESTION, LESSON_STEPS
from flawedcode.exercises import EXERCISES
from flawedcode.lab.window import text_of
from flawedcode.lessons import LESSON_BUDGET, lesson_agent

KINDS = ("empty", "constant", "bare list", "do nothing", "copied")
MORE_WORK = ["Get docs for money_markets/effr", "Load 50 rows of EFFR data", "Get docs for fed_yield_curve",
             "Load 30 rows of treasury_yields", "Get docs for money_markets/sofr", "Get docs for money_markets/effr",
             "Load 40 rows of fed_yield_curve", "Get docs for yield_curve/repo_public"]  # lesson 3's extra work, shortened


def right_letters(number: str) -> str:
    return ", ".join(sorted(letter for letter, option in exercises.questions()[number]["options"].items() if option.get("correct")))


def unwritten(*_: Any) -> Any:
    ...


class Runs:
    """The lesson runs the checks read, built once and only when a case needs them."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def agent(self, version: str, steps: list[str], **settings: Any) -> Any:
        agent = lesson_agent(version, folder=self.folder, watch=False, **settings)
        for step in steps:
            agent.send(step)
        return agent

    @cached_property
    def fresh_v1(self):
        return lesson_agent("v1", folder=self.folder, watch=False)

    @cached_property
    def memory(self):
        return self.agent("v1", ["Get docs for money_markets/sofr", "What did you just read?"])

    @cached_property
    def two_calls(self):
        return self.agent("v0", ["Get docs for money_markets/sofr and money_markets/effr"])

    @cached_property
    def session(self):
        return self.agent("v1", LESSON_STEPS)

    @cached_property
    def offloading(self):
        return self.agent("v2", LESSON_STEPS, config={"summarization": {"enabled": False}, "offload": {"threshold_tokens": 500}})

    @cached_property
    def recall(self):
        return self.agent("v2", ["Load 50 rows of SOFR data", "What was the average SOFR rate you found?"])

    @cached_property
    def summarized(self):
        """Lesson 3's agent: trigger at half the budget, keeping 2 messages, the session ending with the goal question."""
        return self.agent("v2", [*LESSON_STEPS[:-1], *MORE_WORK, GOAL_QUESTION],
                          config={"summarization": {"trigger": {"type": "fraction", "value": exercises.EARLIER_TRIGGER},
                                                    "keep": {"type": "messages", "value": exercises.KEEP_LESS_MESSAGES}}})

    @cached_property
    def runs_dir(self) -> Path:
        import json

        folder = self.folder / "bench"
        folder.mkdir()
        runs = [{"agent": agent, "task": task, "run": 1, "success": success, "error": None,
                 "totals": {"input_tokens": tokens, "output_tokens": 100}}
                for agent, task, success, tokens in (("v2", "a", True, 1900), ("v2", "b", False, 2900), ("v2", "c", True, 900),
                                                     ("v1", "a", True, 4900), ("v1", "b", False, 7000))]
        (folder / "runs.jsonl").write_text("".join(json.dumps(run) + "\n" for run in runs), encoding="utf-8")
        return folder

    @cached_property
    def default_config(self) -> Path:
        path = self.folder / "default.yaml"
        path.write_text("budget_tokens: 8192\n", encoding="utf-8")
        return path

    def task_file(self, recall_step: str) -> Path:
        fillers = "".join(f"      - {text}\n" for text in ["Get docs for money_markets/sofr", "Load 5 rows of SOFR data",
                                                           "List ChartBook dataframes", "Get docs for money_markets/effr"] * 3)
        path = self.folder / f"task-{len(list(self.folder.glob('task-*')))}.yaml"
        path.write_text(f"tasks:\n  - name: mine\n    category: recall\n    steps:\n      - My account number is 4417.\n"
                        f"{fillers}{recall_step}\n", encoding="utf-8")
        return path

    task_results = {"v1": {"task": "mine", "agent": "v1", "success": False}, "v2": {"task": "mine", "agent": "v2", "success": True}}

    @cached_property
    def recall_runs(self) -> list[dict[str, Any]]:
        """Twelve middle runs, seven recalled (7/12 is no round share), plus first/last runs of v1 and v3."""
        middle = [{"agent": "v1", "position": "middle", "seed": seed, "recalled": seed % 12 < 7} for seed in range(12)]
        others = [{"agent": agent, "position": position, "seed": seed, "recalled": True}
                  for agent in ("v1", "v3") for position in ("first", "last") for seed in range(3)]
        return middle + others

    @cached_property
    def plan(self):
        """v3 on the start of lesson 6's plan: a few requests, enough for its reminders."""
        from flawedcode.bench.tasks import builtin_tasks_dir, load_task_file

        (task,) = [task for task in load_task_file(builtin_tasks_dir() / "v3" / "plan_isolate_remember.yaml")
                   if task.name == "plan_12_steps"]
        return self.agent("v3", [step.say for step in task.all_steps()[:6]])

    def reminders(self) -> int:
        return sum(event.kind == "plan_reminder" for event in self.plan.events)


def mask_solution(messages, keep):
    results = [i for i, m in enumerate(messages) if isinstance(m, ToolMessage)]
    old = set(results[:-keep] if keep else results)
    return [m.model_copy(update={"content": "[cleared]"}) if i in old else m for i, m in enumerate(messages)]


def strategy(send: Callable[[Any, str], str], name: str = "v1-yours") -> type:
    return type("Yours", (AgentV1,), {"version": name, "send": send})


def forgets_everything(self, text):
    self.messages = []
    return self.run_turn(self.messages, text)


def changes_nothing(self, text):
    self.messages = list(self.messages)
    return self.run_turn(self.messages, text)


def keeps_the_last_six(self, text):  # 1.4's trimmer, copied
    self.messages = exercises.reference_trim(list(self.messages), 6)
    return self.run_turn(self.messages, text)


def numbers_and_frames(messages):
    """3.4's bare list: every decimal the messages hold and every dataframe named, nothing else."""
    numbers = re.findall(r"\d+\.\d+", " ".join(text_of(m) for m in messages if m.type == "ai"))
    frames = [str(call["args"].get("dataframe")) for m in messages for call in getattr(m, "tool_calls", None) or []]
    return " ".join(sorted(set(numbers)) + sorted(set(frames) - {"None"}))


def picker_by_budget(facts, budget):  # the 6.2 non-answer
    return facts if budget >= 500 else []


@dataclass(frozen=True)
class Case:
    number: str
    kind: str
    arguments: Callable[[Runs], list[tuple]]  # one or more argument tuples for the check

    @property
    def check(self) -> Callable[..., Any]:
        return CHECK_OF[self.number]


CHECK_OF = {check.__doc__.split(":")[0]: check for name in exercises.__all__ if name.startswith("check_")
            for check in [getattr(exercises, name)]}
CHOICES = sorted(exercises.questions(), key=lambda number: tuple(map(int, number.split("."))))


def earlier_choices(number: str) -> list[tuple]:
    return [(right_letters(earlier),) for earlier in CHOICES if tuple(map(int, earlier.split("."))) < tuple(map(int, number.split(".")))]


def choice_cases(number: str) -> list[Case]:
    copied = earlier_choices(number) or [(["chartbook_get_docs"],)]
    return [Case(number, "empty", lambda runs: [(...,), ("",)]),
            Case(number, "constant", lambda runs: [("a, b, c, d",), ("a",), ("b, c, d",)]),
            Case(number, "bare list", lambda runs: [(["a", "b", "c", "d"],)]),
            Case(number, "do nothing", lambda runs: [("none",), ([],)]),
            Case(number, "copied", lambda runs, copied=copied: copied)]


CASES: list[Case] = [
    # 0.1 give the agent memory
    Case("0.1", "empty", lambda runs: [(..., ...), (runs.memory, "")]),
    Case("0.1", "constant", lambda runs: [(runs.memory, "sofr"), (runs.memory, "I read the docs.")]),
    Case("0.1", "bare list", lambda runs: [(runs.memory, ["sofr", "money_markets"])]),
    Case("0.1", "do nothing", lambda runs: [(runs.fresh_v1, "What did you just read?")]),
    Case("0.1", "copied", lambda runs: []),  # no earlier exercise
    # 0.2 two tool calls in one request
    Case("0.2", "empty", lambda runs: [(runs.two_calls, []), (runs.two_calls, ...)]),
    Case("0.2", "constant", lambda runs: [(runs.two_calls, ["chartbook_get_docs"]), (runs.two_calls, "chartbook_get_docs")]),
    Case("0.2", "bare list", lambda runs: [(runs.two_calls, ["chartbook_list", "chartbook_get_docs", "chartbook_load_data"])]),
    Case("0.2", "do nothing", lambda runs: [(runs.fresh_v1, [])]),
    Case("0.2", "copied", lambda runs: [(runs.two_calls, text_of(runs.memory.messages[-1]))]),
    # 0.3 what a tool result costs
    Case("0.3", "empty", lambda runs: [(runs.two_calls, ..., ...)]),
    Case("0.3", "constant", lambda runs: [(runs.two_calls, 0, 0), (runs.two_calls, 1000, 1000), (runs.two_calls, 42, 42)]),
    Case("0.3", "bare list", lambda runs: [(runs.two_calls, [c.input_tokens for c in runs.two_calls.token_log], 1)]),
    Case("0.3", "do nothing", lambda runs: [(runs.two_calls, runs.two_calls.token_log[0].input_tokens, 0)]),
    Case("0.3", "copied", lambda runs: [(runs.two_calls, 2, 2)]),  # 0.2: two tool calls
    # 1.1 where v1 starts keeping its goal
    Case("1.1", "empty", lambda runs: [(...,)]),
    Case("1.1", "constant", lambda runs: [(0,), (42,), (10**9,), (65536,)]),
    Case("1.1", "bare list", lambda runs: [([LESSON_BUDGET + 1024 * n for n in range(8)],)]),
    Case("1.1", "do nothing", lambda runs: [(LESSON_BUDGET,)]),
    Case("1.1", "copied", lambda runs: [(runs.two_calls.token_log[1].input_tokens - runs.two_calls.token_log[0].input_tokens,)]),
    # 1.2 what the session cost
    Case("1.2", "empty", lambda runs: [(runs.session, ..., ...), (runs.session, 0, {})]),
    Case("1.2", "constant", lambda runs: [(runs.session, 100_000, {1: 100_000}), (runs.session, 0, {1: 0})]),
    Case("1.2", "bare list", lambda runs: [(runs.session, [c.input_tokens for c in runs.session.token_log],
                                            [c.input_tokens for c in runs.session.token_log])]),
    Case("1.2", "do nothing", lambda runs: [(runs.session, runs.session.token_log[-1].input_tokens,
                                             {call.turn: call.input_tokens for call in runs.session.token_log})]),
    Case("1.2", "copied", lambda runs: [(runs.session, LESSON_BUDGET + 1024, {1: LESSON_BUDGET + 1024})]),
    # 1.3 the largest tool result: (name, share of the largest call)
    Case("1.3", "empty", lambda runs: [(runs.session, ...), (runs.session, ())]),
    Case("1.3", "constant", lambda runs: [(runs.session, ("chartbook_get_docs", 1000)), (runs.session, ("x", 1)),
                                          (runs.session, ("chartbook_load_data", 0.5)), (runs.session, ("chartbook_load_data", 1))]),
    Case("1.3", "bare list", lambda runs: [(runs.session, [m.name for m in runs.session.messages if m.type == "tool"])]),
    Case("1.3", "do nothing", lambda runs: [(runs.session, (runs.session.messages[2].name,
                                                             runs.session.counter.count_message(runs.session.messages[2])))]),
    Case("1.3", "copied", lambda runs: [(runs.session, ("chartbook_get_docs", sum(c.input_tokens for c in runs.session.token_log))),
                                        (runs.session, ("chartbook_load_data", runs.session.counter.count_message(max(
                                            (m for m in runs.session.messages if m.type == "tool"),
                                            key=runs.session.counter.count_message))))]),  # the tokens the window table prints
    # 1.4 build a keep-last-N trimmer
    Case("1.4", "empty", lambda runs: [(...,), (unwritten,)]),
    Case("1.4", "constant", lambda runs: [(lambda messages, keep: [messages[0]],), (lambda messages, keep: [],)]),
    Case("1.4", "bare list", lambda runs: [([HumanMessage("hi")],)]),
    Case("1.4", "do nothing", lambda runs: [(lambda messages, keep: messages,), (lambda messages, keep: [],)]),
    Case("1.4", "copied", lambda runs: [(("chartbook_load_data", 2228),)]),  # 1.3's pair
    # 2.1 a lower offload threshold
    Case("2.1", "empty", lambda runs: [(runs.offloading, ...)]),
    Case("2.1", "constant", lambda runs: [(runs.offloading, 0), (runs.offloading, 1), (runs.offloading, 42)]),
    Case("2.1", "bare list", lambda runs: [(runs.offloading, [e.kind for e in runs.offloading.events])]),
    Case("2.1", "do nothing", lambda runs: [(runs.session, runs.session.log.count("offload"))]),
    Case("2.1", "copied", lambda runs: [(runs.offloading, 2228)]),
    # 2.2 build a preview
    Case("2.2", "empty", lambda runs: [(...,), (unwritten,), (lambda text, max_tokens: "",)]),
    Case("2.2", "constant", lambda runs: [(lambda text, max_tokens: "Preview of a tool result",)]),
    Case("2.2", "bare list", lambda runs: [(lambda text, max_tokens: text.splitlines()[:3],)]),
    Case("2.2", "do nothing", lambda runs: [(lambda text, max_tokens: text,)]),
    Case("2.2", "copied", lambda runs: [(exercises.reference_trim,)]),  # 1.4's trimmer
    # 2.3 what one offload saved
    Case("2.3", "empty", lambda runs: [(runs.offloading, ...)]),
    Case("2.3", "constant", lambda runs: [(runs.offloading, 0), (runs.offloading, 10_000)]),
    Case("2.3", "bare list", lambda runs: [(runs.offloading, [e.tokens_before - e.tokens_after for e in runs.offloading.events
                                                            if e.kind == "offload"])]),
    Case("2.3", "do nothing", lambda runs: [(runs.offloading, next(e.tokens_before - e.tokens_after for e in runs.offloading.events
                                                                   if e.kind == "offload"))]),
    Case("2.3", "copied", lambda runs: [(runs.offloading, runs.offloading.log.count("offload"))]),
    # 3.1 where a number came from
    Case("3.1", "empty", lambda runs: [(runs.recall, ...), (runs.recall, "")]),
    Case("3.1", "constant", lambda runs: [(runs.recall, source) for source in exercises.SOURCES if source != exercises.recall_source(runs.recall)]),
    Case("3.1", "bare list", lambda runs: [(runs.recall, list(exercises.SOURCES))]),
    Case("3.1", "do nothing", lambda runs: [(runs.memory, "context")]),
    Case("3.1", "copied", lambda runs: [(runs.recall, "a, b")]),
    # 3.2 an earlier summary trigger
    Case("3.2", "empty", lambda runs: [(runs.summarized, ...)]),
    Case("3.2", "constant", lambda runs: [(runs.summarized, 0), (runs.summarized, 1), (runs.summarized, 42)]),
    Case("3.2", "bare list", lambda runs: [(runs.summarized, [e.kind for e in runs.summarized.events])]),
    Case("3.2", "do nothing", lambda runs: [(runs.offloading, runs.offloading.log.count("summarize"))]),
    Case("3.2", "copied", lambda runs: [(runs.summarized, runs.offloading.log.count("offload"))]),
    # 3.3 keeping less
    Case("3.3", "empty", lambda runs: [(runs.summarized, ...), (runs.summarized, None)]),
    Case("3.3", "constant", lambda runs: [(runs.summarized, LESSON_STEPS[0]), (runs.summarized, HumanMessage(LESSON_STEPS[0]))]),
    Case("3.3", "bare list", lambda runs: [(runs.summarized, list(runs.summarized.messages))]),
    Case("3.3", "do nothing", lambda runs: [(runs.summarized, runs.summarized.messages[-1])]),
    Case("3.3", "copied", lambda runs: [(runs.summarized, "summary")]),  # 3.1's source
    # 3.4 build a summarizer
    Case("3.4", "empty", lambda runs: [(..., runs.summarized), (unwritten, runs.summarized), (lambda messages: "", runs.summarized)]),
    Case("3.4", "constant", lambda runs: [(lambda messages: "A summary of the conversation so far.", runs.summarized)]),
    Case("3.4", "bare list", lambda runs: [(numbers_and_frames, runs.summarized),
                                           (lambda messages: numbers_and_frames(messages).split(), runs.summarized)]),
    Case("3.4", "do nothing", lambda runs: [(lambda messages: "\n".join(text_of(m) for m in messages), runs.summarized),
                                            (lambda messages: messages, runs.summarized)]),
    Case("3.4", "copied", lambda runs: [(lambda messages: text_of(exercises.reference_trim(messages, 1)[0]), runs.summarized)]),
    # 4.1 tokens per success by hand
    Case("4.1", "empty", lambda runs: [(runs.runs_dir, ...), (runs.runs_dir, unwritten)]),
    Case("4.1", "constant", lambda runs: [(runs.runs_dir, 0), (runs.runs_dir, lambda records: 3000),  # v2's figure, from the table
                                          (runs.runs_dir, lambda records: 20_000)]),
    Case("4.1", "bare list", lambda runs: [(runs.runs_dir, [1900, 2900, 900]),
                                           (runs.runs_dir, lambda records: [r.totals["input_tokens"] for r in records])]),
    Case("4.1", "do nothing", lambda runs: [(runs.runs_dir, lambda records: records),
                                            (runs.runs_dir, lambda records: sum(r.totals["input_tokens"] for r in records) / len(records))]),
    Case("4.1", "copied", lambda runs: [(runs.runs_dir, lambda records: 7)]),
    # 4.2 v2 tuned from a config file
    Case("4.2", "empty", lambda runs: [(..., ..., ...)]),
    Case("4.2", "constant", lambda runs: [("config.yaml", runs.recall, {"agent": "v2", "success": True})]),
    Case("4.2", "bare list", lambda runs: [(runs.folder, runs.recall, ["success", "totals"])]),
    Case("4.2", "do nothing", lambda runs: [(runs.default_config, runs.recall, {"agent": "v2", "success": True})]),
    Case("4.2", "copied", lambda runs: [(runs.runs_dir / "runs.jsonl", runs.recall, {"agent": "v2", "success": True})]),
    # 4.3 a task of your own
    Case("4.3", "empty", lambda runs: [(..., ...)]),
    Case("4.3", "constant", lambda runs: [(runs.task_file('      - say: "What was it?"\n        checks:\n          - has_number: true'),
                                           runs.task_results)]),
    Case("4.3", "bare list", lambda runs: [(["List ChartBook dataframes"] * 12, runs.task_results)]),
    Case("4.3", "do nothing", lambda runs: [(runs.task_file("      - say: What was my account number?\n        checks:\n"
                                                            "          - contains: account"), runs.task_results)]),
    Case("4.3", "copied", lambda runs: [(runs.default_config, runs.task_results)]),
    # 5.1 recall in the middle
    Case("5.1", "empty", lambda runs: [(runs.recall_runs, ...)]),
    Case("5.1", "constant", lambda runs: [(runs.recall_runs, share) for share in (0, 0.5, 1, 0.54)]),
    Case("5.1", "bare list", lambda runs: [(runs.recall_runs, [run["recalled"] for run in runs.recall_runs])]),
    Case("5.1", "do nothing", lambda runs: [(runs.recall_runs, runs.recall_runs),
                                            (runs.recall_runs, sum(r["recalled"] for r in runs.recall_runs) / len(runs.recall_runs))]),
    Case("5.1", "copied", lambda runs: [(runs.recall_runs, 3000)]),
    # 5.2 build an observation mask
    Case("5.2", "empty", lambda runs: [(...,), (unwritten,)]),
    Case("5.2", "constant", lambda runs: [(lambda messages, keep: [],), (lambda messages, keep: messages[:1],)]),
    Case("5.2", "bare list", lambda runs: [(lambda messages, keep: [text_of(m) for m in messages],)]),
    Case("5.2", "do nothing", lambda runs: [(lambda messages, keep: messages,)]),
    Case("5.2", "copied", lambda runs: [(exercises.reference_trim,)]),  # 1.4's trimmer has the same signature
    # 5.4 your strategy through the bench
    Case("5.4", "empty", lambda runs: [(...,), (strategy(unwritten),)]),
    Case("5.4", "constant", lambda runs: [("v1",), (AgentV1,)]),
    Case("5.4", "bare list", lambda runs: [([AgentV1],)]),
    Case("5.4", "do nothing", lambda runs: [(strategy(forgets_everything),), (strategy(changes_nothing),)]),
    Case("5.4", "copied", lambda runs: [(strategy(keeps_the_last_six),)]),
    # 6.1 count the plan's reminders
    Case("6.1", "empty", lambda runs: [(runs.plan, ...)]),
    Case("6.1", "constant", lambda runs: [(runs.plan, 0), (runs.plan, 1), (runs.plan, 42)]),
    Case("6.1", "bare list", lambda runs: [(runs.plan, [e.kind for e in runs.plan.events])]),
    Case("6.1", "do nothing", lambda runs: [(runs.plan, len(runs.plan.events)), (runs.plan, len(runs.plan.token_log))]),
    Case("6.1", "copied", lambda runs: [(runs.plan, runs.plan.log.count("summarize") + 7)]),
    # 6.2 build a memory picker
    Case("6.2", "empty", lambda runs: [(...,), (unwritten,)]),
    Case("6.2", "constant", lambda runs: [(lambda facts, budget: [],), (lambda facts, budget: facts[:1],)]),
    Case("6.2", "bare list", lambda runs: [(lambda facts, budget: [fact.text for fact in facts],)]),
    Case("6.2", "do nothing", lambda runs: [(lambda facts, budget: facts,), (picker_by_budget,)]),
    Case("6.2", "copied", lambda runs: [(mask_solution,), (exercises.reference_trim,)]),
    *[case for number in CHOICES for case in choice_cases(number)],
]


def answer_texts(case: Case, runs: Runs) -> list[str]:
    """What a NOT YET line must not contain: the right letters, the last hint's code lines, an expected count."""
    texts = [line.strip() for line in EXERCISES[case.number].hints[-1].splitlines() if len(line.strip()) > 12 and "(" in line]
    if case.number in exercises.questions():
        texts += [f"{letter} is {word}" for letter in "abcde" for word in ("not right", "false", "wrong", "right")]
    if case.number == "6.1":
        texts += [f" {runs.reminders()} "]
    return texts


def outcome(capsys, case: Case, arguments: tuple) -> tuple[bool, str]:
    capsys.readouterr()
    passed = bool(case.check(*arguments))
    return passed, capsys.readouterr().out


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Runs:
    return Runs(tmp_path_factory.mktemp("non-answers"))


def test_the_table_covers_every_exercise_and_every_kind():
    assert {case.number for case in CASES} == set(EXERCISES)
    assert {(case.number, case.kind) for case in CASES} == set(itertools.product(EXERCISES, KINDS))


@pytest.mark.parametrize("case", CASES, ids=lambda case: f"{case.number}-{case.kind.replace(' ', '_')}")
def test_a_non_answer_fails_with_a_hint_that_does_not_give_the_answer(case, runs, capsys):
    tried = case.arguments(runs)
    if case.kind == "copied" and case.number == "0.1":
        assert tried == [], "the first exercise has nothing earlier to copy"
    for arguments in tried:
        passed, out = outcome(capsys, case, arguments)
        assert not passed, f"{case.number} passed a non-answer ({case.kind}):\n{out}"
        assert out.startswith(f"NOT YET: Exercise {case.number} "), out
        assert f"hint({case.number})" in out, out
        for text in answer_texts(case, runs):
            assert text not in out, f"{case.number}'s verdict gives away {text!r}:\n{out}"


def non_answer_matrix(runs: Runs) -> str:
    """The exercise x non-answer table: 'fails' where every value of that kind failed, 'PASSES' where one passed."""
    import contextlib
    import io

    rows = ["| exercise | " + " | ".join(KINDS) + " |", "|---" * (len(KINDS) + 1) + "|"]
    for number in sorted(EXERCISES, key=lambda n: tuple(map(int, n.split(".")))):
        cells = []
        for kind in KINDS:
            (case,) = [case for case in CASES if case.number == number and case.kind == kind]
            tried = case.arguments(runs)
            verdicts = []
            for arguments in tried:
                with contextlib.redirect_stdout(io.StringIO()) as out:
                    passed = bool(case.check(*arguments))
                text = out.getvalue()
                leaked = any(piece in text for piece in answer_texts(case, runs))
                verdicts.append("PASSES" if passed else ("fails, reveals" if leaked else "fails"))
            cells.append("n/a" if not verdicts else next((v for v in ("PASSES", "fails, reveals") if v in verdicts), "fails"))
        rows.append(f"| {number} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


@pytest.mark.parametrize("number", CHOICES)
def test_every_wrong_selection_gets_the_same_line_and_only_the_exact_set_passes(number, capsys):
    """Choosing everything once must not tell which options are wrong: a wrong selection is scored as a whole."""
    letters = list(exercises.questions()[number]["options"])
    right = set(right_letters(number).split(", "))
    lines = set()
    for size in range(1, len(letters) + 1):
        for selection in itertools.combinations(letters, size):
            passed, out = outcome(capsys, Case(number, "any", lambda runs: []), (", ".join(selection),))
            assert passed == (set(selection) == right), (selection, out)
            if not passed:
                lines.add(out)
    assert len(lines) == 1, lines


def fill_in_cells() -> dict[str, str]:
    """Exercise number -> the lesson's cell a student fills in (the code cell just above its check)."""
    import nbformat

    found = {}
    for path in sorted((Path(__file__).parents[1] / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        sources = [cell.source for cell in nbformat.read(path, as_version=4).cells if cell.cell_type == "code"]
        for index, source in enumerate(sources):
            for name in re.findall(r"^(check_\w+)\(", source, re.MULTILINE):
                found[getattr(exercises, name).__doc__.split(":")[0]] = sources[index - 1]
    return found


@pytest.mark.parametrize("number", CHOICES)
def test_no_fill_in_cell_shows_its_questions_right_letters(number):
    """4.4's cell once said 'e.g. "a, c"', its right answer: an example in a fill-in cell gives no right letters."""
    cell = fill_in_cells()[number]
    letters = right_letters(number).split(", ")
    written = {", ".join(order) for order in itertools.permutations(letters)} | {"".join(letters)}
    assert "..." in cell and not any(f'"{text}"' in cell or f"'{text}'" in cell for text in written), cell


def test_no_two_questions_share_their_true_letters():
    sets = [right_letters(number) for number in CHOICES]
    assert len(set(sets)) == len(sets), dict(zip(CHOICES, sets))


# --- every hint runs: the last hint of each exercise is code that needs only what the lesson defined above it -------
def bound_names(tree: ast.AST) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
    return names


def lesson_cells_before_each_check() -> dict[str, list[str]]:
    """Exercise number -> the lesson's code cells above its fill-in cell (magics dropped)."""
    import nbformat

    found = {}
    for path in sorted((Path(__file__).parents[1] / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        sources = [cell.source for cell in nbformat.read(path, as_version=4).cells if cell.cell_type == "code"]
        sources = ["\n".join(line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))) for source in sources]
        for index, source in enumerate(sources):
            for name in re.findall(r"^(check_\w+)\(", source, re.MULTILINE):
                number = getattr(exercises, name).__doc__.split(":")[0]
                filled = [line for line in sources[index - 1].splitlines() if "..." not in line]  # the cell's given lines
                found[number] = [*sources[:index - 1], "\n".join(filled)]
    return found


@pytest.mark.parametrize("number", [number for number in EXERCISES if number not in exercises.questions()])
def test_the_last_hint_is_code_that_runs_with_what_the_lesson_defined_above_it(number):
    import builtins

    code = ast.parse(EXERCISES[number].hints[-1])
    defined = set(dir(builtins)) | bound_names(code)
    for source in lesson_cells_before_each_check()[number]:
        defined |= bound_names(ast.parse(source))
    used = {node.id for node in ast.walk(code) if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)}
    assert used <= defined, f"hint({number}) would raise NameError on {sorted(used - defined)}"


def test_the_summarizer_hint_runs_and_passes(runs, capsys):
    """3.4's last hint, run as a student would paste it: it defines summarize, and the check passes it."""
    namespace: dict[str, Any] = {}
    exec(EXERCISES["3.4"].hints[-1], namespace)  # noqa: S102 - the hint is this package's own code
    passed, out = outcome(capsys, Case("3.4", "hint", lambda runs: []), (namespace["summarize"], runs.summarized))
    assert passed, out


def test_0_3_refuses_the_request_whose_figures_lesson_0_prints_above_it(runs, capsys):
    """Lesson 0 prints how much its own request grew the second call; 0.3 must be answered on another request."""
    import nbformat

    lesson = nbformat.read(Path(__file__).parents[1] / "notebooks" / "00_react_loop_v0.ipynb", as_version=4)
    assert f'agent.send("{exercises.lesson0.LESSON_REQUEST}")' in "\n".join(c.source for c in lesson.cells if c.cell_type == "code")
    same = runs.agent("v0", [exercises.lesson0.LESSON_REQUEST])
    growth = same.token_log[1].input_tokens - same.token_log[0].input_tokens
    result = same.counter.count_message(next(m for m in same.messages if m.type == "tool"))
    passed, out = outcome(capsys, Case("0.3", "printed", lambda runs: []), (same, result, growth))
    assert not passed and "the lesson's own request" in out


@pytest.mark.parametrize("number", ["2.2", "5.2", "6.2"])
def test_a_build_it_hint_defines_a_function_its_check_accepts(number, runs):
    """The last hint of a build-it exercise, pasted as is (with the lesson's imports), is a right answer."""
    from langchain_core.messages import AIMessage

    from flawedcode.context.memory import Fact, render_block
    from flawedcode.exercises import lesson2, lesson5, lesson6
    from flawedcode.tokens import count_text

    namespace: dict[str, Any] = {"ToolMessage": ToolMessage, "render_block": render_block, "count_text": count_text}
    exec(EXERCISES[number].hints[-1], namespace)  # noqa: S102 - the hint is this package's own code
    if number == "2.2":
        text = "\n".join(["# Secured Overnight Financing Rate", *[f"2024-01-{day:02d}  5.3{day % 10}" for day in range(1, 29)], "total: 28 rows"])
        problem, _, _ = lesson2._preview_problem(namespace["preview"], "chartbook_load_data", text)
    elif number == "5.2":
        call = {"name": "chartbook_get_docs", "args": {}, "id": "call-1"}
        history = [HumanMessage("Get docs"), AIMessage("", tool_calls=[call]), ToolMessage("x" * 200, tool_call_id="call-1"),
                   AIMessage("", tool_calls=[{**call, "id": "call-2"}]), ToolMessage("y" * 200, tool_call_id="call-2"),
                   AIMessage("", tool_calls=[{**call, "id": "call-3"}]), ToolMessage("z" * 200, tool_call_id="call-3")]
        problem = lesson5.mask_problem(namespace["mask"], history, lesson5.MASK_KEEP)
    else:
        facts = [Fact("I prefer answers in basis points"), Fact("my name is Dana"), Fact("our desk's limit is 4%, not 3.5%", correction=True)]
        problem = next((found for budget in lesson6.PICKER_BUDGETS
                        if (found := lesson6.picker_problem(namespace["pick"], facts, budget))), None)
    assert problem is None, problem
