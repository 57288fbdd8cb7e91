"""Readers, one per slot type: pure functions from tokens to a slot plus the words it used (issue 41).

A message is cut into lower-case tokens (``tokens``). Each reader looks only at the tokens no reader has used yet (``Tokens.free``), fills one slot
of the ``Request`` and marks the tokens it used, so the router can tell which words were understood and which were not. Names come from the catalog
itself (``Knowledge``: columns, their docs' units, dataframe ids and titles, the data's own trading days); phrases (statistics, units, comparisons,
seasons, holidays, ignored words) come from ``words.toml``. Written days are checked by ``dateparser``; a word that is no known word is matched to
the nearest catalog or phrase word with rapidfuzz (a typo)."""

from __future__ import annotations

import bisect
import calendar
import re
import tomllib
from dataclasses import dataclass, field, replace
from datetime import date, timedelta
from functools import cache
from pathlib import Path

from flawedcode.catalog import Catalog
from flawedcode.models.teaching.request import Anchor, Comparison, Condition, Direction, Granularity, Period, Ranking, Series, Slot, Statistic, Unit

WORDS = tomllib.loads((Path(__file__).with_name("words.toml")).read_text(encoding="utf-8"))
SIGN = r"(?:(?<!\d\s)(?<![\w.])-\s?)?"  # a minus kept with its number ('-0.25%', 'below - 25'), not a range's dash
LISTED = {Statistic(name) for name in ("mean", "median", "min", "max", "std", "latest", "first", "range")}  # read together
TOKEN = re.compile(r"\d{4}-\d{2}-\d{2}|\d{1,2}/\d{1,2}/\d{4}|" + SIGN + r"\$?\d+(?:,\d{3})*(?:\.\d+)?(?:%|bp|bn|tn)"
                   r"(?![a-z])|\d+-?[a-z]+(?:\d+[a-z]*)?|" + SIGN + r"\$?\d+(?:,\d{3})*(?:\.\d+)?|[^\W\d_]\w*(?:['-]\w+)*|[?;]")  # 'cuál': one word
TENOR = re.compile(r"(\d+)-?(y|yr|year|m|mo|month)s?")
NEGATED = {">": "<=", ">=": "<", "<": ">=", "<=": ">"}  # a comparison after 'no', 'not' or 'never'
TYPO_SCORE = 84  # How close (rapidfuzz ratio, 0-100) an unknown word must be to a known word to be read as it.
MONTHS = {name.lower(): number for number, name in enumerate(calendar.month_name) if name} | {
    name.lower(): number for number, name in enumerate(calendar.month_abbr) if name} | {"sept": 9}
_MONTH = "|".join(sorted(MONTHS, key=len, reverse=True))
_DAY = rf"(?:\d{{1,2}}(?:st|nd|rd|th)? (?:{_MONTH})|(?:{_MONTH}) \d{{1,2}})"
YEAR_ONCE = re.compile(rf"\b({_DAY}) (to|through|thru|until|and|-) ({_DAY}),? (\d{{4}})\b")  # '11 nov to 15 nov 2024': the year, for both days
LENGTHS = {"month": 1, "quarter": 3, "half": 6, "year": 12}  # a period's length in months, by its granularity or a shift's unit
SEPARATORS, PERIOD_UNITS, GAPS = {"?", ";"}, {"day", "week", "month", "quarter", "year"}, {"spread", "gap", "difference"}  # GAPS: a difference named
REFUSED = {f"{no} {unit}": None for no in WORDS["refused"]["words"] for unit in WORDS["units"]}  # 'not in percent', 'rather than bp'
ALIASES = [(re.compile(rf"(?<![\w/-]){re.escape(alias)}(?![\w/-])"), target) for alias, target in WORDS["aliases"].items()]  # 'take-up,'


@dataclass
class Tokens:
    """A message's tokens and which of them a reader has used."""
    words: list[str]
    used: set[int] = field(default_factory=set)

    def free(self) -> list[int]:
        return [i for i in range(len(self.words)) if i not in self.used]

    def take(self, indices: list[int] | range) -> tuple[str, ...]:
        self.used.update(indices)
        return tuple(self.words[i] for i in indices)

    def find(self, phrase: str, start: int = 0) -> int | None:
        """Where a phrase's words stand together among the free tokens (first place from ``start``), or None."""
        parts = phrase.split()
        for i in range(start, len(self.words) - len(parts) + 1):
            if self.words[i:i + len(parts)] == parts and not self.used.intersection(range(i, i + len(parts))):
                return i
        return None

    def unused(self) -> list[str]:
        return [self.words[i] for i in self.free() if self.words[i] not in SEPARATORS]


