"""The periods a request names, as date ranges the load tool and the statistics understand.

``read_periods(text, data_end)`` returns the periods in a (normalized) request
and the text with them taken out. Read in this order, each consuming its words:

==========================================  ===============================================
what the student writes                     the period
==========================================  ===============================================
``2024-03-01 to 2024-03-31``,               that range (``between ... and``, ``from ... to``,
``between 2019 and 2020``                   ``through``, ``-``)
``on 2024-06-28``                           that day
``since 2024-12-01`` / ``until ...``        open at one end
``the last two weeks of September 2024``    the last 14 days of that month
``the first week of January 2024``          its first 7 days
``Q3 2024``, ``third quarter of 2024``      the quarter (``last quarter of 2024``: Q4)
``H1 2024``, ``first half of 2024``         the half year
``March 2024``, ``2024-03``, ``mar 2024``   the month (a month alone takes the year from
                                            ``default_year``)
``2024``                                    the year
``year end 2023``, ``end of Q3 2024``       the last value on or before that day (a point)
``the week of 2024-06-10``                  that Monday to Sunday (``week ending 2024-06-14``: the 7 days to it)
``the last trading day of 2024``            the last value on or before its end (``first``: the first row of it;
                                            ``the end of March 2024`` too)
``sep thru nov 2023``, ``Mar–May 2024``     those months, the first to the last
``1H24``, ``Q4'23``, ``4Q23``, ``'24``      shorthand years and halves (2-digit years are 20xx)
``last 20 business days``, ``past 60 days`` the last N rows (rows are business days)
``last 3 months``, ``last month``,          counted back from the data's last date (``last 2 weeks``: 10 rows)
``last year``, ``year to date``
``ever``, ``whole sample``, ``all the data`` every row
==========================================  ===============================================

Two periods joined by ``or`` / ``vs`` / ``and`` (``in 2023 or in 2024``) are two
periods; anything else collapses to the range that covers them.
"""

from __future__ import annotations

import calendar
import datetime as dt
import re
from dataclasses import dataclass, replace

MONTHS = {name.lower(): number for number, name in enumerate(calendar.month_name) if name}
MONTHS |= {name.lower(): number for number, name in enumerate(calendar.month_abbr) if name}
MONTHS["sept"] = 9
MONTH = "|".join(sorted(MONTHS, key=len, reverse=True))
ORDINAL = {"first": 1, "1st": 1, "second": 2, "2nd": 2, "third": 3, "3rd": 3, "fourth": 4, "4th": 4, "last": 4, "final": 4}
DATE = r"\d{4}-\d{2}-\d{2}"
YEAR = r"(?:19|20)\d\d"
ALL_ROWS_WORDS = r"\b(?:ever|all[- ]time|whole sample|entire sample|whole history|entire history|full history|" \
                 r"all (?:the )?(?:data|rows|dates|history)|whole period|full sample|overall|in the data|whole dataset)\b"


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


SHORTHAND = (
    (r"\b([1-4])q\s*'?(\d\d)\b", r"q\1 20\2"),                # 4Q23
    (r"\bq([1-4])\s*(?:'|\u2019)?(\d\d)\b(?!\d)", r"q\1 20\2"),   # Q4'23, Q4 23
    (r"\b([12])h\s*'?(\d\d)\b", r"h\1 20\2"),                # 1H24
    (r"\bh([12])\s*(?:'|\u2019)(\d\d)\b", r"h\1 20\2"),         # H1'24
    (r"(?<![\w'])'(\d\d)\b", r"20\1"),                         # '24
    (r"\btwenty\s+twenty[- ]?(one|two|three|four|five|six|seven|eight|nine)\b",
     lambda match: f"202{'one two three four five six seven eight nine'.split().index(match.group(1)) + 1}"),
)
"""Years and halves written short, made whole before the periods are read (2-digit years are 20xx)."""
RANGE_WORDS = r"(?:to|thru|through|until|till|-|\u2013|\u2014)"
DAY_OF = re.compile(r"\b(?:(?:from\s+)?(?:the\s+)?(?P<whole>first)\s+(?:trading\s+|business\s+)?(?:day\s+)?(?:to|through|until|and)\s+"
                    r"(?:the\s+)?last|(?:on\s+)?(?:the\s+)?(?P<which>first|last|final))\s+(?:trading\s+|business\s+)?day\s+of\s+(?:the\s+)?")
