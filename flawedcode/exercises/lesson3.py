"""Lesson 3's exercises: where a number came from, an earlier trigger, keeping less, a summarizer of your own, and why."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from flawedcode.demo import GOAL_QUESTION, LESSON_STEPS
from flawedcode.formats import SUMMARY_PREFIX
from flawedcode.lab.window import text_of
from flawedcode.telemetry import EventKind
from flawedcode.tokens import count_text

from .core import Outcome, answer_check, attempted, exercise, function_of, require, run_check, size_word, whole_number, written
from .session import DECIMAL, is_agent, requests, tool_calls, turns

KEEP_LESS_MESSAGES = 2
EARLIER_TRIGGER = 0.5
SOURCES = ("context", "summary", "archive", "scratch")
REPORTED = re.compile(r"\b(?:mean|average|min|max|latest|median|total)\s+(\d+(?:\.\d+)?)\b", re.IGNORECASE)
SUMMARY_SHARE = 0.5  # a summary of your own must be at most this share of what it summarizes

exercise("3.1", "where a number came from",
         "Look at the tool calls of the last request: [call['name'] for m in agent.messages[-4:] for call in getattr(m, 'tool_calls', [])].",
         "read_file of a scratch/ path -> 'scratch'; search_archive or read_file of archives/ -> 'archive'; no tool call: "
         "was the number in a summary message, or still in the context?")
exercise("3.2", "an earlier summary trigger",
         "lab.change(trigger_fraction=EARLIER_TRIGGER), then lab.play().",
         "Each summary is an event of kind 'summarize' in lab.agent.log.",
         "summaries = lab.agent.log.count('summarize')")
exercise("3.3", "keeping less",
         f'lesson_agent("v2", model=MODEL, config={{"summarization": {{"keep": {{"type": "messages", "value": {KEEP_LESS_MESSAGES}}}}}}}), '
         "then send it the session.",
         "After the session, find the message of keep_agent.messages whose text holds the goal, word for word.",
         "goal_message = next(m for m in keep_agent.messages if LESSON_STEPS[0] in text_of(m))")
exercise("3.4", "build a summarizer",
         "summarize(messages) gets the messages leaving the context (LangChain messages; text_of(m) is a message's text) "
         "and returns the text that replaces them.",
         "Keep what the next turns need: every figure the agent reported (mean, min, max, latest...), every dataframe it "
         "used; drop the bulk of "
         "tool results (the archive keeps them word for word).",
         "def summarize(messages):\n    lines = []\n    for m in messages:\n"
         "        for call in getattr(m, 'tool_calls', None) or []:\n            lines.append(f\"called {call['name']} {call['args']}\")\n"
         "        if m.type == 'ai' and text_of(m).strip():\n            lines.append('agent said: ' + text_of(m).strip())\n"
         "        elif m.type == 'human':\n            lines.append('user asked: ' + text_of(m)[:200])\n    return '\\n'.join(lines)")
exercise("3.5", "why the archive is written first",
         "What happens to a message that leaves the context if the archive write then fails?",
         "Two statements are true: one about losing nothing, one about what recovery needs.")


def recall_source(agent: Any) -> str:
    """Where the agent's latest answer came from: scratch (read a scratch/ file), archive, summary or context."""
    history = turns(agent)
    calls = tool_calls(history[-1][1]) if history else []
    paths = [str((call.get("args") or {}).get("path") or (call.get("args") or {}).get("file_path") or "") for call in calls]
    if any(path.startswith("scratch/") for path in paths):
        return "scratch"
    if any(call["name"] == "search_archive" for call in calls) or any(path.startswith("archives/") for path in paths):
        return "archive"
    numbers = DECIMAL.findall(text_of(agent.messages[-1]))
    summaries = [text_of(message) for message in agent.messages if text_of(message).startswith(SUMMARY_PREFIX)]
    if numbers and any(number in summary for number in numbers for summary in summaries):
        return "summary"
    return "context"


def check_recall_source(agent: Any, source: str) -> Outcome:
    """3.1: after asking for a number found earlier, where did the answer come from?"""
    def body() -> str:
        attempted(agent=agent, source=source)
        is_agent(agent, ("v2",))
        require(isinstance(source, str) and source in SOURCES, f"`source` should be one of {', '.join(map(repr, SOURCES))}")
        asked = requests(agent)
        require(bool(asked) and bool(re.search(r"average|mean", asked[-1], re.IGNORECASE)),
                "the last request did not ask for an average found earlier: ask the agent for it first")
        actual = recall_source(agent)
        require(source == actual, f"not the {source}: look at the last request's tool calls (or their absence) again")
        return f"the number came from the {actual}."
    return run_check("3.1", body)


