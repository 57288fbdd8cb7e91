"""How the offline model reads words: abbreviations, typos, number words, tenors and percentiles.

``normalize(text, known)`` turns what a student typed into the lower-case text
every other rule reads:

- **Abbreviations and shorthand** (``ABBREVIATIONS``): ``pls`` -> ``please``,
  ``avg`` -> ``average``, ``yr`` -> ``year``, ``bps`` -> ``bp``, ``wat`` ->
  ``what``, ``u`` -> ``you``, ``fed funds`` -> ``federal funds``, ``tsy`` ->
  ``treasury``, ``ytd`` -> ``year to date``; ``what's`` -> ``what is``.
- **Number words**: ``ten rows`` -> ``10 rows``, ``five-year`` -> ``5-year``.
- **Typos**: a word of 4+ letters that is neither an English word (pyspellchecker's
  dictionary) nor one of the known words (the intent words plus every word of the
  catalog and its docs) becomes the known word one edit away (two for long words)
  that starts with the same letter (``averge`` -> ``average``, ``yeild`` -> ``yield``,
  ``catalgoue`` -> ``catalogue``). English words are never "corrected" (``found``
  stays ``found``, not ``fund``).

``tags_in(text)`` finds the descriptors that name a column without its name:
tenors (``5-year``, ``5y``, ``5 yr``, ``six-month``, ``30 calendar days`` ->
``5y``, ``6m``, ``30d``) and percentiles (``75th percentile``, ``p75``,
``upper quartile`` -> ``p75``). The same function reads column names and docs,
so a request and a column meet on the same tags.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable

from rapidfuzz.distance import OSA

ABBREVIATIONS: dict[str, str] = {
    "pls": "please", "plz": "please", "pleas": "please", "thx": "thanks", "ty": "thanks",
    "wat": "what", "wht": "what", "whats": "what is", "u": "you", "ur": "your", "r": "are", "cud": "could",
    "avg": "average", "av": "average", "ave": "average", "mean's": "mean",
    "yr": "year", "yrs": "years", "yld": "yield", "ylds": "yields", "mo": "month", "mos": "months", "mth": "month",
    "mths": "months", "wk": "week", "wks": "weeks", "obs": "observations", "pct": "percent",
    "bps": "bp", "bip": "bp", "bips": "bp", "basis points": "bp", "basis point": "bp",
    "std": "standard deviation", "stdev": "standard deviation", "stddev": "standard deviation",
    "std dev": "standard deviation", "sd": "standard deviation", "corr": "correlation", "correl": "correlation",
    "w/": "with", "tsy": "treasury", "tsys": "treasury", "treasuries": "treasury", "govt": "government",
    "fed funds": "federal funds", "fedfunds": "federal funds", "ytd": "year to date",
    "eoy": "year end", "year-end": "year end", "yearend": "year end", "eom": "month end",
    "month-end": "month end", "quarter-end": "quarter end", "docu": "docs", "dataframe's": "dataframe",
    "info": "information", "repos": "repo", "dir": "list files", "ls": "list files",
}
"""Shorthand a student types, and what it means. Multi-word keys are matched as phrases."""

NUMBER_WORDS: dict[str, int] = {
    "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
    "ten": 10, "eleven": 11, "twelve": 12, "fifteen": 15, "twenty": 20, "thirty": 30, "forty": 40,
    "fifty": 50, "sixty": 60, "ninety": 90, "hundred": 100, "dozen": 12,
}

UNIT_LETTERS = {"y": "y", "yr": "y", "year": "y", "m": "m", "mo": "m", "month": "m", "w": "w", "wk": "w",
                "week": "w", "d": "d", "day": "d"}
TENOR = re.compile(
    r"(?<![\w.])(\d{1,2})\s*-?\s*(?:calendar\s+|business\s+|trading\s+)?"
    r"(years?|yrs?|y|months?|mos?|m|weeks?|wks?|w|days?|d)(?![a-z])"
)
PERCENTILE = re.compile(r"(?<![\w.])(\d{1,2})(?:st|nd|rd|th)?\s*-?\s*(?:percentile|pctile|pct|perc)s?\b|(?<![\w])p(\d{1,2})\b")
QUARTILES = {"upper quartile": "p75", "lower quartile": "p25", "top quartile": "p75", "bottom quartile": "p25"}

WORD = re.compile(r"[a-z][a-z0-9_'-]*")


def normalize(text: str, known: Iterable[str] = ()) -> str:
    """Lower-case text with shorthand expanded, number words as digits and typos fixed."""
    lowered = text.lower().replace("\u2019", "'").replace("\u2018", "'").replace("\u201c", '"').replace("\u201d", '"')
    lowered = re.sub(r"\b(what|that|it|there|who|where|how)'s\b", r"\1 is", lowered)
    lowered = re.sub(r"(?<=[a-z])'s\b", "", lowered)  # the Fed's curve -> the Fed curve
    lowered = re.sub(r"(?<=[a-z]) 4 (?=the |a |me |us )", " for ", lowered)
    for short, long in sorted(ABBREVIATIONS.items(), key=lambda item: -len(item[0])):
        lowered = re.sub(r"(?<![\w/.])" + re.escape(short) + r"(?![\w])", long, lowered)
    lowered = _number_words(lowered)
    return fix_typos(lowered, known) if known else lowered


def _number_words(text: str) -> str:
    def digits(match: re.Match[str]) -> str:
        value = NUMBER_WORDS[match.group(1)]
        return f"{value}{match.group(2)}"

    names = "|".join(sorted(NUMBER_WORDS, key=len, reverse=True))
    return re.sub(rf"\b({names})(\s*-?\s*(?:rows?|records?|observations?|days?|years?|months?|weeks?|"
                  rf"business|trading|most|entries|values|points|lines)\b)", digits, text)


def fix_typos(text: str, known: Iterable[str]) -> str:
    """Each unknown word of 4+ letters becomes the known word one edit away (two for 9+ letters), same first letter.

    An edit is a letter added, dropped, changed, or two neighbours swapped (``yeild`` -> ``yield``,
    ``averge`` -> ``average``, ``documention`` -> ``documentation``); inflections of known words
    (``averaged``, ``findings``) are left alone.
    """
    vocabulary = set(known)
    by_letter: dict[str, list[str]] = {}
    for word in vocabulary:
        if len(word) >= 3 and word.isalpha():
            by_letter.setdefault(word[0], []).append(word)

    def fix(match: re.Match[str]) -> str:
        word = match.group(0)
        if len(word) < 4 or not word.isalpha() or word in vocabulary or _inflection_known(word, vocabulary):
            return word
        if word in english_words():
            return word
        allowed = 2 if len(word) >= 9 else 1
        close = sorted((edits(word, candidate), candidate) for candidate in by_letter.get(word[0], [])
                       if abs(len(candidate) - len(word)) <= allowed)
        return close[0][1] if close and close[0][0] <= allowed else word

    return WORD.sub(fix, text)


@functools.cache
def english_words():
    """pyspellchecker's English dictionary (loaded on first use: about half a second)."""
    from spellchecker import SpellChecker

    return SpellChecker(language="en").word_frequency


