"""The periods a request names, as date ranges the load tool and the statistics understand.

``read_periods(text, data_end)`` returns the periods in a (normalized) request and the text with
them taken out, each form read in turn and consuming its words (the forms, in order:
docs/offline-model.md, "Periods and days"), then combined: two joined by ``or`` / ``vs`` / ``and``
/ ``than`` stay two; N rows of a period, or a bound inside it, narrow it; else the range covering them.
"""

from __future__ import annotations

import calendar
import datetime as dt
import re
from collections.abc import Callable
from dataclasses import dataclass, replace

from flawedcode.models import offline_dates as dates
from flawedcode.models.offline_cues import table
from flawedcode.models.offline_dates import MONTHS

ORDINAL = {"first": 1, "1st": 1, "second": 2, "2nd": 2, "third": 3, "3rd": 3, "fourth": 4, "4th": 4, "last": 4, "final": 4}
PLACES = dates.PLACES | {"{date}": r"\d{4}-\d{2}-\d{2}", "{ordinal}": "|".join(ORDINAL)}
FORMS = [(name, dates.form(pattern, PLACES)) for name, pattern in table()["periods"]["forms"]]
"""The period forms (``offline_intents.toml``'s ``[periods]``), in the order they are read; each names its builder."""
SHORTHAND = [(re.compile(pattern), written) for pattern, written in table()["periods"]["shorthand"]]
SPOKEN_YEAR = re.compile(r"\btwenty\s+twenty[- ]?(one|two|three|four|five|six|seven|eight|nine)\b")


NO_PERIOD = "no period was given, so all of its data"
"""The label of the period a statistic uses when the request names none: every row, and the answer says so."""


@dataclass(frozen=True)
class Period:
    """A date range (inclusive, ISO dates, None = open), or the last N rows, or every row."""

    start: str | None = None
    end: str | None = None
    last_rows: int | None = None
    first_rows: int | None = None
    """The first N rows of the data: made a date range once the dataframe is known (``first_rows_range``)."""
    point: bool = False
    """A value on a day: the last value on or before ``end`` (year end, end of a quarter, a date)."""
    every_row: bool = False
    label: str = ""
    assumed: str = ""
    """What the model chose that the request did not say ('no year given: the latest June in the data'); answers say it."""

    def describe(self) -> str:
        if self.last_rows:
            return f"the last {self.last_rows} rows"
        if self.first_rows:
            return f"the first {self.first_rows} rows"
        if self.every_row or (not self.start and not self.end):
            return "all the data"
        if self.point:
            return f"on or before {self.end}"
        if self.start and self.end:
            return self.start if self.start == self.end else f"{self.start} to {self.end}"
        return f"from {self.start}" if self.start else f"until {self.end}"


def expand_shorthand(text: str) -> str:
    """Years and halves written short made whole (``4Q23``: ``q4 2023``; ``twenty twenty four``: ``2024``)."""
    for pattern, written in SHORTHAND:
        text = pattern.sub(written, text)
    return SPOKEN_YEAR.sub(lambda match: f"202{'one two three four five six seven eight nine'.split().index(match.group(1)) + 1}", text)


@dataclass(frozen=True)
class _Reading:
    """What a builder may use besides its match: the data's last day, the year a month alone takes, the periods found."""

    end_day: dt.date
    default_year: int | None
    found: list[tuple[int, Period]]


def read_periods(text: str, data_end: str = "2024-12-31", default_year: int | None = None) -> tuple[list[Period], str]:
    """The periods named in ``text`` (lower case) and the text without them."""
    reading = _Reading(dt.date.fromisoformat(data_end), default_year, [])
    text = expand_shorthand(text)
    rest = text
    for name, pattern in FORMS:
        if name == "day_of":
            rest = _days_of(pattern, rest, data_end, reading)
            continue
        for match in pattern.finditer(rest):
            period = BUILDERS[name](match, reading)
            if period is not None:
                reading.found.append((match.start(), period))
        rest = pattern.sub(lambda match: " " * len(match.group(0)), rest)
    reading.found.sort(key=lambda item: item[0])
    return _combine(text, reading.found), rest


