"""The router: a message to requests, complete or declined (issue 41).

A story told before the ask ('..., anyway what I'd like to know is ...') and sentences that only set the scene are set aside, and said. The rest
is cut into asks (at '?' and ';', and at 'and' / 'also' / 'plus' when what follows names a series, a statistic or a day of its own); the second
ask of a pair is a partial request merged onto the first ("sofr on 2024-07-05 and the day before": two days). Each ask runs through the readers
(``readers.py``) in a fixed order: periods, transform, rounding, ranking, condition, unit, statistic, series. Then **complete or decline**: every
word no reader used is either an ignored word (discourse, social, grammar: ``words.toml``) or content; content words make a ``Decline`` that names
them and says what was understood. A follow-up (no series of its own, or opened by 'and', 'now', 'same', 'sorry' ...) is a partial request merged
slot by slot onto the last *answered* request. ``read_message`` returns ``None`` for what this package does not answer yet (no series named and no
request to build on, or an unused word the old model's other intents know): the old model answers it."""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import timedelta
from functools import cache

from flawedcode.figures import RANKED
from flawedcode.models.teaching import readers
from flawedcode.models.teaching.readers import LENGTHS, WORDS, PeriodProblem, Shift, Tokens
from flawedcode.models.teaching.request import Anchor, Decline, Direction, Granularity, Intent, Period, Request, Slot, Statistic, Transform, Unit

IGNORED = set(WORDS["ignored"]["words"])
IGNORED_PHRASES = [phrase for phrase in IGNORED if " " in phrase]  # 'no rush', 'if possible': taken whole before the readers run
OTHER_INTENTS = set(WORDS["other_intents"]["words"])
COMPARE, REDO, COMPARED = set(WORDS["compare_series"]["words"]), WORDS["redo"]["words"], set(WORDS["between_periods"]["words"]) - {"and", "or"}
UNSUPPORTED, SCENE = WORDS["unsupported"], set(WORDS["scene"]["words"])
SAME_PERIOD = WORDS["same_period"]["words"]
PERCENT_CHANGE = {phrase: True for phrase, name in WORDS["statistics"].items() if name == "percent_change" and "percent" in phrase}
FOLLOW_UP = tuple(f"{phrase} " for phrase in WORDS["follow_up"]["words"])  # a message opening with one of these ('and ...', 'i meant ...')
CONJUNCTIONS, WITHIN, EDGES = ("and", "also", "plus"), set(WORDS["follow_up"]["within"]), {"start", "beginning", "end", "close"}  # 'and at the end?'
FACTORS = {(own, Unit(asked)): factor for own, table in WORDS["factors"].items() for asked, factor in table.items()}  # (column's, asked)
SUMMARY = (Statistic.MEAN, Statistic.MIN, Statistic.MAX, Statistic.LATEST)  # What a period asked with no statistic gets.
Reading = Request | Decline
PIVOT = re.compile(r"(?i)\b(?:" + "|".join(map(re.escape, WORDS["pivots"]["words"])) + r")\b[\s,:-]*")  # searched, never backtracked
SCENE_PARTS = re.compile(r"((?<=[.!?])[\"\u201d]?\s+|(?<=\w):\s+|\s[-\u2013\u2014]+\s|\s*\([^()]*\)[.!]?\s*)")  # sentences, a lead, a remark


