"""Lesson 1's exercises: where v1 breaks, what the session cost, the largest result, a trimmer of your own, and why."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from flawedcode.demo import LESSON_STEPS
from flawedcode.lessons import LESSON_BUDGET

from .core import Outcome, answer_check, attempted, exercise, function_of, require, run_check, size_word, whole_number, written
from .session import goal_recalled, is_agent

BUDGET_STEP = 1024
SHARE_TOLERANCE = 0.005  # a share rounded to two places is right
TRIM_KEEP = 6  # the build-it exercise runs the lesson's session keeping this many messages
TRIM_PROBES = range(1, 16)  # every keep the trimmer is first tried with, on the lesson's own history

exercise("1.1", "where v1 starts keeping its goal",
         f"Try budgets from {LESSON_BUDGET:,} upwards in steps of {BUDGET_STEP:,}, each on a fresh v1 (v1_keeps_goal(budget, MODEL)).",
         "The whole session must fit in the window for the first request to stay in it.",
         f"smallest_budget = next(b for b in range({LESSON_BUDGET}, 65536, {BUDGET_STEP}) if v1_keeps_goal(b, MODEL))")
exercise("1.2", "what the session cost",
         "Every model call is in agent.token_log; call.input_tokens is what it sent, call.turn its step.",
         "Add call.input_tokens into a dict keyed by call.turn; the total is the sum of all of them.",
         "per_step = {}\nfor call in agent.token_log:\n    per_step[call.turn] = per_step.get(call.turn, 0) + call.input_tokens\n"
         "total_input = sum(per_step.values())")
exercise("1.3", "the largest tool result",
         "The tool results are the messages whose type is 'tool'; count each with agent.counter.count_message.",
         "The largest call is max(call.input_tokens for call in agent.token_log); the share is the result's tokens over it.",
         "biggest = max((m for m in agent.messages if m.type == 'tool'), key=agent.counter.count_message)\n"
         "largest = (biggest.name, agent.counter.count_message(biggest) / max(call.input_tokens for call in agent.token_log))")
exercise("1.4", "build a keep-last-N trimmer",
         "Return the newest `keep` messages of the list, in order (a slice).",
         "A tool result must follow the AI message that called it: if the slice starts with tool messages, drop those too.",
         "def trim(messages, keep):\n    kept = list(messages[-keep:]) if keep > 0 else []\n"
         "    while kept and kept[0].type == 'tool':\n        kept.pop(0)\n    return kept")
exercise("1.5", "why v1 lost its goal",
         "Look at the chart: where did the line cross the budget, and what does the offline model do with what does not fit?",
         "Two statements are true; one is about the window, one about the order things leave it.")


def v1_keeps_goal(budget_tokens: int, model: Any = None, steps: Sequence[str] = LESSON_STEPS) -> bool:
    """Run the lesson's session on a fresh v1 with this budget; does it answer the goal question?"""
    from flawedcode.lessons import lesson_agent

    agent = lesson_agent("v1", model=model, budget_tokens=budget_tokens, watch=False)
    replies = [agent.send(step) for step in steps]
    return goal_recalled(replies[-1], steps[0])


def check_smallest_budget(smallest_budget: int, model: Any = None, start: int = LESSON_BUDGET, step: int = BUDGET_STEP) -> Outcome:
    """1.1: the smallest budget (start, start + step, ...) at which v1 still answers the goal question."""
    def body() -> str:
        attempted(smallest_budget=smallest_budget)
        budget = whole_number(smallest_budget, "smallest_budget")
        require(budget >= start and (budget - start) % step == 0,
                f"{budget:,} is not one of the budgets to try ({start:,}, {start + step:,}, {start + 2 * step:,}, ...)")
        require(v1_keeps_goal(budget, model), f"at {budget:,} tokens v1 still loses its goal: too low")
        if budget > start:
            require(not v1_keeps_goal(budget - step, model), "v1 already keeps its goal one step lower: too high")
        return f"below {budget:,} tokens the first request falls out of v1's window before the last question."
    return run_check("1.1", body)


def check_session_cost(agent: Any, total_input: int, per_step: Mapping[int, int]) -> Outcome:
    """1.2: all input tokens of the agent's calls, in total and per step (step number -> tokens)."""
    def body() -> str:
        attempted(agent=agent, total_input=total_input, per_step=per_step)
        is_agent(agent)
        given = whole_number(total_input, "total_input")
        require(isinstance(per_step, Mapping), "`per_step` should be a dict: step number -> input tokens")
        calls = agent.token_log
        require(bool(calls), "the agent has made no model call yet: run the session first")
        expected: dict[int, int] = {}
        for call in calls:
            expected[call.turn] = expected.get(call.turn, 0) + call.input_tokens
        total = sum(expected.values())
        require(given != calls[-1].input_tokens, "`total_input` is the last call alone; add every call")
        require(given != sum(call.output_tokens for call in calls), "`total_input` adds output tokens; add input tokens")
        require(given == total, f"`total_input` is {size_word(given, total)}")
        require(set(per_step) == set(expected), "`per_step` should have one entry per step, keyed by the step number (call.turn)")
        wrong = [number for number in expected if per_step[number] != expected[number]]
        require(not wrong, f"`per_step` is wrong at step(s) {', '.join(map(str, wrong))}: add every call of a step")
        first, last = expected[min(expected)], expected[max(expected)]
        return f"the last step alone cost {last / first:.1f}x the first: every call re-sends the whole history."
    return run_check("1.2", body)