"""'the last trading day of 2024', 'the first day of Q3 2024': one row at an end of the period that follows
('from the first to the last trading day of 2024': all of it)."""


def expand_shorthand(text: str) -> str:
    for pattern, written in SHORTHAND:
        text = re.sub(pattern, written, text)
    return text


def read_periods(text: str, data_end: str = "2024-12-31", default_year: int | None = None) -> tuple[list[Period], str]:
    """The periods named in ``text`` (lower case) and the text without them."""
    end_day = dt.date.fromisoformat(data_end)
    found: list[tuple[int, Period]] = []
    text = expand_shorthand(text)
    rest = text

    def take(pattern: str, build) -> None:
        nonlocal rest
        for match in list(re.finditer(pattern, rest)):
            period = build(match)
            if period is not None:
                found.append((match.start(), period))
        rest = re.sub(pattern, lambda match: " " * len(match.group(0)), rest)

    take(rf"\b(?:between|from)\s+({DATE})\s+(?:and|to|until|through)\s+({DATE})\b|\b({DATE})\s*(?:to|-|through|until)\s*({DATE})\b",
         lambda m: Period(m.group(1) or m.group(3), m.group(2) or m.group(4), label=m.group(0).strip()))
    take(rf"\b(?:between|from)\s+({YEAR})\s+(?:and|to|until|through)\s+({YEAR})\b",
         lambda m: Period(f"{m.group(1)}-01-01", f"{m.group(2)}-12-31", label=m.group(0).strip()))
    take(rf"\b(?:the\s+)?week\s+(?:of|starting|beginning|from)\s+(?:on\s+)?({DATE})\b", lambda m: _week_of(m.group(1), m.group(0)))
    take(rf"\b(?:the\s+)?week\s+(?:ending|to|through)\s+(?:on\s+)?({DATE})\b",
         lambda m: Period((dt.date.fromisoformat(m.group(1)) - dt.timedelta(days=6)).isoformat(), m.group(1), label=m.group(0)))
    for match in list(DAY_OF.finditer(rest)):  # 'the last trading day of 2024': the period that follows, at one end
        following = rest[match.end():match.end() + 40]
        inner, inner_rest = read_periods(following, data_end, default_year)
        taken = len(inner_rest) - len(inner_rest.lstrip(" "))
        condition = re.match(r"\s*(?:when|where|that|on which|in which)\b", rest[match.end() + taken:])
        if inner and taken and inner[0].start and inner[0].end and not (condition and match["which"] == "first"):
            span = match.end() - match.start() + taken
            label = rest[match.start():match.start() + span].strip()
            found.append((match.start(), replace(inner[0], label=label) if match["whole"] else _day_of(match["which"], inner[0], label)))
            rest = rest[:match.start()] + " " * span + rest[match.start() + span:]
    take(rf"\b(?:from\s+|between\s+)?({MONTH})\.?\s*(?:{RANGE_WORDS}|and)\s*({MONTH})\.?\s*(?:of\s+)?({YEAR})\b",
         lambda m: _month_range(m, default_year, end_day))
    take(rf"\b(?:since|from|after|starting)\s+({DATE})\b", lambda m: Period(m.group(1), None, label=m.group(0)))
    take(rf"\b(?:until|before|through|up to|till)\s+({DATE})\b", lambda m: Period(None, m.group(1), label=m.group(0)))
    take(rf"\b({DATE})\b", lambda m: Period(m.group(1), m.group(1), label=m.group(1)))
    take(rf"\b(?:the\s+)?(last|first)\s+(2|two)\s+weeks\s+of\s+({MONTH})\.?\s*(?:of\s+)?({YEAR})?\b",
         lambda m: _weeks_of_month(m, default_year, end_day))
    take(rf"\b(?:the\s+)?(first|last)\s+week\s+of\s+({MONTH})\.?\s*(?:of\s+)?({YEAR})?\b",
         lambda m: _week_of_month(m, default_year, end_day))
    take(rf"\b(?:the\s+)?(?:end|close)\s+of\s+(?:the\s+)?q([1-4])\s*(?:of\s+)?({YEAR})\b",
         lambda m: Period(None, _quarter(int(m.group(2)), int(m.group(1)))[1], point=True, label=m.group(0)))
    take(rf"\b(?:the\s+)?(?:end|close)\s+of\s+(?:the\s+)?(first|second|third|fourth|1st|2nd|3rd|4th|last|final)\s+quarter\s+(?:of\s+)?({YEAR})\b",
         lambda m: Period(None, _quarter(int(m.group(2)), ORDINAL[m.group(1)])[1], point=True, label=m.group(0)))
    take(rf"\bq([1-4])\s*(?:of\s+)?({YEAR})\b|\b({YEAR})\s*q([1-4])\b",
         lambda m: _quarter_period(int(m.group(2) or m.group(3)), int(m.group(1) or m.group(4)), m.group(0)))
    take(r"\bq([1-4])\b(?!\s*(?:of\s+)?(?:19|20)\d\d)",
         lambda m: replace(_quarter_period(default_year or end_day.year, int(m.group(1)), m.group(0)),
                           assumed="" if default_year else f"no year given: {end_day.year}, the data's last year"))
    take(rf"\b(?:the\s+)?(first|second|third|fourth|1st|2nd|3rd|4th|last|final)\s+quarter\s+(?:of\s+)?({YEAR})\b",
         lambda m: _quarter_period(int(m.group(2)), ORDINAL[m.group(1)], m.group(0)))
    take(rf"\b(?:h([12])\s*(?:of\s+)?({YEAR})|(?:the\s+)?(first|second|last|final|latter)\s+half\s+(?:of\s+)?({YEAR}))\b",
         lambda m: _half(int(m.group(2) or m.group(4)), 1 if (m.group(1) == "1" or m.group(3) == "first") else 2, m.group(0)))
    take(rf"\b(?:at\s+)?(?:the\s+)?(?:year end|end of(?: the)? year|close of(?: the)? year)\s*(?:of\s+)?({YEAR})?\b|"
         rf"\b(?:at\s+)?(?:the\s+)?end\s+of\s+({YEAR})\b|\b({YEAR})\s+year end\b",
         lambda m: _year_end(m.group(1) or m.group(2) or m.group(3), found, default_year, end_day))
    take(rf"\b(?:since|after|starting(?:\s+in)?)\s+({MONTH})\.?\s*(?:of\s+)?({YEAR})\b",
         lambda m: _open_end(_month_period(m.group(1), m.group(2), default_year, end_day, m.group(0))))
    take(rf"\b(?:before|prior to)\s+({YEAR})\b", lambda m: Period(None, f"{int(m.group(1)) - 1}-12-31", label=m.group(0)))
    take(rf"\b(?:after)\s+({YEAR})\b", lambda m: Period(f"{int(m.group(1)) + 1}-01-01", None, label=m.group(0)))
    take(rf"\b(?:since|starting(?:\s+in)?)\s+({YEAR})\b", lambda m: Period(f"{m.group(1)}-01-01", None, label=m.group(0)))
    take(rf"\b(?:at\s+|on\s+)?(?:the\s+)?(?:end|close)\s+of\s+(?:the\s+month\s+of\s+)?({MONTH})\.?\s*(?:of\s+)?({YEAR})\b",
         lambda m: _month_end(m, default_year, end_day))
    take(rf"\b(?:the\s+)?(?:start|beginning)\s+of\s+({MONTH})\.?\s*(?:of\s+)?({YEAR})?\b",
         lambda m: _month_period(m.group(1), m.group(2), default_year, end_day, m.group(0)))
    take(rf"\b({MONTH})\.?\s*(?:of\s+)?({YEAR})\b|\b({YEAR})-(\d{{2}})\b",
         lambda m: _month_period(m.group(1), m.group(2), default_year, end_day, m.group(0), m.group(3), m.group(4)))
    take(rf"\b(?:in|for|during)\s+({MONTH})\b(?!\s*\d)",
         lambda m: _month_period(m.group(1), None, default_year, end_day, m.group(0)))
    take(rf"\b({YEAR})\b", lambda m: Period(f"{m.group(1)}-01-01", f"{m.group(1)}-12-31", label=m.group(1)))
    take(r"\b(?:the\s+)?(?:last|past|latest|previous|most recent|final)\s+(\d{1,3})\s+(?:business\s+|trading\s+|calendar\s+)?"
         r"(?:days?|sessions?|observations?|rows?|records?|entries|values|points|obs)\b",
         lambda m: Period(last_rows=int(m.group(1)), label=m.group(0)))
    take(r"\b(?:the\s+)?(?:first|earliest|oldest)\s+(\d{1,3})\s+(?:business\s+|trading\s+)?"
         r"(?:days?|sessions?|observations?|rows?|records?|entries|values|points|obs)\b",
         lambda m: Period(first_rows=int(m.group(1)), label=m.group(0)))
    take(r"\b(?:the\s+)?(?:last|past|previous|final)\s+(\d{1,2}|a|one)?\s*(weeks?|months?|years?)(?:\s+(?:of|in)\s+the\s+data)?\b",
         lambda m: _counted_back(m, end_day))
    take(r"\byear to date\b", lambda m: Period(f"{end_day.year}-01-01", end_day.isoformat(), label="year to date"))
    take(ALL_ROWS_WORDS, lambda m: Period(every_row=True, label=m.group(0)))
    found.sort(key=lambda item: item[0])
    return _combine(text, found), rest


