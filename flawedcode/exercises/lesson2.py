"""Lesson 2's exercises: a lower offload threshold, a preview of your own, what one offload saved, and why."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flawedcode.demo import LESSON_STEPS
from flawedcode.lab.window import text_of
from flawedcode.telemetry import EventKind
from flawedcode.tokens import count_text

from .core import Outcome, answer_check, attempted, exercise, function_of, require, run_check, size_word, whole_number, written
from .session import is_agent, requests

LOWER_OFFLOAD_TOKENS = 500
PREVIEW_FRACTION = 0.12  # v2's default: a stub is at most this share of the original's tokens
MIN_PREVIEW_TOKENS = 60

exercise("2.1", "a lower offload threshold",
         "lab.change(offload_tokens=LOWER_OFFLOAD_TOKENS), then lab.play(); the lab's agent is lab.agent.",
         "Every offload is an event in the agent's log; count the events of kind 'offload'.",
         "offloads = lab.agent.log.count('offload')")
exercise("2.2", "build a preview",
         "Your preview(text, max_tokens) returns lines of the text itself, at most max_tokens tokens (count_text counts).",
         "Keep the first line (what this is: a title, the table's shape) and the last (the latest row, the final total).",
         "def preview(text, max_tokens):\n    lines = [line for line in text.splitlines() if line.strip()]\n"
         "    kept = [lines[0], lines[-1]]\n    for line in lines[1:-1]:\n"
         "        if count_text('\\n'.join(kept[:-1] + [line, kept[-1]])) > max_tokens:\n            break\n"
         "        kept.insert(-1, line)\n    return '\\n'.join(kept)")
exercise("2.3", "what one offload saved",
         "The first offload event (v2.events) has tokens_before and tokens_after: what it removed from one call.",
         "Every agent call from the event's call_index on carried the stub instead of the result.",
         "first = next(e for e in v2.events if e.kind == 'offload')\n"
         "saved_tokens = (first.tokens_before - first.tokens_after) * len([c for c in v2.token_log if c.index >= first.call_index])")
exercise("2.4", "why a stub and a file",
         "What would the model lose if the big result were simply cut to its first lines?",
         "Two statements are true: one about what stays readable, one about what every later call carries.")


def check_lower_threshold(agent: Any, offloads: int) -> Outcome:
    """2.1: v2 with the summarizer off and offloading over 500 tokens, after the session; how many offloads?"""
    def body() -> str:
        attempted(agent=agent, offloads=offloads)
        is_agent(agent, ("v2",))
        given = whole_number(offloads, "offloads")
        threshold = agent.config.offload.threshold_tokens
        require(threshold is not None and threshold <= LOWER_OFFLOAD_TOKENS,
                "the agent still offloads at the default threshold: lower it first (lab.change(...))")
        require(not agent.config.summarization.enabled, "the summarizer is on: switch it off, to see one technique at a time")
        require(len(requests(agent)) >= len(LESSON_STEPS), "the session has not been run on this agent: play it")
        expected = agent.log.count(EventKind.OFFLOAD)
        require(given == expected, f"`offloads` is {size_word(given, expected)}: count the agent's offload events")
        return f"{expected} results went to scratch/; the stubs keep the context small, at the price of reading back."
    return run_check("2.1", body)


def session_results(model: Any = None, threshold_tokens: int = LOWER_OFFLOAD_TOKENS) -> list[tuple[str, str]]:
    """(tool, result) for every tool result of the lesson's session (before its last question) over ``threshold_tokens``."""
    from flawedcode.lessons import lesson_agent

    agent = lesson_agent("v1", model=model, budget_tokens=1 << 17, watch=False, name="preview-session")
    for step in LESSON_STEPS[:-1]:
        agent.send(step)
    return [(message.name, text_of(message)) for message in agent.messages
            if message.type == "tool" and count_text(text_of(message)) > threshold_tokens]


def _preview_problem(preview: Callable[..., Any], tool: str, text: str) -> tuple[str | None, int, int]:
    limit = max(int(count_text(text) * PREVIEW_FRACTION), MIN_PREVIEW_TOKENS)
    shown = written(preview(text, limit), f"preview(text, {limit})")
    if not isinstance(shown, str):
        return f"preview(...) of the {tool} result returned {type(shown).__name__}, not text", limit, 0
    tokens = count_text(shown)
    lines = [line.strip() for line in shown.splitlines() if line.strip()]
    source = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        return f"the preview of the {tool} result is empty", limit, tokens
    if tokens > limit:
        return f"the preview of the {tool} result is {tokens:,} tokens; the limit given was {limit:,}: too long", limit, tokens
    invented = [line for line in lines if line not in text and line.strip(". ") not in ("", "…")]
    if invented:
        return (f"the preview of the {tool} result holds text that is not in the result ({invented[0][:60]!r}): "
                "a preview shows the result's own lines"), limit, tokens
    if source[0] not in lines:
        return f"the preview of the {tool} result leaves out its first line (what the result is)", limit, tokens
    if source[-1] not in lines:
        return f"the preview of the {tool} result leaves out its last line (the latest row, the final total)", limit, tokens
    return None, limit, tokens


def check_preview(preview: Callable[[str, int], str], model: Any = None) -> Outcome:
    """2.2: your ``preview(text, max_tokens)``, run on every large tool result of the lesson's session."""
    def body() -> str:
        attempted(preview=preview)
        function_of(preview, "preview", "text, max_tokens")
        results = session_results(model)
        require(bool(results), "the session made no large tool result to preview (is the model offline?)")
        sizes = []
        for tool, text in results:
            problem, limit, tokens = _preview_problem(preview, tool, text)
            require(problem is None, str(problem))
            sizes.append(f"{tool} {count_text(text):,} -> {tokens:,}")
        return (f"{len(results)} results of the session previewed within their limits, head and tail kept "
                f"({'; '.join(sizes)} tokens): the model sees what each file holds and reads the rest on demand.")
    return run_check("2.2", body)


def check_offload_savings(agent: Any, saved_tokens: int) -> Outcome:
    """2.3: tokens the first offload kept out of the context over the rest of the session."""
    def body() -> str:
        attempted(agent=agent, saved_tokens=saved_tokens)
        is_agent(agent, ("v2",))
        given = whole_number(saved_tokens, "saved_tokens")
        offloads = [event for event in agent.events if event.kind == EventKind.OFFLOAD]
        require(bool(offloads), "this agent has offloaded nothing: run the lesson's session on v2")
        first = offloads[0]
        later_calls = [call for call in agent.token_log if call.index >= first.call_index]
        once = first.tokens_before - first.tokens_after
        expected = once * len(later_calls)
        require(given != once, "that is what it saved on one call; it was saved on every later call too")
        require(given == expected, f"`saved_tokens` is {size_word(given, expected)}")
        return f"one offload saved {expected:,} input tokens over {len(later_calls)} calls."
    return run_check("2.3", body)


def check_why_offload(answer: Any) -> Outcome:
    """2.4: why a stub that names a file beats cutting the result (multiple choice)."""
    return answer_check("2.4", answer)