def _days_of(pattern: re.Pattern[str], rest: str, data_end: str, reading: _Reading) -> str:
    """'the last trading day of 2024', 'the first day of Q3 2024': one row at an end of the period that follows
    ('from the first to the last trading day of 2024': all of it)."""
    for match in list(pattern.finditer(rest)):
        inner, inner_rest = read_periods(rest[match.end():match.end() + 40], data_end, reading.default_year)
        taken = len(inner_rest) - len(inner_rest.lstrip(" "))
        condition = re.match(r"\s*(?:when|where|that|on which|in which)\b", rest[match.end() + taken:])
        if inner and taken and inner[0].start and inner[0].end and not (condition and match["which"] == "first"):
            span = match.end() - match.start() + taken
            label = rest[match.start():match.start() + span].strip()
            if match["whole"]:
                period = replace(inner[0], label=label)
            elif match["which"] == "first":
                period = Period(inner[0].start, inner[0].end, first_rows=1, label=label)
            else:
                period = Period(None, inner[0].end, point=True, label=label)
            reading.found.append((match.start(), period))
            rest = rest[:match.start()] + " " * span + rest[match.start() + span:]
    return rest


def _months(year: int, first: int, count: int, label: str, **more) -> Period:
    """``count`` months from month ``first`` of ``year``: a month, a quarter, a half, a year."""
    last = first + count - 1
    return Period(f"{year:04d}-{first:02d}-01", f"{year:04d}-{last:02d}-{calendar.monthrange(year, last)[1]:02d}", label=label, **more)


def _month(match: re.Match[str], reading: _Reading, name: str = "month") -> Period | None:
    """A month by name (a month alone: the latest one in the data, said) or written ``2024-03``."""
    if match.groupdict().get("iso_year"):
        month = int(match["iso_month"])
        return _months(int(match["iso_year"]), month, 1, match.group(0)) if 1 <= month <= 12 else None
    month, year = MONTHS[match[name].rstrip(".")], match.groupdict().get("year")
    end_day = reading.end_day
    chosen = int(year) if year else (reading.default_year or (end_day.year if month <= end_day.month else end_day.year - 1))
    assumed = "" if year or reading.default_year else f"no year given: the latest {calendar.month_name[month]} in the data, {chosen}"
    return _months(chosen, month, 1, match.group(0).strip(), assumed=assumed)


def _weeks_of_month(match: re.Match[str], reading: _Reading) -> Period:
    month, days = _month(match, reading), 14 if match.groupdict().get("two") else 7
    if match["which"] == "last":
        return Period((dt.date.fromisoformat(month.end) - dt.timedelta(days=days - 1)).isoformat(), month.end, label=match.group(0))
    return Period(month.start, (dt.date.fromisoformat(month.start) + dt.timedelta(days=days - 1)).isoformat(), label=match.group(0))


def _quarter(match: re.Match[str], reading: _Reading) -> Period:
    number = match["quarter"] or match.groupdict().get("quarter2")
    quarter = int(number) if number.isdigit() else ORDINAL[number]
    year = match.groupdict().get("year") or match.groupdict().get("year2")
    if year is None:  # 'q3' alone: the data's last year, said
        return replace(_months(reading.default_year or reading.end_day.year, 3 * quarter - 2, 3, match.group(0).strip()),
                       assumed="" if reading.default_year else f"no year given: {reading.end_day.year}, the data's last year")
    return _months(int(year), 3 * quarter - 2, 3, match.group(0).strip())


def _year_end(match: re.Match[str], reading: _Reading) -> Period:
    year = match["year"] or match["year2"] or match["year3"]
    if year is None:
        earlier = [period for _, period in reading.found if period.start]
        year = int(earlier[-1].start[:4]) if earlier else (reading.default_year or reading.end_day.year)
    return Period(None, f"{year}-12-31", point=True, label=f"year end {year}")


