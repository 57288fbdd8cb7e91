"""Single days and day ranges as people write them, read with ``dateparser``; the data's own days for the rest.

``read_days(text)`` writes each day of a (normalized) request as ISO (``on 2024-04-22``, ``from
2024-04-08 to 2024-04-19``) for the period reader (offline_periods.py); what cannot be one real day
(ambiguous, impossible, a weekday that does not match, a fiscal year) becomes a *problem* the reply
states instead of a figure. ``no_row_that_day`` explains a day the data has no row for. The forms:
docs/offline-model.md, "Periods and days".

Why dateparser: it is well kept, reads day-first and month-first numeric forms, month names,
abbreviations and ordinals, and runs offline (about a millisecond per request after a 0.3 s load).
"""

from __future__ import annotations

import calendar
import datetime as dt
import re
from dataclasses import dataclass, field
from functools import cache

from flawedcode.models.offline_cues import message, table

ORDINAL_WORDS = {word: number for number, word in enumerate(table()["dates"]["ordinals"], start=1)}
MONTHS = {name.lower(): number for number, name in enumerate(calendar.month_name) if name}
MONTHS |= {name.lower(): number for number, name in enumerate(calendar.month_abbr) if name} | {"sept": 9}
MONTH = "|".join(sorted(MONTHS, key=len, reverse=True))
WEEKDAYS = {name.lower(): number for number, name in enumerate(calendar.day_name)}
# a year, never a number compared with ('sofr volume above 2000': a threshold; 'over 2024' stays a year)
YEAR = (r"(?<!above )(?<!below )(?<!under )(?<!exceed )(?<!exceeds )(?<!exceeded )(?<!least )"
        r"(?:19|20)\d\d(?!\s*(?:bn\b|billion|\$|%|bp\b|percent|million|trillion|mn\b|tn\b))")
"""A year: never a number with a unit ('over 2000 bn')."""
PLACES = {"{year}": YEAR, "{month}": MONTH, "{weekday}": "|".join(WEEKDAYS)}


def form(pattern: str, places: dict[str, str] = PLACES) -> re.Pattern[str]:
    """A pattern of offline_intents.toml compiled, its ``{placeholders}`` written out."""
    for place, written in places.items():
        pattern = pattern.replace(place, f"(?:{written})")
    return re.compile(pattern)


WRITTEN_DAY, ISO_LIKE, YEAR_MONTH, FISCAL_YEAR = (form(table()["dates"][name]) for name in ("written_day", "year_first", "year_month", "fiscal_year"))


@dataclass
class Days:
    """A request with its days written as ISO dates, and what could not be read as one day."""

    text: str
    problems: list[str] = field(default_factory=list)


def _with_ordinals(text: str) -> str:
    words = "|".join(sorted(ORDINAL_WORDS, key=len, reverse=True))
    return re.sub(rf"\b(?:the\s+)?({words})\s+(?=(?:of\s+)?(?:{MONTH})\b)",
                  lambda match: f"{ORDINAL_WORDS[match.group(1)]} ", text)


@cache
def _parser():
    import dateparser  # loaded on first use: 0.3 s

    return dateparser


def _parse(written: str, order: str) -> dt.date | None:
    settings = {"DATE_ORDER": order, "STRICT_PARSING": True, "REQUIRE_PARTS": ["day", "month", "year"],
                "RETURN_AS_TIMEZONE_AWARE": False}
    parsed = _parser().parse(written, languages=["en"], settings=settings)
    return parsed.date() if parsed else None


def _iso_days(text: str, problems: list[str]) -> str:
    """Year-first days written as ISO; one that is not a real day (or a month past 12) is a problem and leaves the text."""
    def written(match: re.Match[str]) -> str:
        year, month, number = int(match["year"]), int(match["month"] or match["month2"]), int(match["day"] or match["day2"])
        if not 1 <= month <= 12:
            problems.append(message("no_month", written=match.group(0), month=month))
            return " "
        if not _real(year, month, number, match.group(0), problems):
            return " "
        day = dt.date(year, month, number)
        if match["weekday"] and WEEKDAYS[match["weekday"]] != day.weekday():  # 'saturday 2024-06-14'
            problems.append(message("wrong_weekday", day=day, weekday=match["weekday"].title()))
            return " "
        return day.isoformat()

    def month(match: re.Match[str]) -> str:
        if 1 <= int(match["month"]) <= 12:
            return match.group(0)
        problems.append(message("not_a_month", written=match.group(0), month=int(match["month"])))
        return " "

    return YEAR_MONTH.sub(month, ISO_LIKE.sub(written, text))


def _fiscal_years(text: str, problems: list[str]) -> str:
    def asked(match: re.Match[str]) -> str:
        year = int(match["year"]) + (2000 if len(match["year"]) == 2 else 0)
        problems.append(message("fiscal_year", written=match.group(0), year=year, before=year - 1))
        return " "

    return FISCAL_YEAR.sub(asked, text)