def read_message(text: str, earlier: Request | None = None) -> list[Reading] | None:
    """Each ask of a message, read and checked (``None``: not a request this package answers)."""
    readings: list[Reading] = []
    text, aside = set_aside(text)
    said = readers.tokens(text).words
    pieces = [words for words in asks(said) if not set(words) <= IGNORED or set(words) & EDGES or any(  # '... thanks!',
        phrase in " ".join(words) for phrase in REDO)]  # not 'are you sure?' or 'and at the close?'
    pieces = [words for i, words in enumerate(pieces) if not (i and set(words + pieces[i - 1]) <= IGNORED)]  # 'are you sure? check again': one
    for i in range(len(pieces) - 1, 0, -1):  # '... from Q1 to Q2? In bp please.': a unit alone is the whole ask's
        if readers.read_unit(toks := Tokens(list(pieces[i]))) and set(toks.unused()) <= IGNORED | COMPARED:  # 'higher by how many bp?' too
            pieces[i - 1] = pieces[i - 1] + pieces.pop(i)
    for number, words in enumerate(pieces):
        if number and isinstance(readings[-1], Decline) and read_ask(Tokens(list(words)), None) is None:  # 'by how many bp?'
            readings.append(Decline(Request(), (), "it builds on the ask before it, which I could not read"))
            continue
        base = earlier if number == 0 or not readings else readings[-1] if isinstance(readings[-1], Request) else None  # a declined one: none
        alone = number == 0 < len(pieces) - 1 and "plus" not in said and read_ask(Tokens(list(words)), None) is None and readers.read_series(
            Tokens(list(words)))  # not 'reserves plus the tga': a sum, which this package does not compute
        if isinstance(after := read_ask(Tokens([w for w in words if w not in alone.words] + pieces[-1]), earlier) if alone else 0, Request):
            base = after  # '2y and 10y average in 2023', 'the average 2y and 10y in 2024': the first takes the next ask's statistic and period
        if (reading := read_ask(Tokens(list(words)), base, follow_up=number > 0 or base is after)) is None:
            return None
        readings += reading if isinstance(reading, list) else [reading]
    return [replace(r, aside=aside + r.aside) if aside and i == 0 and isinstance(r, Request) else r for i, r in enumerate(readings)] or None


@cache  # read_message reads the same texts many times a turn (each earlier request, the latest alone and as a follow-up)
def set_aside(text: str) -> tuple[str, tuple[str, ...]]:
    """'Stat-head here, so bear with the baseball talk. What was ...?', '... in 2024? (for a podcast)': a sentence, a lead before a colon, a dash
    or a remark in brackets, that is a ``scene``: set aside, and said in the answer. Never the ask's own words."""
    asked, story = told(readers.without_label(text))  # a label ('Edit:', 'Q3:') is no scene: it goes first
    aside, parts = [story] * bool(story), SCENE_PARTS.split(asked)
    for i, part in enumerate(parts):
        if (part := part.strip(" ().!\t\n") if i % 2 == 0 or part.lstrip().startswith("(") else "") and scene(part, "?" in (rest := "".join(
                parts[i + 1:])) and type(readers.read_series(readers.tokens(rest))) is readers.Series):  # a question naming its own series
            aside, parts[i] = aside + [part], " "
    return ("".join(parts), tuple(aside)) if aside and set(readers.tokens("".join(parts)).words) - IGNORED else (text, ())


def told(text: str) -> tuple[str, str]:
    """(the ask, the story before its last ``[pivots]`` phrase: '..., anyway what I need is ...'); no story with a ``[scene]`` word in it."""
    pivots = list(PIVOT.finditer(text := readers.arithmetic(text)))
    story = text[:pivots[-1].start()].strip(" ,.") if pivots else ""
    said = set(readers.tokens(story).words)  # a story of ignored words only ('ok, long story short'): no story, the phrase dropped
    return (text, "") if not pivots or said & SCENE else (text[pivots[-1].end():], story if said - IGNORED else "")


def scene(said: str, before_a_question: bool = False) -> bool:
    """Words beside ignored ones (never '(c)' alone), and none any reader or another intent reads nor ``[scene]``'s: no answer can change. Before
    a question that names its own series, a statement with a figure in it is a claim to check ('A draft says the 10y "ended 2023 at 3.88%."'),
    and one that names no period, statistic, unit or condition is context ('Our broker says mortgage rates follow the 10-year.'): never the ask."""
    toks, slots = readers.tokens(said), (_read_period, readers.read_statistics, readers.read_unit, readers.read_condition)
    slotted = any(read(readers.Tokens(list(toks.words))) for read in slots) or any(map(readers.number_of, toks.words)) or set(toks.words) & (
        OTHER_INTENTS)  # ('Load data.csv. What was ...?': an ask of its own)
    return "?" not in said and bool({w for w in toks.words if len(w) > 1} - IGNORED) and not set(toks.words) & SCENE and (before_a_question and (any(
        (n := readers.number_of(w)) and (n[1] or "." in w) for w in toks.words) or not slotted) or not (slotted or readers.read_series(toks)))