def _counted_back(match: re.Match[str], reading: _Reading) -> Period:
    count_text, unit, end_day, label = match["count"], match["unit"].rstrip("s"), reading.end_day, match.group(0)
    count = 1 if count_text in (None, "a", "one") else int(count_text)
    if unit == "week":
        return Period(last_rows=5 * count, label=label)
    if count == 1 and not count_text and unit in ("month", "year"):  # 'last month', 'last year': the data's latest one so far
        return Period(end_day.replace(day=1).isoformat() if unit == "month" else f"{end_day.year}-01-01", end_day.isoformat(), label=label)
    year, month = divmod(end_day.year * 12 + end_day.month - 1 - count * (12 if unit == "year" else 1), 12)
    start = dt.date(year, month + 1, min(end_day.day, calendar.monthrange(year, month + 1)[1])) + dt.timedelta(days=1)
    return Period(start.isoformat(), end_day.isoformat(), label=label)


def _shifted(day: str, days: int) -> str:
    return (dt.date.fromisoformat(day) + dt.timedelta(days=days)).isoformat()


Builder = Callable[[re.Match[str], _Reading], "Period | None"]
BUILDERS: dict[str, Builder] = {
    "dates": lambda m, r: Period(m["start"] or m["start2"], m["end"] or m["end2"], label=m.group(0).strip()),
    "years": lambda m, r: Period(f"{m['start']}-01-01", f"{m['end']}-12-31", label=m.group(0).strip()),
    "week_of": lambda m, r: Period(_shifted(m["start"], -dt.date.fromisoformat(m["start"]).weekday()),
                                   _shifted(m["start"], 6 - dt.date.fromisoformat(m["start"]).weekday()), label=m.group(0)),
    "week_ending": lambda m, r: Period(_shifted(m["end"], -6), m["end"], label=m.group(0)),
    "months": lambda m, r: _month_range(_month(m, r), _month(m, r, "month2"), m.group(0).strip()),
    "since": lambda m, r: Period(m["start"], None, label=m.group(0)),
    "until": lambda m, r: Period(None, m["end"], label=m.group(0)),
    "day": lambda m, r: Period(m["start"], m["start"], label=m["start"]),
    "weeks_of_month": _weeks_of_month,
    "quarter_end": lambda m, r: Period(None, _quarter(m, r).end, point=True, label=m.group(0)),
    "quarter": _quarter,
    "half": lambda m, r: _months(int(m["year"] or m["year2"]), 1 if "1" == m["half"] or "first" == m["half2"] else 7, 6, m.group(0)),
    "year_end": _year_end,
    "since_month": lambda m, r: Period(_month(m, r).start, None, label=m.group(0).strip()),
    "before_year": lambda m, r: Period(None, f"{int(m['year']) - 1}-12-31", label=m.group(0)),
    "after_year": lambda m, r: Period(f"{int(m['year']) + 1}-01-01", None, label=m.group(0)),
    "since_year": lambda m, r: Period(f"{m['year']}-01-01", None, label=m.group(0)),
    "month_end": lambda m, r: Period(None, _month(m, r).end, point=True, label=m.group(0).strip()),
    "month": _month,
    "month_alone": lambda m, r: replace(_month(m, r), label=m["month"]),  # 'and april?' after a request: that month
    "year": lambda m, r: _months(int(m["year"]), 1, 12, m["year"]),
    "last_rows": lambda m, r: Period(last_rows=int(m["count"]), label=m.group(0)),
    "first_rows": lambda m, r: Period(first_rows=int(m["count"]), label=m.group(0)),
    "counted_back": _counted_back,
    "year_to_date": lambda m, r: Period(f"{r.end_day.year}-01-01", r.end_day.isoformat(), label="year to date"),
    "every_row": lambda m, r: Period(every_row=True, label=m.group(0)),
}
"""How each form of ``FORMS`` is made a period (None: the words are taken out, but name no period)."""


def _month_range(first: Period | None, last: Period | None, label: str) -> Period | None:
    if first is None or last is None or first.start > last.start:
        return None
    return Period(first.start, last.end, label=label)


