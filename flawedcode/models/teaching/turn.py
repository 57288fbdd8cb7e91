"""One turn of the teaching model: the latest request, read against the conversation, answered by tools.

``decide(visible, tool_names, root)`` returns ``(reply text, tool calls)`` when this package answers the latest user message, or ``None`` when the
old model (``offline*.py``) does: a message this package does not read yet, no ``run_python`` tool bound, a catalog other than the default, or a
follow-up of a turn the old model answered. Each complete request is one ``run_python`` call, made in order; when every call has its result, the
reply gives each ask's answer (a decline names what it could not use), after the earlier request it builds on, if any."""

from __future__ import annotations

import re
from itertools import takewhile
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from flawedcode.formats import digest_turn, requests_named
from flawedcode.models.teaching import answers, readers, router
from flawedcode.models.teaching.conversation import clarified, mended, read_turn, unseen_base
from flawedcode.models.teaching.request import Decline, Request
from flawedcode.models.teaching.summary import is_summary

TOOL, TIMEOUT_SECONDS = "run_python", 60  # every figure is one script of this tool's, allowed this long
DECLINED = ("I read this as", "I could not", "I can't", "I don't", "I won't", "Which ")  # how this model's declines open
ANSWERED = re.compile(r"\n\n(?:daily changes of )?[a-z_]+/[a-z_0-9]+ [a-z_0-9]+ \([^)]*\)(?:,| on) ")  # a figure after a decline
SET_ASIDE = "\n(I set aside {}: I read {} as the setting, not the question.)"  # a story or a scene told with the ask: said, never read
NO_ROW = ("there is no row that day", " has no row for ", " has no rows there")  # or a day or period with no data: nothing answered

Call = tuple[str, dict[str, Any]]


def decide(visible: list[BaseMessage], tool_names: set[str], root: str | None) -> tuple[str, list[Call]] | None:
    if TOOL not in tool_names or root is not None:
        return None  # without run_python, or on another catalog than the default one, the old model answers
    if (latest := next((i for i in range(len(visible) - 1, -1, -1) if _is_request(visible[i])), None)) is None:
        return None  # no request in view
    earlier = [text for i, m in enumerate(visible[:latest]) if isinstance(m, HumanMessage) and not declined(visible, i)
               for text in ([_as_said(visible, i)] if _is_request(m) else requests_named(m.text))]  # as said, or as a summary names them
    before = next((i for i in range(latest - 1, -1, -1) if _is_request(visible[i]) or digest_turn(visible[i].text)), None)  # the last request,
    said_before = (digest_turn(visible[before].text) or (visible[before].text,))[0] if before is not None and declined(visible, before) else ""
    turn = read_turn(latest_text := _as_said(visible, latest, latest=True), earlier, "" if latest_text != visible[latest].text else said_before)
    summarized = any(isinstance(m, HumanMessage) and not _is_request(m) for m in visible[:latest])
    if turn.readings is None and summarized and not turn.deferred and (unseen := unseen_base(visible[latest].text, bool(said_before))) is not None:
        return answers.decline_text(unseen), []
    if (readings := turn.readings) is None:
        return None
    results, replies, outputs = _results_after(visible, latest), [], []
    for reading in readings:
        if isinstance(reading, Decline):
            replies.append(answers.decline_text(reading))
            continue
        call = (TOOL, {"code": answers.script(reading, root), "timeout": TIMEOUT_SECONDS})
        if (output := results.get(_key(call))) is None:
            return "", [call]
        replies.append(answers.answer(reading, output))
        outputs.append(output)
    pair, said = [reading for reading in readings if isinstance(reading, Request)], set(readers.tokens(latest_text).words)
    one_place = len({(r.series[0].name, r.period.first, r.period.last) for r in pair}) == 1 and readers.GAPS & said
    if len(outputs) == 2 == len({(r.series[0].name, r.period.first, r.period.last, r.stat()) for r in pair}) and (
            pair[0].stat() is pair[1].stat() or one_place):  # ('the gap between those two' after a max and a min: the second minus the first)
        replies.append(answers.difference(pair, outputs, bool({"times", "ratio"} & said)))  # one ask over two periods, two series over one: the gap
    after = f"\n(Building on your earlier request: the {router.describe(turn.builds_on)}.)" if turn.builds_on is not None else ""
    asides = [f"'{s}'" for r in readings for s in getattr(r, "aside", ())]
    after += SET_ASIDE.format(", ".join(asides), "them" if len(asides) > 1 else "it") if asides else ""
    return "\n\n".join(dict.fromkeys(replies)) + after, []  # two asks read as one request: answered once


def declined(visible: list[BaseMessage], index: int) -> bool:
    """The reply to request ``index`` declined it (or showed docs it did not ask for), whichever rules wrote it: never the state. One that
    also gave a figure (a paragraph opening with its dataframe and column) answered that ask: a follow-up builds on it."""
    asked, reply = digest_turn(visible[index].text) or (visible[index].text, _reply(visible, index))
    docs, figure = reply.startswith(("Docs from", "From the saved docs")) and "doc" not in asked.lower(), ANSWERED.search(reply)
    return bool(reply) and not figure and (reply.startswith(DECLINED) or any(phrase in reply for phrase in NO_ROW) or docs)


def _reply(visible: list[BaseMessage], index: int) -> str:  # the last reply to request ``index``, or ''
    replies = [m.text for m in takewhile(lambda m: not isinstance(m, HumanMessage), visible[index + 1:]) if isinstance(m, AIMessage) and m.text]
    return replies[-1] if replies else ""


def _as_said(visible: list[BaseMessage], index: int, latest: bool = False) -> str:
    """A request as read: an answer to this model's own 'Which ...?' ('the sofr one') is the request it asked about, with the answer's words; an
    earlier correction of a declined request ('*SOFR', 'fine, use sofr instead') is that request mended (the latest one says so as it answers)."""
    before = next((i for i in range(index - 1, -1, -1) if _is_request(visible[i])), None)
    asked, answer = _reply(visible, before) if before is not None else "", visible[index].text
    if asked.startswith("Which one do you mean: "):  # 'option 2', 'the second': that option of the question, as it was listed
        options = asked.split(": ", 1)[1].split("?")[0].split("; ")
        numbers = [int(word) if word.isdigit() else readers.WORDS["ordinals"].get(word, 0) for word in readers.tokens(answer).words]
        picks = [n for n in numbers if 0 < n <= len(options)]
        answer = options[picks[0] - 1] if picks else answer
    return (asked.startswith("Which ") and clarified(visible[before].text, answer)) or (not latest and before is not None and declined(
        visible, before) and mended(visible[before].text, answer)) or visible[index].text


def _is_request(message: BaseMessage) -> bool:
    return isinstance(message, HumanMessage) and not is_summary(message.text)  # an agent's summary or digest is no request


def _key(call: Call) -> str:
    return f"{call[0]}\x1f{call[1].get('code', '')}"


def _results_after(visible: list[BaseMessage], index: int) -> dict[str, str]:
    calls, results = dict[str, Call](), dict[str, str]()
    for message in visible[index + 1:]:
        if isinstance(message, AIMessage):
            calls.update({c["id"]: (c["name"], c["args"]) for c in message.tool_calls if c.get("id")})
        elif isinstance(message, ToolMessage) and message.tool_call_id in calls:
            results[_key(calls[message.tool_call_id])] = message.text
    return results
