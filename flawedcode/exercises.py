"""Exercises that check themselves: every lesson's exercise cell is followed by one of these calls.

A check looks at what you built (an agent after its session, a reply, a file, a
number you computed), works out the right answer from *your own run*, and prints
one line, ``PASS: ...`` or ``NOT YET: <what is wrong>``, then ``Hint: ...`` when it
fails. It returns an ``Outcome``, true when the check passed. A value still left as ``...`` means the exercise
has not been tried yet. Because the answers come from your run, the checks hold
on a real model too, except where one says it needs the offline model.

| lesson | exercise | check |
| --- | --- | --- |
| 0 | give the agent memory | ``check_memory(agent, reply)`` |
| 0 | two tool calls in one request | ``check_tool_calls(agent, tool_names)`` |
| 0 | what a tool result costs | ``check_call_growth(agent, result_tokens, growth)`` |
| 1 | where v1 starts keeping its goal | ``check_smallest_budget(smallest_budget, model)`` |
| 1 | what the session cost | ``check_session_cost(agent, total_input, per_step)`` |
| 1 | the largest tool result | ``check_largest_result(agent, largest)`` |
| 2 | a lower offload threshold | ``check_lower_threshold(agent, offloads)`` |
| 2 | a preview for long text output | ``check_text_preview(stub, text, scratch_dir)`` |
| 2 | what one offload saved | ``check_offload_savings(agent, saved_tokens)`` |
| 3 | an earlier summary trigger | ``check_trigger(agent, summaries)`` |
| 3 | keeping less | ``check_keep_less(agent, kept_goal)`` |
| 3 | where a recalled number came from | ``check_recall_source(agent, source)`` |
| 4 | tokens per success by hand | ``check_tokens_per_success(out_dir, agent_name, value)`` |
| 4 | v2 tuned from a config file | ``check_config_file(path, agent, result)`` |
| 4 | a task of your own | ``check_task_file(path, results)`` |
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from flawedcode.context.offload import exempt_tools
from flawedcode.demo import GOAL_QUESTION, LESSON_STEPS
from flawedcode.formats import STUB_PREFIX, SUMMARY_PREFIX
from flawedcode.lab.window import text_of
from flawedcode.lessons import LESSON_BUDGET

PASS = "PASS"
NOT_YET = "NOT YET"
KEEP_LESS_MESSAGES = 2
LOWER_OFFLOAD_TOKENS = 500
EARLIER_TRIGGER = 0.5
RECALL_GAP = 10  # lesson 4: requests between the planted number and the question that recalls it
SOURCES = ("context", "summary", "archive", "scratch")


class NotYet(Exception):
    """One exercise is not done yet: the message says what is wrong, the hint what to try."""

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.hint = hint


class Outcome:
    """What a check returns: true when it passed. A notebook shows nothing more than the printed line."""

    def __init__(self, passed: bool) -> None:
        self.passed = passed

    def __bool__(self) -> bool:
        return self.passed

    def __repr__(self) -> str:
        return PASS if self.passed else NOT_YET

    def _ipython_display_(self) -> None:
        """The check already printed its verdict; a cell ending with it shows nothing else."""


def _check(exercise: str, run: Callable[[], str]) -> Outcome:
    """Run one check; print PASS or NOT YET (and a hint). Never raises."""
    try:
        print(f"{PASS}: {exercise}: {run()}")
        return Outcome(True)
    except NotYet as problem:
        print(f"{NOT_YET}: {exercise}: {problem}")
        if problem.hint:
            print(f"Hint: {problem.hint}")
        return Outcome(False)
    except (TypeError, ValueError, AttributeError, KeyError, IndexError, OSError) as error:  # an answer of the wrong shape
        print(f"{NOT_YET}: {exercise}: your answer could not be checked ({type(error).__name__}: {error})")
        print("Hint: compare its type with what the exercise asks for (a number, a list of names, an agent...).")
        return Outcome(False)


def _require(condition: bool, message: str, hint: str = "") -> None:
    if not condition:
        raise NotYet(message, hint)


def _attempted(**values: Any) -> None:
    missing = [name for name, value in values.items() if value is Ellipsis or value is None]
    _require(not missing, "not tried yet: the cell above still holds `...`",
             "replace each `...` with your code, run that cell, then run this check again.")


def _agent(agent: Any, versions: Sequence[str] = ("v0", "v1", "v2")) -> None:
    _require(hasattr(agent, "log") and hasattr(agent, "messages"), "that is not an agent",
             "build one with lesson_agent(...) and send it the requests.")
    _require(agent.version in versions, f"this exercise needs {' or '.join(versions)}; you gave {agent.version}",
             f"lesson_agent({versions[0]!r}, model=MODEL)")


def goal_recalled(reply: str, goal: str = LESSON_STEPS[0]) -> bool:
    """Does ``reply`` give the goal back: word for word, or every name and year in it (for paraphrases)?"""
    folded = " ".join(reply.casefold().split())
    if " ".join(goal.casefold().split()) in folded:
        return True
    key_terms = re.findall(r"\b(?:[A-Z]{3,}|\d{4})\b", goal)
    return bool(key_terms) and all(term.casefold() in folded for term in key_terms)


def _turn_messages(agent: Any) -> list[Any]:
    """The messages of the agent's latest request (from its last user message on)."""
    start = max((i for i, message in enumerate(agent.messages) if message.type == "human"
                 and not text_of(message).startswith(SUMMARY_PREFIX)), default=0)
    return agent.messages[start:]


