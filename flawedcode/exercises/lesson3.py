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
from .session import DECIMAL, is_agent, is_request, requests, tool_calls, turns

KEEP_LESS_MESSAGES = 2
EARLIER_TRIGGER = 0.5
SOURCES = ("context", "summary", "archive", "scratch")
REPORTED = re.compile(r"\b(mean|average|min|max|latest|median|total)\s+(\d+(?:\.\d+)?)\b", re.IGNORECASE)
WORD = re.compile(r"[a-z0-9][a-z0-9_/.%-]*[a-z0-9%]|[a-z0-9]")
FILLER_WORDS = frozenset("a an and are as at by can did do for from get give how i in is it me my now of on or our "
                         "please show that the their them then this to was we what when which with you your".split())
REQUEST_SHARE = 0.5  # a summary must keep at least this share of each request's own words
SUMMARY_SHARE = 0.5  # a summary of your own must be at most this share of what it summarizes

exercise("3.1", "where a number came from",
         "Look at the tool calls of the last request: [call['name'] for m in agent.messages[-4:] for call in getattr(m, 'tool_calls', [])].",
         "read_file of a scratch/ path -> 'scratch'; search_archive or read_file of archives/ -> 'archive'; no tool call: "
         "was the number in a summary message, or still in the context?",
         "reply = agent.send('What was the average SOFR rate you found?')\n"
         "calls = [call for m in agent.messages[-4:] for call in getattr(m, 'tool_calls', None) or []]\n"
         "paths = [str(call['args'].get('path', '')) for call in calls]\n"
         "numbers = [w.strip('.,%()') for w in reply.split() if w.strip('.,%()').replace('.', '', 1).isdigit()]\n"
         "if any(path.startswith('scratch/') for path in paths):\n    source = 'scratch'\n"
         "elif any(call['name'] == 'search_archive' for call in calls) or any(path.startswith('archives/') for path in paths):\n"
         "    source = 'archive'\n"
         "elif any(is_summary(m) and any(n in m.text for n in numbers) for m in agent.messages):\n    source = 'summary'\n"
         "else:\n    source = 'context'")
exercise("3.2", "an earlier summary trigger",
         "lab.change(trigger_fraction=EARLIER_TRIGGER), then lab.play().",
         "Each summary is an event of kind 'summarize' in lab.agent.log.",
         "summaries = lab.agent.log.count('summarize')")
exercise("3.3", "keeping less",
         f'lesson_agent("v2", model=MODEL, config={{"summarization": {{"keep": {{"type": "messages", "value": {KEEP_LESS_MESSAGES}}}}}}}), '
         "then send it the session.",
         "After the session, find the message of keep_agent.messages whose text holds the goal, word for word.",
         'keep_agent = lesson_agent("v2", model=MODEL, folder=lesson_dir, name="keep-2", '
         f'config={{"summarization": {{"keep": {{"type": "messages", "value": {KEEP_LESS_MESSAGES}}}}}}})\n'
         "run_session(keep_agent, steps)\n"
         "goal_message = next(m for m in keep_agent.messages if LESSON_STEPS[0] in m.text)")
exercise("3.4", "build a summarizer",
         "summarize(messages) gets the messages leaving the context (LangChain messages; m.text is a message's text) "
         "and returns the text that replaces them.",
         "Keep what the next turns need: what the user asked, every figure the agent reported with its label (mean 4.64, "
         "min 4.31...), every dataframe it used; drop the bulk of tool results (the archive keeps them word for word).",
         "def summarize(messages):\n    lines = []\n    for m in messages:\n"
         "        for call in getattr(m, 'tool_calls', None) or []:\n            lines.append(f\"called {call['name']} {call['args']}\")\n"
         "        if m.type == 'ai' and m.text.strip():\n            lines.append('agent said: ' + m.text.strip())\n"
         "        elif m.type == 'human':\n            lines.append('user asked: ' + m.text[:200])\n    return '\\n'.join(lines)")
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


def _facts(messages: list[Any]) -> tuple[set[tuple[str, str]], set[str]]:
    """The figures the agent told the user (statistic, number), and the dataframes its tool calls named, in ``messages``."""
    figures = {(word.casefold(), number) for message in messages if message.type == "ai"
               for word, number in REPORTED.findall(text_of(message))}
    frames = {str(call["args"][key]) for call in tool_calls(messages) for key in ("dataframe",) if (call.get("args") or {}).get(key)}
    return figures, frames


def _request_words(text: str) -> set[str]:
    return {word for word in WORD.findall(text.casefold()) if word not in FILLER_WORDS}


def _summary_problem(summary: str, messages: list[Any], number: int) -> str | None:
    """What a summary of archive part ``number`` leaves out: a figure with its label, a dataframe, what the user asked."""
    figures, frames = _facts(messages)
    lines = [line.casefold() for line in summary.splitlines()]
    unlabelled = [figure for figure in figures if not any(figure[0] in line and figure[1] in line for line in lines)]
    if unlabelled:
        return (f"the summary of part {number} loses {len(unlabelled)} figure(s) the agent reported, or keeps a number without "
                "saying what it is (a figure is its statistic and its value on one line: a mean, a min, a max...)")
    if any(frame not in summary for frame in frames):
        return f"the summary of part {number} does not name the dataframe(s) it used"
    words = set(WORD.findall(summary.casefold()))
    asked = [message for message in messages if is_request(message)]
    lost = [message for message in asked if len(_request_words(text_of(message)) & words)
            < REQUEST_SHARE * len(_request_words(text_of(message)))]
    if lost:
        return (f"the summary of part {number} does not say what the user asked in {len(lost)} of its {len(asked)} request(s): "
                "the next turns need the requests as well as the figures")
    return None


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
            problem = _summary_problem(summary, list(messages), number)
            require(problem is None, str(problem))
            texts.append((summary, size, original))
        require(len(texts) < 2 or len({summary for summary, _, _ in texts}) > 1, "every part got the same summary: summarize what each part holds")
        shares = ", ".join(f"{size:,}/{original:,}" for _, size, original in texts)
        return (f"{len(texts)} archived part(s) summarized in {shares} tokens, every number and dataframe kept; "
                "the archive still holds every word for search_archive.")
    return run_check("3.4", body)


def check_why_archive_first(answer: Any) -> Outcome:
    """3.5: why v2 writes the archive before messages leave the context (multiple choice)."""
    return answer_check("3.5", answer)