def _month_end(match: re.Match[str], default_year: int | None, end_day: dt.date) -> Period | None:
    month = _month_period(match.group(1), match.group(2), default_year, end_day, match.group(0))
    return Period(None, month.end, point=True, label=match.group(0).strip()) if month else None


def _week_of(day: str, label: str) -> Period:
    monday = dt.date.fromisoformat(day) - dt.timedelta(days=dt.date.fromisoformat(day).weekday())
    return Period(monday.isoformat(), (monday + dt.timedelta(days=6)).isoformat(), label=label)


def _day_of(which: str, period: Period, label: str) -> Period:
    """The first or last row of a period: the last value on or before its end, or its first row (``first_rows``)."""
    if which == "first":
        return Period(period.start, period.end, first_rows=1, label=label)
    return Period(None, period.end, point=True, label=label)


def _month_range(match: re.Match[str], default_year: int | None, end_day: dt.date) -> Period | None:
    first = _month_period(match.group(1), match.group(3), default_year, end_day, match.group(0))
    last = _month_period(match.group(2), match.group(3), default_year, end_day, match.group(0))
    if first is None or last is None or first.start > last.start:
        return None
    return Period(first.start, last.end, label=match.group(0).strip())


def _open_end(period: Period | None) -> Period | None:
    return Period(period.start, None, label=period.label) if period else None


