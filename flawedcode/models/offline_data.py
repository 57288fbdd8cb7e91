"""Data requests: which series, which statistics, which period, and how to get the figures.

``read_data_ask(clause, context)`` turns a clause into a ``DataAsk`` (series, statistics, transform,
period, condition, unit) or, when it cannot be answered, into a reply that says why (never a guess);
``plan_data`` makes its task: loads, or one ``stat_script`` when the rows would not fit. The words of
statistics, combinations, transforms and conditions are patterns in offline_words.toml.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field, replace

from flawedcode.models.offline_dates import form
from flawedcode.models.offline_entities import DataframeRef
from flawedcode.models.offline_periods import NO_PERIOD, SHIFT_MONTHS, Period, moved_by_months
from flawedcode.models.offline_plan import Clause, Context, Step, Task, reply
from flawedcode.models.offline_stats import ROWS_IN_CONTEXT_SHARE, TOKENS_PER_CELL
from flawedcode.models.offline_words import (
    COMMON_WORDS,
    NUMBER_WORDS,
    PERCENTILE,
    SYNONYMS,
    WORDS,
    content_words,
    message,
    tags_in,
    unit_asked,
    word_set,
)

STAT_ROWS = 100
"""A cap for a statistic's load when nothing else sets one (a statistic with no period uses all the data: Period.assumed)."""
MAX_ROWS = 500
PATTERNS = WORDS["patterns"]
COUNTED = PATTERNS["share"] + "|" + PATTERNS["ever_past"]  # '{share}' in a count: a share of the days, or a yes or no
STAT_PATTERNS: tuple[tuple[str, str], ...] = tuple((stat, pattern.replace("{share}", COUNTED).replace("{max_minus_min}", PATTERNS["max_minus_min"]))
                                                  for stat, pattern in WORDS["statistics"].items())
TRANSFORMS: tuple[tuple[str, str], ...] = tuple(WORDS["transforms"].items())
DIFFERENCE, CORRELATION = tuple(PATTERNS["difference"]), tuple(PATTERNS["correlation"])
SIDE_STAT = r"\b(?:max(?:imum)?|min(?:imum)?|highest|lowest|median|peak|trough|std|standard deviation|volatility)\b"
"""A statistic written on the second side of a difference ('minus the effr min'): each side's own, which is not computed."""
ROW_NOUNS = r"\b(?:days?|times|dates|rows|sessions|values|observations)\b"
"""What a count of rows counts ('how many days'); without one, 'how many counterparties' is the count column's value."""
SAME_PERIOD, LOAD_WORDS, COUNT_WORDS = PATTERNS["same_period"], PATTERNS["load"], PATTERNS["count"].replace("{share}", COUNTED)
RATIO, FIRST_WHEN, SIGN_WORDS, NEGATED, SHIFT, FLAG_CONDITION, BY_PERIOD, EACH_PERIOD, LOWEST, MOVE_BY = (re.compile(PATTERNS[name]) for name in (
    "ratio", "first_when", "sign", "negated", "shift", "flag_condition", "by_period", "each_period", "lowest", "move_by"))
EACH_STATS = ("mean", "median", "min", "max", "std", "change", "pct_change", "sum", "range", "iqr")
"""The statistics a figure for each period ('the monthly max') may be."""
ADJECTIVE_UNITS = {"monthly": "month", "quarterly": "quarter", "annual": "year", "yearly": "year", "weekly": "week"}
FALLS, EITHER_WAY = PATTERNS["falls"], PATTERNS["either_way"]
UNDERSTOOD = frozenset(WORDS["words"]["understood"])
SUMMARY_STATS = ["mean", "median", "min", "max", "std"]
DESCRIBE_STATS = ["mean", "min", "max", "latest"]
NTH_PLACES: dict[str, int] = WORDS["ordinals"]
RANK_PLACES = {"{ranked}": PATTERNS["ranked"], "{count}": r"\d{1,2}|" + "|".join(NUMBER_WORDS), "{places}": "|".join(NTH_PLACES)}
RANKED, NTH_RANKED, RANK_NOUN = (form(PATTERNS[name], RANK_PLACES) for name in ("ranked", "nth_ranked", "rank_noun"))
"""'top 3', 'the five lowest': the N largest or smallest values; 'the 3rd lowest': one place (up to ``figures.RANKED``)."""
OR_MORE: dict[str, str] = WORDS["or_more"]
_WORDINGS = sorted(((wording, side) for side, wordings in WORDS["comparisons"].items() for wording in wordings), key=lambda item: -len(item[0]))
OPERATORS = "|".join(wording if not wording[0].isalpha() else rf"\b{wording}\b" for wording, _ in _WORDINGS)
THRESHOLD = form(PATTERNS["threshold"], {"{ops}": OPERATORS, "{or_more}": "|".join(OR_MORE)})
"""A threshold: a comparison (the longest wording first) and a number, or '5.33 or more'."""
SERIES_PAST_SERIES = form(PATTERNS["series_past_series"], {"{ops}": OPERATORS})
"""'on how many days was sofr above iorb': the days the spread of the two was past zero."""
ROW_CONDITION = form(PATTERNS["row_condition"], {"{ops}": OPERATORS})
"""'on days when effr was above 5.3', 'whenever it closed below 5': rows chosen by a condition ('subject': what it is on)."""
NEGATION_OF = {"above": "at or below", "below": "at or above", "at or above": "below", "at or below": "above",
               "equal to": "not equal to"}
FLIPPED = {"above": "below", "at or above": "at or below", "below": "above", "at or below": "at or above"}
"""A side seen from below zero: a fall of more than 5 bp is a change below -5 bp."""
FRAME_ONLY_WORDS = word_set("frame_only")
UNIT_FITS: dict[str, list[str]] = WORDS["unit_fits"]
STAT_WORDS = PATTERNS["stat_word"]
"""A word of a statistic (never a column's name)."""


def comparison_side(match: re.Match[str]) -> str:
    """The side a THRESHOLD match counts: 'above', 'below', 'at or above' or 'at or below'."""
    if match["inclusive"]:
        return OR_MORE[match["inclusive"]]
    return next(side for wording, side in _WORDINGS if re.fullmatch(wording, match["op"]))


@dataclass(frozen=True)
class Series:
    ref: DataframeRef
    column: str

    @property
    def label(self) -> str:
        return f"{self.ref.key} {self.column}"


