"""One typed request: the bottom of the teaching model (issue 41; docs/offline-model.md).

Everything the teaching model understands of a message is one ``Request``: a frozen dataclass of slots, each an enum or a typed value, each
recording the words it consumed. Nothing is kept as a string to be parsed again: "the highest monthly mean" is ``Statistic.MAX`` of
``Statistic.MEAN`` by ``Granularity.MONTH``, never ``"by_month_high_mean"``; "top 3" is ``Ranking(TOP, 3)``, never ``"top3"``. A slot left
``None`` was not said. A follow-up ("and in 2023?") is a partial request: only its period is set, and the conversation merges it slot by slot
into the last answered request (``Request.merged_onto``). Readers (``readers.py``) fill slots from tokens; the router (``router.py``) decides
whether a request is complete or declined (``Decline``)."""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from datetime import date
from enum import Enum

Words = tuple[str, ...]  # the words of the message a slot consumed, in order


class Intent(Enum):
    """What the user wants done."""
    FIGURE = "figure"  # a statistic (or one day's value) of a series
    FILE_ROWS = "file_rows"  # how many rows a file has
    TEST_RUN, TEST_WHY = "test_run", "test_why"  # how the tests went (which failed, how many passed); why a named test fails
    TEST_FIND = "test_find"  # which test is about something (by the test files' own names), and whether it passed
    FUNCTION_WRONG = "function_wrong"  # which function is wrong
    SCRIPT_OUTPUT = "script_output"  # what a script prints, as it is or with one function changed


class Statistic(Enum):
    """One figure computed from a series' values over the period."""
    VALUE = "value"  # the value on one day
    MEAN, MEDIAN, MIN, MAX, SUM, LATEST, FIRST = "mean", "median", "min", "max", "sum", "latest", "first"
    STD = "std"  # sample standard deviation
    COUNT = "count"  # values (or days meeting the condition)
    CHANGE, PERCENT_CHANGE = "change", "percent_change"  # last minus first, and as a percent of the first
    RANGE = "range"  # max minus min
    COMPOUNDED_MEAN = "compounded_mean"  # the daily-compounded annual rate (ACT/360) over the period
    GEOMETRIC_MEAN, WEIGHTED_MEAN = "geometric_mean", "weighted_mean"  # the second weighted by the dataframe's volume column
    FIRST_DATE, CORRELATION = "first_date", "correlation"  # the first day the condition holds; of two series


Transform = Enum("Transform", {"DAILY_CHANGE": "daily_change"})  # what is done to the values before the statistic: each minus the one before


Granularity = Enum("Granularity", {name.upper(): name for name in ("day", "month", "quarter", "half", "year", "span", "all")})
"""How wide a period is, as written (SPAN: from one written day to another, or N trading days; ALL: all the data, no period was given)."""


class Anchor(Enum):
    """How a period was pinned down."""
    WRITTEN = "written"  # a date or period written out ("2024-03-15", "q1 2024", "summer of 2024")
    HOLIDAY = "holiday"  # a named day ("thanksgiving 2023"), from the US federal holiday calendar
    DATA_END, DATA_START = "data_end", "data_start"  # counted back from the data's last day ("a month before the end of the data"); from its first
    RELATIVE = "relative"  # counted from another period of this request or the last one ("the day before")
    TRADING_DAYS = "trading_days"  # N rows of the data ("the last 30 trading days", "the first 20 of 2024")
    DEFAULT = "default"  # none given: all the data, said in the answer


Comparison = Enum("Comparison", {"ABOVE": ">", "AT_OR_ABOVE": ">=", "BELOW": "<", "AT_OR_BELOW": "<=", "EQUAL": "=="})  # a condition's


Unit = Enum("Unit", {name.upper(): name for name in ("percent", "bp", "decimal", "billions", "trillions", "millions")})
"""The unit a figure is shown in (DECIMAL: percent / 100; a series' own unit comes from its docs)."""