def asks(words: list[str]) -> list[list[str]]:
    """The asks of a message: split at '?' and ';', then at a conjunction followed by an ask of its own."""
    return [ask for text in " ".join("\n" if word in readers.SEPARATORS else word for word in words).split("\n") if (chunk := text.split())
            for ask in _split_at_conjunction(chunk)]


def _split_at_conjunction(chunk: list[str]) -> list[list[str]]:
    for i, word in enumerate(chunk):
        if word not in CONJUNCTIONS or i == 0 or "between" in chunk[max(0, i - 6):i] or "both" in chunk[max(0, i - 6):i] and readers.read_condition(
                Tokens(chunk[i + 1:])):  # 'both sofr and effr above 5.3%': one ask, a condition on both ('both the 2y and the 10y max': two)
            continue
        left, right = chunk[:i], chunk[i + 1:]
        if readers.read_series(Tokens(left)) and any(read(Tokens(list(right))) for read in (readers.read_shift, readers.read_statistic,
                                                                                            readers.read_series)):  # names its own
            run = next((j for j in range(len(left) - 1, -1, -1) if not readers.TENOR.fullmatch(left[j])), -1) + 1  # '2y, 5y and 10y':
            return [left[:run + 1], *([tenor] for tenor in left[run + 1:]), *_split_at_conjunction(right)]  # each tenor of the list
    return [chunk]