def tokens(text: str) -> Tokens:
    """Lower-case tokens, tenors one way ('10-year', 'ten-year' -> '10y'), years of two digits ("Q3-23", "May '24", "05-Aug-24"), typos mended."""
    lowered = YEAR_ONCE.sub(r"\1 \4 \2 \3 \4", without_label(arithmetic(text)).lower().replace('’', chr(39)).replace('–', '-').replace('−', '-'))
    lowered = re.sub(r"\b(?:([qh][1-4])\s?[-/']?|([1-4])q)(\d\d)\b", lambda m: f"{m[1] or 'q' + m[2]} 20{m[3]}", re.sub(
        rf"(?<=\s)'(\d\d)\b|\b(?:(\d\d?)-)?({_MONTH})-(\d\d)\b", lambda m: f"20{m[1]}" if m[1] else f"{m[2] or ''} {m[3]}-20{m[4]}", lowered))
    lowered = re.sub(r"(?<=\d): ?(?=[a-z])|(?<=\d{4}) - (?=\d|[a-z]{3})", " to ", f" {lowered} ")  # 'jan-24:jun-24'
    lowered = re.sub(r"\b(\d\d?)/(\d\d?)/(\d\d)\b", lambda m: f"20{m[3]}-{m[1]:0>2}-{m[2]:0>2}" if int(m[2]) > 12 else (
        f"20{m[3]}-{m[2]:0>2}-{m[1]:0>2}" if int(m[1]) > 12 else m[0]), lowered)  # '3/28/24', '28/3/24': one day, when only one order is a date
    for alias, target in ALIASES:
        lowered = alias.sub(target, lowered)
    words: list[str] = []
    for word in [part for found in TOKEN.findall(lowered) for part in _hyphen_parts(found.replace(" ", ""))]:
        stem = word.removesuffix("'s")  # "that month's", "2023's", "the bill's"; never "that's" (that is)
        word = stem if stem != word and (stem in knowledge().known_words or stem.isdigit()) and stem not in WORDS["contracted"]["words"] else word
        head, _, tail = word.partition("-")
        word = f"{WORDS['numbers'][head]}{tail}" if head in WORDS["numbers"] and tail in WORDS["tenors"] else word  # 'ten-year': 10y
        if words and words[-1].isdigit() and word in WORDS["tenors"] and int(words[-1]) <= 30:
            words[-1] = f"{words[-1]}{WORDS['tenors'][word]}"
            continue
        if (match := TENOR.fullmatch(word)) and int(match[1]) <= 30:
            word = f"{match[1]}{WORDS['tenors'].get(match[2], match[2][0])}"
        words += [word[:-2 - word.endswith("s")], "dp"] if re.fullmatch(r"\d+dps?", word) else [mend_typo(word)]  # '3dp': 3 decimals
    return Tokens(words)


def arithmetic(text: str) -> str:
    """Arithmetic in words: a formula's '-' between calls is 'minus' (brackets: spaces); 'the 10y minus 2y spread' is the 10y minus the 2y;
    'bips' and 'basis pts' are bp (for both rule sets: the older one reads units by its own patterns)."""
    text = re.sub(r"(?i)(\bminus\s+[\w-]+)\s+spread\b", r"\1", re.sub(r"(?i)\b(?:bips?|basis pts)\b", "bp", text))
    text, calls = re.subn(r"(?<=[)\]])\s*-\s*(?=[A-Za-z]+\()", " minus ", text)
    return re.sub(r"[=()\[\]]", " ", text) if calls or re.search(r"=\s*[A-Za-z]+\(", text) else text


def without_label(text: str) -> str:
    """'Question 7, part a: ...', 'Q9, from our listener Dave: ...': a label numbering the ask (a label word, small numbers, names), dropped;
    and a message's furniture: @mentions, :emoji:, an email's greeting line and its sign-off with all below it, and a reply of this model pasted
    back ('> yield_curve/treasury_yields yield_10y (percent) ...', or in quotes): context, never an ask."""
    text, marked = re.subn(r"[(\[]\d+ (?:marks?|points?|pts)[)\]]", " ", text, flags=re.IGNORECASE)  # an exam's '(2 marks)': 'Q1' numbers it
    text = re.sub(r"(?m)^>[^\n]*?\b[a-z_]+/[a-z_]+\b[^\n]*?(?:\.(?=\s)|$)|\"[^\"\n]*\b[a-z_]+/[a-z_]+ \w+ \([^)\n]*\)[^\"\n]*\"", " ", text)
    text = re.sub(r"\A[^?]*?\b[Yy]ou (?:said|told me|wrote|gave)\b[^?]+?(?:\s[-–—]|:)\s+(?=(?:what|which|how|when|was|did)\b)", "", text)  # you said
    text = re.sub(r"(?<!\w)@[\w.-]+|(?<!\w):[a-z0-9_+-]+:|\A\s*(?:hi|hello|hey|dear)\b[^\n]{0,40}\n|\n\s*(?:(?:kind |best |warm )?regards|thanks|"
                  r"thank you|many thanks|cheers|best|sincerely)\W*\n[\s\S]*\Z", " ", text, flags=re.IGNORECASE)
    text = re.sub(r"(?:^|(?<=[.!?] ))[A-Z][a-z]+ (?=(?:now |also |just )?(?:wants|says|asks|needs|would like|is asking)\b)", "", text)  # 'Leo wants'
    head, colon, rest = text.partition(": ")
    words = [(word, word.lower()) for word in re.findall(r"[\w']+", head)]
    labels = [low in WORDS["labels"]["words"] or low[:1] == "q" and low[1:].isdigit() and (int(low[1:]) > 4 or marked) for _, low in words]
    return rest if colon and any(labels) and all(label or low in WORDS["ignored"]["words"] or len(low) == 1 or low.isdigit() and len(low) < 3
                                                 or word[:1].isupper() for label, (word, low) in zip(labels, words)) else text