def _combine(text: str, found: list[tuple[int, Period]]) -> list[Period]:
    periods = list(dict.fromkeys(period for _, period in found))
    if any(period.every_row for period in periods):
        periods = [period for period in periods if not period.every_row] or [periods[0]]
    counted = [period for period in periods if (period.first_rows or period.last_rows) and not period.start and not period.end]
    dated = [period for period in periods if period.start and period.end and not period.point]
    if len(periods) == 2 and len(counted) == 1 and len(dated) == 1:  # 'the first 10 trading days of 2024': N rows inside it
        return [replace(dated[0], first_rows=counted[0].first_rows, last_rows=counted[0].last_rows,
                        label=f"{counted[0].label.strip()} of {dated[0].label.strip()}")]
    bounds = [period for period in periods if bool(period.start) != bool(period.end) and not period.point]
    if len(periods) == 2 and len(bounds) == 1 and len(dated) == 1 and dated[0].start <= (bounds[0].start or bounds[0].end) <= dated[0].end:
        # 'up to 2024-02-15 in 2024': a bound inside the period it is in narrows it (never dropped)
        return [Period(bounds[0].start or dated[0].start, bounds[0].end or dated[0].end,
                       label=f"{dated[0].label.strip()}, {bounds[0].label.strip()}")]
    points = [period.point for period in periods]
    if len(periods) <= 1 or (all(points) or (not any(points) and not all(period.start or period.end for period in periods))):
        return periods
    if not any(points):  # two ranges: two periods when joined by 'or' / 'vs' / 'and', else the range that covers them
        separate = re.search(r"\b(?:or|vs|versus|compared (?:to|with)|and|then|than)\b", text)
        if separate and not re.search(r"\b(?:from|between)\b.*\b(?:to|and|until|through)\b", text):
            return periods
        text = " to ".join(period.label for period in periods)
    # 'from the start of September 2024 to the end of the year': a range from a day to a point
    starts, ends = [period.start for period in periods if period.start], [period.end for period in periods if period.end]
    return [Period(min(starts) if starts else None, max(ends) if ends else None, label=text)]


SHIFT = re.compile(table()["periods"]["shift"], re.IGNORECASE)
SHIFT_MONTHS = {"year": 12, "quarter": 3, "month": 1}


def shifted(text: str, period: Period) -> Period | None:
    """The period moved as ``text`` asks ('a year earlier?'); None when it asks no move or the period has no dates."""
    match = SHIFT.match(text.strip())
    if match is None or not period.start or not period.end:
        return None
    months = int(match["count"] or 1) * SHIFT_MONTHS[match["unit"].lower()] * (-1 if match["way"].lower() in ("earlier", "before", "back") else 1)
    return Period(_moved(period.start, months), _moved(period.end, months), label=match.group(0).strip(" ?.!"))


def _moved(day: str, months: int) -> str:
    """``day`` moved by whole months; the last day of a month stays the last day of its month."""
    date = dt.date.fromisoformat(day)
    year, month = divmod(date.year * 12 + date.month - 1 + months, 12)
    length = calendar.monthrange(year, month + 1)[1]
    last = date.day == calendar.monthrange(date.year, date.month)[1]
    return dt.date(year, month + 1, length if last else min(date.day, length)).isoformat()


def first_rows_range(period: Period, dates: list[str]) -> Period:
    """'the first 3 rows' (of the data, or of the period they start), 'the last 5 days of March 2024': the range of those rows.

    ``dates`` are the days the dataframe has rows for (its own trading days), so holidays never make
    the range hold fewer rows or more."""
    inside = [date for date in dates if (not period.start or date >= period.start) and (not period.end or date <= period.end)]
    chosen = inside[:period.first_rows] if period.first_rows else inside[-(period.last_rows or len(inside)):]
    if not chosen:
        return Period(period.start, period.end, label=period.label)
    return Period(chosen[0], chosen[-1], label=period.label)