@dataclass
class DataAsk:
    """What a data clause asks for."""

    series: list[Series]
    stats: list[str] = field(default_factory=list)
    percentiles: list[int] = field(default_factory=list)
    combine: str | None = None
    period: Period = field(default_factory=Period)
    unit: str | None = None
    threshold: tuple[str, float] | None = None
    wants_rows: bool = False
    columns_named: bool = False
    text: str = ""
    limit: int | None = None
    load_asked: bool = False  # the request says load / fetch / pull: load the rows even for a statistic
    transform: str | None = None  # 'diff' (daily changes) or 'pct' (daily percent changes): statistics of these
    flag: tuple[str, DataframeRef, str] | None = None  # ('exclude' | 'only', dataframe, flag column): 'excluding quarter-ends'
    flag_words: str = ""
    slot_words: tuple[str, ...] = ()  # words a slot used: 'a year later', 'excluding quarter-ends', 'the largest 1-day drop'
    unusable: tuple[str, ...] = ()  # a slot it read and cannot apply: 'on days when effr was above 5.3'

    @property
    def year(self) -> int | None:
        date = self.period.start or self.period.end
        return int(date[:4]) if date else None

    def frames(self) -> list[DataframeRef]:
        return list(dict.fromkeys(series.ref for series in self.series))


# ----------------------------------------------------------------------------- reading


def stats_in(clause: Clause) -> list[str]:
    """The statistics a clause asks for, in the order of ``[statistics]`` ('what does X mean', 'the 30-day average': none)."""
    text = re.sub(PATTERNS["not_a_statistic"], " ", clause.rest)
    found = [one for stat, pattern in STAT_PATTERNS if re.search(pattern, text) for one in (SUMMARY_STATS if stat == "summary" else [stat])]
    if {"count", "mean"} <= set(found) and not re.search(ROW_NOUNS, text):
        found.remove("count")  # 'how many counterparties on average': a mean of counts, not the number of rows
    if {"change", "sum"} <= set(found) and not re.search(r"\b(?:sum(?:med)?|cumulative|added up)\b", text):
        found.remove("sum")  # 'how much did the 10y move in total': the total change, never the sum of its levels
    if "moves" in found:  # 'how many times did the target change': the number of changes, not the rows, the factor or the net change
        found = [stat for stat in found if stat not in ("count", "change", "factor")]
    if "from_max" in found or "from_min" in found:  # 'the fall from its high': one figure, not also the max and the change
        found = [stat for stat in found if stat not in ("change", "max" if "from_max" in found else "min")]
    return list(dict.fromkeys(found))


def names_only_a_series(clause: Clause) -> bool:
    """A clause that names a series and nothing else: no statistic, period, threshold, load or transform."""
    return (bool(clause.mentions.dataframes or clause.mentions.columns or tags_in(clause.rest)) and not clause.periods
            and not stats_in(clause) and not re.search(LOAD_WORDS, clause.rest) and not THRESHOLD.search(clause.norm)
            and not any(re.search(pattern, clause.rest) for _, pattern in TRANSFORMS) and len(content_words(clause.rest)) <= 4)


def period_ranking(stat: str) -> tuple[str, str, str]:
    """'by_month_high_mean' -> ('month', 'highest', 'mean'): a ranking of periods' unit, side and statistic (as read_data_ask writes it)."""
    _, unit, side, base = stat.split("_", 3)
    return unit, {"high": "highest", "low": "lowest"}.get(side, side), base  # 'each': every period's figure, none ranked