def _hyphen_parts(word: str) -> list[str]:
    """'tri-party' -> 'tri', 'party' (a tenor, '10-year', and a number stay whole)."""
    whole = "-" not in word or word.lstrip("-")[:1].isdigit() or TENOR.fullmatch(word) or word.split("-")[0] in WORDS["numbers"]
    return [word] if whole else word.split("-")


def mend_typo(word: str) -> str:
    if not 4 <= len(word) <= 40 or word in knowledge().known_words or not word.isalpha():
        return word
    from rapidfuzz import fuzz, process
    best = process.extractOne(word, knowledge().typo_targets, scorer=fuzz.ratio, score_cutoff=TYPO_SCORE)
    swapped = [w for i in range(len(word) - 1) if (w := word[:i] + word[i + 1] + word[i] + word[i + 2:]) in knowledge().series_words]
    return best[0] if best and best[0][0] == word[0] else swapped[0] if swapped else word  # 'agust'; two letters swapped: 'sfor'


@dataclass(frozen=True)
class Column:
    frame: str
    name: str
    unit: str
    keys: dict[str, float]  # word -> weight it adds when the request says it
    specific: tuple[str, ...]  # name words that, left unsaid, count (a little) against it


@dataclass
class Knowledge:
    columns: list[Column]
    frame_ids: dict[str, str]  # "sofr" -> "money_markets/sofr"
    days: dict[str, list[date]]  # frame -> its trading days, in order
    sources: dict[str, tuple[str, str]]  # frame -> (its parquet file, its date column)
    series_words: set[str]
    known_words: set[str]
    typo_targets: list[str]

    def trading_days(self, frame: str | tuple | None) -> list[date]:  # a frame, or a request's series (the first one's frame)
        return self.days.get((frame[0].frame if frame and not isinstance(frame, str) else frame) or "", next(iter(self.days.values())))


@cache
def knowledge(root: str | None = None) -> Knowledge:
    catalog = Catalog(Path(root) if root else None)
    columns, frame_ids, days = list[Column](), dict[str, str](), dict[str, list[date]]()
    sources = {info.ref: (str(info.path), info.date_column) for info in catalog.dataframes()}
    for info in catalog.dataframes():
        docs = catalog.column_docs(info.pipeline, info.dataframe)
        frame_ids[info.dataframe.lower()] = info.ref
        title = {word for word in re.findall(r"[a-z]+", info.title.lower()) if word not in ("sample", "yield", "curve")}
        main = next((c for c in info.columns if c.lower() in ("rate", "value", "price", "close", "level")), None)
        days[info.ref] = [date.fromisoformat(row[info.date_column]) for row in catalog.rows(info.pipeline, info.dataframe, [])]
        for name in info.columns:
            unit = docs[name].unit if name in docs else ""
            if name == info.date_column or unit in ("flag", "date"):
                continue
            columns.append(_column(info.ref, name, unit, title, main == name))
    series_words = {key for column in columns for key in column.keys}
    phrases = [WORDS[table] for table in ("statistics", "transforms", "units", "comparisons", "signs", "rankings", "halves",
                                          "holidays", "seasons", "numbers", "tenors", "rounding", "relative")]
    phrase_words = {word for table in phrases for phrase in table for word in phrase.split()}
    known = series_words | phrase_words | set(MONTHS) | set(WORDS["ordinals"]) | {
        word for table in ("ignored", "other_intents", "by_place") for word in WORDS[table]["words"]}
    targets = sorted(word for word in series_words | phrase_words | set(MONTHS) if len(word) >= 4 and word.isalpha())
    return Knowledge(columns, frame_ids, days, sources, series_words, known, targets)