def read_ask(toks: Tokens, earlier: Request | None, follow_up: bool = False) -> Reading | list[Reading] | None:
    if {"percentile", "percentiles", "quantile", "quartile"} & set(toks.words):
        return None  # 'the 75th percentile', never the 75th of a month nor a percentile column: the old model reads percentiles
    default_year = earlier.period.first.year if earlier and earlier.period else None
    redo = _take_phrases(toks, REDO)  # 'that can't be right, check again': the same request, computed again
    unsupported = _take_phrases(toks, list(UNSUPPORTED))  # 'week over week', 'by how many bp over 5%': never the nearest figure
    while _take_phrases(toks, IGNORED_PHRASES):
        pass
    edits = _take_phrases(toks, WORDS["edits"]["words"])
    used, period = set(toks.used), _read_period(toks, default_year)
    if isinstance(period, PeriodProblem) and len(years := {y for w in toks.words if (y := readers._year(w))} - {default_year}) == 1:
        period = _read_period(toks := Tokens(toks.words, used), years.pop())  # 'I meant 2023, the last trading day of June': again
    if (isinstance(period, tuple) or isinstance(period, PeriodProblem) and not period.definite) and "meant" in toks.words:  # the later one
        said = set(range(max(i for i, word in enumerate(toks.words) if word == "meant") + 1))  # 'i said march i meant april'
        period = _read_period(toks := Tokens(toks.words, used | said), default_year)
    period, second = period if isinstance(period, tuple) else (period, None)
    if second and period.granularity is Granularity.MONTH and {"to", "through", "until"} & set(toks.words) and not set(toks.words) & COMPARED:
        period, second = replace(period, last=second.last, granularity=Granularity.SPAN, words=period.words + second.words), None  # jan to jun
    if second:  # 'fall', 'vs': what the change between the two periods answers
        toks.take([i for i in toks.free() if toks.words[i] in WORDS["between_periods"]["words"]])
    transform = Slot(Transform(found[0]), found[1]) if (found := readers.read_phrase(toks, WORDS["transforms"])) else None
    rounding, ranking = readers.read_rounding(toks), readers.read_ranking(toks)
    if earlier and earlier.condition and len(at := [i for i in toks.free() if readers.number_of(toks.words[i])]) == 1 and set(
            toks.unused()) - {toks.words[at[0]]} <= IGNORED:  # '5.33?' after a count above 5.3: the threshold changed
        value, unit = readers.number_of(toks.words[at[0]])
        condition = replace(earlier.condition, threshold=value, unit=unit or earlier.condition.unit, words=toks.take(at))
    elif condition := readers.read_condition(toks):  # 'days with sofr below 4.5%': the days are what a condition counts
        toks.take([i for i in toks.free() if toks.words[i] in ("days", "times", "sessions") and not {"of", "many"} & set(toks.words[i - 2:i])])
        _take_phrases(toks, ["every day", "each day", "every single day", "all days"])  # 'was it positive every day?': the count says
    percent = readers.read_phrase(toks, PERCENT_CHANGE)  # 'by what percent': a statistic, before 'percent' is read as a unit
    unit, statistics = readers.read_unit(toks), ((Slot(Statistic.PERCENT_CHANGE, percent[1]),) if percent else ()) + readers.read_statistics(toks)
    claimed, series = readers.read_claim(toks), readers.read_series(toks)  # 'a student says it was 5.33': a claim (after the condition's threshold)
    if second and statistics and statistics[0].value is Statistic.PERCENT_CHANGE:  # 'by what percent did it shrink from its 2023 average
        statistics = statistics[1:] or (Slot(Statistic.MEAN),)  # to its 2024 average': each period's figure, then the change's percent
    statistic = statistics[0] if statistics else Slot(Statistic.MEAN) if second and not second.one_day and not earlier else ranking and Slot(
        Statistic.MAX if ranking.direction is Direction.TOP else Statistic.MIN)  # two periods: their means (a follow-up's: the last figure's)
    changed = second or statistic is not None and statistic.value is Statistic.CHANGE  # 'by how much, in percent': the change's percent
    if unit and unit.value is Unit.PERCENT and series and series.unit not in ("percent", "bp") and changed:
        unit, statistic = None, statistic if second else Slot(Statistic.PERCENT_CHANGE, statistic.words + unit.words)
    said = Request(Intent.FIGURE if series else None, (series,) if series else (), statistic, statistics=statistics if len(statistics) > 1 else (),
                   transform=transform, condition=condition, ranking=ranking, unit=unit, decimals=rounding[0] if rounding else None,
                   claimed=claimed, words=tuple(toks.words))
    if period is None and earlier and earlier.period and earlier.period.granularity in (Granularity.DAY, Granularity.MONTH) and (at := next((
            i for i in toks.free() if re.fullmatch(r"\d{1,2}(st|nd|rd|th)", toks.words[i])), None)) is not None:  # 'and the 19th?': of its month
        try:
            period = Period(day := earlier.period.first.replace(day=int(toks.words[at][:-2])), day, Granularity.DAY, words=toks.take([at]))
        except ValueError:
            return Decline(said, (toks.words[at],), f"{earlier.period.first:%B %Y} has no {toks.words[at]}")
    if isinstance(period, PeriodProblem):  # an impossible or ambiguous day: the old model says so in its own words
        return Decline(said, (), period.text) if period.own else None
    at = next((i for i in toks.free() if toks.words[i] in COMPARE), None) if series and series.unit != "bp" and not condition else None
    if at is not None and (other := readers.read_series(Tokens(toks.words[at + 1:]))) and other.unit != series.unit:  # 'sofr than reserves'
        return Decline(said, (), f"{series.name} is in {series.unit} and {other.name} in {other.unit}: one cannot be set against the other")
    refers = next((phrase for phrase in SAME_PERIOD if toks.find(phrase) is not None), None)  # 'the 10y that day', 'that quarter?'
    bare = series and not (statistics or period or transform or rounding or ranking or condition or unit) and set(toks.unused()) <= IGNORED - {
        "is", "are", "what", "whats", "what's"}  # '2y?', 'sofr then': the last request for this series ('what is tgcr?' asks its docs)
    is_follow_up = earlier is not None and (follow_up or series is None or bool(edits) or bool(refers) or bare or period is None and bool(
        set(toks.words) & WITHIN) or f"{' '.join(toks.words[:2])} "
                                            .startswith(FOLLOW_UP))
    edge = next((i for i in toks.free() if toks.words[i] in EDGES), None) if period is None and statistic is None else None  # not 'highest close'
    if series is None and not is_follow_up or is_follow_up and not (series or statistic or period or transform or rounding or ranking or
                                                                     condition or unit or edits or refers or redo or edge is not None):
        return None  # no series and nothing to build on; 'thx!', 'ok': nothing to change (the old model answers it)
    if is_follow_up:
        if "day" in (same := _take_phrases(toks, SAME_PERIOD)) and earlier.period and not earlier.period.one_day:
            return Decline(said, same, "'that day' would be the day of a figure I gave, and I keep what you asked, not my answers: give the day")
        unit = next((word for word in same if word in ("month", "quarter", "year")), None)  # 'that whole month' after a day: its month
        if period is None and unit and (before := earlier.period):
            wider = readers.holding(before.first, unit, same)
            if not wider.first <= before.first <= before.last <= wider.last:  # 'the whole year' after all the data: which year?
                return Decline(said, same, f"'{' '.join(same)}' would be the {unit} of your last request, and it spans more than one {unit}")
            period = wider if (wider.first, wider.last) != (before.first, before.last) else None  # 'that month' after a month is that month
        if period is None and (before := earlier.period and (earlier.period.inside or earlier.period)) and not before.one_day and edge is not None:
            day = readers.edge_day(before, toks.words[edge], readers.knowledge().trading_days(earlier.series))  # 'and at the start?': its first
            period = Period(day, day, Granularity.DAY, inside=before, words=toks.take([edge]) + same)
        period = _follow_up_period(period, earlier, toks, "day" in same)
        said = replace(said, period=period if isinstance(period, Period) else None)
        if said.series and isinstance(said.series[0], readers.Ambiguous):  # 'what about the volume?' after sofr: sofr's; 'the spread?': which?
            named = readers.read_series(Tokens([*(words := said.series[0].words), *earlier.series[0].frame.split("/")[1:]])) or said.series[0]
            if isinstance(named := named if set(words) <= set(named.words) else said.series[0], readers.Ambiguous):
                return Decline(said, (), f"'{' '.join(words)}' fits more than one column ({named.frame}.{named.column}, {named.others[0]}): name it"
                               ) if set(words) <= readers.GAPS else None  # else the old model asks which
            said = replace(said, series=(replace(named, words=words),))
        request = said.merged_onto(earlier)
        if said.series and earlier.series and set(said.series[0].words) <= {said.series[0].frame.split("/")[1]} and (other := readers.read_series(
                Tokens([*said.series[0].words, *earlier.series[0].column.split("_")]))) and other.frame == said.series[0].frame:
            request = replace(request, series=(replace(other, words=said.series[0].words),))  # 'and effr' after sofr's volume: effr's volume
        if request.period and request.period.one_day and not (said.statistic or request.condition or said.period is None):
            request = replace(request, statistic=Slot(Statistic.VALUE), statistics=())  # a day now: its value, not a max
        if isinstance(period, Shift) and (request := _apply_shift(request, period)) is None:
            return None
        if request.stat() is Statistic.VALUE and request.period and not request.period.one_day:  # 'and in 2023?' after a day's value
            return Decline(request, (), f"a value is one day's, and {request.period.first} to {request.period.last} has many: name the day, "
                           "or a statistic of them (the mean, the last value)")
    else:
        if isinstance(period, Shift):
            return Decline(said, period.words, "")  # 'the day before' what? the old model may know
        request = replace(said, period=period or _all_data(series.frame))
    if request.statistic is None and request.condition is None and request.ranking is None and not request.period.one_day:
        return None  # 'what is tgcr?', 'show me the last 5 days of ...': docs or rows, not a figure (the old model)
    if unsupported and request.series:  # the phrase's words, then what they stand for
        said = " ".join(unsupported)
        return Decline(_with_defaults(request), unsupported, f"I can't compute {UNSUPPORTED[said]} ('{said}') yet, so I computed nothing")
    reading = _complete_or_decline(_with_defaults(request), toks)
    return [reading, check(replace(reading, period=second))] if second and isinstance(reading, Request) else reading