def _combine(text: str, found: list[tuple[int, Period]]) -> list[Period]:
    periods = list(dict.fromkeys(period for _, period in found))
    if any(period.every_row for period in periods):
        periods = [period for period in periods if not period.every_row] or [periods[0]]
    if len(periods) <= 1:
        return periods
    if all(period.start or period.end for period in periods) and not any(p.point for p in periods):
        separate = re.search(r"\b(?:or|vs|versus|compared (?:to|with)|and|then)\b", text)
        ranged = re.search(r"\b(?:from|between)\b.*\b(?:to|and|until|through)\b", text)
        if separate and not ranged:
            return periods
        starts = [p.start for p in periods if p.start]
        ends = [p.end for p in periods if p.end]
        return [Period(min(starts) if starts else None, max(ends) if ends else None,
                       label=" to ".join(p.label for p in periods))]
    if any(p.point for p in periods) and any(not p.point for p in periods):
        # 'from the start of September 2024 to the end of the year': a range
        starts = [p.start for p in periods if p.start]
        ends = [p.end for p in periods if p.end]
        return [Period(min(starts) if starts else None, max(ends) if ends else None, label=text)]
    return periods


def _month_interval(year: int, month: int) -> tuple[str, str]:
    return f"{year:04d}-{month:02d}-01", f"{year:04d}-{month:02d}-{calendar.monthrange(year, month)[1]:02d}"