def _tool_calls(messages: Sequence[Any]) -> list[dict[str, Any]]:
    return [call for message in messages for call in getattr(message, "tool_calls", None) or []]


def _requests(agent: Any) -> list[str]:
    return [text_of(message) for message in agent.messages if message.type == "human"]


# --- lesson 0 --------------------------------------------------------------------------------------
def check_memory(agent: Any, reply: str) -> Outcome:
    """Lesson 0: an agent with memory answers "What did you just read?" about the SOFR docs."""
    def run() -> str:
        _attempted(agent=agent, reply=reply)
        _agent(agent, ("v1", "v2"))
        names = [call["name"] for call in _tool_calls(agent.messages)]
        _require("chartbook_get_docs" in names, "the agent never fetched any docs",
                 'send "Get docs for money_markets/sofr" first, then "What did you just read?".')
        _require(reply == text_of(agent.messages[-1]), "`reply` is not the agent's latest reply", "reply = agent.send(...)")
        _require("sofr" in reply.casefold(), "the reply does not mention SOFR",
                 "the second request must be the follow-up question, sent to the same agent.")
        return f"{agent.version} remembered what it read, because its history went back in with the question."
    return _check("memory", run)


def check_tool_calls(agent: Any, tool_names: Sequence[str]) -> Outcome:
    """Lesson 0: the tool calls of the agent's latest request, in order, read from ``agent.messages``."""
    def run() -> str:
        _attempted(agent=agent, tool_names=tool_names)
        _agent(agent)
        actual = [call["name"] for call in _tool_calls(_turn_messages(agent))]
        _require(len(actual) >= 2, f"the latest request made {len(actual)} tool call(s), not two or more",
                 'ask for two things at once, e.g. "Get docs for money_markets/sofr and money_markets/effr".')
        _require(list(tool_names) == actual, f"you listed {list(tool_names)}; the messages hold {actual}",
                 "collect call['name'] for every call in message.tool_calls, for the messages of that request.")
        return f"{len(actual)} tool calls in one request: the loop ran the model {len(actual) + 1} times."
    return _check("two tool calls", run)


def check_call_growth(agent: Any, result_tokens: int, growth: int) -> Outcome:
    """Lesson 0: the tool result's tokens, and how much bigger the second model call was than the first."""
    def run() -> str:
        _attempted(agent=agent, result_tokens=result_tokens, growth=growth)
        _agent(agent)
        calls = agent.token_log
        results = [message for message in agent.messages if message.type == "tool"]
        _require(len(calls) >= 2 and results, "the agent has not made a tool call yet",
                 'use a fresh v0 agent and send one request that needs a tool, e.g. "Get docs for money_markets/sofr".')
        expected_result, expected_growth = agent.counter.count_message(results[0]), calls[1].input_tokens - calls[0].input_tokens
        _require(result_tokens == expected_result, f"the first tool result has {expected_result:,} tokens, not {result_tokens:,}",
                 "agent.counter.count_message(message) for the first message whose type is 'tool'.")
        _require(growth == expected_growth, f"the second call was {expected_growth:,} tokens bigger, not {growth:,}",
                 "agent.token_log[1].input_tokens - agent.token_log[0].input_tokens")
        return (f"the second call carried the {result_tokens:,}-token result plus the tool call itself "
                f"({growth - result_tokens:,} tokens).")
    return _check("what a tool result costs", run)