def edits(first: str, second: str) -> int:
    """Optimal-string-alignment distance: insertions, deletions, substitutions and adjacent swaps.

    rapidfuzz computes it: a well-kept C++ library for fuzzy matching (the usual choice beside
    thefuzz, whose distances it provides), about a microsecond per pair, so matching every word of a
    request against the whole catalog vocabulary stays cheap.
    """
    return OSA.distance(first, second)


def _inflection_known(word: str, vocabulary: set[str]) -> bool:
    if word + "s" in vocabulary or word + "es" in vocabulary:
        return True
    return any(word.endswith(ending) and (word[: -len(ending)] in vocabulary or word[: -len(ending)] + "e" in vocabulary)
               for ending in ("s", "es", "ed", "d", "ing", "ings", "er", "ers"))


def tags_in(text: str) -> list[str]:
    """Tenor and percentile tags a text names, in order: ``5y``, ``6m``, ``30d``, ``p75``."""
    lowered = _number_words(text.lower().replace("_", " "))
    lowered = re.sub(r"\b(\d{1,2})s(?=\d)", r"\1y ", lowered)  # 2s10s -> 2y 10s
    lowered = re.sub(r"\b(\d{1,2})s\b", r"\1y", lowered)
    lowered = re.sub(r"(\d)(y|m)(?=\d)", r"\1\2 ", lowered)  # 3m10y -> 3m 10y
    lowered = re.sub(r"\bpercentile\s+(\d{1,2})\b", r"p\1", lowered)  # percentile_75 -> p75
    found: list[tuple[int, str]] = []
    percentile_positions: set[int] = set()
    for match in PERCENTILE.finditer(lowered):
        found.append((match.start(), f"p{int(match.group(1) or match.group(2))}"))
        percentile_positions.update(range(match.start(), match.end()))
    if "percentile" in lowered:  # '75th and 25th percentiles': bare ordinals are percentiles too
        for match in re.finditer(r"(?<![\w.])(\d{1,2})(?:st|nd|rd|th)\b", lowered):
            if match.start() not in percentile_positions:
                found.append((match.start(), f"p{int(match.group(1))}"))
    for phrase, tag in QUARTILES.items():
        if phrase in lowered:
            found.append((lowered.index(phrase), tag))
    for match in TENOR.finditer(lowered):
        if match.start() in percentile_positions:
            continue
        unit = match.group(2).rstrip("s") if match.group(2) not in ("mos",) else "mo"
        letter = UNIT_LETTERS.get(unit) or UNIT_LETTERS.get(unit[:1], "")
        if letter:
            found.append((match.start(), f"{int(match.group(1))}{letter}"))
    return list(dict.fromkeys(tag for _, tag in sorted(found)))