def _month_period(name: str | None, year: str | None, default_year: int | None, end_day: dt.date, label: str,
                  iso_year: str | None = None, iso_month: str | None = None) -> Period | None:
    if iso_year:
        if not 1 <= int(iso_month or 0) <= 12:
            return None
        return Period(*_month_interval(int(iso_year), int(iso_month)), label=label)
    month = MONTHS[name.rstrip(".")] if name else None
    if month is None:
        return None
    chosen = int(year) if year else (default_year or (end_day.year if month <= end_day.month else end_day.year - 1))
    assumed = "" if year or default_year else f"no year given: the latest {calendar.month_name[month]} in the data, {chosen}"
    return Period(*_month_interval(chosen, month), label=label.strip(), assumed=assumed)


def _weeks_of_month(match: re.Match[str], default_year: int | None, end_day: dt.date) -> Period | None:
    month = _month_period(match.group(3), match.group(4), default_year, end_day, match.group(0))
    if month is None or month.end is None or month.start is None:
        return None
    if match.group(1) == "last":
        start = dt.date.fromisoformat(month.end) - dt.timedelta(days=13)
        return Period(start.isoformat(), month.end, label=match.group(0))
    return Period(month.start, (dt.date.fromisoformat(month.start) + dt.timedelta(days=13)).isoformat(), label=match.group(0))


def _week_of_month(match: re.Match[str], default_year: int | None, end_day: dt.date) -> Period | None:
    month = _month_period(match.group(2), match.group(3), default_year, end_day, match.group(0))
    if month is None or month.end is None or month.start is None:
        return None
    if match.group(1) == "last":
        return Period((dt.date.fromisoformat(month.end) - dt.timedelta(days=6)).isoformat(), month.end, label=match.group(0))
    return Period(month.start, (dt.date.fromisoformat(month.start) + dt.timedelta(days=6)).isoformat(), label=match.group(0))


def _quarter(year: int, quarter: int) -> tuple[str, str]:
    first = _month_interval(year, 3 * quarter - 2)[0]
    return first, _month_interval(year, 3 * quarter)[1]


def _quarter_period(year: int, quarter: int, label: str) -> Period:
    return Period(*_quarter(year, quarter), label=label.strip())


def _half(year: int, half: int, label: str) -> Period:
    return Period(f"{year}-01-01", f"{year}-06-30", label=label) if half == 1 else Period(f"{year}-07-01", f"{year}-12-31", label=label)


def _year_end(year: str | None, found: list[tuple[int, Period]], default_year: int | None, end_day: dt.date) -> Period:
    if year is None:
        earlier = [period for _, period in found if period.start]
        chosen = int(earlier[-1].start[:4]) if earlier else (default_year or end_day.year)
    else:
        chosen = int(year)
    return Period(None, f"{chosen}-12-31", point=True, label=f"year end {chosen}")


def _counted_back(match: re.Match[str], end_day: dt.date) -> Period:
    count_text, unit = match.group(1), match.group(2).rstrip("s")
    count = 1 if count_text in (None, "a", "one") else int(count_text)
    if unit == "week":
        return Period(last_rows=5 * count, label=match.group(0))
    if unit == "month" and count == 1 and not count_text:
        first = end_day.replace(day=1)
        return Period(first.isoformat(), end_day.isoformat(), label=match.group(0))
    if unit == "year" and count == 1 and not count_text:
        return Period(f"{end_day.year}-01-01", end_day.isoformat(), label=match.group(0))
    months = count * (12 if unit == "year" else 1)
    year, month = divmod(end_day.year * 12 + end_day.month - 1 - months, 12)
    start = dt.date(year, month + 1, min(end_day.day, calendar.monthrange(year, month + 1)[1])) + dt.timedelta(days=1)
    return Period(start.isoformat(), end_day.isoformat(), label=match.group(0))


def first_rows_range(period: Period, dates: list[str]) -> Period:
    """'the first 3 rows' (of the data, or of the period they start): the range from its first to its Nth row.

    ``dates`` are the days the dataframe has rows for (its own trading days), so holidays never make
    the range hold fewer rows or more."""
    inside = [date for date in dates if (not period.start or date >= period.start) and (not period.end or date <= period.end)]
    chosen = inside[:period.first_rows]
    if not chosen:
        return Period(period.start, period.end, label=period.label)
    return Period(chosen[0], chosen[-1], label=period.label)
