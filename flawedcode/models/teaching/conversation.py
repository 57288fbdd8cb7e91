"""A conversation made of requests (issue 41): the state is the last *answered* request.

The model is stateless: each call re-reads the user's earlier messages it can see, in order (after a summary or digest, the requests it names). A
complete turn (a ``Request``) becomes the state; a declined one never does. A follow-up is a partial request merged slot by slot onto the state
("now change just the year, 2023", "same thing for EFFR", "and the day before?", "sorry, I meant the 20-year"); one that would take what a declined
turn named, or that has nothing answered to build on, is declined, saying so. A turn left to the old model (``None``) sends the next follow-up
there too (only it knows that turn)."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from functools import cache

from flawedcode.models.teaching import readers
from flawedcode.models.teaching.readers import knowledge
from flawedcode.models.teaching.request import Anchor, Decline, Granularity, Period, Request, Series, Slot, Statistic
from flawedcode.models.teaching.router import COMPARED, FOLLOW_UP, IGNORED, SAME_PERIOD, Reading, _all_data, _read_period, check, read_message

CAUSES = set(readers.WORDS["causes"]["words"])  # a question of why, declined: what it named is no problem for a follow-up
PAIRED = set(readers.WORDS["compare_answers"]["words"])  # 'how does that compare to the first figure?': two answers set side by side
BACK = readers.WORDS["back"]["words"]  # 'go back to the first one, but the median': an older answered request, changed
CHANGES = (Statistic.CHANGE, Statistic.PERCENT_CHANGE, Statistic.RANGE)  # figures that are already a gap ('by how many bp?': converted)


@dataclass(frozen=True)
class Turn:
    """The latest message read against the conversation so far."""
    readings: list[Reading] | None  # None: the old model answers it
    builds_on: Request | None  # the earlier answered request a follow-up was merged onto
    deferred: bool = False  # the last turn was the old model's: only it knows what a follow-up of it builds on

    declined = staticmethod(lambda reason: Turn([Decline(Request(), (), reason)], None))  # a turn declined for ``reason``


def state_after(earlier_requests: list[str], history: list[list[Request]] | None = None) -> tuple[Request | None, bool]:
    """(the last answered request, whether the last turn was left to the old model); ``history`` gets each turn's answered requests."""
    state, deferred = None, False  # (Request | None, bool)
    for i, text in enumerate(earlier_requests):
        if i and text == earlier_requests[i - 1]:
            continue  # a request a digest names and the agent keeps in view too: read once
        toks = readers.tokens(text)  # once: 'go back to the first one' reads its words, then the readers below
        readings = found[1] if (found := _back(toks.words, history) if history is not None else None) else read_message(text, state)
        if history and not any(isinstance(r, Request) for r in readings or []) and "them" in toks.words and readers.GAPS & set(toks.words):
            unit = readers.read_unit(toks)  # read once: a reader takes the words it reads
            readings = [replace(r, unit=unit or r.unit) for answered in history for r in answered][-2:]  # 'the gap between them': a pair
        series, statistics = readers.read_series(toks), readers.read_statistics(toks)  # with words unread here (it answered it)
        series = None if isinstance(series, readers.Ambiguous) else series  # 'a class on money markets': no series named
        unread = readings and all(isinstance(r, Decline) and not r.reason for r in readings) and (series and statistics or _read_period(toks) and {
            word for r in readings for word in " ".join(r.unused).split()} <= knowledge().known_words)  # 'the first week of ...': the old model's
        deferred = bool(readings is None and (deferred or series or statistics and any(toks.find(p) is not None for p in SAME_PERIOD) or
                                              readers.read_shift(readers.Tokens(list(toks.words)))) or unread)  # 'and a year later?': moved there
        answered = [reading for reading in readings or [] if isinstance(reading, Request)]
        state = None if deferred else answered[-1] if answered else state  # a deferred turn: what it asked is unknown here
        history is not None and not deferred and answered and history.append(answered)
    return state, deferred