def _take_phrases(toks: Tokens, phrases: list[str]) -> tuple[str, ...]:  # the longest phrase found, taken
    return (readers.read_phrase(toks, dict.fromkeys(phrases)) or (None, ()))[1]


def _follow_up_period(period, earlier: Request, toks: Tokens, same_day: bool = False):
    """'now change just the year, 2023', 'and the same day in 2023?': the earlier period in that year, when it was narrower than a year."""
    if isinstance(period, Period) and period.granularity is Granularity.YEAR and earlier.period and (
            (at := toks.find("year")) is not None or same_day and earlier.period.one_day):
        before, words = earlier.period, toks.take([at] if at is not None else [])
        if before.granularity not in (Granularity.YEAR, Granularity.ALL):  # february 2024 in 2023: to the 28th
            moved = (readers.moved_on_calendar(d, readers.Shift(period.first.year - before.first.year, "year")) for d in (before.first, before.last))
            return replace(before, first=next(moved), last=next(moved), words=period.words + words)
        return replace(period, words=period.words + words)
    return period


def _apply_shift(request: Request, shift: Shift) -> Reading | None:
    period = request.period
    if period is None or period.edge_of and shift.unit not in ("day", "trading_day") or not period.one_day and shift.unit == "trading_day":
        return None  # 'a year earlier' than a month end, 'the day after' a month: the old model's rules
    if period.one_day:
        day = readers.shifted(period.first, shift, readers.knowledge().trading_days(request.series))
        said = period.first + timedelta(days=shift.steps) if shift.unit == "trading_day" and abs(shift.steps) == 1 else day  # the calendar's
        return replace(request, period=Period(day, day, Granularity.DAY, Anchor.RELATIVE, edge_of=said if said != day else None, words=shift.words))
    if (period.last - period.first).days < 7 and shift.unit == "year":  # 'the same week a year earlier': 52 weeks, Monday to Friday again
        shift = readers.Shift(shift.steps * 52, "week", shift.words)
    first = readers.moved_on_calendar(period.first, shift)  # 'the month after' march 2024: april; 'the quarter before' q1: q4 of the year before
    last = readers.moved_on_calendar(first, readers.Shift(LENGTHS[period.granularity.value], "month")) - timedelta(days=1) if (
        period.granularity.value in LENGTHS) else readers.moved_on_calendar(period.last, shift)
    return replace(request, period=replace(period, first=first, last=last, anchor=Anchor.RELATIVE, words=shift.words))