def read_data_ask(clause: Clause, context: Context, follow_up: DataAsk | None = None) -> DataAsk | Task:
    """A clause's data request, or a reply saying what is missing or not there."""
    clause = replace(clause, rest=RANK_NOUN.sub(lambda match: match.group(1), clause.rest))  # 'top 3 days': no '3d' tenor
    flag_match = FLAG_CONDITION.search(clause.rest)
    flag = _flag_column(flag_match, context) if flag_match else None
    shift = SHIFT.search(clause.rest) if follow_up is not None and not clause.periods else None
    read = SHIFT.search(clause.norm) if follow_up is not None and clause.periods else None
    if read and all(period.label and period.label in read.group(0) for period in clause.periods):
        clause, shift = replace(clause, periods=[]), read  # 'and the previous year?': the previous request's year, moved back
    moved_to, moved = next(((name, match) for name, pattern in TRANSFORMS if (match := re.search(pattern, clause.rest))), (None, None))
    for used in (flag_match if flag else None, shift, moved if moved and tags_in(moved.group(0)) else None):
        if used:  # 'excluding quarter-ends', 'a year later?', 'the largest 1-day drop': slots, not series names (nor a 1d tenor)
            clause = replace(clause, rest=clause.rest[:used.start()] + " " * len(used.group(0)) + clause.rest[used.end():])
    vocabulary = context.vocabulary
    stats = stats_in(clause)
    condition = ROW_CONDITION.search(clause.rest)
    unusable = (condition.group(0).strip(),) if condition and _condition_elsewhere(condition, clause, stats, context) else ()
    events = [match.group(0).strip() for name in ("event_bound", "event_day") if (match := re.search(PATTERNS[name], clause.rest))]
    unusable += tuple(events)  # 'the average sofr after the cuts': no column dates the cuts
    rest = ROW_CONDITION.sub(" ", clause.rest) if unusable else ""
    for words in events:  # ... and the words of the event name no series ('the day the 2y peaked': not the 10y-2y spread)
        rest = rest.replace(words, " ")
    if unusable and _names_something(rest, context):  # 'the average sofr on days when effr ...'
        clause = replace(clause, rest=rest, norm=ROW_CONDITION.sub(" ", clause.norm), mentions=vocabulary.find(rest))
        stats = stats_in(clause)
    combine, sides = _combination(clause.rest, stats, context, clause.norm)
    own = re.search(SIDE_STAT, _unranked(sides[1])) if combine == "difference" else None
    if own:  # 'the sofr max minus the effr min': a statistic of each side, never the same statistic of their daily difference
        return reply(message("statistic_per_side", a=sides[0], b=sides[1], word=own.group(0)))
    if combine == "correlation":
        stats = ["corr"]
    if combine == "ratio" and re.search(PATTERNS["ratio_of_means"], clause.rest):
        combine, stats = "ratio_of_means", ["mean_ratio"]
    past = SERIES_PAST_SERIES.search(clause.rest) if not combine and re.search(COUNT_WORDS, clause.norm) else None
    if past and all(_names_something(_clean_side(past[side]), context, clearly_described=True) for side in "ab"):
        combine, sides = "difference", [_clean_side(past["a"]), _clean_side(past["b"])]
    else:
        past = None
    frames = list(clause.mentions.dataframes)
    names_column = bool(clause.mentions.columns or tags_in(clause.rest))  # an exact column name, or a tenor / percentile
    if follow_up is not None and not frames and not names_column and not _described_elsewhere(clause, context, follow_up):
        frames = follow_up.frames()
    pair = follow_up is not None and bool(follow_up.combine) and not combine and not clause.mentions.dataframes and not names_column
    if pair:  # 'and in 2023?', 'in bp?' after a spread: the same two series, combined the same way
        combine, sides, found = follow_up.combine, [], [list(follow_up.series)]
    elif sides:  # each side on its own, in the one table with a column each side names ('sofr minus iorb': repo_public's) if there is one
        home = _one_home(_share_head_noun(sides), context)
        found = [_side(side, clause, context, [home] if home else frames, "percent" if combine == "difference" else None)
                 for side in _share_head_noun(sides)]
    else:  # 'the 20y?' after the 30y: the same dataframe first
        again = follow_up is not None and not frames and names_column
        found = [_series_for(_unranked(clause.rest), clause, context, ([follow_up.frames()] if again else []) + [frames], many=True,
                             follow_up=follow_up)]
    failed = next((one for one in found if isinstance(one, Task)), None)
    mismatched = failed is None and combine == "difference" and sides and len({vocabulary.unit(one[0].ref, one[0].column) for one in found}) > 1
    spread = _spread_column(sides, clause.rest, context) if (failed is not None or mismatched) and combine == "difference" else None
    if spread:  # 'the spread between dvp and tri-party' (no one dvp column), 'tgcr-rrp' (rrp: counterparties?): tgcr_minus_rrp_bp
        combine, sides, found, failed = None, [], [[spread]], None
    if failed is not None:
        return failed
    series = [one[0] for one in found] if sides else found[0]
    if "corr" in stats and combine != "correlation":  # 'sofr and effr correlation': the two series named; one is not enough
        if len(series) != 2:
            return reply(message("correlation_pair", series=" and ".join(s.label for s in series)))
        combine, stats = "correlation", ["corr"]
    if sides and series[0] == series[1]:  # 'the 10y minus the fitted 10y': each side as written, in the whole catalog, else one series
        again = [_series_for(side, clause, context, [[], frames]) for side in sides]
        series = [one[0] for one in again] if not any(isinstance(one, Task) for one in again) else series
        combine, series = (combine, series) if series[0] != series[1] else (None, series[:1])
    units = [vocabulary.unit(s.ref, s.column) for s in series] if combine in ("difference", "ratio_of_means") else []
    if len(set(units)) == 2 and ("percent" in units or set(units) == {"$bn", "count"}):
        a, b = series  # 'sofr minus reserves': a rate minus dollars means nothing (a ratio of two means of two units neither)
        how = "minus" if combine == "difference" else "divided by"
        return reply(message("unit_mismatch", a=a.label, has_a=units[0], how=how, b=b.label, has_b=units[1]))
    inherits = follow_up is not None and not stats and (not combine or pair)  # a follow-up keeps what it does not change
    if inherits and follow_up.series and not names_column and not pair:
        asked_column = follow_up.series[0].column  # 'top 3 days of SOFR volume' then 'and EFFR': EFFR's volume too
        series = [Series(s.ref, asked_column) if asked_column in s.ref.columns and s.column == vocabulary.main_column(s.ref)
                  else s for s in series]
    percentiles = [int(tag[1:]) for tag in tags_in(clause.rest) if tag.startswith("p")
                   and not any(tag in vocabulary.info(s.ref, s.column).tags for s in series)]
    if percentiles:
        stats = [stat for stat in stats if stat != "mean"] + [f"p{q}" for q in percentiles]
    if "pct_change" in stats or "factor" in stats:
        stats = [stat for stat in stats if stat != "change"]
    transform = moved_to if "moves" not in stats else None  # 'how many changes': counted on the levels
    if inherits and transform is None:
        transform = follow_up.transform
    flag = flag or (follow_up.flag if inherits else None)
    if transform is not None and not combine:
        asked = [stat for stat in stats if stat not in ("change", "pct_change")]
        if moved and re.search(FALLS, moved.group(0)):  # 'the largest daily drop': the most negative change
            asked = ["min" if stat == "max" else stat for stat in asked]
        elif moved and re.search(EITHER_WAY, moved.group(0)) and "max" in asked:  # 'the largest daily move': either sign
            asked = ["min" if stat == "max" else stat for stat in asked] + ["max"]
        stats = asked or ([] if inherits else list(DESCRIBE_STATS))
    ranked = RANKED.search(clause.rest)
    nth = NTH_RANKED.search(clause.rest)
    if nth:  # 'the second highest': that one value (and the ones above it)
        place = NTH_PLACES.get(nth["place"]) or int(re.sub(r"\D", "", nth["place"]))
        side = "bottom" if nth["side"] in ("lowest", "smallest") else "top"
        stats, ranked = [f"nth_{side}{place}"], nth
    elif ranked:  # 'top 3 days', 'the 5 lowest': the N largest or smallest values, with their dates
        written = ranked["n"] or ranked["n2"]
        count = int(written) if written.isdigit() else NUMBER_WORDS[written]
        side = "bottom" if (ranked["side"] or ranked["side2"]) in ("bottom", "lowest", "smallest") else "top"
        if transform and moved and re.search(FALLS, moved.group(0)):  # 'the 10 biggest daily falls': the most negative changes
            side = "bottom" if side == "top" else "top"
        stats = [f"{side}{count}"]
    first_when = None if unusable else FIRST_WHEN.search(clause.norm) and THRESHOLD.search(clause.norm)
    threshold = None if unusable else _threshold(clause.norm)  # a condition it cannot apply is no threshold either
    if past:  # 'the days sofr was above iorb': the days sofr minus iorb was above zero
        side = next(side for wording, side in _WORDINGS if re.fullmatch(wording, past["op"]))
        threshold = (NEGATION_OF[side] if NEGATED.search(clause.norm[:past.start("op")]) else side, 0.0)
    by_period = BY_PERIOD.search(clause.norm) if not ranked and threshold is None and not first_when else None
    each = EACH_PERIOD.search(clause.norm) if not by_period and not ranked and threshold is None and not first_when else None
    if by_period or each:  # 'which month of 2024 had the highest average sofr': each month's mean, the highest named
        side = "each" if each else "low" if LOWEST.search(clause.norm) else "high"
        unit = by_period["unit"] if by_period else ADJECTIVE_UNITS.get(each["adjective"], next(filter(None, each.groups())))
        asked = [stat for stat in stats if stat in EACH_STATS] if each else []
        if each and transform and re.match(r"\s*changes?\b", clause.norm[each.end():]):  # 'quarterly changes': each quarter's change
            transform, asked = None, ["change"]
        if "range" in asked:  # 'max minus min by month': the range, not also the max and the min
            asked = ["range"]
        if len(asked) > 1:  # one figure per period: 'the min and max of each month' would drop one
            return reply(message("each_period_one_stat", unit=unit, stats=" and ".join(asked), first=asked[0].replace("_", " "),
                                 second=asked[1].replace("_", " ")))
        # 'and the lowest quarter?' after the quarter with the highest median, or after a median: the median again
        earlier = next((period_ranking(s)[2] if s.startswith("by_") else s for s in (follow_up.stats[:1] if follow_up is not None else [])
                        if s.startswith("by_") or s in ("median", "std", "sum")), "mean")
        base = asked[0] if asked else next((s for s in stats if s in ("median", "std", "change", "sum")), earlier)
        stats = [f"by_{unit}_{side}_{base}"]
    if first_when:  # 'the first day SOFR went below 5%': the first date past a threshold
        threshold = (comparison_side(first_when), float(first_when["limit"]))
        stats = ["first_when"]
    if threshold is None and follow_up is not None and not stats:  # 'and in 2023?' after a count keeps its threshold
        threshold = _threshold(f"how many {clause.norm}") or _side_only(clause.norm, follow_up.threshold) if follow_up.threshold else None
    if threshold is None and stats == ["count"] and series and all(vocabulary.unit(s.ref, s.column) == "flag" for s in series):
        threshold = ("true", 0.0)  # 'how many quarter-end days': the days the flag is set, not the rows
    if threshold is None and stats == ["count"] and series and all(vocabulary.unit(s.ref, s.column) == "count" for s in series) \
            and not re.search(ROW_NOUNS, clause.rest):
        stats = []  # 'how many counterparties used the on rrp on 2023-12-29': the column's value, not its number of rows
    sign = SIGN_WORDS.search(clause.norm) if threshold == ("below", 0.0) else None
    inverted = sign if sign and sign.group(1) == "inverted" else None
    if inverted and not (combine or all(re.search(r"spread|_minus_", s.column) for s in series)):
        threshold, unusable = None, (*unusable, "inverted")  # a curve is inverted when a spread is below zero, never a yield
    written = THRESHOLD.search(clause.norm) if threshold is not None and series else None
    rescaled = _in_unit_of(threshold, written, {vocabulary.unit(s.ref, s.column) for s in series}) if written else threshold
    written, threshold = (written if rescaled != threshold else None), rescaled  # 'below -50 bp' of a spread in percentage points: -0.5
    move_by = MOVE_BY.search(clause.norm) if threshold is not None and not combine else None
    if move_by:  # 'how often did sofr move by more than 5 bp': its daily changes, either way unless a direction is said
        transform = "diff"
        side, limit = threshold
        if move_by["either"]:
            threshold = ("beyond" if side in ("above", "at or above") else "within", abs(limit))
        elif move_by["down"]:
            threshold = (FLIPPED.get(side, side), -abs(limit))  # 'fell by more than 5 bp': changes below -5 bp
    if threshold is not None and stats != ["first_when"]:
        stats = ["count"]
    wants_rows = bool(re.search(LOAD_WORDS, clause.rest)) and not [s for s in stats if s != "latest"] and not combine
    if follow_up is not None and not stats and not wants_rows:
        stats = list(follow_up.stats)
        wants_rows = follow_up.wants_rows
        percentiles = percentiles or list(follow_up.percentiles)
        ranked = ranked or (follow_up.limit is None and any(re.fullmatch(r"(?:top|bottom)\d+", s) for s in stats))
    period = clause.periods[0] if clause.periods else (follow_up.period if follow_up else Period())
    if shift and (period.start or period.end):  # 'a year later?', 'the quarter before': the same period, moved
        period = shifted(period, shift)
    ranked = next((period_ranking(s)[0] for s in context.previous_ask.stats if s.startswith("by_")), None) if context.previous_ask else None
    if not clause.periods and ranked and (said := re.search(rf"\b(?:that|same|this)\s+(?:whole\s+|same\s+)?{ranked}\b", clause.norm)):
        return reply(f"I can't answer that: '{said[0]}' would be the {ranked} of a figure I gave ('which {ranked} had the ...'), and I keep "
                     f"what you asked, not my answers: name the {ranked}.")
    if not clause.periods and context.previous_ask is not None and re.search(SAME_PERIOD, clause.norm):
        period = context.previous_ask.period  # 'over the same year', 'for those dates'
    if period.one_day:
        changes = {"change", "pct_change"} & set(stats) or transform
        if changes and len(clause.periods) < 2 and period.start:  # 'how much did the 10y move on 2024-03-15': that day's move
            transform, stats = transform or ("pct" if "pct_change" in stats else "diff"), ["latest"]
        elif changes and len(clause.periods) < 2:  # a change needs two days, never one
            return reply(message("change_one_day", day=period.label or period.describe()))
        stats = ["latest"] if not stats or stats == ["mean"] else stats
    if not stats and not wants_rows:
        stats = list(DESCRIBE_STATS)
    spread = combine == "difference" or any(re.search(r"_minus_|spread", s.column or "") for s in series)
    if spread and stats in (["max"], ["min"]) and re.search(r"\b(?:largest|biggest|widest|greatest)\b.*\b(?:gap|spread|difference)\b", clause.norm):
        stats = ["min", "max"]  # 'the largest gap between the 10y and the 2y': a spread below zero is widest at its min
    asked_unit = unit_asked(clause.norm)
    if asked_unit == "percent" and "change" in stats and series and all(vocabulary.unit(s.ref, s.column) != "percent" for s in series):
        asked_unit, stats = None, ["pct_change" if stat == "change" else stat for stat in stats]  # 'how much did reserves fall, in percent'
    unit = asked_unit or (follow_up.unit if inherits else None) or context_unit(context)
    misfit = next((s for s in series if s.column and asked_unit and vocabulary.unit(s.ref, s.column) not in UNIT_FITS[unit]), None)
    if misfit:  # 'sofr in trillions', 'reserves in bp': a unit its values cannot be written in
        return reply(message("unit_misfit", series=misfit.label, unit=unit, has=vocabulary.unit(misfit.ref, misfit.column) or "no unit"))
    named = names_column or any(s.column and s.column != vocabulary.main_column(s.ref) for s in series)
    transform = transform if not combine and not wants_rows else None
    share = re.search(PATTERNS["share"], clause.norm) if threshold is not None else None  # 'what share of the days ...'
    used = [match.group(0) for match in (flag_match if flag else None, shift, moved if transform else None, share,
                                         inverted if threshold else None, written) if match]
    used += list(unusable) + ([match.group(0) for match in EACH_PERIOD.finditer(clause.norm)] if each else [])
    if "moves" in stats:  # 'how many rate cuts', 'how often was iorb raised': the changes they count, down or up
        used += re.findall(r"\b(?:cuts?|hikes?|hiked|raised?|lowered|adjust\w*|reset)\b", clause.rest)
    if percentiles and (period.point or period.start is not None and period.start == period.end):  # one day: one value
        return reply(message("percentile_of_a_day", series=series[0].label, day=period.end or period.start))
    ask = DataAsk(series, stats, percentiles, combine, period, unit, threshold, wants_rows, named, clause.norm,
                  limit=None if ranked else _row_count(clause.rest), load_asked=bool(re.search(PATTERNS["load_verb"], clause.rest)),
                  transform=transform, flag=flag, flag_words=flag_match.group(0) if flag_match and flag else "", slot_words=tuple(used),
                  unusable=unusable)
    return _outside_coverage(ask) or ask