def _column(frame: str, name: str, unit: str, title: set[str], main: bool) -> Column:
    dataframe, parts = frame.split("/")[1], [part for part in name.lower().split("_") if part]
    if (match := re.fullmatch(r"sven(p?)y(\d\d)", name.lower())):  # the fitted curve's columns carry their tenor
        parts = [name.lower(), f"{int(match[2])}y", "par" if match[1] else "zero"]
    keys = {part: 0.4 if part in WORDS["ignored"]["words"] or part.isdigit() else 2.0 for part in parts}  # "value", "1": not a column alone
    keys[name.lower()] = 2.0 * len(parts)  # the column's own name says all its parts
    keys |= {word: 1.0 for word in title | {s for part in parts for s in WORDS["synonyms"].get(part, ())} if word not in keys}
    keys[dataframe] = keys.get(dataframe, 0.0) + (2.5 if main else 2.0)
    keys[frame.split("/")[0]] = 0.01  # its pipeline's id ('yield_curve/repo_public') names nothing more
    return Column(frame, name, unit, keys, tuple(part for part in parts if part not in WORDS["generic"]["words"]))


def read_series(toks: Tokens) -> Series | None:
    """The one column the free words name best; a tie between two columns is ``Ambiguous`` (asked back)."""
    free, scored = toks.free(), list[tuple[float, Column]]()
    said = {toks.words[i] for i in free}
    for column in knowledge().columns:
        score = sum(weight for key, weight in column.keys.items() if key in said)
        if score < 2 or not _in_order(column, [toks.words[i] for i in free]):
            continue
        score -= 0.1 * sum(1 for part in column.specific if part not in said)
        score += 0.05 if column.frame.split("/")[1] in said else 0  # a dataframe named by its id wins a tie
        scored.append((score, column))
    if not scored:
        return None
    (top, column), *rest = sorted(scored, key=lambda item: -item[0])
    used = [i for i in free if toks.words[i] in column.keys or "_minus_" in column.name and toks.words[i] in GAPS]
    if rest and rest[0][0] > top - 1e-9:
        return Ambiguous(column.frame, column.name, column.unit, toks.take(used), others=(rest[0][1].frame + "." + rest[0][1].name,))
    return Series(column.frame, column.name, column.unit, toks.take(used))


def _in_order(column: Column, words: list[str]) -> bool:
    """A difference or spread column needs a gap word ('2y and 10y' are two series), and 'sofr_minus_effr_bp' its own order (not 'effr minus')."""
    parts = column.name.lower().split("_")
    if "minus" not in parts or "minus" not in words:  # 'sofr and effr' name two series, not their gap
        return not {"minus", "spread"} & set(parts) or bool((GAPS | {"between", "exceed", "minus", "curve", "slope", column.name}) & set(words))
    positions = [words.index(part) for part in parts if part in words and part != "minus"]
    return positions == sorted(positions)


@dataclass(frozen=True)
class Ambiguous(Series):
    """Two columns fit the words equally well: the request is asked back, never guessed."""
    others: tuple[str, ...] = ()


def read_phrase(toks: Tokens, table: dict[str, object]) -> tuple[object, tuple[str, ...]] | None:
    """The longest phrase of ``table`` among the free tokens: (its value, its words)."""
    for phrase in sorted((p for p in table if p.split()[0] in toks.words), key=lambda p: -len(p.split())):  # (its first word said)
        if (at := toks.find(phrase)) is not None:
            return table[phrase], toks.take(range(at, at + len(phrase.split())))
    return None


def read_statistic(toks: Tokens) -> Slot | None:
    found = read_phrase(toks, WORDS["statistics"])
    return Slot(Statistic(found[0]), found[1]) if found else None


def read_statistics(toks: Tokens) -> tuple[Slot, ...]:
    """The statistic asked, or several in the message's order when each describes the values ('mean, min and max'). A statistic ruled out
    beside another one asked ('not the avg, the median', 'the max rather than the min') is no ask: its words are taken."""
    for i in toks.free():
        at = i + next((len(no.split()) for no in WORDS["refused"]["words"] if toks.words[i:i + len(no.split())] == no.split()), 0)
        at += at > i and toks.words[at:at + 1] in (["the"], ["a"])
        n = next((n for n in (3, 2, 1) if at > i and at + n <= len(toks.words) and " ".join(toks.words[at:at + n]) in WORDS["statistics"]), 0)
        if n and read_statistic(Tokens(toks.words, toks.used | set(range(i, at + n)))):
            toks.take(range(i, at + n))
    found: dict = {}
    while (slot := read_statistic(trial := Tokens(toks.words, set(toks.used)))) and (not found or {slot.value, *found} <= LISTED):
        toks.used = trial.used
        found.setdefault(slot.value, (toks.words.index(slot.words[0]), slot))
    return tuple(slot for _, slot in sorted(found.values(), key=lambda pair: pair[0]))


def read_unit(toks: Tokens) -> Slot | None:
    """The unit asked ('in bp', 'as a decimal'); one refused beside it ('in bp, not in percent', 'rather than percent') is read, never asked."""
    while read_phrase(toks, REFUSED):
        pass  # each unit refused, taken first
    if not (found := read_phrase(toks, WORDS["units"])):
        return None
    words, first = found[1], min(i for i in toks.used if toks.words[i] == found[1][0])
    said = first > 0 and toks.words[first - 1] in ("in", "as") and first - 1 not in toks.used  # 'in bp', 'as a decimal'
    return Slot(Unit(found[0]), (toks.take([first - 1]) if said else ()) + words)


