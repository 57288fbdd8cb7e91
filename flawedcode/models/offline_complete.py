"""Complete or decline: a data request is answered only when every word of it was used.

``unused_words`` accounts for each word of a clause read into a ``DataAsk`` (grammar, filler and the
words of what it applies: offline_words.toml ``[words]``; the words naming the chosen series and its
docs; the numbers it used); ``decline_unused`` says what it understood and what it could not use.
"""

from __future__ import annotations

import re

from flawedcode.models import offline_words as lexicon
from flawedcode.models.offline_answers import TRANSFORM_NAMES, stat_name
from flawedcode.models.offline_data import FRAME_ONLY_WORDS, SIGN_WORDS, DataAsk, Series
from flawedcode.models.offline_entities import Vocabulary
from flawedcode.models.offline_plan import Clause, Task, reply
from flawedcode.models.offline_words import TOKEN, WORDS, content_words, message, singular, tags_in, word_set

NEGATIONS = word_set("negations")
NARROWING = word_set("narrowing")
"""Words that change what a series is: never taken from its docs page as naming it (offline_words.toml)."""
KNOWN = lexicon.STOP_WORDS | lexicon.COMMON_WORDS | FRAME_ONLY_WORDS | {word for name in ("filler", "understood") for word in WORDS["words"][name]
                                                                       if " " not in word}
"""Words every data request may use: grammar, filler, and the words of the statistics and units it applies."""
PLACE_WORDS = {"second", "third", "fourth", "fifth", "2nd", "3rd", "4th", "5th"} - lexicon.STOP_WORDS - lexicon.COMMON_WORDS
"""Places ('the 3rd lowest'): known only to a request a ranking read them in."""
FILLER_PHRASES = re.compile(r"(?<![\w])(?:" + "|".join(map(re.escape, sorted((phrase for phrase in WORDS["words"]["filler"] if " " in phrase),
                                                                               key=len, reverse=True))) + r")(?![\w])")
COMPARISON = re.compile(WORDS["patterns"]["comparison"])
# 'count the days where the srf was used at all': a condition on the days that no threshold or flag took
DAYS_WHERE = re.compile(r"\bdays?\b[^.,;?]*?(?P<where>\b(?:with|when|where|on which|that)\b[^.,;?]*?"
                        r"\b(?:was|were|is|are|had|has|did|got|went|stayed)\b[^.,;?]*)")
COMBINING = re.compile(r"\b(?:" + "|".join(word_set("combined")) + r")\b")
CONDITION_WORDS = word_set("conditions")
"""Words that would select rows ('on Wednesdays'): never taken as naming a series, so a request with one is declined."""


def series_words(series: Series, vocabulary: Vocabulary, docs: bool = True) -> set[str]:
    """Every word that can name this series: its dataframe's and its column's names and docs, less those naming its other columns.
    ``docs=False``: names only, for a follow-up that took its series from an earlier request ('which bank borrowed the most that
    day?' after EFFR's volume: 'bank' and 'borrowed' are in EFFR's docs, but they do not name it there, they ask something else)."""
    ref = series.ref
    words = _words_of(f"{ref.pipeline} {ref.dataframe}")
    if series.column:
        info = vocabulary.info(ref, series.column)
        words |= set(info.name_words) | set(re.split(r"[\W_]+", series.column.lower())) | {series.column.lower()}
        words |= {word for alias in info.aliases for word in TOKEN.findall(alias.lower()) + content_words(alias)}
        words |= _words_of(info.description) if docs else set()  # its doc_words are among these
        words |= {word for word, meant in lexicon.SYNONYMS.items() if set(meant) <= set(info.name_words)}  # 'usage' of a volume
    others = other_columns_words(series, vocabulary)
    if not docs:
        return (words | _words_of(ref.title)) - CONDITION_WORDS
    described = vocabulary.docs_words.get(ref.key, frozenset()) - others - NARROWING
    return (words | (_words_of(f"{ref.title} {ref.description}") - (others if series.column else set())) | described) - CONDITION_WORDS