def _condition_elsewhere(condition: re.Match[str], clause: Clause, stats: list[str], context: Context) -> bool:
    """A condition on rows it cannot apply: to a statistic other than a count or a first date, or about another series."""
    if not FIRST_WHEN.search(clause.norm) and not (re.search(COUNT_WORDS, clause.norm) and set(stats) <= {"count"}):
        return True
    rest = clause.rest.replace(condition.group(0), " ")
    inside, outside = context.vocabulary.find(condition["subject"]), context.vocabulary.find(rest)
    if not (outside.dataframes or outside.columns or tags_in(rest)):  # 'how many days when sofr was above 5.3': its series
        return False
    return bool(set(inside.dataframes) - set(outside.dataframes) or set(inside.columns) - set(outside.columns)
                or set(tags_in(condition["subject"])) - set(tags_in(rest)))


def _flag_column(match: re.Match[str], context: Context) -> tuple[str, DataframeRef, str] | None:
    """The flag column a condition names (a column whose unit is 'flag' and whose name has its words), if one does."""
    words = set(re.findall(r"[a-z]+", (match["what"] or match["bare"]).replace("ends", "end"))) - {"day", "days"}
    for ref in context.vocabulary.frames:
        for column in ref.columns:
            if context.vocabulary.unit(ref, column) == "flag" and words <= set(column.split("_")):
                keeps = match["how"] in (None, "on", "at", "during", "over") or match["how"].startswith(("only", "just"))
                return ("only" if keeps else "exclude"), ref, column
    return None