def read_rounding(toks: Tokens) -> tuple[int, tuple[str, ...]] | None:
    for at in (i for i in toks.free() if i and toks.words[i] in ("decimal", "decimals", "dp", "dps") and i - 1 in toks.free()):
        before = toks.words[at - 1]
        if (count := {**WORDS["numbers"], "a": None}.get(before, int(before) if before.isdigit() else None)) is not None:
            return count, toks.take([at - 1, at] + [at + 1] * (toks.words[at + 1:at + 2] in (["place"], ["places"])))  # '2 decimal places'
    if found := read_phrase(toks, WORDS["rounding"]):
        return int(found[0]), found[1] + toks.take([i for i in toks.free() if toks.words[i] in ("to", "a", "the", "nearest", "rounded", "round")])
    return None


def number_of(word: str) -> tuple[float, Unit | None] | None:
    """'5.3%' -> (5.3, PERCENT); '$900bn' -> (900, BILLIONS); '$2,000,000,000' -> (2, BILLIONS); '-25bp' -> (-25, BP); '2,000' -> (2000, None)."""
    if not (match := re.fullmatch(r"(-?)(\$?)(\d[\d,]*(?:\.\d+)?)(%|bp|bn|tn)?", word)):
        return None
    unit = {"%": Unit.PERCENT, "bp": Unit.BP, "bn": Unit.BILLIONS, "tn": Unit.TRILLIONS, "$": Unit.BILLIONS}.get(match[4] or match[2])
    return float(match[1] + match[3].replace(",", "")) / (1e9 if match[2] and not match[4] else 1), unit


def read_condition(toks: Tokens) -> Condition | None:
    if found := read_phrase(toks, WORDS["signs"]):
        return Condition(Comparison(found[0]), 0.0, None, found[1])
    for phrase in sorted(WORDS["comparisons"], key=lambda p: -len(p.split())):
        end = at + len(phrase.split()) if (at := toks.find(phrase)) is not None else 0
        if at is None or end >= len(toks.words) or end in toks.used or not (found := number_of(toks.words[end])) or re.fullmatch(
                r"(19|20)\d\d", toks.words[end]):
            continue  # no number after it, or a year: 'over 2024' is a period
        span, unit = [*range(at, end + 1)], found[1]
        if end + 1 < len(toks.words) and toks.words[end + 1] in WORDS["units"]:  # 'above 25 bp', 'over $500 million'
            found, unit = number_of(toks.words[end].lstrip("$")), Unit(WORDS["units"][toks.words[end + 1]])
            span.append(end + 1)
        comparison = WORDS["comparisons"][phrase]
        if at and at - 1 not in toks.used and toks.words[at - 1] in ("no", "not", "never") and comparison in NEGATED:  # 'no more than 5%'
            comparison, span = NEGATED[comparison], [at - 1, *span]
        return Condition(Comparison(comparison), found[0], unit, toks.take(span))
    return None


def read_claim(toks: Tokens) -> float | None:
    """'a student says the 2023 median EFFR was 5.33, right?': the figure quoted to check (a number no reader took), and the claim's words."""
    if not toks.take([i for i in toks.free() if toks.words[i] in WORDS["claims"]["words"] or len(toks.words[i]) == 1
                      and toks.words[i - 1:i] == ["student"]]):  # 'student D says'
        return None  # no claim's words ('student D says'): a number no reader took is left for the decline to name
    return next((number_of(toks.take([i])[0])[0] for i in toks.free() if number_of(toks.words[i]) and not _year(toks.words[i])), None)


def read_ranking(toks: Tokens) -> Ranking | None:
    """'the 3 lowest', 'top 5', 'which 4 days in 2024 had the busiest ...': how many of the highest or lowest values, with their days."""
    for i, word in [(i, toks.words[i]) for i in toks.free()]:
        count = int(word) if word.isdigit() else WORDS["numbers"].get(word) if word not in ("a", "one") else None  # 'the lowest one': min
        days = toks.words[i + 1:i + 2] in (["days"], ["dates"], ["sessions"])  # then the superlative anywhere: 'which 2 days of q3 saw the ...'
        for j in [i - 1, i + 1] + [k for k in toks.free() if days and k > i + 1]:
            if count and 0 <= j < len(toks.words) and j not in toks.used and toks.words[j] in WORDS["rankings"]:
                said = [i, j] + [i + 1] * (days and j != i + 1) + [i - 1] * (toks.words[i - 1:i] == ["which"])
                return Ranking(Direction(WORDS["rankings"][toks.words[j]]), int(count), toks.take(sorted(said)))
    return None


@dataclass(frozen=True)
class Shift:
    """A day counted from another ('the day before', '90 days before', 'a month before'): steps and their unit."""
    steps: int
    unit: str  # "trading_day" | "day" | "week" | "month" | "year"
    words: tuple[str, ...] = ()