def _read_period(toks: Tokens, default_year: int | None = None) -> Period | PeriodProblem | Shift | tuple[Period, Period] | None:
    """The ask's one period (or a problem, or a shift still to apply to another request's day)."""
    days = readers.knowledge().trading_days(None)
    found: list[Period | PeriodProblem] = readers.read_data_end(toks, days)
    found += readers.read_holidays(toks) + readers.read_days(toks)  # in this order: each takes its words
    trading, shift = readers.read_trading_days(toks), readers.read_shift(toks)
    spans = (read := readers.read_spans(toks, default_year)) + (readers.read_spans(toks, read[0].first.year) if read and default_year is None else [])
    found += readers.read_end_of(toks, spans, days)  # the spans read (a year written once: '... of 2024 or the second half'), or an edge of one
    if problems := [p for p in found if isinstance(p, PeriodProblem)]:
        return problems[0]
    periods = _distinct([p for p in found if isinstance(p, Period)])
    if len(periods) == 2 and (year := next((p for p in periods if p.granularity is Granularity.YEAR), None)) and (inner := next(
            p for p in periods if p is not year)).first.year == year.first.year and not any(readers._year(w) for w in inner.words):
        periods = [replace(inner, words=inner.words + year.words)]  # the year written once, for a month or day written without one
    if len(periods) == 2 and all(p.one_day for p in periods) and {"between", "from", "to", "through", "until"} & set(toks.words):
        first, last = sorted(periods, key=lambda p: p.first)
        words = toks.take([i for i in toks.free() if toks.words[i] in ("between", "from", "and", "to", "through", "until")])
        periods = [Period(first.first, last.last, Granularity.SPAN, words=first.words + last.words + words)]
    if len(periods) == 2 and periods[0].granularity is periods[1].granularity and (not periods[0].one_day or "and" in toks.words) and (
            periods[0].last < periods[1].first or periods[1].last < periods[0].first):
        return tuple(sorted(periods, key=lambda p: p.first))  # 'from H1 2023 to H1 2024': the ask over each
    if len(periods) > 1:
        return PeriodProblem("two periods are named", tuple(w for p in periods for w in p.words), definite=False)
    period = periods[0] if periods else None
    if shift is not None:
        if period is None:
            return shift
        if not period.one_day and (abs(shift.steps) != 1 or LENGTHS.get(shift.unit, 99) > LENGTHS.get(period.granularity.value, 0)):
            return PeriodProblem(f"I can't count '{' '.join(shift.words)}' from '{' '.join(period.words)}', a {period.granularity.value}: name the "
                                 "period itself", shift.words + period.words, own=True)  # 'the year before march 2024': a year earlier?
        day = readers.shifted(period.first, shift, days) if period.one_day else period.last + timedelta(days=1) if shift.steps > 0 else (
            period.first - timedelta(days=1))  # a period: the one of the shift's unit next to it ('the month after q1 2024': april 2024)
        period = replace(Period(day, day, Granularity.DAY, Anchor.RELATIVE if period.anchor is Anchor.WRITTEN else period.anchor) if period.one_day
                         else replace(readers.holding(day, shift.unit), anchor=Anchor.RELATIVE), words=period.words + shift.words)
    if trading is not None:
        count, from_start, words = trading
        base = period or Period(days[0], days[-1], Granularity.ALL, Anchor.DEFAULT)
        inside = [day for day in days if base.first <= day <= base.last]
        inside = inside[:count] if from_start else inside[-count:]
        if inside:  # the exact first and last trading days
            period = Period(inside[0], inside[-1], Granularity.SPAN, Anchor.TRADING_DAYS, trading_days=count,
                            from_start=from_start, words=base.words + words)
    return period