def shifted(period: Period, shift: re.Match[str]) -> Period:
    """The period moved as 'a year later', 'two quarters earlier', 'the previous month' asks (a month's last day stays its last)."""
    count = shift["count"] or "one"
    months = (int(count) if count.isdigit() else NUMBER_WORDS.get(count, 1)) * SHIFT_MONTHS[(shift["unit"] or shift["unit2"]).rstrip("s")]
    sign = -1 if (shift["way"] or shift["way2"]) in ("earlier", "before", "back", "ago", "previous", "prior") else 1
    start, end = (moved_by_months(day, sign * months) if day else None for day in (period.start, period.end))
    return replace(period, start=start, end=end, label=f"{start} to {end}" if start and start != end else (end or ""), assumed="")


def _unranked(text: str) -> str:
    """The text without its ranking words ('top 3', 'the second highest', 'max minus min'): they name no column (not
    'target_high'); nor does a 'total' that is the sum."""
    return re.sub(PATTERNS["total_stat"], " ", re.sub(PATTERNS["max_minus_min"], " ", NTH_RANKED.sub(" ", RANKED.sub(" ", text))))


def context_unit(context: Context) -> str | None:
    """A unit the user asked answers in ('I prefer answers in basis points'), if visible."""
    prefers = any(earlier.type == "human" and re.search(PATTERNS["prefers_bp"], str(earlier.content).lower()) for earlier in context.earlier)
    return "bp" if prefers else None


def _combination(text: str, stats: list[str], context: Context, asked: str = "") -> tuple[str | None, list[str]]:
    """Two series and how they combine: 'correlation between A and B', 'the ratio of A to B', 'A minus B' (``asked``: the
    whole request, its period words too: 'ever')."""
    kinds = (("correlation", CORRELATION),) if "corr" in stats else (("ratio", (RATIO.pattern,)), ("difference", DIFFERENCE))
    text = re.sub(PATTERNS["max_minus_min"], " ", text)  # 'the range (max minus min)': a statistic, not two series
    curve = re.search(PATTERNS["curve_spread"], text) if "corr" not in stats else None
    if curve and not _some_column_has_all(tags_in(curve.group(0)), [], context):  # '5s30s': the 30y minus the 5y
        return "difference", sorted([curve["one"], curve["other"]], key=_months, reverse=True)
    for combine, patterns in kinds:
        for index, pattern in enumerate(patterns):
            match = re.search(pattern, text)
            found = match.groupdict() if match else {}  # 'how many times larger was A than B' names its sides a2 and b2
            sides = [_clean_side(found.get("a") or found.get("a2") or ""), _clean_side(found.get("b") or found.get("b2") or "")]
            if not match or (combine != "correlation" and not all(sides)):
                continue
            says_amount = (r"spread|difference|gap|distance|\b(?:bp|basis points) between\b|\bby how (?:much|many)\b"
                           r"|\bwhich\b.*\b(?:higher|lower|greater|bigger|larger|smaller|above|below)\b")  # 'which was higher
            if combine == "difference" and "vs" in pattern and not re.search(says_amount, text):
                continue  # 'A vs B' alone is a comparison, not a difference
            if combine == "difference" and re.search(r"\bever\b", asked) and not re.search(says_amount + r"|\bon average\b", text):
                continue  # 'was sofr ever below iorb': the days it was (a count), not their difference
            if combine == "difference" and index >= LOOSE_DIFFERENCES and not all(_names_something(side, context)
                                                                                  for side in _share_head_noun(sides)) \
                    and not _spread_column(sides, text, context):
                continue  # 'option-adjusted spread' is one thing; 'sofr-effr spread', 'sofr-rrp spread' (sofr_minus_rrp_bp) two
            return combine, sides
    return None, []


def _months(tenor: str) -> int:
    """How long a curve tenor is: '3m' 3 months, '10s' 120."""
    return int(tenor[:-1]) * (1 if tenor.endswith("m") else 12)


LOOSE_DIFFERENCES = 5
"""The difference patterns from this one on ('A-B spread', 'A vs B') count only when both sides name a series."""


def _names_something(side: str, context: Context, clearly_described: bool = False) -> bool:
    """Whether a phrase names a dataframe, a column or a tenor (or, if asked, describes a column clearly: 'its target top')."""
    found = context.vocabulary.find(side)
    return bool(found.dataframes or found.columns or tags_in(side) or clearly_described and described_in(side, context))


def _spread_column(sides: list[str], text: str, context: Context) -> Series | None:
    """The one 'a_minus_b' column whose two halves the sides name in that order ('between' either order), if there is one."""
    words = [set(re.split(r"[\W_]+", side.lower())) for side in _share_head_noun(sides)]
    orders = [words, words[::-1]] if re.search(r"\bbetween\b", text) else [words]
    found = []
    for ref in context.vocabulary.frames:
        for column in ref.columns:
            if "_minus_" not in column:
                continue
            halves = [set(half.split("_")) for half in column.removesuffix("_bp").split("_minus_", 1)]
            if any(halves[0] <= first and halves[1] <= second for first, second in orders):
                found.append(Series(ref, column))
    return found[0] if len(found) == 1 else None


def _share_head_noun(sides: list[str]) -> list[str]:
    """'dvp and tri-party overnight rates': a one-word side borrows the words after the other side's first word."""
    first, second = sides
    if len(first.split()) == 1 and len(second.split()) > 1:
        first = f"{first} {' '.join(second.split()[1:])}"
    return [first, second]