@dataclass(frozen=True)
class PeriodProblem:
    """A period that cannot be one meaning ('02/05/2024', 'February 30th 2024'): said, never guessed."""
    text: str
    words: tuple[str, ...] = ()
    definite: bool = True  # False: a reading this package cannot make ('two periods'), which the old model may
    own: bool = False  # True: declined here, never left to the old model


def _year(word: str) -> int | None:
    return int(word) if re.fullmatch(r"(19|20)\d\d", word) else None


def _last_day(year: int, month: int) -> date:
    return date(year, month, calendar.monthrange(year, month)[1])


def read_days(toks: Tokens) -> list[Period | PeriodProblem]:
    """Days written as dates: ISO, dd/mm/yyyy (day first; one that could be either is a problem), words."""
    import dateparser
    found: list[Period | PeriodProblem] = []
    for i in toks.free():
        word = toks.words[i]
        if re.fullmatch(r"\d{4}-\d{2}-\d{2}", word):
            try:
                day = date.fromisoformat(word)
            except ValueError:
                year, month, day_number = (int(part) for part in word.split("-"))
                month_name = calendar.month_name[month] if 1 <= month <= 12 else f"month {month}"
                found.append(PeriodProblem(f"there is no {month_name} {day_number}, {year}, so I computed nothing", toks.take([i])))
                continue
            found.append(Period(day, day, Granularity.DAY, words=toks.take([i])))
        elif re.fullmatch(r"\d{1,2}/\d{1,2}/\d{4}", word):
            a, b, year = (int(part) for part in word.split("/"))
            if a <= 12 and b <= 12 and a != b:
                found.append(PeriodProblem(f"{word} could be {a} {calendar.month_name[b]} {year} or "
                                           f"{calendar.month_name[a]} {b}, {year}: which one do you mean? I computed nothing", toks.take([i])))
                continue
            day, month = (a, b) if a > 12 or b <= 12 else (b, a)
            parsed = dateparser.parse(f"{day} {calendar.month_name[month]} {year}", languages=["en"],
                                      settings={"STRICT_PARSING": True}) if month <= 12 else None
            found.append(Period(parsed.date(), parsed.date(), Granularity.DAY, words=toks.take([i])) if parsed
                         else PeriodProblem(f"{word} is no day of the calendar", toks.take([i])))
    for i in toks.free():
        if toks.words[i] not in MONTHS or i in toks.used:
            continue
        window = [j for j in range(max(0, i - 3), min(len(toks.words), i + 4)) if j not in toks.used]
        day = next((j for j in window if abs(j - i) <= 3 and j != i and _day_number(toks.words[j])), None)
        year = next((j for j in window if j > i and _year(toks.words[j])), None)
        if day is None or year is None:
            continue
        number, month, year_number = _day_number(toks.words[day]), calendar.month_name[MONTHS[toks.words[i]]], _year(toks.words[year])
        parsed = dateparser.parse(f"{number} {month} {year_number}", languages=["en"], settings={"STRICT_PARSING": True})
        span = [j for j in range(min(day, i), max(day, i, year) + 1) if toks.words[j] in ("the", "of", ",") or j in (day, i, year)]
        found.append(Period(parsed.date(), parsed.date(), Granularity.DAY, words=toks.take(span)) if parsed
                     else PeriodProblem(f"there is no {month} {number}, {year_number}, so I computed nothing", toks.take(span)))
    return found


def _day_number(word: str) -> int | None:
    return WORDS["ordinals"].get(word) or (int(d[1]) if (d := re.fullmatch(r"(\d{1,2})(st|nd|rd|th)?", word)) and 1 <= int(d[1]) <= 31 else None)


def read_holidays(toks: Tokens) -> list[Period]:
    from pandas.tseries.holiday import USFederalHolidayCalendar
    found = []
    for name, rule in sorted(WORDS["holidays"].items(), key=lambda item: -len(item[0])):
        end = at + len(name.split()) if (at := toks.find(name)) is not None else len(toks.words)
        if (year := _year(toks.words[end]) if end < len(toks.words) else None) is None:
            continue
        holiday = next((r for r in USFederalHolidayCalendar.rules if r.name == rule), None)  # a rule's name, or a fixed month-day
        day = holiday.dates(date(year, 1, 1), date(year, 12, 31))[0].date() if holiday else date(year, int(rule[:2]), int(rule[3:]))
        found.append(Period(day, day, Granularity.DAY, Anchor.HOLIDAY, words=toks.take(range(at, end + 1))))
    return found