# --- lesson 1 --------------------------------------------------------------------------------------
def v1_keeps_goal(budget_tokens: int, model: Any = None, steps: Sequence[str] = LESSON_STEPS) -> bool:
    """Run the lesson's session on a fresh v1 with this budget; does it answer the goal question?"""
    from flawedcode.lessons import lesson_agent

    agent = lesson_agent("v1", model=model, budget_tokens=budget_tokens, watch=False)
    replies = [agent.send(step) for step in steps]
    return goal_recalled(replies[-1], steps[0])


def check_smallest_budget(smallest_budget: int, model: Any = None, start: int = LESSON_BUDGET, step: int = 1024) -> Outcome:
    """Lesson 1: the smallest budget (start, start + step, ...) at which v1 still answers the goal question."""
    def run() -> str:
        _attempted(smallest_budget=smallest_budget)
        _require(isinstance(smallest_budget, int) and smallest_budget >= start and (smallest_budget - start) % step == 0,
                 f"{smallest_budget!r} is not one of {start:,}, {start + step:,}, {start + 2 * step:,}, ...",
                 f"try budgets from {start:,} upwards in steps of {step:,}.")
        _require(v1_keeps_goal(smallest_budget, model), f"at {smallest_budget:,} tokens v1 still loses its goal",
                 "go higher: the whole session must fit in the window for the first request to stay.")
        if smallest_budget > start:
            _require(not v1_keeps_goal(smallest_budget - step, model),
                     f"v1 already keeps its goal at {smallest_budget - step:,} tokens", "go lower.")
        return f"below {smallest_budget:,} tokens the first request falls out of v1's window before the last question."
    return _check("where v1 starts keeping its goal", run)


def check_session_cost(agent: Any, total_input: int, per_step: Mapping[int, int]) -> Outcome:
    """Lesson 1: all input tokens of the agent's calls, in total and per step (step number -> tokens)."""
    def run() -> str:
        _attempted(agent=agent, total_input=total_input, per_step=per_step)
        _agent(agent)
        calls = agent.token_log
        _require(bool(calls), "the agent has made no model call yet", "run the session first.")
        expected: dict[int, int] = {}
        for call in calls:
            expected[call.turn] = expected.get(call.turn, 0) + call.input_tokens
        _require(total_input == sum(expected.values()), f"the calls sent {sum(expected.values()):,} input tokens, not {total_input:,}",
                 "sum(call.input_tokens for call in agent.token_log)")
        _require(dict(per_step) == expected, "the per-step totals differ from the token log",
                 "add call.input_tokens into a dict keyed by call.turn (the step).")
        first, last = expected[min(expected)], expected[max(expected)]
        return f"the last step alone cost {last / first:.1f}x the first: every call re-sends the whole history."
    return _check("what the session cost", run)


def check_largest_result(agent: Any, largest: tuple[str, int]) -> Outcome:
    """Lesson 1: (tool name, tokens) of the largest tool result in the agent's history."""
    def run() -> str:
        _attempted(agent=agent, largest=largest)
        _agent(agent)
        results = [message for message in agent.messages if message.type == "tool"]
        _require(bool(results), "the agent's history holds no tool result", "run the session first.")
        biggest = max(results, key=agent.counter.count_message)
        expected = (biggest.name, agent.counter.count_message(biggest))
        _require(tuple(largest) == expected, f"you found {tuple(largest)}; the largest is a {expected[0]} result",
                 "max over the tool messages with key=agent.counter.count_message; report (message.name, tokens).")
        return f"{expected[0]} returned {expected[1]:,} tokens: the kind of result lesson 2 moves out of the context."
    return _check("the largest tool result", run)


