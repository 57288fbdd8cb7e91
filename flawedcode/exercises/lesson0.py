"""Lesson 0's exercises: memory, several tool calls in one request, what a tool result costs, and why v0 forgets."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from flawedcode.lab.window import text_of

from .core import Outcome, answer_check, attempted, exercise, require, run_check, size_word, whole_number
from .session import is_agent, requests, tool_calls, turns

LESSON_REQUEST = "Get docs for money_markets/sofr"
"""The request lesson 0 runs and measures on the page; 0.3 asks for another, so its figures are not printed above it."""

exercise("0.1", "give the agent memory",
         "v1 differs from v0 in one line: it sends its history with each request. Build a v1 agent.",
         "Two requests to the same agent: one that reads docs, then a question about what it read, without naming it.",
         'memory_agent = lesson_agent("v1", model=MODEL, folder=lesson_dir)\n'
         'memory_agent.send("Get docs for money_markets/sofr")\nreply = memory_agent.send("What did you just read?")')
exercise("0.2", "two tool calls in one request",
         "Ask for two things at once, so the model calls a tool twice before it answers.",
         "Each AIMessage of the request lists its calls in message.tool_calls; each call is a dict with a 'name'.",
         'two_call_agent = lesson_agent("v0", model=MODEL, folder=lesson_dir)\n'
         'two_call_agent.send("Get docs for money_markets/sofr and money_markets/effr")\n'
         'tool_names = [call["name"] for message in two_call_agent.messages for call in getattr(message, "tool_calls", [])]')
exercise("0.3", "what a tool result costs",
         "Send the fresh agent a request other than the lesson's own (its figures are printed above), e.g. the docs of effr. "
         "agent.counter.count_message(message) counts one message exactly; agent.token_log holds each call's input_tokens.",
         "The tool result is the first message whose type is 'tool'; the growth is call 2's input minus call 1's.",
         'cost_agent = lesson_agent("v0", model=MODEL, folder=lesson_dir)\ncost_agent.send("Get docs for money_markets/effr")\n'
         "result_tokens = cost_agent.counter.count_message(next(m for m in cost_agent.messages if m.type == 'tool'))\n"
         "growth = cost_agent.token_log[1].input_tokens - cost_agent.token_log[0].input_tokens")
exercise("0.4", "why v0 cannot answer",
         "Read v0's send() in the cell above: what history does each request start from?",
         "Only one statement is about the model; the others are about what the model receives.")


def check_memory(agent: Any, reply: str) -> Outcome:
    """0.1: an agent with memory reads docs in one request and answers "What did you just read?" in the next."""
    def body() -> str:
        attempted(agent=agent, reply=reply)
        is_agent(agent, ("v1", "v2"))
        history = turns(agent)
        require(len(history) >= 2, "the agent has had one request; memory shows in a second request about the first")
        earlier = [call for _, messages in history[:-1] for call in tool_calls(messages) if call["name"] == "chartbook_get_docs"]
        require(bool(earlier), "no earlier request read any docs: first ask for the docs of a dataframe")
        question, last_messages = history[-1]
        require(not any(call["name"] == "chartbook_get_docs" for call in tool_calls(last_messages)),
                "the last request read the docs again, so it shows the tool, not memory: ask about what was read, without asking to read it")
        require(isinstance(reply, str) and reply == text_of(agent.messages[-1]),
                "`reply` is not the agent's reply to its last request (keep what send() returned)")
        names = {str((call.get("args") or {}).get("dataframe", "")).casefold() for call in earlier} - {""}
        require(any(name in reply.casefold() for name in names),
                "the reply does not name what was read: was the question sent to the same agent that read the docs?")
        return (f"{agent.version} answered {question!r} from memory: its history, with the docs it read, went back in "
                "with the question.")
    return run_check("0.1", body)


def check_tool_calls(agent: Any, tool_names: Sequence[str]) -> Outcome:
    """0.2: the tool calls of the agent's latest request, in order, read from ``agent.messages``."""
    def body() -> str:
        attempted(agent=agent, tool_names=tool_names)
        is_agent(agent)
        history = turns(agent)
        require(bool(history), "the agent has had no request yet")
        actual = [call["name"] for call in tool_calls(history[-1][1])]
        require(len(actual) >= 2, f"the latest request made {len(actual)} tool call(s): ask for two things in one request")
        require(not isinstance(tool_names, str) and all(isinstance(name, str) for name in tool_names),
                "`tool_names` should be a list of tool names (strings)")
        names = list(tool_names)
        require(len(names) == len(actual), f"the request made {len(actual)} calls; your list has {len(names)} names "
                                           f"({size_word(len(names), len(actual))})")
        require(sorted(names) == sorted(actual), "some names are not tools this request called")
        require(names == actual, "the right names, in the wrong order: list them in the order the model called them")
        return f"{len(actual)} tool calls in one request: the loop ran the model {len(actual) + 1} times."
    return run_check("0.2", body)


def check_call_growth(agent: Any, result_tokens: int, growth: int) -> Outcome:
    """0.3: the tool result's tokens, and how much bigger the second model call was than the first."""
    def body() -> str:
        attempted(agent=agent, result_tokens=result_tokens, growth=growth)
        is_agent(agent)
        given_result, given_growth = whole_number(result_tokens, "result_tokens"), whole_number(growth, "growth")
        calls = agent.token_log
        results = [message for message in agent.messages if message.type == "tool"]
        require(len(calls) >= 2 and bool(results), "the agent has not called a tool yet: send it one request that needs one")
        require(requests(agent)[0].strip().casefold() != LESSON_REQUEST.casefold(),
                "that is the lesson's own request, whose figures are printed above: send the fresh agent another one")
        expected_result = agent.counter.count_message(results[0])
        expected_growth = calls[1].input_tokens - calls[0].input_tokens
        require(given_result != calls[1].input_tokens, "`result_tokens` is the whole second call, not the tool result alone")
        require(given_result != len(str(results[0].content)), "`result_tokens` counts characters; count tokens")
        require(given_result == expected_result, f"`result_tokens` is {size_word(given_result, expected_result)}")
        require(given_growth != calls[1].input_tokens, "`growth` is the second call's size, not how much it grew")
        require(given_growth == expected_growth, f"`growth` is {size_word(given_growth, expected_growth)}")
        return (f"the second call carried the {expected_result:,}-token result plus the tool call itself "
                f"({expected_growth - expected_result:,} tokens).")
    return run_check("0.3", body)


def check_why_v0_forgets(answer: Any) -> Outcome:
    """0.4: why v0 cannot say what it just read (multiple choice)."""
    return answer_check("0.4", answer)