FIXED_DAYS: dict[str, tuple[int, int]] = {name: tuple(day) for name, day in table()["dates"]["fixed_days"].items()}
"""Named days that are not US federal holidays (those come from pandas' calendar, by the words of their names)."""
HOLIDAY_WORDS: dict[str, str] = table()["dates"]["holidays"]
"""How a US federal holiday is called, and the words of pandas' name for it."""
FIXED_DAYS |= {name.replace("'s", "").replace("'", ""): day for name, day in FIXED_DAYS.items()}  # as normalized: "new year day"
HOLIDAY_WORDS |= {name.replace("'s", "").replace("'", ""): holiday for name, holiday in HOLIDAY_WORDS.items()}
NAMED_DAY = re.compile(r"\b(?:on\s+)?(?P<name>" + "|".join(sorted(map(re.escape, FIXED_DAYS | HOLIDAY_WORDS), key=len, reverse=True))
                       + r")(?:\s+(?:day\s+)?(?:of\s+|in\s+)?(?P<year>(?:19|20)\d\d))\b")


def _named_days(text: str) -> str:
    """'Christmas Eve 2024', 'Thanksgiving 2023': that day, as ISO."""
    def day(match: re.Match[str]) -> str:
        name, year = match["name"], int(match["year"])
        if name in FIXED_DAYS:
            return f" on {dt.date(year, *FIXED_DAYS[name]).isoformat()}"
        wanted = HOLIDAY_WORDS[name].lower()
        # The holiday whose name IS the words wins over one that only contains them: 'Independence Day' is
        # July 4, not 'Juneteenth National Independence Day' (June 19), which comes first in the year.
        found = sorted((holiday.lower() != wanted, day) for day, holiday in _holidays(year).items() if wanted in holiday.lower())
        return f" on {found[0][1]:%Y-%m-%d}" if found else match.group(0)

    return NAMED_DAY.sub(day, text)


def read_days(text: str) -> Days:
    """The request with each written day made ISO, and the problems of those that are not one real day."""
    problems: list[str] = []
    text = _iso_days(_fiscal_years(_named_days(_with_ordinals(text)), problems), problems)

    def iso(match: re.Match[str]) -> str:
        day, opening = _one_day(match, problems), match["opening"] or ""
        start = _range_start(match, day) if day and opening else None
        if day is None or start:
            return f" from {start.isoformat()} to {day.isoformat()}" if start else match.group(0)
        return opening + (" " if re.search(r"\bon\s*$", text[:match.start()] + opening) else " on ") + day.isoformat()

    return Days(WRITTEN_DAY.sub(iso, text), problems)


def _range_start(match: re.Match[str], end: dt.date) -> dt.date | None:
    """The first day of a range that ends on ``end`` (its month and year unless it names its own month), if it is before it."""
    month = MONTHS[match["from_month"] or match["from_month_after"] or calendar.month_abbr[end.month].lower()]
    if not 1 <= int(match["from_day"]) <= calendar.monthrange(end.year, month)[1]:
        return None
    start = dt.date(end.year, month, int(match["from_day"]))
    return start if start < end else None


def _one_day(match: re.Match[str], problems: list[str]) -> dt.date | None:
    """The day a written date is, read by dateparser as written ('the 3 of june, 2024', 'nov. 8, 2023', '22.04.2024');
    the match's own numbers say only why it is not one day (both orders possible, no such day)."""
    written = match["written"].strip()
    first, second = int(match["a"] or 0), int(match["b"] or 0)
    if first and first <= 12 and second <= 12 and first != second:
        year = int(match["year3"])
        problems.append(message("ambiguous_day", written=written, day_first=dt.date(year, second, first), month_first=dt.date(year, first, second)))
        return None
    day = _parse(written, "MDY" if first and first <= 12 else "DMY")
    if day is None:
        if first or _real(int(match["year"] or match["year2"]), MONTHS[match["month"] or match["month2"]], int(match["day"] or match["day2"]),
                          written, problems):
            problems.append(message("unreadable_day", written=written))
        return None
    if match["weekday"] and WEEKDAYS[match["weekday"]] != day.weekday():
        problems.append(message("wrong_weekday", day=day, weekday=match["weekday"].title()))
        return None
    return day


def _real(year: int, month: int, number: int, written: str, problems: list[str]) -> bool:
    """Whether day ``number`` of that month exists; if not, the problem says why."""
    length = calendar.monthrange(year, month)[1]
    if not 1 <= number <= length:
        problems.append(message("no_such_day", written=written, month=calendar.month_name[month], number=number, year=year, length=length))
    return 1 <= number <= length


@cache
def _holidays(year: int) -> dict[dt.date, str]:
    """The US federal holidays of a year by day (pandas' calendar: the one the catalog's business days follow)."""
    from pandas.tseries.holiday import USFederalHolidayCalendar

    named = USFederalHolidayCalendar().holidays(f"{year}-01-01", f"{year}-12-31", return_name=True)
    return {day.date(): str(name) for day, name in named.items()}


def no_row_that_day(day: dt.date, dates: list[str], key: str) -> str:
    """Why the data has no row on ``day``, and the nearest days that have one."""
    iso = day.isoformat()
    before = max((date for date in dates if date < iso), default=None)
    after = min((date for date in dates if date > iso), default=None)
    holiday = _holidays(day.year).get(day)
    if not dates or (day.weekday() < 5 and not holiday and (iso < dates[0] or iso > dates[-1])):
        return message("outside_data", key=key, day=iso, span=f"{dates[0]} to {dates[-1]}" if dates else "no dates")
    why = message("weekend" if day.weekday() >= 5 else "holiday" if holiday else "no_row", day=day, holiday=holiday, key=key)
    return message("nearest_rows", why=why, key=key, nearest=" and ".join(date for date in (before, after) if date))