# --- lesson 2 --------------------------------------------------------------------------------------
def check_lower_threshold(agent: Any, offloads: int) -> Outcome:
    """Lesson 2: v2 with the summarizer off and offloading over 500 tokens, after the session; how many offloads?"""
    def run() -> str:
        _attempted(agent=agent, offloads=offloads)
        _agent(agent, ("v2",))
        threshold = agent.config.offload.threshold_tokens
        _require(threshold is not None and threshold <= LOWER_OFFLOAD_TOKENS,
                 f"the offload threshold is {threshold} tokens", f"set it to {LOWER_OFFLOAD_TOKENS} tokens.")
        _require(not agent.config.summarization.enabled, "the summarizer is still on",
                 "switch it off to see one technique at a time.")
        _require(len(_requests(agent)) >= len(LESSON_STEPS), "the session has not been run", "send all the lesson's requests.")
        exempt = set(exempt_tools(agent.config.offload))
        too_big = [message.name for message in agent.messages if message.type == "tool" and message.name not in exempt
                   and not text_of(message).startswith(STUB_PREFIX) and agent.counter.count_message(message) > threshold + 20]
        _require(not too_big, f"results over the threshold stayed whole: {too_big}", "did the session run with this config?")
        _require(offloads == agent.log.count("offload"), f"the log has {agent.log.count('offload')} offload events, not {offloads}",
                 "agent.log.count('offload')")
        return f"{offloads} results went to scratch/; the stubs keep the context small, at the price of reading back."
    return _check("a lower offload threshold", run)


def check_text_preview(stub: str, text: str, scratch_dir: str | Path) -> Outcome:
    """Lesson 2: ``maybe_offload`` of a long run_python output, saved in your own scratch folder."""
    def run() -> str:
        from flawedcode.paths import PROJECT_ROOT, running_from_checkout

        _attempted(stub=stub, text=text, scratch_dir=scratch_dir)
        folder = Path(scratch_dir).resolve()
        _require(not (running_from_checkout() and folder.is_relative_to(PROJECT_ROOT.resolve())),
                 f"{folder} is inside the repository", "use a folder of your own, e.g. lesson_folder('exercise') / 'scratch'.")
        _require(isinstance(stub, str) and stub.startswith(STUB_PREFIX), "that is not an offload stub",
                 "the text must be long enough (over the threshold), and pass scratch_dir=... to maybe_offload.")
        name = stub[len(STUB_PREFIX):].split(" |", 1)[0].removeprefix("scratch/")
        _require((folder / name).is_file() and (folder / name).read_text(encoding="utf-8") == text,
                 f"scratch/{name} is not in {folder} with the whole text", "maybe_offload(text, 'run_python', scratch_dir=...)")
        lines = text.splitlines()
        _require(lines[0] in stub and lines[-1] in stub, "the preview should show the first and the last line",
                 "text output keeps its head and its tail (errors and totals are at the end).")
        return f"the {len(lines):,}-line output is saved whole; the stub shows its head and tail."
    return _check("a preview for long text output", run)


def check_offload_savings(agent: Any, saved_tokens: int) -> Outcome:
    """Lesson 2: tokens the first offload kept out of the context over the rest of the session."""
    def run() -> str:
        _attempted(agent=agent, saved_tokens=saved_tokens)
        _agent(agent, ("v2",))
        offloads = [event for event in agent.events if event.kind == "offload"]
        _require(bool(offloads), "this agent has offloaded nothing", "run the lesson's session on v2.")
        first = offloads[0]
        later_calls = [call for call in agent.token_log if call.index >= first.call_index]
        expected = (first.tokens_before - first.tokens_after) * len(later_calls)
        _require(saved_tokens == expected, f"{len(later_calls)} calls carried the stub; that saved {expected:,} tokens, not {saved_tokens:,}",
                 "(event.tokens_before - event.tokens_after) x the number of calls from event.call_index on.")
        return f"one offload saved {expected:,} input tokens over {len(later_calls)} calls."
    return _check("what one offload saved", run)