def _distinct(periods: list[Period]) -> list[Period]:
    """Periods that say the same days once ('summer of 2024 (june to august)'); a day inside a wider one is kept apart."""
    result: dict[tuple, Period] = {}
    for p in periods:
        key = (p.first, p.last)
        result[key] = replace(result[key], words=result[key].words + p.words) if key in result else p
    return list(result.values())


def _all_data(frame: str) -> Period:
    days = readers.knowledge().trading_days(frame)
    return Period(days[0], days[-1], Granularity.ALL, Anchor.DEFAULT)


def _with_defaults(request: Request) -> Request:
    if request.statistic is not None:
        return request
    if request.condition is not None or (request.period is not None and request.period.one_day):
        return replace(request, statistic=Slot(Statistic.COUNT if request.condition is not None else Statistic.VALUE))
    return replace(request, statistic=Slot(Statistic.MEAN), statistics=tuple(Slot(s) for s in SUMMARY))


def _complete_or_decline(request: Request, toks: Tokens) -> Reading | None:
    unused = [word for word in toks.unused() if word not in IGNORED]
    if request.series and set(unused) & set(WORDS["events"]["words"]) and (said := unread_phrases(toks)):
        return Decline(request, said, f"I could not use {', '.join(map(repr, said))}: no column gives the date of that event, so I computed nothing")
    if any(word in OTHER_INTENTS for word in unused) or _left_to_the_old_model(request) or request.series and isinstance(
            request.series[0], readers.Ambiguous):  # another intent's word; two columns fit equally ('the tri-party repo rate'):
        return None  # never guessed, the old model reads it (it scores docs words)
    if request.series and WORDS["statistics"].get(" ".join(unused)) == "correlation":
        return Decline(request, (), f"a correlation is between two series, and I read one: {request.series[0].name}")
    if "minus" in toks.words and set(toks.words[toks.words.index("minus"):]) & set(WORDS["statistics"]) and request.stat() is not Statistic.MEAN:
        return None  # 'the sofr max minus the effr min': a statistic of each side, never of their gap's column (the old model declines it)
    if unused or not request.series:
        return Decline(request, unread_phrases(toks), "")
    if request.ranking is not None and request.ranking.count > RANKED:
        return Decline(request, request.ranking.words, f"I rank at most {RANKED} values")
    if request.stat() is Statistic.CORRELATION or request.stat() is Statistic.FIRST_DATE and request.condition is None:
        return None  # not answered by this package yet
    return check(request)