def read_turn(latest: str, earlier_requests: list[str], declined: str = "") -> Turn:
    state, deferred = state_after(earlier_requests, history := [])
    why = set(said := readers.tokens(declined).words) & CAUSES  # 'why did the 2y fall in august?', declined: no problem in its slots
    if why and isinstance(period := _read_period(toks := readers.Tokens([w for w in said if w not in why])), Period) and isinstance(
            series := readers.read_series(toks), Series):  # its series and period; its figure, a change, until a follow-up names one
        state, declined = Request(series=(series,), statistic=Slot(Statistic.CHANGE), period=period), ""
    words, fresh = readers.tokens(latest).words, read_message(latest, None)  # the message tokenized and read alone, once
    compared = set(words) & PAIRED and fresh is None and not readers.read_series(readers.Tokens(list(words)))
    other = compared and state and not deferred and read_message(" ".join(w for w in words if w not in PAIRED | {"does", "did", "than"}), state)
    # ('vs last yr?', 'how does that compare with the same month last year?': the message as a follow-up naming the other period)
    if other and len(other) == 1 and isinstance(other[0], Request) and other[0].period != state.period and other[0].stat() is state.stat() and (
            other[0].period.one_day == state.period.one_day):  # (a day against a day: 'the 2024 one' after two days picks one of them)
        return Turn([state, other[0]], state)  # 'was it higher than in 2023?', 'how does that compare with the year before?'
    flat = [request for answered in history for request in answered]
    if len(flat) > 1 and set(words) & PAIRED and not (fresh or _read_period(toks := readers.Tokens(list(words))) or type(
            readers.read_series(toks)) is Series):  # ('the difference between those two': a gap word may fit several columns)
        first, unit = flat[0] if "first" in words else flat[-2], readers.read_unit(readers.Tokens(list(words)))  # 'which is higher, and by
        return Turn([check(replace(r, unit=unit or r.unit)) for r in (first, flat[-1])], None) if first != flat[-1] else Turn.declined(
            "I see one answered request, so nothing to compare")  # how much?': the last two answers, and their gap (in the unit asked)
    unanswered = f"'{latest.strip()}' builds on your last request, which I could not answer"
    if found := _back(words, history):
        return Turn(found[1], found[0] if all(isinstance(r, Request) for r in found[1]) else None)
    if declined and (text := mended(declined, latest)) is not None:  # '*SOFR', 'fine, use sofr instead', 'sorry, Q1 2024 then'
        return Turn(readings := read_message(text), replace(readings[0], series=()))  # it builds on the declined request, as mended
    if declined and (taken := _taken_from(declined, words, state)):  # 'and effr that day?' after a holiday: never an older day
        return Turn.declined(f"{unanswered} ({taken}): ask it in full")
    readings = fresh if state is None else read_message(latest, state)
    asked = readers.read_statistic(heard := readers.Tokens(list(words))) or (set(words) & COMPARED - PAIRED - {"which", "one", "many", "than"} or
        "much" in words and {"higher", "lower"} & set(words)) and Slot(Statistic.CHANGE)  # 'by what percent did it grow?', 'how much higher?'
    if fresh is None and len(flat) > 1 and asked and asked.value in CHANGES[:2] and ((a := flat[-2]).series == state.series and a.stat() is (
            state.stat()) and a.period != state.period) and (not (p := _read_period(readers.Tokens(list(words)))) or isinstance(p, Period) and sum(
            p.first <= r.period.first <= r.period.last <= p.last for r in (a, state)) == 1 or isinstance(p, tuple) and {(x.first, x.last) for x in p}
            == {(r.period.first, r.period.last) for r in (a, state)}):  # after two periods' figures ('the 2024 one', 'from June 2023 to June 2024')
        return Turn([replace(x, unit=readers.read_unit(heard) or x.unit) for x in (a, state)], None)  # between them (its words read once)
    refers = next((p for p in SAME_PERIOD if readers.Tokens(words).find(p) is not None), None)
    if fresh is None and state is None and not deferred and refers:
        return Turn.declined(f"'{refers}' is the period of an earlier request, and I see none I answered: name the period")
    unit, series = readers.read_unit(toks := readers.Tokens(list(words))), readers.read_series(toks)  # 'bp' is a unit here, never a spread column
    gap = ("by", "how") in zip(words, words[1:]) or "them" in words and bool(readers.GAPS & set(words))  # 'the gap between them?'
    if gap and fresh is None and (state is None or state.stat() not in CHANGES) and (series is None or "them" in words) and not _read_period(toks):
        if history and len(pair := history[-1] if len(history[-1]) == 2 else flat[-2:]) == 2 and pair[0].stat() is pair[1].stat() and (
                pair[0].period == pair[1].period or pair[0].series == pair[1].series):  # one ask's two figures, or two turns': their gap,
            return Turn([check(replace(request, unit=unit or request.unit)) for request in pair], None)  # never one of them converted
        return Turn.declined(f"'{latest.strip()}' asks for a gap between figures, and I subtract only two figures of one "
                         "statistic given together, which my last answer was not: ask for it whole ('sofr minus effr in 2023, in bp')")
    bare = series is not None and set(toks.unused()) <= IGNORED  # 'fine, sofr then'
    opener = f"{' '.join(words[:2])} ".startswith(FOLLOW_UP) and not set(words) <= IGNORED  # 'ok and the 2 year?' (never 'hmm interesting')
    pointing = series is None or set(words) & {"it", "its", "that", "those", "them"}  # 'and when did it first get that low?': its figure
    if declined and (readings is None and (state is None or pointing) and opener or bare and not (opener and state)):
        return Turn.declined(f"{unanswered}: ask it in full")
    if readings is None and not deferred and set(words) & {"when", "day", "date"} and set(words) - IGNORED <= {"which", "day", "date", "?"}:
        if state is None or state.stat() in (Statistic.MIN, Statistic.MAX):  # after a high or a low: its answer names the day
            return Turn([state], state) if state else Turn.declined(f"'{latest.strip()}' asks about a figure whose request I can't see")
    builds_on = state if state is not None and readings != fresh else None
    if builds_on and series is None and history and len(history[-1]) > 1 and history[-1][-1] == state and all(
            isinstance(r, Request) for r in readings):
        return Turn([r for base in history[-1] for r in read_message(latest, base) or []], None)  # 'and its max?' after three series: each's
    if readings is None or builds_on is not None and deferred or all(isinstance(r, Decline) and not r.reason for r in readings):
        return Turn.declined(f"'{latest.strip()}' would move both figures of my last answer, and I can't: ask for each in full") if (
            readings is None and opener and history and len(history[-1]) == 2) else Turn(None, None, deferred)  # else the old model answers
    return Turn(readings, builds_on)