# --- lesson 3 --------------------------------------------------------------------------------------
def check_trigger(agent: Any, summaries: int) -> Outcome:
    """Lesson 3: v2 with the summary trigger at half the budget, after the long session; how many summaries?"""
    def run() -> str:
        _attempted(agent=agent, summaries=summaries)
        _agent(agent, ("v2",))
        _require(agent.log.trigger_tokens == int(EARLIER_TRIGGER * agent.budget_tokens),
                 f"the trigger is at {agent.log.trigger_tokens} tokens", f"set it to {EARLIER_TRIGGER:.0%} of the budget.")
        _require(agent.log.turn >= 10, "the session is too short to summarize much", "run the lesson's long session.")
        _require(summaries == agent.log.count("summarize"), f"the log has {agent.log.count('summarize')} summaries, not {summaries}",
                 "agent.log.count('summarize')")
        spent = agent.log.totals()["summary_input_tokens"]
        return f"{summaries} summaries, {spent:,} tokens read by the summarizer: an early trigger summarizes more often."
    return _check("an earlier summary trigger", run)


def check_keep_less(agent: Any, kept_goal: bool) -> Outcome:
    """Lesson 3: v2 keeping only 2 messages after each summary; did it still answer the goal question?"""
    def run() -> str:
        _attempted(agent=agent, kept_goal=kept_goal)
        _agent(agent, ("v2",))
        keep = agent.config.summarization.keep
        _require((keep.type, keep.value) == ("messages", KEEP_LESS_MESSAGES), f"keep is {keep.type} {keep.value}",
                 f'config={{"summarization": {{"keep": {{"type": "messages", "value": {KEEP_LESS_MESSAGES}}}}}}}')
        _require(_requests(agent)[-1] == GOAL_QUESTION, "the last request was not the goal question",
                 f'end the session with "{GOAL_QUESTION}".')
        actual = goal_recalled(text_of(agent.messages[-1]), LESSON_STEPS[0])
        _require(kept_goal == actual, f"kept_goal should be {actual}: look at the last reply again", "")
        return "the goal survives any keep policy: v2 copies it into every summary in code." if actual else \
            "the goal was lost: read the summaries to see why."
    return _check("keeping less", run)


def recall_source(agent: Any) -> str:
    """Where the agent's latest answer came from: scratch (read a scratch/ file), archive, summary or context."""
    calls = _tool_calls(_turn_messages(agent))
    paths = [str((call.get("args") or {}).get("path") or (call.get("args") or {}).get("file_path") or "") for call in calls]
    if any(path.startswith("scratch/") for path in paths):
        return "scratch"
    if any(call["name"] == "search_archive" for call in calls) or any(path.startswith("archives/") for path in paths):
        return "archive"
    summary_seen = any(message.type == "human" and text_of(message).startswith(SUMMARY_PREFIX) for message in agent.messages)
    answer = text_of(agent.messages[-1])
    numbers = re.findall(r"\d+\.\d+", answer)
    summaries = [text_of(message) for message in agent.messages if text_of(message).startswith(SUMMARY_PREFIX)]
    if summary_seen and numbers and any(number in summary for number in numbers for summary in summaries):
        return "summary"
    return "context"


def check_recall_source(agent: Any, source: str) -> Outcome:
    """Lesson 3: after asking for a number found earlier, where did the answer come from?"""
    def run() -> str:
        _attempted(agent=agent, source=source)
        _agent(agent, ("v2",))
        _require(source in SOURCES, f"{source!r} is not one of {SOURCES}", "")
        _require(bool(re.search(r"average|mean", _requests(agent)[-1], re.IGNORECASE)), "the last request did not ask for an average",
                 'ask: "What was the average SOFR rate you found?"')
        actual = recall_source(agent)
        _require(source == actual, f"the answer came from the {actual}, not the {source}",
                 "look at the tool calls of the last request: read_file of scratch/ or archives/, search_archive, or none.")
        return f"the number came from the {actual}."
    return _check("where the number came from", run)


