"""How the offline model reads words: shorthand, typos, number words, tenors and percentiles.

``normalize(text, known)`` gives the lower-case text every other rule reads; ``tags_in(text)`` the
tenors and percentiles a text names (``5y``, ``6m``, ``p75``), read the same way from requests, column
names and docs. Every word list and pattern lives in ``offline_words.toml``, read once here (``WORDS``).
"""

from __future__ import annotations

import functools
import re
import tomllib
from collections.abc import Iterable
from pathlib import Path

from rapidfuzz.distance import OSA

WORDS = tomllib.loads(Path(__file__).with_name("offline_words.toml").read_text(encoding="utf-8"))
"""The word lists and patterns of offline_words.toml: the one place the model's vocabulary is written."""


def message(name: str, **fields: object) -> str:
    """A ``[messages]`` template of offline_words.toml, filled in."""
    return WORDS["messages"][name].format(**fields)


def word_set(name: str) -> frozenset[str]:
    """A ``[lists]`` entry of offline_words.toml: space-separated words."""
    return frozenset(WORDS["lists"][name].split())


ABBREVIATIONS: dict[str, str] = WORDS["abbreviations"]
NUMBER_WORDS: dict[str, int] = WORDS["numbers"]
SYNONYMS: dict[str, tuple[str, ...]] = {word: tuple(meant) for word, meant in WORDS["synonyms"].items()}
STOP_WORDS, COMMON_WORDS, STAT_WORDS = word_set("stop"), word_set("common"), word_set("stat")
TENOR = re.compile(WORDS["patterns"]["tenor"])
COUNTED_DAYS = [[word] for word in ("in", "of", "had", "with", "where", "when", "did", "was", "were", "that", "for", "from", "saw", "since")]
PERCENTILE = re.compile(WORDS["patterns"]["percentile"])
WORD = re.compile(r"[^\W\d_][\w'-]*")  # 'cuál' one word, never 'cu' and 'l'
TOKEN = re.compile(r"[^\W_][\w'/.:-]*(?:[^\W_]|')|[^\W_]")  # letters with accents too
"""A word of a request or a docs page as the completeness check reads it ('2s10s', "fed's", 'on_rrp')."""
NUMBER_NAMES = "|".join(sorted(NUMBER_WORDS, key=len, reverse=True))
SHORTHAND = re.compile(r"(?<![\w/.])(" + "|".join(map(re.escape, sorted(ABBREVIATIONS, key=len, reverse=True))) + r")(?![\w])")
QUOTES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u201c": '"', "\u201d": '"'})


def normalize(text: str, known: Iterable[str] = ()) -> str:
    """Lower-case text with shorthand expanded, number words as digits and typos fixed."""
    lowered = text.lower().translate(QUOTES)
    for pattern, written in WORDS["rewrites"].items():  # "what's" -> 'what is', "the Fed's curve" -> 'the Fed curve'
        lowered = re.sub(pattern, written, lowered)
    lowered = _number_words(SHORTHAND.sub(lambda match: ABBREVIATIONS[match.group(1)], lowered))
    return fix_typos(lowered, known) if known else lowered


def _number_words(text: str) -> str:
    return re.sub(rf"\b({NUMBER_NAMES})(\s*-?\s*(?:rows?|records?|observations?|days?|years?|months?|weeks?|"
                  rf"business|trading|most|entries|values|points|lines)\b)",
                  lambda match: f"{NUMBER_WORDS[match.group(1)]}{match.group(2)}", text)


def fix_typos(text: str, known: Iterable[str]) -> str:
    """Each unknown word of 4+ letters becomes the known word one edit away (two for 9+ letters), same first letter.

    An edit is a letter added, dropped, changed, or two neighbours swapped (``yeild`` -> ``yield``);
    English words (pyspellchecker's dictionary) and inflections of known words are left alone.
    """
    vocabulary = set(known)
    by_letter: dict[str, list[str]] = {}
    for word in vocabulary:
        if len(word) >= 3 and word.isalpha():
            by_letter.setdefault(word[0], []).append(word)

    def fix(match: re.Match[str]) -> str:
        word = match.group(0)
        if len(word) < 4 or not word.isalpha() or word in vocabulary or _inflection_known(word, vocabulary) \
                or word in english_words():
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
    """Optimal-string-alignment distance (insertions, deletions, substitutions, adjacent swaps).

    rapidfuzz computes it: a well-kept C++ fuzzy-matching library (thefuzz's engine), about a
    microsecond per pair, so every word of a request can be matched against the whole catalog.
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
    lowered = re.sub(r"(\d)(y|m)(?=\d)", r"\1\2 ", lowered)  # 3m10y -> 3m 10y, 3m10s -> 3m 10s
    lowered = re.sub(r"\b(\d{1,2})s(?=\d)", r"\1y ", lowered)  # 2s10s -> 2y 10s
    lowered = re.sub(r"\b(\d{1,2})s\b", r"\1y", lowered)
    lowered = re.sub(r"\bpercentile\s+(\d{1,2})\b", r"p\1", lowered)  # percentile_75 -> p75
    found: list[tuple[int, str]] = []
    percentile_positions: set[int] = set()
    for match in PERCENTILE.finditer(lowered):
        found.append((match.start(), f"p{int(match.group(1) or match.group(2))}"))
        percentile_positions.update(range(match.start(), match.end()))
    if "percentile" in lowered:  # '75th and 25th percentiles': bare ordinals are percentiles too
        found += [(match.start(), f"p{int(match.group(1))}") for match in re.finditer(r"(?<![\w.])(\d{1,2})(?:st|nd|rd|th)\b", lowered)
                  if match.start() not in percentile_positions]
    found += [(lowered.index(phrase), tag) for phrase, tag in WORDS["quartiles"].items() if phrase in lowered]
    for match in TENOR.finditer(lowered):
        if match.group(2) == "days" and "-" not in match.group(0) and lowered[match.end():].split()[:1] in COUNTED_DAYS:
            continue  # 'which 3 days in 2024 had ...': days counted, never a '3d' column (the '30 days average' is one)
        unit = match.group(2).rstrip("s") if match.group(2) != "mos" else "mo"
        letter = WORDS["tenor_units"].get(unit) or WORDS["tenor_units"].get(unit[:1], "")
        if letter and match.start() not in percentile_positions:
            found.append((match.start(), f"{int(match.group(1))}{letter}"))
    return list(dict.fromkeys(tag for _, tag in sorted(found)))


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


def unit_asked(text: str) -> str | None:
    """The unit a request wants its answer in ('in bp', 'in percent', 'in billions'), if it names one."""
    return next((unit for unit, pattern in WORDS["units"].items() if re.search(pattern, text)), None)