def _back(words: list[str], history: list[list[Request]]) -> tuple[Request, list[Reading]] | None:
    """'go back to the first one, but the median', 'what was the one before that?': that older answered request, changed as asked."""
    said, first = f" {' '.join(words)} ", "the first" if words[:3] in (["the", "first"], ["the", "first", "but"]) else None  # 'the first, but'
    flat = [request for answered in history for request in answered]
    if len(flat) < 2 or (back := next((p for p in BACK if f" {p} " in said), first)) is None:
        return None
    base = (history[-1] if len(history[-1]) > 1 else flat)[0] if "first" in back else flat[-2]  # of two asks just answered, the first
    return base, read_message(f" {' '.join(words)} ".replace(f" {back} ", " "), base) or [base]


def clarified(asked: str, answer: str) -> str | None:
    """'the sofr one' after this model asked which volume 'the max volume in 2024' meant: that request with the answer's words, when together
    they read as one complete request whose series the answer named (a full request of its own is read as itself)."""
    toks = readers.tokens(answer)
    if read_message(answer, None) is not None or not ((series := readers.read_series(toks)) or any(map(str.isdigit, toks.words))):
        return None  # a request of its own, or no series or year to add
    readings = read_message(together := f"{asked.strip().rstrip('?.!')}, {answer.strip()}", None) or []
    named = len(readings) == 1 and isinstance(readings[0], Request) and (not series or set(series.words) <= set(readings[0].series[0].words))
    return together if named else None


