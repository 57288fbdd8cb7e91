"""Lesson 6's checks: the plan's reminders, a memory picker of your own, and why sub-agents keep the parent small."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flawedcode.telemetry import EventKind

from .core import Outcome, answer_check, attempted, exercise, function_of, require, run_check, size_word, whole_number
from .session import is_agent

PICKER_BUDGETS = (0, 40, 80, 200, 500)
"""The budgets the check tries your picker at (tokens of the whole memory block)."""

exercise("6.1", "count the plan's reminders",
         "Every time the plan came back into view, the agent recorded a context event.",
         "plan_agent.events is a list of events; each has a .kind.",
         "reminders = sum(event.kind == 'plan_reminder' for event in plan_agent.events)")
exercise("6.2", "build a memory picker",
         "Corrections first (newest first), then the other facts newest first; stop adding when the block would not fit.",
         "render_block(chosen, len(facts), 0, budget, 'memory.md') is the block; count it with count_text(block).",
         "def pick(facts, budget):\n"
         "    chosen = []\n"
         "    ordered = [f for f in reversed(facts) if f.correction] + [f for f in reversed(facts) if not f.correction]\n"
         "    for fact in ordered:\n"
         "        if count_text(render_block(chosen + [fact], len(facts), 9999, budget, 'memory.md')) <= budget:\n"
         "            chosen.append(fact)\n"
         "    return chosen")
exercise("6.3", "why a sub-agent keeps the parent small",
         "What does the parent receive back from task(...), and where does the rest go?",
         "Three statements are true.")


def check_plan_reminders(plan_agent: Any, reminders: int) -> Outcome:
    """6.1: how many times the plan came back into view, from your own run."""
    def body() -> str:
        attempted(reminders=reminders)
        is_agent(plan_agent, ("v3",))  # the v3 agent that ran the plan above
        count = whole_number(reminders, "reminders")
        expected = sum(event.kind == EventKind.PLAN_REMINDER for event in plan_agent.events)
        require(count == expected, f"{size_word(count, expected)}: count the events of kind 'plan_reminder'")
        compactions = sum(event.kind in (EventKind.DIGEST, EventKind.CONSOLIDATE, EventKind.SUMMARIZE, EventKind.CLEAR)
                          for event in plan_agent.events)
        return (f"the plan came back {expected} times over {compactions} compactions: each time the last write_todos "
                "left the view, a reminder put it back before the next request.")
    return run_check("6.1", body)


def priority(facts: list[Any]) -> list[Any]:
    """The order facts win a slot: corrections (newest first), then the other facts (newest first)."""
    return [fact for fact in reversed(facts) if fact.correction] + [fact for fact in reversed(facts) if not fact.correction]


def picker_problem(pick: Callable[..., Any], facts: list[Any], budget: int) -> str | None:
    """Why ``pick(facts, budget)`` is not a memory picker at this budget, or None."""
    from flawedcode.context.memory import render_block
    from flawedcode.tokens import count_text

    def block_tokens(chosen: list[Any]) -> int:
        return count_text(render_block(chosen, len(facts), 9999, budget, "memory.md")) if chosen else 0

    chosen = pick(list(facts), budget)
    if chosen is None or chosen is Ellipsis:
        return "not tried yet: pick(...) still returns `...`; write its body"
    if not isinstance(chosen, list | tuple):
        return f"pick(...) returned {type(chosen).__name__}, not a list of facts"
    chosen = list(chosen)
    if any(not any(fact is given for given in facts) for fact in chosen):
        return "pick returned something that is not one of the facts it was given (return the Fact objects themselves)"
    if block_tokens(chosen) > budget:
        return f"at a budget of {budget} tokens the block is longer than the budget"
    ordered, wins = priority(facts), []
    for fact in ordered:  # the facts that win a slot in order while the block still fits
        if block_tokens([*wins, fact]) > budget:
            break
        wins.append(fact)
    corrections = [fact for fact in facts if fact.correction]
    if (any(not fact.correction for fact in chosen) and any(fact not in chosen for fact in corrections)
            and block_tokens(corrections) <= budget):
        return "a correction was left out while a plain fact was kept: corrections always win a slot"
    if any(fact not in chosen for fact in wins):
        return (f"at a budget of {budget} tokens the block had room for a fact that ranks higher than what you kept (or for one "
                "more): add facts in order, corrections first, then the newest, while the block fits")
    return None


def check_memory_picker(pick: Any, model: Any = None) -> Outcome:
    """6.2: your ``pick(facts, budget)`` at several budgets, then the memory task through v3 with it."""
    def body() -> str:
        from flawedcode.context.memory import Fact
        from flawedcode.lessons import lesson_agent

        attempted(pick=pick)
        function_of(pick, "pick", "facts, budget")
        facts = [Fact("I prefer answers in basis points"), Fact("my name is Dana"), Fact("our desk's limit is 3.5%"),
                 Fact("the report is due on Friday"), Fact("our desk's limit is 4%, not 3.5%", correction=True)]
        for budget in PICKER_BUDGETS:
            problem = picker_problem(pick, facts, budget)
            require(problem is None, str(problem))
        agent = lesson_agent("v3", model=model, watch=False, name="picker")
        agent.memory.select = pick
        for text in ["Remember that I prefer answers in basis points", "Remember that my name is Dana",
                     "Correction: our desk's limit is 4%, not 3.5%"]:
            agent.send(text)
        agent.reset()
        answers = [agent.send(question) for question in ("What units do I prefer?", "What is my name?", "What limit did I give you?")]
        recalled = sum(want in answer for want, answer in zip(("basis points", "Dana", "4%"), answers))
        return (f"your picker never overflowed its budget and kept corrections first; with it, v3 recalled {recalled} of 3 "
                "facts in a new conversation.")
    return run_check("6.2", body)


def check_why_subagents(answer: Any) -> Outcome:
    """6.3: why a sub-agent keeps the parent's context small (multiple choice)."""
    return answer_check("6.3", answer)