def other_columns_words(series: Series, vocabulary: Vocabulary) -> set[str]:
    """The words naming the other columns of a series' dataframe ('dvp' beside tri_party_on_rate)."""
    return {word for column in series.ref.columns if column != series.column for word in vocabulary.info(series.ref, column).name_words}


def _words_of(text: str) -> set[str]:
    return set(content_words(text)) | set(re.findall(r"[a-z]+", text.lower()))


def unused_words(clause: Clause, ask: DataAsk, vocabulary: Vocabulary, notes: list[str] = (), named_here: bool = True) -> list[str]:
    """The words of a data clause that nothing in the ask (or a visible note: 'our limit') accounts for, in order. ``named_here``:
    the clause names its series itself (else it took them from an earlier request, and only their names count)."""
    text = clause.rest
    for used in ask.slot_words:  # 'a year later', 'excluding quarter-ends': words a slot used
        text = text.replace(used, " ")
    text = re.sub(WORDS["patterns"]["formatting"], " ", FILLER_PHRASES.sub(" ", text))  # 'rounded to 2 dp': how to show it
    tags = {tag for series in ask.series if series.column for tag in vocabulary.info(series.ref, series.column).tags}
    tags |= {f"p{q}" for q in ask.percentiles}
    curve = r"\b\d{1,2}[sm]\d{1,2}[sm]\b|\b\d{1,2}s\b"  # 2s10s, 10s3m, the 10s
    text = re.sub(curve, lambda match: " " if set(tags_in(match.group(0))) <= tags else match.group(0), text)
    text = lexicon.TENOR.sub(lambda match: " " if set(tags_in(match.group(0))[:1]) & tags else match.group(0), text)
    text = lexicon.PERCENTILE.sub(lambda match: " " if set(tags_in(match.group(0))) & tags else match.group(0), text)
    ranked = [int(stat.lstrip("topbm")) for stat in ask.stats if re.fullmatch(r"(?:top|bottom)\d+", stat)]
    numbers = {float(count) for count in (ask.limit, ask.period.last_rows, ask.period.first_rows) if count}
    numbers |= {float(count) for count in ranked} | ({ask.threshold[1], abs(ask.threshold[1])} if ask.threshold else set())  # 'fell by 0.1': -0.1
    known = KNOWN | {word for word, value in lexicon.NUMBER_WORDS.items() if value in ranked} | ({"two"} if len(ask.series) == 2 else set())
    if not any(stat.startswith("nth_") for stat in ask.stats):  # 'and in the 3rd?': a place no ranking used
        known = known - PLACE_WORDS
    others = set().union(*(other_columns_words(series, vocabulary) for series in ask.series if series.column))
    named: set[str] = (set(clause.mentions.frame_words) - others) | {word for note in notes for word in content_words(note)}
    for series in ask.series:  # a series this clause does not name (a follow-up's): only its names, never its docs' other words
        named |= series_words(series, vocabulary, docs=named_here)
    negation_used = ask.threshold is not None and ask.threshold[0].startswith(("at or", "not "))  # 'not above 5.3': at or below
    unused: list[str] = []
    lowered_text = text.lower()
    for found in TOKEN.finditer(lowered_text):
        token, word = found.group(0), found.group(0).strip("'.:/-")
        if not word or (negation_used and (word in NEGATIONS or word.endswith("n't"))):
            continue
        parts = [part for part in re.split(r"[-_/]", word) if part]
        if number := re.fullmatch(r"(-?\d+(?:\.\d+)?)(%|bp|bn|tn|mn)?", word):  # '5.3%', '100bp', '900bn': the number
            sign = -1 if lowered_text[found.start() - 1:found.start()] == "-" else 1  # 'below -50 bp': a minus before the number
            if sign * float(number.group(1)) not in numbers:
                unused.append(token)
        elif word in NEGATIONS or NEGATIONS & set(parts) or not all(  # 'non-zero': a negation too
                part in known or singular(part) in known or part in named or singular(part) in named or part.rstrip("'s") in named
                for part in parts):
            unused.append(token)
    unused = list(ask.unusable) + unused
    lowered = clause.rest.lower()
    unused += [phrase for phrase in WORDS["words"]["unsupported"] if phrase in lowered and re.search(rf"(?<!\w){re.escape(phrase)}(?!\w)", lowered)
               and not any(phrase in used for used in ask.slot_words)]  # 'in each quarter' read as a grouping: used
    comparison = COMPARISON.search(text if ask.unusable else lowered)  # a comparison the unusable condition holds is named there
    if comparison and ask.threshold is None and ask.combine is None:
        unused.append(comparison.group(0))  # 'above the top of the target range': a comparison it did not apply
    sign = SIGN_WORDS.search(lowered) if ask.threshold is None and ask.period.start != ask.period.end else None
    if sign and sign.group(1) in ("positive", "negative"):  # 'the mean 2s10s in 2023 when it was positive': a sign of the days, not applied
        unused.append(sign.group(1))  # (one day's value says its sign itself)
    than_what = re.search(r"\b(?:higher|lower|greater|bigger|smaller|larger)\b", lowered) if ask.stats == ["count"] else None
    if than_what and ask.threshold is None and ask.combine is None:
        unused.append(than_what.group(0))  # 'how many days was sofr higher?': higher than what, it does not say
    one_period = len(clause.periods) == 1 and not (ask.threshold or ask.combine)
    than_then = re.search(r"\bthan\b[^.,;?]*\b(?:19|20)\d\d\b", clause.text.lower()) if one_period else None
    if than_then:
        unused.append(than_then.group(0).strip())  # 'how many times bigger was it than in december 2024?': than another period, unread
    days_where = DAYS_WHERE.search(lowered) if "count" in ask.stats and ask.threshold is None and ask.flag is None else None
    if days_where and not ask.combine:
        unused.append(" ".join(days_where["where"].split()))
    combining = COMBINING.search(lowered)
    if combining and ask.combine is None and combining.group(0) not in named and len(clause.periods) < 2 and "range" not in ask.stats:
        unused.append(combining.group(0))  # 'effr minus the target_low' read as one series: never that series alone
    return list(dict.fromkeys(unused))