def _clean_side(side: str) -> str:
    side = re.sub(r"^.*\b(?:how many|how often|number of|count)\b.*?\b(?:was|were|did|had|has|is|are)\b", " ", side)  # 'how many days was A'
    pieces = re.split(r"\b(?:in|during|for|since|on average|what|above|below|under|exceed\w*|(?:higher|lower|greater|less|more) than)\b"
                      r"(?!.*\b(?:percentile|yield|rate)\b)", side)  # 'the 2y below -25 bp': the 2y
    side = next((piece for piece in pieces if piece.strip()), "")  # 'what was the average effr': the words after 'what'

    side = re.sub(r"\b(?:the|a|an|mean|average|on average|latest|what|was|is|were)\b", " ", side)
    return " ".join(side.split()).strip(" ,?:.")


def _series_for(text: str, clause: Clause, context: Context, pools: list[list[DataframeRef]], **options) -> list[Series] | Task:
    """The series a phrase names, in the first pool of dataframes that has them ([]: the whole catalog); else the last pool's reply."""
    for pool in pools:
        found = _series_in(text, clause, context, pool, **options)
        if not isinstance(found, Task):
            break
    return found


def _side(text: str, clause: Clause, context: Context, frames: list[DataframeRef], unit: str | None) -> list[Series] | Task:
    """One side of a spread: the column of the clause's dataframe that the side names by its name or tenor ('the 10y and
    the 2y in fed_yield_curve'), else the side as the whole catalog reads it, else in the clause's dataframe."""
    local = _series_in(text, clause, context, frames, prefer_unit=unit, only_frame=frames[0] if len(frames) == 1 else None) if frames else None
    chosen = local.detail.get("candidates", []) if isinstance(local, Task) else [(s.ref, s.column) for s in local or []]
    if chosen and all(_named_by(text, ref, column, context) for ref, column in chosen):
        return local
    return _series_for(text, clause, context, [[], frames] if frames else [[]], prefer_unit=unit)


def _one_home(sides: list[str], context: Context) -> DataframeRef | None:
    """The one dataframe with a column each side names by its own name, when some side names no dataframe of its own."""
    if all(context.vocabulary.find(side).dataframes for side in sides):
        return None
    homes = [ref for ref in context.vocabulary.frames
             if all(any(_named_by(side, ref, column, context) for column in ref.columns if column != ref.date_column) for side in sides)]
    return homes[0] if len(homes) == 1 else None


def _named_by(text: str, ref: DataframeRef, column: str, context: Context) -> bool:
    """Whether a phrase names a column by its own name ('iorb', not 'rate') or by every tenor and percentile it carries."""
    tags, name = set(tags_in(text)), column.lower()
    if name not in COMMON_WORDS and name not in FRAME_ONLY_WORDS and re.search(rf"(?<![\w]){re.escape(name)}(?![\w])", text.lower()):
        return True
    return bool(tags) and tags <= context.vocabulary.info(ref, column).tags


def described(clause: Clause, context: Context, refs: list | None = None, ignore: set[str] = frozenset()) -> list[tuple]:
    """The (dataframe, column) pairs the request's words describe clearly, else none."""
    return described_in(clause.rest, context, refs, ignore)


def described_in(text: str, context: Context, refs: list | None = None, ignore: set[str] = frozenset()) -> list[tuple]:
    """The (dataframe, column) pairs a phrase describes clearly (a match of score 3 or more), else none."""
    match = context.vocabulary.match_columns(text, refs, ignore=ignore)
    return list(match.columns) if match.columns and match.score >= 3 else []


def _described_elsewhere(clause: Clause, context: Context, follow_up: DataAsk) -> bool:
    """Whether the words clearly describe columns only other tables hold ('max on rrp usage' after SOFR: repo_public's)."""
    found = described(clause, context)
    return bool(found) and not any(ref in follow_up.frames() for ref, _ in found)


def _series_in(text: str, clause: Clause, context: Context, frames: list[DataframeRef], many: bool = False,
               follow_up: DataAsk | None = None, prefer_unit: str | None = None,
               only_frame: DataframeRef | None = None) -> list[Series] | Task:
    vocabulary = context.vocabulary
    mentions = vocabulary.find(text)
    local_frames = [only_frame] if only_frame else (mentions.dataframes or frames)
    if many and only_frame is None and len(local_frames) > 1:  # 'the average EFFR and SOFR rates': each on its own
        found: list[Series] = []
        for ref in local_frames:
            each = _series_in(text, clause, context, frames, False, follow_up, prefer_unit, only_frame=ref)
            if isinstance(each, Task):
                return each
            found += [series for series in each if series not in found]
        return found
    says_columns = re.search(r"\bcolumns?\b", clause.norm) is not None
    exact = [column for column in mentions.columns if "_" in column or any(ch.isdigit() for ch in column) or says_columns
             or (column not in COMMON_WORDS and column not in FRAME_ONLY_WORDS)]
    words = set(content_words(text))  # 'sofr' of repo_public is its sofr column; 'sofr volume' is sofr_volume_bn, never the rate
    exact += [ref.dataframe for ref in mentions.dataframes if only_frame and ref.dataframe in only_frame.columns
              and not any(len(words & set(column.split("_"))) > 1 for column in only_frame.columns)]
    if exact:
        return _exact_series(exact, local_frames, context)
    unknown = _unknown_names(text, context)
    if unknown:
        return reply(_not_in_catalog(unknown, mentions.dataframes or clause.mentions.dataframes, context))
    tags = tags_in(text)
    if any(tag.startswith("p") for tag in tags) and not _some_column_has_all(tags, local_frames, context):
        tags = [tag for tag in tags if not tag.startswith("p")]  # '90th percentile of the 10y': a statistic
        text = re.sub(r"\bpercentiles?\b", " ", PERCENTILE.sub(" ", text))  # ... so its words name no column
    residual = [word for word in content_words(text) if word not in mentions.frame_words and word not in FRAME_ONLY_WORDS
                and word not in COMMON_WORDS and not re.fullmatch(STAT_WORDS, word) and word not in ("date", "day")]  # 'and the date?'
    if not tags and not residual:  # 'and the min?': the series asked just before; 'sofr': the dataframe's main column
        if follow_up is not None and follow_up.series and not mentions.dataframes:
            return list(follow_up.series)
        if local_frames:
            return _main_series(local_frames, clause, context, many)
    names = {word for ref in local_frames for column in ref.columns for word in vocabulary.info(ref, column).name_words}
    match = vocabulary.match_columns(text, local_frames or None, only_tags=tags, ignore=mentions.frame_words - names)
    if prefer_unit and len(match.columns) > 1:
        match.columns = [(ref, column) for ref, column in match.columns if vocabulary.unit(ref, column) == prefer_unit] or match.columns
    if not re.search(COUNT_WORDS, clause.norm):  # a flag column is a series only when named or counted ('the month of March')
        match.columns = [(ref, column) for ref, column in match.columns if vocabulary.unit(ref, column) != "flag"]
    separate = len(tags) > 1 and re.search(r"\band\b|,", text) and not re.search(r"spread|minus|difference|gap|\d+s\d+s", text)
    if (separate or not match.columns) and len(tags) > 1 and many:
        series: list[Series] = []
        for tag in tags:
            one = vocabulary.match_columns(text, local_frames or None, only_tags=[tag])
            if len({ref for ref, _ in one.columns}) == 1 and len(one.columns) == 1:
                series.append(Series(*one.columns[0]))
        if len(series) == len(tags):
            return series
    if not match.columns and match.missing:
        return reply(_no_tenor(match.missing, local_frames, context))
    if match.columns and (tags or match.score >= 3 or (local_frames and match.score >= 2)):  # strong enough to name a column
        owners = list(dict.fromkeys(ref for ref, _ in match.columns))
        if len(owners) > 1 or (len(match.columns) > 1 and not clause.mentions.columns):
            bounds = many and _bounds(match.columns)
            if len(owners) == 1 and (re.search(LOAD_WORDS, clause.rest) and not stats_in(clause) or bounds):
                ordered = sorted(match.columns, key=lambda found: "high" in found[1]) if bounds else match.columns
                return [Series(ref, column) for ref, column in ordered]  # a load, or 'the target range': both its bounds, low first
            return _which_one(match.columns)
        return [Series(*match.columns[0])]
    if local_frames:
        return _main_series(local_frames, clause, context, many)
    if follow_up is not None:
        return list(follow_up.series)
    if match.columns:
        return _which_one(match.columns)
    return reply(message("which_data", examples=_examples(context)))