Direction = Enum("Direction", {"TOP": "top", "BOTTOM": "bottom"})  # a ranking's


@dataclass(frozen=True)
class Series:
    """One column of one dataframe, resolved over the whole catalog."""
    frame: str  # "pipeline/dataframe"
    column: str
    unit: str = ""  # the column's unit as its docs give it ("percent", "bp", "$bn")
    words: Words = ()

    @property
    def name(self) -> str:
        return f"{self.frame}.{self.column}"


@dataclass(frozen=True)
class Period:
    """Inclusive first and last calendar days (trading days are the data's rows inside them)."""
    first: date
    last: date
    granularity: Granularity
    anchor: Anchor = Anchor.WRITTEN
    trading_days: int | None = None  # "the last 30 trading days": that many rows ending on ``last``
    from_start: bool = False  # count ``trading_days`` from ``first`` ("the first 20 trading days")
    edge_of: date | None = None  # "the end of march 2024": the one day is the last with a row on or before this day
    inside: Period | None = None  # "and at the start of that period?": the period this day is an edge of (then "and at the end?")
    words: Words = ()

    @property
    def one_day(self) -> bool:
        return self.first == self.last and self.trading_days is None


@dataclass(frozen=True)
class Condition:
    """Rows kept or counted: the series compared with a threshold (in ``unit``, or the series' own)."""
    comparison: Comparison
    threshold: float
    unit: Unit | None = None
    words: Words = ()


@dataclass(frozen=True)
class Ranking:
    direction: Direction
    count: int
    words: Words = ()


@dataclass(frozen=True)
class Slot:
    """An enum-valued slot with the words that set it."""
    value: Enum
    words: Words = ()


@dataclass(frozen=True)
class Request:
    """What one ask means. ``None``: not said (a partial request, merged by the conversation)."""
    intent: Intent | None = None
    series: tuple[Series, ...] = ()  # two for a difference or a correlation (the first minus the second)
    statistic: Slot | None = None  # Slot(Statistic)
    statistics: tuple[Slot, ...] = ()  # more than one ("the min and the max"), else empty
    transform: Slot | None = None  # Slot(Transform)
    period: Period | None = None
    condition: Condition | None = None
    ranking: Ranking | None = None
    unit: Slot | None = None  # Slot(Unit)
    decimals: int | None = None  # "rounded to a whole number": 0
    claimed: float | None = None  # a figure quoted to be checked ('a student says it was 5.33, right?'): never carried to a follow-up
    difference: bool = False  # series[0] minus series[1]
    words: Words = field(default=(), compare=False)  # every word of the ask (used or not)
    aside: tuple[str, ...] = field(default=(), compare=False)  # sentences that only set the scene ('Stat-head here.'): said in the answer

    def stat(self) -> Statistic | None:
        return self.statistic.value if self.statistic else None  # type: ignore[return-value]

    def merged_onto(self, earlier: Request) -> Request:
        """This partial request's slots over ``earlier``'s: what a follow-up means."""
        changes = {f.name: value for f in fields(self) if f.name != "words" and (value := getattr(self, f.name)) not in (None, (), False)
                   or value is not False and value == 0}  # 'to the nearest whole number': 0 decimals
        if "series" in changes and len(changes["series"]) == 1 and len(earlier.series) == 2:
            changes["difference"] = False
        if "statistic" in changes and "statistics" not in changes:
            changes["statistics"] = ()  # 'and the max?' after 'mean, min and max': the max alone
        if "statistic" in changes and "condition" not in changes and changes["statistic"].value not in (Statistic.COUNT, Statistic.FIRST_DATE):
            changes["condition"] = None  # 'the highest that year' after 'how many days above 5.3': the series' max, the count's condition gone
        return replace(earlier, **{"claimed": None, "aside": (), **changes})


@dataclass(frozen=True)
class Decline:
    """A request that is not complete: what was understood, and the words or reason that stop it."""
    understood: Request
    unused: Words = ()
    reason: str = ""