def check_trigger(agent: Any, summaries: int) -> Outcome:
    """3.2: v2 with the summary trigger at half the budget, after the long session; how many summaries?"""
    def body() -> str:
        attempted(agent=agent, summaries=summaries)
        is_agent(agent, ("v2",))
        given = whole_number(summaries, "summaries")
        require(agent.log.trigger_tokens == int(EARLIER_TRIGGER * agent.budget_tokens),
                "the agent's trigger is not at half the budget: change it first")
        require(agent.log.turn >= 10, "the session on this agent is too short to summarize much: play the whole session")
        expected = agent.log.count(EventKind.SUMMARIZE)
        require(given == expected, f"`summaries` is {size_word(given, expected)}: count the agent's summarize events")
        spent = agent.log.totals()["summary_input_tokens"]
        return f"{expected} summaries, {spent:,} tokens read by the summarizer: an early trigger summarizes more often."
    return run_check("3.2", body)


def check_keep_less(agent: Any, goal_message: Any) -> Outcome:
    """3.3: v2 keeping only 2 messages after each summary; which of its messages still holds the goal?"""
    def body() -> str:
        attempted(agent=agent, goal_message=goal_message)
        is_agent(agent, ("v2",))
        keep = agent.config.summarization.keep
        require((keep.type, keep.value) == ("messages", KEEP_LESS_MESSAGES), f"the agent does not keep {KEEP_LESS_MESSAGES} messages")
        asked = requests(agent)
        require(bool(asked) and asked[-1] == GOAL_QUESTION and agent.log.count(EventKind.SUMMARIZE) > 0,
                f"run the session on this agent first (it ends with {GOAL_QUESTION!r})")
        require(any(goal_message is message for message in agent.messages), "`goal_message` is not one of the agent's messages")
        text = text_of(goal_message)
        require(LESSON_STEPS[0] in text, "that message does not hold the goal word for word")
        require(text.startswith(SUMMARY_PREFIX), "that message holds the goal but is not a summary: which message carries it after a summary?")
        return ("the goal survives any keep policy: v2's code copies it into every summary header, "
                f"so even keeping {KEEP_LESS_MESSAGES} messages the last answer could give it back.")
    return run_check("3.3", body)


def archived_parts(agent: Any) -> list[list[Any]]:
    """The messages of each archive part of ``agent`` (what each summary replaced), in order."""
    messages = agent.archive.messages()
    parts, start = [], 0
    for part in agent.archive.parts():
        count = part.last_seq - part.first_seq + 1
        parts.append(messages[start:start + count])
        start += count
    return parts


def _facts(messages: list[Any]) -> tuple[set[str], set[str]]:
    """The numbers the agent told the user, and the dataframes its tool calls named, in ``messages``."""
    numbers = {number for message in messages if message.type == "ai" for number in REPORTED.findall(text_of(message))}
    frames = {str(call["args"][key]) for call in tool_calls(messages) for key in ("dataframe",) if (call.get("args") or {}).get(key)}
    return numbers, frames


def check_summarizer(summarize: Callable[[list[Any]], str], agent: Any) -> Outcome:
    """3.4: your ``summarize(messages)``, run on every part the lab's session archived: short, and keeps the facts."""
    def body() -> str:
        attempted(summarize=summarize, agent=agent)
        function_of(summarize, "summarize", "messages")
        is_agent(agent, ("v2",))
        parts = archived_parts(agent)
        require(bool(parts), "this agent has archived nothing yet: play the lab's session first")
        texts = []
        for number, messages in enumerate(parts, start=1):
            summary = written(summarize(list(messages)), "summarize(messages)")
            require(isinstance(summary, str), f"summarize(...) of part {number} returned {type(summary).__name__}, not text")
            require(bool(summary.strip()), f"the summary of part {number} is empty")
            size, original = count_text(summary), sum(count_text(text_of(message)) for message in messages)
            require(size <= SUMMARY_SHARE * original,
                    f"the summary of part {number} is {size / max(original, 1):.0%} of what it replaces: too long to be worth it")
            numbers, frames = _facts(messages)
            lost_numbers = sorted(number for number in numbers if number not in summary)
            require(not lost_numbers, f"the summary of part {number} loses {len(lost_numbers)} figure(s) the agent reported "
                                      "(a mean, a min, a max...)")
            lost_frames = sorted(frame for frame in frames if frame not in summary)
            require(not lost_frames, f"the summary of part {number} does not name the dataframe(s) it used")
            texts.append((summary, size, original))
        require(len(texts) < 2 or len({summary for summary, _, _ in texts}) > 1, "every part got the same summary: summarize what each part holds")
        shares = ", ".join(f"{size:,}/{original:,}" for _, size, original in texts)
        return (f"{len(texts)} archived part(s) summarized in {shares} tokens, every number and dataframe kept; "
                "the archive still holds every word for search_archive.")
    return run_check("3.4", body)


def check_why_archive_first(answer: Any) -> Outcome:
    """3.5: why v2 writes the archive before messages leave the context (multiple choice)."""
    return answer_check("3.5", answer)