BOUND = re.compile(r"(?:^|_)(low|high)(?:_|$)")


def _bounds(columns: list[tuple[DataframeRef, str]]) -> bool:
    """Whether two columns are one range's bounds ('target_low' and 'target_high'): one name, low and high."""
    sides = [BOUND.search(column) for _, column in columns]
    return (len(columns) == 2 and all(sides) and {side[1] for side in sides} == {"low", "high"}
            and len({BOUND.sub("_", column) for _, column in columns}) == 1)


def _main_series(frames: list[DataframeRef], clause: Clause, context: Context, many: bool) -> list[Series] | Task:
    """What 'sofr' or 'the fed funds rate' means: each dataframe's main column (all its columns for a load)."""
    mains = [(ref, context.vocabulary.main_column(ref)) for ref in frames]
    if all(column for _, column in mains):
        return [Series(ref, column) for ref, column in mains] if many else [Series(*mains[0])]
    if re.search(LOAD_WORDS, clause.rest) and not stats_in(clause):
        return [Series(ref, "") for ref in frames]
    return reply(_which_column(next(ref for ref, column in mains if not column), context))


def _some_column_has_all(tags: list[str], frames: list[DataframeRef], context: Context) -> bool:
    pool = frames or context.vocabulary.frames
    return any(set(tags) <= context.vocabulary.info(ref, column).tags for ref in pool for column in ref.columns)


def _exact_series(columns: list[str], frames: list[DataframeRef], context: Context) -> list[Series] | Task:
    series: list[Series] = []
    for column in columns:
        owners = [ref for ref in (frames or context.vocabulary.frames_with_column(column)) if column in ref.columns]
        if not owners and frames:
            homes = [ref.key for ref in context.vocabulary.frames_with_column(column)]  # 'effr ... iorb': repo_public has both
            elsewhere = f" {' and '.join(homes)} {'has' if len(homes) == 1 else 'have'} it: name that dataframe to use it." if homes else ""
            return reply(message("no_column_named", column=column, keys=", ".join(ref.key for ref in frames),
                                 nearest=nearest_columns(column, frames), elsewhere=elsewhere))
        if len(owners) > 1:
            return _which_one([(ref, column) for ref in owners])
        series.append(Series(owners[0], column))
    return series


def nearest_columns(name: str, frames: list[DataframeRef], count: int = 3) -> str:
    """' The nearest it has: ...': the columns most like a name that is not there (unit suffix, a word it means, spelling)."""
    from rapidfuzz import fuzz  # the fuzzy matcher the typo fixer uses (offline_words.edits)

    parts = name.lower().split("_")
    meant = {synonym for part in parts for synonym in SYNONYMS.get(part, ())}
    def score(column: str) -> float:
        words = column.lower().split("_")
        return (50 * bool(meant & set(words)) + 20 * (len(parts) > 1 and words[-1] == parts[-1])
                + 30 * bool(set(parts[:-1] or parts) & set(words))
                + fuzz.ratio(name.lower(), column.lower()) / 10)
    columns = [column for ref in frames for column in ref.columns if column != ref.date_column]
    near = [column for column in sorted(columns, key=score, reverse=True)[:count] if score(column) >= 20]
    return f" The nearest it has: {', '.join(near)}." if near else ""


def _unknown_names(text: str, context: Context) -> list[str]:
    """Words that look like a series name the catalog does not have ('libor', 'bitcoin', 'svenpy07', 'swap rate')."""
    known = context.vocabulary.known_words

    def unknown(word: str) -> bool:  # plurals count: 'bill' is known when the docs say 'bills'
        return not ({word, word + "s", word + "es"} & known or (word.endswith("s") and word[:-1] in known))

    found = [token for token in re.findall(r"\b[a-z][a-z0-9]*_[a-z0-9_]+\b|\b[a-z]+\d+[a-z0-9]*\b", text)
             if not tags_in(token) and unknown(token)]
    words = re.findall(r"[a-z&][a-z0-9&]*", text)
    found += [word for word, following in zip(words, words[1:]) if following in SERIES_NOUNS and unknown(word)
              and word not in COMMON_WORDS and len(word) > 2]
    lone = [word for word in content_words(text) if unknown(word) and word not in COMMON_WORDS and len(word) > 2 and word not in SYNONYMS
            and word not in UNDERSTOOD]  # 'when did on rrp usage hit its minimum': words of a statistic, not a name
    if not context.vocabulary.find(text).dataframes and not tags_in(text):
        found += lone
    return list(dict.fromkeys(found))


SERIES_NOUNS = ("rate", "rates", "price", "prices", "index", "return", "returns", "inflation", "yield")
"""'swap rate', 'bitcoin price': the word before one of these names a series."""


def _not_in_catalog(unknown: list[str], frames: list[DataframeRef], context: Context) -> str:
    names, keys = ", ".join(f"'{word}'" for word in unknown[:3]), ", ".join(ref.key for ref in frames)
    if frames:
        return message("not_a_column", names=names, keys=keys, nearest=nearest_columns(unknown[0], frames))
    return message("not_in_catalog", names=names, examples=_examples(context, 5))


def _no_tenor(missing: list[str], frames: list[DataframeRef], context: Context) -> str:
    have = sorted({tag for ref in frames or context.vocabulary.frames for column in ref.columns
                   for tag in context.vocabulary.info(ref, column).name_tags if tag[-1:] == missing[0][-1:]}, key=lambda tag: (len(tag), tag))
    return message("no_tenor", tags=", ".join(missing), where=", ".join(ref.key for ref in frames) or "the catalog",
                   have=f" The ones I can use: {', '.join(have)}." if have else "")