def read_spans(toks: Tokens, default_year: int | None) -> list[Period]:
    """Quarters, halves, seasons, months and month ranges, years."""
    found: list[Period] = []
    for i in toks.free():
        if (match := re.fullmatch(r"q([1-4])", toks.words[i])):
            year_at = next((j for j in (i + 1, i + 2) if j < len(toks.words) and _year(toks.words[j])), None)
            year = _year(toks.words[year_at]) if year_at is not None else default_year
            if year is not None:
                found.append(holding(date(year, 3 * int(match[1]), 1), "quarter", toks.take([i] + ([year_at] if year_at is not None else []))))
    for phrase, half in WORDS["halves"].items():
        while (at := toks.find(phrase)) is not None:
            end = at + len(phrase.split())
            rest = [j for j in range(end, min(end + 2, len(toks.words))) if toks.words[j] in ("of", "in") or _year(toks.words[j])]
            year_at = next((j for j in [*rest, at - 1, at - 2] if j >= 0 and j not in toks.used and _year(toks.words[j])), None)  # '2023, H1'
            if (year := _year(toks.words[year_at]) if year_at is not None else default_year) is None:
                break  # 'the first half' of no year: its words stay unread, and are said
            first, last = date(year, 1 if half == 1 else 7, 1), _last_day(year, 6 if half == 1 else 12)
            year_words = [] if year_at is None else [*range(end, year_at + 1)] if year_at >= end else [year_at]
            found.append(Period(first, last, Granularity.HALF, words=toks.take([*range(at, end), *year_words])))
    for season, (start, stop) in WORDS["seasons"].items():
        if (at := toks.find(season)) is not None:
            year_at = next((j for j in (at + 1, at + 2) if j < len(toks.words) and _year(toks.words[j])), None)
            said = toks.words[at - 1:at] in (["the"], ["in"], ["during"], ["this"], ["that"], ["over"])  # 'did it fall': a verb, no season
            if (year := _year(toks.words[year_at]) if year_at is not None else default_year if said else None) is not None:
                found.append(Period(date(year, start, 1), _last_day(year, stop), Granularity.SPAN,
                                    words=toks.take([*range(at, (year_at or at) + 1)])))
    found += _months(toks, default_year or next((p.first.year for p in found), None))
    for i in toks.free():  # a year, not a number with a unit ('over 2000 bn')
        if (year := _year(toks.words[i])) is not None and toks.words[i + 1:i + 2] not in [[unit] for unit in WORDS["units"]]:
            found.append(Period(date(year, 1, 1), date(year, 12, 31), Granularity.YEAR, words=toks.take([i])))
    return found


def _months(toks: Tokens, default_year: int | None) -> list[Period]:
    found = []
    for i in toks.free():
        if i in toks.used or toks.words[i] not in MONTHS:
            continue
        first_month = last_month = MONTHS[toks.words[i]]
        used = [i]
        step = 1 if toks.words[i + 1:i + 2] and toks.words[i + 1] in MONTHS else 2  # 'mar-may' (split at its hyphen), 'mar to may'
        if i + step < len(toks.words) and (step == 1 or toks.words[i + 1] in ("to", "through", "thru", "-")) and toks.words[i + step] in MONTHS:
            last_month = MONTHS[toks.words[i + step]]
            used += list(range(i + 1, i + step + 1))
        year = _year(toks.words[after]) if (after := used[-1] + 1) < len(toks.words) else None
        used, year = used + [after] * bool(year), year or default_year
        if year is None or last_month < first_month:
            continue
        found.append(Period(date(year, first_month, 1), _last_day(year, last_month), Granularity.SPAN if last_month > first_month else
                           Granularity.MONTH, words=toks.take(used)))
    return found


def read_trading_days(toks: Tokens) -> tuple[int, bool, tuple[str, ...]] | None:
    """'the last 30 trading days', 'the first 20 trading days': (count, from the start, words)."""
    for i in (i for i in toks.free() if toks.words[i] in ("last", "first", "past", "final") and i + 2 < len(toks.words)):
        count = int(toks.words[i + 1]) if toks.words[i + 1].isdigit() else WORDS["numbers"].get(toks.words[i + 1])
        if count and toks.words[i + 2:i + 4] == ["trading", "days"]:  # 'the last 5 days of march': the old model's rows
            return int(count), toks.words[i] == "first", toks.take(range(i, i + 4))
    return None


def read_shift(toks: Tokens) -> Shift | None:
    """'the day before', '90 days before', 'a month before', 'the week after', 'a year ago', 'the previous quarter', 'last year'."""
    for i in toks.free():
        direction = WORDS["relative"].get(toks.words[i])
        unit = {"yr": "year"}.get(word := "".join(toks.words[i + 1:i + 2]), word)  # 'the prior month', 'last year', never 'the last week of
        if (direction and unit in PERIOD_UNITS - {"day"} or toks.words[i] == "last" and unit == "year") and toks.words[i + 2:i + 3] != ["of"]:  # june
            return Shift(direction or -1, unit, toks.take([i, i + 1]))
        after = toks.words[i + 1:i + 3]
        if direction is not None and (after[:1] == ["day"] or after in (["business", "day"], ["trading", "day"])):
            return Shift(direction, "trading_day", toks.take(range(i, i + (2 if after[0] == "day" else 3))))  # 'the previous business day'
        if direction is None or i == 0 or (unit := toks.words[i - 1].removesuffix("s")) not in PERIOD_UNITS:
            continue
        count_word = toks.words[i - 2] if i >= 2 else ""
        steps, start = (int(count_word) if count_word.isdigit() else WORDS["numbers"][count_word], i - 2) if count_word.isdigit() or (
            count_word in WORDS["numbers"]) else (1, i - 1)
        if start == i - 1 and unit == "day" and count_word in ("the", "business", "trading"):  # 'the day before', 'the business day before'
            unit, start = "trading_day", start - (count_word != "the")  # the trading day before
        return Shift(direction * steps, unit, toks.take(range(start, i + 1)))
    return None