def understood(ask: DataAsk, with_period: bool = True) -> str:
    """What a data ask means, in words: series, statistic, condition, period (no figure)."""
    series = (" minus " if ask.combine == "difference" else " and ").join(s.label for s in ask.series)
    series = f"{TRANSFORM_NAMES[ask.transform]} of {series}" if ask.transform else series  # 'the mean of daily changes of ...'
    what = f"the rows of {series}" if ask.wants_rows else \
        f"the {', '.join(stat_name(stat) for stat in ask.stats) or 'a summary'} of {series}"
    if ask.threshold:
        what += f" (days {ask.threshold[0]} {ask.threshold[1]:g})"
    if ask.flag:
        what += f" ({ask.flag_words})"
    return f"{what} over {ask.period.label or ask.period.describe()}" if with_period else what


def decline_unused(ask: DataAsk, unused: list[str]) -> Task:
    """The reply to a clause with words the model could not use: what it understood, what it could not use."""
    ambiguous = WORDS["ambiguous"]  # shorthand with two meanings ('vol'): asked back, never guessed
    if word := next((word for word in unused if word in ambiguous), None):
        return reply(message("ambiguous_word", understood=understood(ask), word=word, meanings=ambiguous[word]))
    bound, day = ([words for words in ask.unusable if re.fullmatch(WORDS["patterns"][name], words)] for name in ("event_bound", "event_day"))
    why = ("no column gives the date of that event, so I can't bound the period by it" if bound else
           "I can't pick a day by what a series did on it (ask when that series did it, then for that day)" if day else
           "I can't keep only the days a condition on the values selects" if ask.unusable or {"positive", "negative"} & set(unused) else
           "I can't apply a negation or an exclusion" if any(word in NEGATIONS for word in unused) else
           f"{'they name' if len(unused) > 1 else 'it names'} no column, date, statistic or condition I know")
    return reply(message("unused_words", understood=understood(ask), words=", ".join(f"'{' '.join(word.split())}'" for word in unused[:4]), why=why,
                         them="them" if len(unused) > 1 else "it"))