def _which_one(candidates: list[tuple[DataframeRef, str]]) -> Task:
    """The reply asking which of several columns is meant (the candidates kept: a spread's side looks at them)."""
    return Task("reply", text=message("which_one", options="; ".join(f"{ref.key} {column}" for ref, column in candidates[:6])),
                detail={"candidates": candidates})


def _which_column(ref: DataframeRef, context: Context) -> str:
    columns = ", ".join(column for column in ref.columns if column != ref.date_column)
    return message("which_column", key=ref.key, columns=columns if len(columns) < 400 else columns[:400] + "...")


def _examples(context: Context, count: int = 3) -> str:
    return ", ".join(ref.key for ref in context.vocabulary.frames[:count]) or "none"


def _row_count(text: str) -> int | None:
    """How many rows a load asks for ('50 rows', 'the last 10'), if it says."""
    return next((int(match.group(1)) for pattern in PATTERNS["row_count"] if (match := re.search(pattern, text))), None)


BOTH_SIDES = re.compile(r"\b(?:above|over|higher|greater)\s+(?:or|and)\s+(?:below|under|lower|less)\b|"
                        r"\b(?:below|under|lower|less)\s+(?:or|and)\s+(?:above|over|higher|greater)\b")


def _threshold(text: str) -> tuple[str, float] | None:
    """('above' | 'below' | 'at or below' | 'at or above', limit) of a count question; 'not above 5.3' is 'at or below'."""
    if not re.search(COUNT_WORDS, text) or BOTH_SIDES.search(text):  # 'above or below 5.3': no one side to count
        return None
    match = THRESHOLD.search(text)
    sign = SIGN_WORDS.search(text)
    if match is None and sign is None:
        return None
    side = comparison_side(match) if match else ("below" if sign.group(1) in ("negative", "inverted") else "above")  # group 1 of 'used' is None
    limit = float(match["limit"]) if match else 0.0
    start = match.start() if match else sign.start()
    if NEGATED.search(text[max(0, start - 40):start]):
        return NEGATION_OF[side], limit
    return side, limit


DOLLAR_SCALES = {"trillion": 1000.0, "tn": 1000.0, "billion": 1.0, "bn": 1.0, "million": 0.001, "mn": 0.001}
"""A dollar limit's word ('trillion', 'bn', 'million') in billions, the unit of a `_bn` column."""


def _in_unit_of(threshold: tuple[str, float], written: re.Match[str], units: set[str | None]) -> tuple[str, float]:
    """A threshold written in bp of a series in percent (or percentage points), in percent of a bp series, or in trillions
    or millions of a $bn series, in the series' unit."""
    unit = written["unit"] if written["limit"] and float(written["limit"]) == threshold[1] else None
    if unit == "bp" and units == {"percent"}:
        return threshold[0], threshold[1] / 100
    if unit in ("%", "percent") and units == {"bp"}:
        return threshold[0], threshold[1] * 100
    scale = DOLLAR_SCALES.get(unit.rstrip("s")) if unit else None  # 'trillions' as 'trillion'; never 'bp' as billions
    if scale and units == {"$bn"}:  # 'below $1 trillion' of a $bn column: below 1000
        return threshold[0], threshold[1] * scale
    return threshold


def _side_only(text: str, before: tuple[str, float]) -> tuple[str, float]:
    """The threshold a follow-up keeps, on the side it names ('what about below?', 'and not above?'), else as it was."""
    match = re.search(rf"(?P<op>{OPERATORS})\W*$", text)
    if match is None:
        return before
    side = next(side for wording, side in _WORDINGS if re.fullmatch(wording, match["op"]))
    return (NEGATION_OF[side] if NEGATED.search(text[:match.start()]) else side), before[1]


def _outside_coverage(ask: DataAsk) -> Task | None:
    start, end = ask.period.start, ask.period.end
    for ref in ask.frames():
        if not ref.start or not ref.end:
            continue
        if (start and start > ref.end) or (end and end < ref.start):
            return reply(message("outside_coverage", asked=ask.period.label or ask.period.describe(), key=ref.key, start=ref.start, end=ref.end))
    return None


# ----------------------------------------------------------------------------- planning


def plan_data(ask: DataAsk, context: Context) -> Task:
    """Loads (or one stat script) that get the figures the ask needs."""
    if ask.flag is not None:  # the flag lives in its own table: only a script joins the two
        if "run_python" not in context.tool_names:
            return reply(message("flag_needs_python"))
        return Task("data", steps=[Step("script")], ask=ask)
    too_big = estimated_tokens(ask) > ROWS_IN_CONTEXT_SHARE * context.window_tokens
    all_data = ask.period.assumed == NO_PERIOD  # no period given: every row, which a script reads, not the context
    if not ask.wants_rows and (not ask.load_asked or all_data) and "run_python" in context.tool_names and too_big:
        return Task("data", steps=[Step("script")], ask=ask)
    return Task("data", steps=load_steps(ask), ask=ask)


def load_steps(ask: DataAsk) -> list[Step]:
    """One load per dataframe: the columns asked, the period's dates and a row cap (``_row_cap``)."""
    period, cap = ask.period, _row_cap(ask)
    steps = []
    for ref in ask.frames():
        columns = list(dict.fromkeys(series.column for series in ask.series if series.ref == ref and series.column))
        named = columns if ask.columns_named or not ask.wants_rows else []  # rows asked of the main column: every column
        roles = {"pipeline": ref.pipeline, "dataframe": ref.dataframe, "columns": named or None, "start": period.start, "end": period.end,
                 "limit": min(cap, MAX_ROWS) if cap else None}
        steps.append(Step("load", {key: value for key, value in roles.items() if value is not None}))
    return steps


def _row_cap(ask: DataAsk) -> int | None:
    """The rows a load may return: one for a point; the rows the period or the request names; else a cap (none for a load)."""
    period = ask.period
    if period.start or period.end:
        return 1 if period.point else period.last_rows or MAX_ROWS
    if period.every_row:
        return MAX_ROWS
    return period.last_rows or ask.limit or (None if ask.wants_rows else STAT_ROWS)


def estimated_tokens(ask: DataAsk) -> float:
    """Roughly how many tokens the rows a statistic needs would take in the context."""
    return sum(_rows_in(ask.period, ref) * (len([s for s in ask.series if s.ref == ref]) + 1) * TOKENS_PER_CELL for ref in ask.frames())


def _rows_in(period: Period, ref: DataframeRef) -> int:
    if period.last_rows:
        return period.last_rows
    if period.point:
        return 1
    if not period.start and not period.end:
        return ref.rows if period.every_row else STAT_ROWS
    start = max(period.start or ref.start, ref.start or "0000") or ref.start
    end = min(period.end or ref.end, ref.end or "9999") or ref.end
    try:
        first, last = dt.date.fromisoformat(start), dt.date.fromisoformat(end)
    except ValueError:
        return STAT_ROWS
    days = (last - first).days + 1
    return max(0, round(days * 5 / 7))