def check_largest_result(agent: Any, largest: tuple[str, float]) -> Outcome:
    """1.3: (tool name, share of the largest model call's input) of the largest tool result in the agent's history.

    The lesson's window table prints every message's tokens above the exercise, so the tokens alone would be read
    off the page; the share of the largest call is worked out from the run.
    """
    def body() -> str:
        attempted(agent=agent, largest=largest)
        is_agent(agent)
        require(isinstance(largest, tuple | list) and len(largest) == 2, "`largest` should be a pair: (tool name, share)")
        name, share = largest
        results = [message for message in agent.messages if message.type == "tool"]
        require(bool(results) and bool(agent.token_log), "the agent's history holds no tool result: run the session first")
        biggest = max(results, key=agent.counter.count_message)
        tokens = agent.counter.count_message(biggest)
        peak = max(call.input_tokens for call in agent.token_log)
        require(name == biggest.name, "that tool did not return the largest result" if name in {m.name for m in results}
                else "that is not the name of a tool in this history")
        require(isinstance(share, int | float) and not isinstance(share, bool), "the second item should be a share: a number")
        require(share != tokens, "that is the result's tokens; give its share of the largest call's input")
        require(0 <= share <= 1, "a share is between 0 and 1 (25% is 0.25)")
        expected = tokens / peak
        require(abs(share - expected) <= SHARE_TOLERANCE, f"the share is {size_word(share, expected)}: "
                                                          "divide by the largest call's input tokens")
        return (f"{biggest.name} returned {tokens:,} tokens, {expected:.0%} of the largest call ({peak:,} tokens): "
                "the kind of result lesson 2 moves out of the context.")
    return run_check("1.3", body)


def reference_trim(messages: Sequence[Any], keep: int) -> list[Any]:
    """The newest ``keep`` messages, without leading tool results whose call was cut off."""
    kept = list(messages[-keep:]) if keep > 0 else []
    while kept and kept[0].type == "tool":
        kept.pop(0)
    return kept


def _trim_problem(trim: Callable[..., Any], messages: list[Any], keep: int) -> str | None:
    result = written(trim(list(messages), keep), f"trim(messages, {keep})")
    if not isinstance(result, list | tuple):
        return f"trim(messages, {keep}) returned {type(result).__name__}, not a list of messages"
    result = list(result)
    expected = reference_trim(messages, keep)
    if not result:
        return f"trim(messages, {keep}) returned no messages"
    if any(not any(item is message or item == message for message in messages) for item in result):
        return f"trim(messages, {keep}) returned messages that are not in the history (keep the agent's own messages)"
    if len(result) > keep:
        return f"trim(messages, {keep}) kept {len(result)} messages: more than {keep}"
    if result[0].type == "tool":
        return (f"trim(messages, {keep}) starts with a tool result whose call was cut off (a real API refuses that): "
                "drop leading tool messages")
    if result != expected:
        return f"trim(messages, {keep}) is not the newest messages in order (or it dropped more than it had to)"
    return None


def check_trimmer(trim: Callable[[list[Any], int], list[Any]], model: Any = None) -> Outcome:
    """1.4: your ``trim(messages, keep)``, tried on the lesson's history, then run through the whole session on v1."""
    def body() -> str:
        from flawedcode.lessons import lesson_agent

        attempted(trim=trim)
        function_of(trim, "trim", "messages, keep")
        plain = lesson_agent("v1", model=model, watch=False, name="untrimmed")
        for step in LESSON_STEPS[:-1]:
            plain.send(step)
        for keep in TRIM_PROBES:
            problem = _trim_problem(trim, plain.messages, keep)
            require(problem is None, str(problem))
        trimmed = lesson_agent("v1", model=model, watch=False, name="trimmed")
        replies = []
        for step in LESSON_STEPS:
            replies.append(trimmed.send(step))
            trimmed.messages = list(trim(list(trimmed.messages), TRIM_KEEP))
        peaks = {name: max(call.input_tokens for call in agent.token_log) for name, agent in (("plain", plain), ("trimmed", trimmed))}
        kept_goal = goal_recalled(replies[-1], LESSON_STEPS[0])
        verdict = ("and it still gave the goal back" if kept_goal else
                   "but it could not give the goal back: keep-last-N drops the oldest message first, and that is the goal")
        return (f"keeping the last {TRIM_KEEP} messages, v1's largest call was {peaks['trimmed']:,} tokens "
                f"(untrimmed: {peaks['plain']:,}), {verdict}. v2 pins the goal for this reason.")
    return run_check("1.4", body)


def check_why_goal_lost(answer: Any) -> Outcome:
    """1.5: why v1 could not give its goal back (multiple choice)."""
    return answer_check("1.5", answer)