def read_data_end(toks: Tokens, days: list[date]) -> list[Period]:
    """'the end of the data', 'the last day', 'the first month of the data', 'the month before the last one in the dataset' ('one': the unit
    named before it): the data's last (first) trading day, or the calendar month, quarter or year holding it."""
    words, edges, units, periods = toks.words, WORDS["data_edges"]["edges"], WORDS["data_edges"]["units"], []
    found = [(i - 3, i, units[words[i - 3]]) if words[i - 3] in units else (i - 4, i, words[i - 3]) for i in range(3, len(words))
             if words[i] in ("data", "dataset") and words[i - 2:i] in (["of", "the"], ["in", "the"])]  # even 'the last one' ignored
    for start, end, unit in found + [(at, at + 1, "day") for at in [toks.find("last day")] if at is not None and not found]:  # alone
        unit = next((w for w in reversed(words[:start]) if w in PERIOD_UNITS), "") if unit == "one" else unit
        if start < 0 or edges.get(words[start]) is None or unit not in PERIOD_UNITS - {"week"}:
            continue
        day, anchor = (days[0], Anchor.DATA_START) if edges[words[start]] == "first" else (days[-1], Anchor.DATA_END)
        said = toks.take(range(start, end + 1))
        periods.append(Period(day, day, Granularity.DAY, anchor, words=said) if unit == "day" else replace(holding(day, unit, said), anchor=anchor))
    return periods


def holding(day: date, unit: str, words: tuple[str, ...] = ()) -> Period:
    """The calendar month, quarter or year holding ``day``."""
    first = {"month": day.month, "quarter": (day.month - 1) // 3 * 3 + 1, "year": 1}[unit]
    return Period(date(day.year, first, 1), _last_day(day.year, first + LENGTHS[unit] - 1), Granularity[unit.upper()], words=words)


def shifted(day: date, shift: Shift, days: list[date]) -> date:
    """A day moved on the data's trading days: 'the day before' is the trading day before; a calendar move, the one at or before."""
    if shift.unit == "trading_day":
        at = bisect.bisect_left(days, day) + shift.steps
        return days[max(0, min(at, len(days) - 1))] if 0 <= at < len(days) else day + timedelta(days=shift.steps)
    at = bisect.bisect_right(days, moved := moved_on_calendar(day, shift)) - 1
    return days[at] if at >= 0 and moved <= days[-1] else moved


def moved_on_calendar(day: date, shift: Shift) -> date:
    if shift.unit in ("day", "week"):
        return day + timedelta(days=shift.steps * (7 if shift.unit == "week" else 1))
    year, month = divmod(day.month - 1 + shift.steps * {"year": 12, "quarter": 3}.get(shift.unit, 1), 12)
    return date(day.year + year, month + 1, min(day.day, calendar.monthrange(day.year + year, month + 1)[1]))


def edge_day(period: Period, edge: str, days: list[date]) -> date:
    """The first trading day of ``period`` ('start', 'beginning'), or its last ('end', 'close'); its own edge when it has no data."""
    inside = [day for day in days if period.first <= day <= period.last] or [period.first, period.last]
    return inside[-1] if edge in ("end", "close") else inside[0]


def read_end_of(toks: Tokens, periods: list[Period], days: list[date]) -> list[Period]:
    """'the end of q3 2024', 'the close of 2023', 'the start of 2024': one trading day of a period read already."""
    result = []
    for period in periods:
        at = next((i for i in toks.used if toks.words[i] == (period.words[0] if period.words else "")), None)
        edge = next((toks.words[j] for j in (at - 2, at - 1) if at is not None and j >= 0 and j not in toks.used
                     and toks.words[j] in ("end", "close", "start", "beginning") and toks.words[at - 1] in (toks.words[j], "of", "year")), None)
        day = edge_day(period, edge, days) if edge else period.first  # else the period itself; 'year end 2023' below
        result.append(period if edge is None else Period(day, day, Granularity.DAY, Anchor.WRITTEN, edge_of=period.last if edge in ("end", "close")
                      else None, words=toks.take([j for j in (at - 2, at - 1) if toks.words[j] in (edge, "of", "year")]) + period.words))
    return result