# --- lesson 4 --------------------------------------------------------------------------------------
def check_tokens_per_success(out_dir: str | Path, agent_name: str, value: float) -> Outcome:
    """Lesson 4: (input + output tokens of all the agent's runs) / its successful runs, from runs.jsonl."""
    def run() -> str:
        from flawedcode.bench import read_runs

        _attempted(out_dir=out_dir, agent_name=agent_name, value=value)
        records = [record for record in read_runs(Path(out_dir)).records if record.agent == agent_name]
        _require(bool(records), f"no runs of {agent_name} in {out_dir}", "run the benchmark cell first.")
        successes = sum(record.success for record in records)
        _require(successes > 0, f"{agent_name} had no successful run: tokens per success is undefined", "pick another agent.")
        tokens = sum(record.totals["input_tokens"] + record.totals["output_tokens"] for record in records)
        expected = tokens / successes
        _require(abs(value - expected) <= 1, f"{tokens:,} tokens / {successes} successes = {expected:,.0f}, not {value:,.0f}",
                 "sum input_tokens + output_tokens of record['totals'] over the agent's records, divide by its successes.")
        return f"{agent_name}: {expected:,.0f} tokens per success, as summary.json says."
    return _check("tokens per success by hand", run)


def check_config_file(path: str | Path, agent: Any, result: Mapping[str, Any]) -> Outcome:
    """Lesson 4: a YAML config of your own (outside the repository), read into v2, and a bench task run on it."""
    def run() -> str:
        from flawedcode.config import V2Config, load_config
        from flawedcode.paths import PROJECT_ROOT, running_from_checkout

        _attempted(path=path, agent=agent, result=result)
        _agent(agent, ("v2",))
        file = Path(path).resolve()
        _require(file.is_file(), f"{file} does not exist", "write the YAML text to that path first.")
        _require(not (running_from_checkout() and file.is_relative_to(PROJECT_ROOT.resolve())),
                 "the file is inside the repository", "write it in your lesson folder.")
        config = load_config(file)
        _require(config == agent.config, "the agent's config is not the one in the file", "lesson_agent('v2', config=load_config(path))")
        _require(config.summarization != V2Config().summarization or config.offload != V2Config().offload,
                 "the file changes neither summarization nor offloading", "change the trigger or the offload threshold.")
        _require(result.get("agent") == agent.log.agent_name and "success" in result, "`result` is not this agent's run_task result",
                 "result = run_task(task, agent)")
        return f"the task {'passed' if result['success'] else 'failed'} with your settings; compare the totals with the default v2."
    return _check("v2 tuned from a config file", run)


def check_task_file(path: str | Path, results: Mapping[str, Mapping[str, Any]]) -> Outcome:
    """Lesson 4: a task file that plants a number and asks for it 10+ requests later, run on v1 and v2."""
    def run() -> str:
        from flawedcode.bench import TaskFileError, load_task_file

        _attempted(path=path, results=results)
        try:
            tasks = load_task_file(path)
        except TaskFileError as error:
            raise NotYet(f"the task file does not load: {error}", "compare it with flawedcode/bench/tasks/*.yaml.") from None
        task = tasks[0]
        steps = task.all_steps()
        checked = [number for number, step in enumerate(steps) if step.checks]
        _require(bool(checked), "no step has a check", "add `checks:` to the recall step (e.g. has_number or contains).")
        _require(checked[-1] >= RECALL_GAP, f"the recall is only {checked[-1]} requests after the start",
                 f"put at least {RECALL_GAP} requests between the planted number and the question.")
        _require({"v1", "v2"} <= set(results), "run the task on v1 and v2", "results = {name: run_task(task, lesson_agent(name)) ...}")
        _require(all(results[name]["task"] == task.name for name in results), "the results are for another task", "")
        verdicts = ", ".join(f"{name} {'passed' if result['success'] else 'failed'}" for name, result in results.items())
        return f"{task.name}: {verdicts}."
    return _check("a task of your own", run)


__all__ = [
    "Outcome", "EARLIER_TRIGGER", "KEEP_LESS_MESSAGES", "LOWER_OFFLOAD_TOKENS", "RECALL_GAP", "SOURCES",
    "check_call_growth", "check_config_file", "check_keep_less", "check_largest_result", "check_lower_threshold",
    "check_memory", "check_offload_savings", "check_recall_source", "check_session_cost", "check_smallest_budget",
    "check_task_file", "check_text_preview", "check_tokens_per_success", "check_tool_calls", "check_trigger",
    "goal_recalled", "recall_source", "v1_keeps_goal",
]
