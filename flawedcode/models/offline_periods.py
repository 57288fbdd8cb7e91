"""The periods a request names, as date ranges the load tool and the statistics understand.

``read_periods(text, data_end)`` returns the periods in a (normalized) request and the text with
them taken out, each form read in turn and consuming its words (the forms, in order:
docs/offline-model.md, "Periods and days"). One reader makes every form a period: its groups name
a span (a day, a year, a month, a quarter or a half, or a range of them), and its kind says what of
that span it means (the span, the value at its end, a bound, a week). Then they are combined: two
joined by ``or`` / ``vs`` / ``and`` / ``than`` stay two; N rows of a period, or a bound inside it,
narrow it; else the range covering them.
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
EXCLUDING = table()["periods"]["excluding"]
PLACES = dates.PLACES | {"{date}": r"\d{4}-\d{2}-\d{2}", "{ordinal}": "|".join(ORDINAL), "{excluding}": EXCLUDING}
FORMS = [(name, dates.form(pattern, PLACES)) for name, pattern in table()["periods"]["forms"]]
"""The period forms (``offline_intents.toml``'s ``[periods]``), in the order they are read, each with what it makes of its match."""
SHORTHAND = [(dates.form(pattern, PLACES), written) for pattern, written in table()["periods"]["shorthand"]]


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

    @property
    def one_day(self) -> bool:
        """A value on one day: a single date, or a point (the last row on or before its end)."""
        return self.point or bool(self.start) and self.start == self.end

    def describe(self) -> str:
        if self.last_rows or self.first_rows:
            return f"the {'last' if self.last_rows else 'first'} {self.last_rows or self.first_rows} rows"
        if self.every_row or (not self.start and not self.end):
            return "all the data"
        if self.point:
            return f"on or before {self.end}"
        if self.start and self.end:
            return self.start if self.start == self.end else f"{self.start} to {self.end}"
        return f"from {self.start}" if self.start else f"until {self.end}"


@dataclass(frozen=True)
class _Reading:
    """What a builder may use besides its match: the data's last day, the year a month alone takes, the periods found."""

    end_day: dt.date
    default_year: int | None
    found: list[tuple[int, Period]]


def read_periods(text: str, data_end: str = "2024-12-31", default_year: int | None = None) -> tuple[list[Period], str]:
    """The periods named in ``text`` (lower case) and the text without them."""
    reading = _Reading(dt.date.fromisoformat(data_end), default_year, [])
    for pattern, written in SHORTHAND:  # years and halves written short made whole ('4Q23': 'q4 2023', 'twenty twenty four': '2024')
        text = pattern.sub(written, text)
    years = set(re.findall(r"\b(?:19|20)\d\d\b", text))
    if default_year is None and len(years) == 1:  # 'in 2024, what was sofr in q3': a lone quarter or month is of that year
        reading = replace(reading, default_year=int(years.pop()))
    rest = text
    for name, pattern in FORMS:
        if name in READERS:
            rest = READERS[name](pattern, rest, data_end, reading)
            continue
        for match in pattern.finditer(rest):
            period = _period(name, match, reading)
            if period is not None:
                reading.found.append((match.start(), period))
        rest = pattern.sub(lambda match: " " * len(match.group(0)), rest)
    reading.found.sort(key=lambda item: item[0])
    return _combine(text, reading.found), rest


def _days_of(pattern: re.Pattern[str], rest: str, data_end: str, reading: _Reading) -> str:
    """'the last trading day of 2024', 'the first day of Q3 2024', 'the start of 2024': one row at an end of the period that follows
    ('from the first to the last trading day of 2024': all of it)."""
    for match in list(pattern.finditer(rest)):
        inner, inner_rest = read_periods(rest[match.end():match.end() + 40], data_end, reading.default_year)
        taken = len(inner_rest) - len(inner_rest.lstrip(" "))
        condition = re.match(r"\s*(?:when|where|that|on which|in which)\b", rest[match.end() + taken:])
        first = match["which"] == "first" or match["start"]  # 'the first day of Q3 2024', 'at the start of 2024': its first row
        if inner and taken and inner[0].start and inner[0].end and not (condition and first):
            span = match.end() - match.start() + taken
            label = rest[match.start():match.start() + span].strip()
            shape = "span" if match["whole"] or match["edges"] else "first_row" if first else "end"
            reading.found.append((match.start(), replace(SHAPES[shape](inner[0], match), label=label, assumed=inner[0].assumed)))
            rest = rest[:match.start()] + " " * span + rest[match.start() + span:]
    return rest


BOUNDS = {"since": "since", "starting": "since", "after": "after", "before": "before", "prior": "before",
          "until": "until", "till": "until", "up": "until", "as": "as_of"}


NEXT_BOUND = re.compile(r"\b(?:since|after|before|prior to|until|till|up to|through|thru|to|and|or|but|vs|versus|excluding|except)\b")
"""Where the span a bound reads ends: at the next bound or joining word."""


def _bounded(pattern: re.Pattern[str], rest: str, data_end: str, reading: _Reading) -> str:
    """'since the start of 2024', 'before March 2024', 'after Q2 2024', 'as of 2024-06-28': a bound made of the span
    that follows (a point that follows, 'since the end of 2023', is left to the other forms)."""
    for match in list(pattern.finditer(rest)):
        window = rest[match.end():match.end() + 40]
        window = window[:cut.start()] if (cut := NEXT_BOUND.search(window)) else window  # 'since march until june': two bounds
        inner, inner_rest = read_periods(window, data_end, reading.default_year)
        taken = len(inner_rest) - len(inner_rest.lstrip(" "))
        if inner and taken and inner[0].start and inner[0].end and not inner[0].point:
            span = match.end() - match.start() + taken
            label = rest[match.start():match.start() + span].strip()
            shaped = SHAPES[BOUNDS[match["bound"].split()[0]]](inner[0], match)
            reading.found.append((match.start(), replace(shaped, label=label, assumed=inner[0].assumed)))
            rest = rest[:match.start()] + " " * span + rest[match.start() + span:]
    return rest


def _excluded(pattern: re.Pattern[str], rest: str, data_end: str, reading: _Reading) -> str:
    """'2024 excluding December', 'in 2024 except Q4', 'not counting Q1': the period without a span at its start or end.
    A span at neither end is not read, so its words are named as unused (never the whole period answered)."""
    for match in list(pattern.finditer(rest)):
        inner, inner_rest = read_periods("in " + rest[match.end():match.end() + 40], data_end, reading.default_year)
        body = inner_rest[3:]  # 'in ' lets a month alone be read ('excluding december')
        taken = len(body) - len(body.lstrip(" "))
        blanked = rest[:match.start()] + " " * (match.end() - match.start() + taken) + rest[match.end() + taken:]
        outer = read_periods(blanked, data_end, reading.default_year)[0]
        if not (taken and inner and len(outer) == 1 and inner[0].start and inner[0].end and outer[0].start and outer[0].end):
            continue
        (first, last), (start, end) = (outer[0].start, outer[0].end), (inner[0].start, inner[0].end)
        if not (first == start < end < last or first < start < end == last):
            continue
        kept = Period(_shifted(end, 1), last) if first == start else Period(first, _shifted(start, -1))
        label = f"{outer[0].label.strip()} {rest[match.start():match.end() + taken].strip()}"
        reading.found.append((match.start(), replace(kept, label=label)))
        rest = blanked
    return rest


def _months(year: int, first: int, count: int, **more) -> Period:
    """``count`` months from month ``first`` of ``year``: a month, a quarter, a half, a year."""
    last = first + count - 1
    return Period(f"{year:04d}-{first:02d}-01", f"{year:04d}-{last:02d}-{calendar.monthrange(year, last)[1]:02d}", **more)


def _span(groups: dict[str, str], reading: _Reading) -> Period | None:
    """The days a form's groups name: a day, or a year, a month, a quarter or a half of one."""
    if "day" in groups:
        return Period(groups["day"], groups["day"])
    month = MONTHS[groups["month"]] if "month" in groups else int(groups["month_number"]) if "month_number" in groups else None
    if month is not None and not 1 <= month <= 12:
        return None
    quarter, half = groups.get("quarter"), groups.get("half")
    first, count = ((month, 1) if month else (3 * (int(quarter) if quarter.isdigit() else ORDINAL[quarter]) - 2, 3) if quarter
                    else (1 if half in ("1", "first") else 7, 6) if half else (1, 12))
    year, assumed = _year(groups, reading, month, count)
    return _months(year, first, count, assumed=assumed)


def _year(groups: dict[str, str], reading: _Reading, month: int | None, count: int) -> tuple[int, str]:
    """The year of a span, and what was assumed when the request gives none (the answer says it)."""
    end_day, earlier = reading.end_day, [period.start for _, period in reading.found if period.start]
    if "year" in groups:
        return int(groups["year"]), ""
    if count == 12 and earlier:  # 'from the start of September 2024 to the end of the year': that year
        return int(earlier[-1][:4]), ""
    if reading.default_year or count == 12:
        return reading.default_year or end_day.year, ""
    if month:
        year = end_day.year if month <= end_day.month else end_day.year - 1
        return year, f"no year given: the latest {calendar.month_name[month]} in the data, {year}"
    return end_day.year, f"no year given: {end_day.year}, the data's last year"


def _weeks(span: Period, match: re.Match[str]) -> Period:
    """The first or last one or two weeks of a month."""
    days = 14 if match.groupdict().get("two") else 7
    if match["which"] == "last":
        return Period(_shifted(span.end, 1 - days), span.end)
    return Period(span.start, _shifted(span.start, days - 1))


def _counted_back(match: re.Match[str], reading: _Reading) -> Period:
    count_text, unit, end_day = match.groupdict().get("count"), match["unit"].rstrip("s"), reading.end_day
    count = 1 if count_text in (None, "a", "one") else int(count_text)
    if unit == "week":
        return Period(last_rows=5 * count)
    if count == 1 and not count_text and unit in ("month", "quarter", "year"):  # 'last month', 'this quarter': the data's latest one so far
        first_month = {"month": end_day.month, "quarter": 3 * ((end_day.month - 1) // 3) + 1, "year": 1}[unit]
        return Period(end_day.replace(month=first_month, day=1).isoformat(), end_day.isoformat(),  # said: today's date is not the data's
                      assumed=f"read as the data's latest {unit}: the data ends on {end_day}, and today's date is not used")
    start = moved_by_months(end_day.isoformat(), -count * (12 if unit == "year" else 1))
    return Period(_shifted(start, 1), end_day.isoformat())


def _shifted(day: str, days: int) -> str:
    return (dt.date.fromisoformat(day) + dt.timedelta(days=days)).isoformat()


def _months_of(span: Period, match: re.Match[str]) -> Period:
    """'the last four months of 2024': the first or last N whole months of a year (all of it, said, for more than 12)."""
    count, year = int(match["count"]), int(span.start[:4])
    if not 1 <= count <= 12:
        return replace(span, assumed=f"{year} has 12 months, so all of {year}")
    return _months(year, 1 if match["which"] == "first" else 13 - count, count)


READERS = {"day_of": _days_of, "bound": _bounded, "excluding": _excluded}
"""The forms read by a function of their own: each reads the span that follows it."""

Shape = Callable[[Period, re.Match[str]], Period]
SHAPES: dict[str, Shape] = {
    "span": lambda span, m: span,
    "end": lambda span, m: Period(None, span.end, point=True),  # the last value on or before its end
    "first_row": lambda span, m: Period(span.start, span.end, first_rows=1),
    "since": lambda span, m: Period(span.start, None),
    "until": lambda span, m: Period(None, span.end),
    "as_of": lambda span, m: Period(None, span.end, point=True),
    "after": lambda span, m: Period(_shifted(span.end, 1), None),
    "before": lambda span, m: Period(None, _shifted(span.start, -1)),
    "week_of": lambda span, m: Period(_shifted(span.start, -dt.date.fromisoformat(span.start).weekday()),
                                      _shifted(span.start, 6 - dt.date.fromisoformat(span.start).weekday())),
    "week_ending": lambda span, m: Period(_shifted(span.end, -6), span.end),
    "weeks": _weeks,
    "months_of": _months_of,
}
"""What a form makes of the span its groups name."""
COUNTED: dict[str, Callable[[re.Match[str], _Reading], Period]] = {
    "last_rows": lambda m, r: Period(last_rows=int(m["count"])),
    "first_rows": lambda m, r: Period(first_rows=int(m["count"])),
    "counted_back": _counted_back,
    "year_to_date": lambda m, r: _year_to_date(r),
    "every_row": lambda m, r: Period(every_row=True),
}
"""The forms that name rows counted from the data's ends, not a span."""


def _year_to_date(reading: _Reading) -> Period:
    """From January 1 to the data's last day, or to the day 'as of' names ('ytd as of 2024-06-28')."""
    end = next((period.end for _, period in reading.found if period.label.startswith("as ")), reading.end_day.isoformat())
    return Period(f"{end[:4]}-01-01", end)


def _period(kind: str, match: re.Match[str], reading: _Reading) -> Period | None:
    """The period one form's match names (None: its words are taken out, but name no period)."""
    groups = {name: value for name, value in match.groupdict().items() if value}
    label = (groups.get("label") or match.group(0)).strip()
    if kind in COUNTED:
        return replace(COUNTED[kind](match, reading), label=label)
    first = _span({name: value for name, value in groups.items() if not name.endswith("_to")}, reading)
    last = _span(groups | {name[:-3]: value for name, value in groups.items() if name.endswith("_to")}, reading)
    if first is None or last is None:  # 'march to may 2024', '2023-01-02 to 2023-06-30': from the first to the last
        return None
    shaped = SHAPES[kind](Period(first.start, last.end), match)
    return replace(shaped, label=label, assumed=shaped.assumed or first.assumed)


def _combine(text: str, found: list[tuple[int, Period]]) -> list[Period]:
    periods = list(dict.fromkeys(period for _, period in found))
    if any(period.every_row for period in periods):
        periods = [period for period in periods if not period.every_row] or [periods[0]]
    counted = [period for period in periods if (period.first_rows or period.last_rows) and not period.start and not period.end]
    dated = [period for period in periods if period.start and period.end and not period.point]
    if len(periods) == 2 and len(counted) == 1 and len(dated) == 1:  # 'the first 10 trading days of 2024': N rows inside it
        return [replace(dated[0], first_rows=counted[0].first_rows, last_rows=counted[0].last_rows,
                        label=f"{counted[0].label.strip()} of {dated[0].label.strip()}")]
    bounds = [period for period in periods if (bool(period.start) != bool(period.end) and not period.point) or period.label.startswith("as ")]
    if len(periods) == 2 and len(bounds) == 1 and len(dated) == 1 and dated[0].start <= (bounds[0].start or bounds[0].end) <= dated[0].end:
        # 'up to 2024-02-15 in 2024': a bound inside the period it is in narrows it (never dropped)
        return [Period(bounds[0].start or dated[0].start, bounds[0].end or dated[0].end,
                       label=f"{dated[0].label.strip()}, {bounds[0].label.strip()}")]
    points = [period.point for period in periods]
    days = [period for period in periods if period.one_day or (period.first_rows == 1 and period.start)]
    if len(days) == 2 == len(periods) and re.search(r"\b(?:vs|versus|compared (?:to|with)|and|minus)\b|,", text) \
            and not re.search(r"\b(?:from|between)\b", text):  # 'the first trading day of 2024 vs the last': two days
        return periods
    if len(periods) <= 1 or (all(points) or (not any(points) and not all(period.start or period.end for period in periods))):
        return periods
    if not any(points):  # two ranges: two periods when joined by 'or' / 'vs' / 'and', else the range that covers them
        separate = re.search(r"\b(?:or|vs|versus|against|compared (?:to|with)|and|then|than)\b|\bcompare\b.*\b(?:with|to)\b", text)
        if separate and not re.search(r"\b(?:from|between)\b.*\b(?:to|and|until|through)\b", text):
            return periods
        until = [period for period in periods if period.start is None and period.end]
        if len(periods) == 2 and len(until) == 1 and any(period.start for period in periods):  # 'since march 2024 until june 2024'
            return [Period(next(period.start for period in periods if period.start), until[0].end, label=text)]
        low, high = (lambda period: period.start or "0000-01-01"), (lambda period: period.end or "9999-12-31")  # a bound: open on one side
        inner = [one for one in periods if any(one != other and low(other) <= low(one) <= high(one) <= high(other) for other in periods)]
        left_out = re.search(EXCLUDING, text) and not re.search(EXCLUDING, inner[0].label if inner else "")  # never the span left out
        ranged = re.search(r"(?<!apart )\bfrom\b|\bbetween\b", text)
        if len(periods) == 2 and inner and not left_out and not ranged:  # 'in 2024, ... in q3': the narrower
            return [replace(inner[0], assumed="")]
        text = " to ".join(period.label for period in periods)
    # 'from the start of September 2024 to the end of the year': a range from a day to a point
    starts, ends = [period.start for period in periods if period.start], [period.end for period in periods if period.end]
    return [Period(min(starts) if starts else None, max(ends) if ends else None, label=text)]


SHIFT = re.compile(table()["periods"]["shift"], re.IGNORECASE)
SHIFT_MONTHS = {"year": 12, "quarter": 3, "month": 1}


def shifted(text: str, period: Period) -> Period | None:
    """The period moved as ``text`` asks ('a year earlier?'); None when it asks no move or the period has no dates."""
    match = SHIFT.match(text.strip())
    if match is None or not period.end or not (period.start or period.point):
        return None
    months = int(match["count"] or 1) * SHIFT_MONTHS[match["unit"].lower()] * (-1 if match["way"].lower() in ("earlier", "before", "back") else 1)
    start = moved_by_months(period.start, months) if period.start else None  # a point ('the end of June 2024') moves its day
    return Period(start, moved_by_months(period.end, months), point=period.point, label=match.group(0).strip(" ?.!"))


def moved_by_months(day: str, months: int) -> str:
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