def mended(declined: str, latest: str) -> str | None:
    """A correction of the declined request just before it, as that request mended (when it then reads whole): a starred word ('*SOFR. autocorrect
    sorry') or a series of the catalog ('fine, use sofr instead') for its one unknown word, a period ('sorry, Q1 2024 then') for one past the data."""
    said, new, star, words = readers.tokens(declined).words, readers.tokens(latest), re.search(r"(?<!\w)\*+\s*([\w-]+)|([\w-]+)\*+(?!\w)", latest), []
    unknown = [i for i, word in enumerate(said) if word.isalpha() and word not in knowledge().known_words]
    series, period = readers.read_series(new), _read_period(readers.Tokens(new.words))
    if star or len(unknown) == 1 and isinstance(series, Series) and set(new.unused()) <= IGNORED | set(readers.WORDS["edits"]["instead"]):
        words = said[:unknown[0]] + ([star[1] or star[2]] if star else list(series.words)) + said[unknown[0] + 1:] if len(unknown) == 1 else []
    elif isinstance(period, Period) and (before := read_message(declined)) and isinstance(before[0], Decline) and before[0].reason.startswith(
            "I don't have data for"):  # a period past the data, read only when a period is named
        at = said.index(before[0].unused[0]) if before[0].unused and before[0].unused[0] in said else None
        words = [] if at is None else said[:at] + list(period.words) + said[at + len(before[0].unused):]
    again = read_message(text := " ".join(words)) if words else None
    return text if again and all(isinstance(r, Request) for r in again) else None


def _taken_from(declined: str, words: list[str], state: Request | None) -> str | None:
    """What a follow-up would take from the declined request just before it (its series, or its period): never an older request's."""
    opener = f"{' '.join(words[:2])} ".startswith(FOLLOW_UP)  # 'and one year later?', 'then the last day of February'
    if not opener and not any(isinstance(r, Request) or r.reason for r in read_message(" ".join(words), _probe()) or []):
        return None  # not a data ask even as a follow-up: 'what was the first question I asked?', 'the highest close in data.csv'
    toks, said = readers.Tokens(readers.tokens(declined).words), readers.Tokens(list(words))  # the latest, tokenized once by read_turn
    period, stats, series = _read_period(toks, None), readers.read_statistics(toks), readers.read_series(toks)  # 'average': a statistic here
    if type(series) is not Series and not stats and (pointer := set(words) & {"it", "its"}) and not readers.read_series(said) and (unknown := [
            w for w in toks.words if w.isalpha() and w not in knowledge().known_words]):  # 'and the bund that year?', then 'and its min?'
        return f"'{pointer.pop()}' may be the {', '.join(unknown)} it names"
    asks = opener or any(read(readers.Tokens(list(words))) for read in (readers.read_statistics, readers.read_unit, lambda t: _read_period(t, None)))
    if series and asks and not readers.read_series(said) and (not state or series.name not in {s.name for s in state.series}):
        return f"it names {series.name}"
    if isinstance(period, Period) and asks and not _read_period(said, None) and not (state and state.period and (
            state.period.first, state.period.last) == (period.first, period.last)):  # 'and 4.5?' after a declined 'and 2024 for the 50y?'
        return f"it names {' '.join(period.words)}"
    refers = next((p for p in SAME_PERIOD if said.find(p) is not None), None)
    width = next((g for g in Granularity if refers and g.value in refers), None)
    if refers and period and (width is None or not isinstance(period, Period) or period.granularity is width):  # a problem or a shift: any
        return f"'{refers}' is its period"
    return None


@cache
def _probe() -> Request:
    """A request on a column in percent over its data, as if written: would a message be read as a follow-up of some answered request?"""
    column = next(column for column in knowledge().columns if column.unit == "percent")
    return Request(series=(Series(column.frame, column.name, column.unit),), statistic=Slot(Statistic.MEAN),
                   period=replace(_all_data(column.frame), anchor=Anchor.WRITTEN))


def unseen_base(latest: str, after_declined: bool = False) -> Decline | None:
    """A follow-up ('and in 2024?') with no answered request in view to build on: declined, never guessed, saying why."""
    if not (probed := read_message(latest, _probe())) or read_message(latest, None) is not None:
        return None
    unread = [word for reading in probed if isinstance(reading, Decline) for word in reading.unused]
    why = f"I could not use {', '.join(map(repr, unread))}" if unread else f"'{latest.strip()}' builds on your last request, which I could not " \
        "answer" if after_declined else f"the request '{latest.strip()}' builds on was summarized away, and the summary names none I answered"
    return Decline(Request(), (), f"{why}. Ask it in full (the series, the statistic and the period)")