def unread_phrases(toks: Tokens) -> tuple[str, ...]:
    """The unused words as the phrases they stand in ('year over year'), ignored words at either end dropped."""
    free, runs = [i for i in toks.free() if toks.words[i] not in readers.SEPARATORS], []
    for i in free:  # runs of adjacent unused words
        runs.append([toks.words[i]]) if not runs or i - 1 not in free else runs[-1].append(toks.words[i])
    kept = [[i for i, word in enumerate(run) if word not in IGNORED] for run in runs]
    return tuple(" ".join(run[at[0]:at[-1] + 1]) for run, at in zip(runs, kept) if at)


def check(request: Request) -> Request | Decline:
    """The request as it will be computed, or why it cannot be."""
    series, unit, period = request.series[0], request.unit.value if request.unit else None, request.period
    if unit is not None and (series.unit, unit) not in FACTORS and request.stat() is not Statistic.COUNT:
        return Decline(request, request.unit.words, f"{series.name} is in {series.unit or 'its own unit'}; its values aren't in {unit.value}")
    if (condition := request.condition) and condition.unit and (series.unit, condition.unit) not in FACTORS:  # 'sofr above $5bn'
        return Decline(request, condition.words, f"{series.name} is in {series.unit or 'its own unit'}; a threshold in {condition.unit.value} isn't")
    if condition and condition.unit is None and series.unit == "percent" and 0 < abs(condition.threshold) < 0.1:  # 'above 0.044': 4.4%?
        return Decline(request, condition.words, f"'{condition.threshold:g}' could be {condition.threshold:g}% or, as a decimal, "
                       f"{condition.threshold * 100:g}%: write which (with %)")
    days = readers.knowledge().trading_days(series.frame)
    if period is not None and (period.last < days[0] or period.first > days[-1]):
        return Decline(request, period.words, f"I don't have data for {period.first} to {period.last}: {series.frame} covers {days[0]} to {days[-1]}")
    if request.stat() is Statistic.WEIGHTED_MEAN and weight_column(request) is None:
        return Decline(request, request.statistic.words, f"{series.frame} has no one volume column to weight by")
    return request


def weight_column(request: Request) -> str | None:
    series = request.series[0]
    volumes = [c.name for c in readers.knowledge().columns if c.frame == series.frame and "volume" in c.name]
    named = [name for name in volumes if name.split("_")[0] == series.column]
    return (named or volumes)[0] if len(named) == 1 or len(volumes) == 1 else None


def _left_to_the_old_model(request: Request) -> bool:
    """Readings whose answers the old model words its own way until a later stage moves them."""
    stat, period = request.stat(), request.period
    if period.anchor is Anchor.DEFAULT:
        return True  # no period: all the data, or a figure already in view (a scratch copy, a recall)
    if period.one_day and stat not in (Statistic.VALUE, Statistic.LATEST, None):
        return True  # a change or a move on one day
    if request.condition is not None and stat not in (Statistic.COUNT, Statistic.FIRST_DATE):
        return True  # 'the mean sofr in 2024 when it was above 5.3%': a condition on the rows
    unit, series = request.unit.value if request.unit else None, request.series[0] if request.series else None
    return bool(series and unit and (series.unit, unit) not in FACTORS and stat is not Statistic.COUNT)


def describe(request: Request) -> str:
    """What was understood, in words: 'the mean of money_markets/sofr.rate over 2024-01-01 to 2024-12-31'."""
    stats = request.statistics or ((request.statistic,) if request.statistic else ())
    condition, unit = request.condition, request.unit
    ranked = request.ranking and f"{request.ranking.count} {'highest' if request.ranking.direction is Direction.TOP else 'lowest'} values"
    parts = [ranked or " and ".join(slot.value.value.replace("_", " ") for slot in stats) if stats or ranked else "value",
             request.transform and f"of the {request.transform.value.value.replace('_', ' ')}s",
             request.series and "of " + " minus ".join(series.name for series in request.series), (period := request.period) and (
                 f"over the {'first' if period.from_start else 'last'} {period.trading_days} trading days of {period.first} to {period.last}"
                 if period.trading_days else "over all the data" if period.granularity is Granularity.ALL else
                 f"on {period.first}" if period.one_day else f"over {period.first} to {period.last}"),
             condition and f"where the value is {condition.comparison.value} {condition.threshold:g}", unit and f"in {unit.value.value}"]
    return " ".join(part for part in parts if part)