SYNONYMS: dict[str, tuple[str, ...]] = {"usage": ("volume",), "uptake": ("volume",), "takeup": ("volume",),
                                        "utilization": ("volume",), "notional": ("volume",),
                                        "upper": ("top", "high"), "lower": ("bottom", "low"), "ceiling": ("top",),
                                        "floor": ("bottom",), "junk": ("high", "yield")}
"""Everyday words for what a column's name or docs say another way (added to a request's words when matching)."""


def content_words(text: str) -> list[str]:
    """The meaning-bearing words of a text (no stop words, singular), in order."""
    words = re.findall(r"[a-z][a-z&]*", text.lower().replace("_", " "))
    return [singular(word) for word in words if word and word not in STOP_WORDS and len(word) > 1]


def singular(word: str) -> str:
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


STOP_WORDS = frozenset(
    "a an the of for in on at to and or with from by as is are was were be been being it its this that these those "
    "what which who whom how when where why do does did done can could would should will shall may might must "
    "please me my our we us you your i i'm give show tell get let let's over during across per about between "
    "value values number numbers data series column columns figure figures "
    "any some all each every there here than then so just also now again ok okay hey hi".split()
)
"""Words that say nothing about which column is meant."""


COMMON_WORDS = frozenset(
    "average mean median min max lowest highest latest current typical level value values change changed move moved "
    "rose fell std standard deviation volatile volatility summary stats statistics how many count days day observation "
    "load fetch pull grab download give show display tell need get want like know find look see compute calculate "
    "report level year years month months quarter half week weeks business trading session since until end start "
    "first last past previous recent sample whole entire ever overall period time percent bp basis point points "
    "trillion trillions billion billions million millions dollar dollars expressed above below over under than "
    "greater less higher lower more exceed wonder hey please thanks could would should will shall hello "
    "during between from ago spread difference gap apart "
    "much far exceeded peak widest biggest largest smallest what which where when was were been had has have "
    "did does doing the of and vs versus for with into are its there here data series row rows record records "
    "entry entries thing things number numbers figure figures on in at to by as is it be do can you me my our "
    "any some all each every just also now again ok okay hi way kind sort type also up down got ok quick bigger "
    "smaller wider narrower better worse same different then factor ratio times multiple shrink shrank grow grew".split()
)
"""Everyday words a request uses around the names of data (never typos, never series names)."""

STAT_WORDS = frozenset("mean average median min max minimum maximum lowest highest latest std standard deviation "
                       "change count typical volatility peak bp percent trillion billion million dollar".split())
"""Words that name a statistic or a unit, never a column."""


UNIT_WORDS = {"bp": r"\bin bp\b|\bin basis points\b|\bexpressed in bp\b|\bbp\??$",
              "percent": r"\bin percent(?:age points)?\b|\bin %|\bin pct\b|\bin percentage\b",
              "trillion": r"\btrillions?\b", "million": r"\bin millions?\b", "billion": r"\bin billions?\b"}


def unit_asked(text: str) -> str | None:
    """The unit a request wants its answer in ('in bp', 'in percent', 'in billions'), if it names one."""
    return next((unit for unit, pattern in UNIT_WORDS.items() if re.search(pattern, text)), None)
