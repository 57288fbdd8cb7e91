"""How the offline model reads a request: its clauses, each clause's intent (one scorer over the rows of
``offline_intents.toml``), and the plan: the ``Task``s each clause asks for.

``plan(text, context)`` splits a message into clauses, reads each (``offline_plan.read_clause``) and
gives it to the best row whose guards pass (``route``); the row's planner returns tasks and never
changes its input. The rows, the guards and the planners: docs/offline-model.md ("Intents as data").
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from dataclasses import replace

from flawedcode.models import offline_file_rules as files
from flawedcode.models import offline_memory as memory
from flawedcode.models import offline_words as words
from flawedcode.models.offline_complete import decline_unused, series_words, understood, unused_words
from flawedcode.models.offline_cues import fill, message, planner_for, ranked, register_planner, row, table
from flawedcode.models.offline_data import (
    DESCRIBE_STATS,
    DataAsk,
    Series,
    context_unit,
    described,
    described_in,
    names_only_a_series,
    plan_data,
    read_data_ask,
    stats_in,
)
from flawedcode.models.offline_dates import no_row_that_day
from flawedcode.models.offline_entities import DataframeRef, trading_days
from flawedcode.models.offline_periods import NO_PERIOD, Period, first_rows_range, shifted
from flawedcode.models.offline_plan import CODE_BLOCK, PATTERNS, Clause, Context, Step, Task, has_any, read_clause, reply, split_clauses
from flawedcode.models.offline_words import COMMON_WORDS, content_words, singular, tags_in, unit_asked
from flawedcode.models.teaching import introspect
from flawedcode.models.teaching.readers import read_series, read_unit, tokens, without_label
from flawedcode.models.teaching.router import IGNORED, SAME_PERIOD, SCENE  # "same quarter", "the whole year": an earlier request's period
from flawedcode.models.teaching.router import _read_period as read_period
from flawedcode.models.teaching.turn import DECLINED


def _is_docs(clause: Clause, context: Context) -> bool:
    """A docs word, and no period, statistic, percentile or spread that makes it a data question; a dataframe to describe."""
    if clause.periods or re.search(r"\b(?:minus|bp|basis points?|that (?:day|week|month|quarter|year)|same (?:day|date))\b", clause.rest) or (
            stats_in(clause) and not re.search(r"\bwhat (?:does|do)\b.*\bmean\b", clause.rest)):
        return False
    if PATTERNS["percentile_of"].search(clause.rest) or (PATTERNS["two_sides"].search(clause.rest) and len(clause.mentions.dataframes) > 1):
        return False  # 'what is the 90th percentile of the 10y?', 'the spread of A and B': a statistic, not a definition
    return bool(clause.mentions.dataframes or clause.mentions.columns or _docs_target(clause, context))


def _docs_target(clause: Clause, context: Context) -> list:
    """The dataframes a docs request is about: named, holding a column named or described, or 'it' (the last one named)."""
    if clause.mentions.dataframes:
        return list(clause.mentions.dataframes)
    owners = []
    for column in clause.mentions.columns:
        owners += [ref for ref in context.vocabulary.frames_with_column(column) if ref not in owners]
    if owners:
        return owners[:1]
    refs = list(dict.fromkeys(ref for ref, _ in described(clause, context)))
    if len(refs) == 1:
        return refs
    if re.search(r"\bit\b", clause.norm) and context.previous_frames:
        return list(context.previous_frames[:1])
    return []


def _plan_docs(clause: Clause, context: Context) -> list[Task]:
    refs = _docs_target(clause, context)
    if not refs:
        return [reply(message("docs_which"))]
    context.previous_frames = list(refs)
    pairs = described(clause, context, refs, clause.mentions.frame_words | set(table()["route"]["docs_ignore"]))
    columns = list(clause.mentions.columns) or [column for _, column in pairs if len(pairs) <= 2]
    source = has_any(clause.norm, ("source", "come from", "comes from", "where does", "where do"))
    return [_docs_task(ref, columns, clause, context, source) for ref in refs[:4]]


def _docs_task(ref, columns: list[str], clause: Clause, context: Context, source: bool) -> Task:
    """Docs, or (when a visible stub says they were offloaded) a read or search of the saved copy."""
    detail = {"columns": columns, "source": source, "key": ref.key}
    saved = memory.docs_stub_path(context.earlier, ref.key)
    if saved and memory.SAVED_WORDS.search(clause.norm) and "read_file" in context.tool_names:
        return Task("docs", steps=[Step("read_file", {"path": saved, "limit": 2000})], detail=detail)
    if saved and columns and "search_files" in context.tool_names:
        return Task("docs", steps=[Step("search_files", {"pattern": "|".join(columns), "path": saved})], detail=detail)
    return Task("docs", steps=[Step("docs", {"pipeline": ref.pipeline, "dataframe": ref.dataframe})], detail=detail)


def _follow_up(clause: Clause, context: Context) -> DataAsk | None:
    if context.previous_ask is None or row("courtesy").score(clause.norm) is not None:
        return None
    if names_only_a_series(clause):  # 'now do sofr', 'and effr?', 'the 20y?': the same question of another series
        return context.previous_ask
    if stats_in(clause) and not _names_a_series(clause, context):
        return context.previous_ask  # 'give me the standard deviation', 'the max in 2023?': another statistic of the same series
    leaning = PATTERNS["leaning"].match(clause.norm)
    if clause.mentions.dataframes and not leaning:
        return None
    if (leaning and leaning.group(0) != "with") or len(clause.norm.split()) <= 4:
        return context.previous_ask
    if re.search(r"\b(?:it|them|those|that)\b", clause.norm) and not clause.mentions.dataframes:
        return context.previous_ask
    return None


def _names_a_series(clause: Clause, context: Context) -> bool:
    """A dataframe, a column, a tenor or percentile, or a column described in words ('the 3y yield', 'reserves')."""
    return bool(clause.mentions.dataframes or clause.mentions.columns or tags_in(clause.rest) or described(clause, context))


def _plan_data(clause: Clause, context: Context) -> list[Task]:
    follow_up = _follow_up(clause, context)
    if follow_up is None and not clause.mentions.dataframes and context.previous_frames:  # 'then load the last 10 rows'
        main = bool(stats_in(clause))  # 'get the docs, then give me the mean': of its main column, never of a column ''
        follow_up = DataAsk([Series(ref, context.vocabulary.main_column(ref) if main else "") for ref in context.previous_frames],
                            wants_rows=not main and not _names_a_series(clause, context))  # 'the 3y on Aug 1st': its value, not rows
    asked = _those_two(clause, context) or read_data_ask(clause, context, follow_up)
    if isinstance(asked, Task):
        return [asked]
    declined = _declined(asked, clause, context)
    if declined is not None:
        return [declined]
    if (asked.period.first_rows or (asked.period.last_rows and asked.period.start)) and asked.frames() and asked.frames()[0].start:
        rows = first_rows_range(asked.period, trading_days(context.vocabulary, asked.frames()[0]))
        if rows.start == rows.end and {"change", "pct_change"} & set(asked.stats) and len(clause.periods) < 2:  # one day: no change
            return [reply(words.message("change_one_day", day=asked.period.label or rows.describe()))]
        asked = replace(asked, period=rows, limit=None, stats=["latest"] if rows.start == rows.end and asked.stats ==
                        list(DESCRIBE_STATS) else asked.stats)
    if asked.transform and asked.period.start and asked.period.start == asked.period.end:  # a day's move: from the row before it
        before = (dt.date.fromisoformat(asked.period.start) - dt.timedelta(days=7)).isoformat()
        asked = replace(asked, period=replace(asked.period, start=before))
    context.previous_frames = asked.frames()
    reuse = _rows_in_view(asked, context)
    if reuse is not None:
        return [reuse]
    if (asked.period.every_row or asked.period == Period()) and not asked.wants_rows and not asked.limit:
        same = re.match(r"\W*(?:and\s+)?(?:the\s+)?same\b(?:\s+(?:thing|again))?", clause.norm) if context.previous_ask is None else None
        said = next((phrase for phrase in SAME_PERIOD if re.search(rf"\b{phrase}\b", clause.norm)), None) or (same and same[0].strip())
        if said:  # 'same quarter' after a turn with no period, 'same for sofr' with no request in view: never all the data
            return [reply(words.message("same_period_of_nothing", words=said))]
    if asked.period == Period() and not asked.wants_rows and not asked.limit:
        asked = replace(asked, period=Period(every_row=True, assumed=NO_PERIOD))  # never silently the last rows
    periods = clause.periods if len(clause.periods) > 1 and not asked.combine else [asked.period]
    periods = [first_rows_range(period, trading_days(context.vocabulary, asked.frames()[0])) if period.first_rows and period.start
               and asked.frames() else period for period in periods]
    days = [_the_day(period, asked, context) for period in periods]
    if len(periods) == 2 and {"change", "pct_change"} & set(asked.stats) and all(days):
        first, last = sorted(days)  # 'on 15 March 2023 and on 15 March 2024: what changed?', 'from year end 2023 to year end 2024'
        periods = [Period(first, last, label=f"from {first} to {last}")]
    ratio = len(periods) == 2 and "factor" in asked.stats  # 'how many times bigger in Dec 2024 than in Jan 2023': the two means' ratio,
    if ratio:  # never each period's own latest / first
        asked = replace(asked, stats=list(dict.fromkeys(["mean" if stat == "factor" else stat for stat in asked.stats])))
    each = [[series] for series in asked.series] if len(asked.series) > 1 and not asked.combine and not asked.wants_rows \
        else [asked.series]
    tasks = [plan_data(replace(asked, period=period, series=series), context) for period in periods for series in each]
    if len(periods) == 2 and len(each) == 1 and (ratio or PATTERNS["period_gap"].search(clause.norm)):
        tasks.append(Task("period_gap", detail={"tasks": tasks[:2], "ratio": ratio}))  # 'higher in H1 than in H2, by how much?'
    return tasks


def _the_day(period: Period, asked: DataAsk, context: Context) -> str | None:
    """The one day a period names: a single day, or a point's last trading day on or before its end; None for a range."""
    if period.start and period.start == period.end:
        return period.start
    if not period.point or not period.end or not asked.frames():
        return None
    return max((day for day in trading_days(context.vocabulary, asked.frames()[0]) if day <= period.end), default=None)


def _those_two(clause: Clause, context: Context) -> DataAsk | None:
    """'how big was the gap between those two?': the spread of the last two series asked, over the later one's period."""
    if clause.mentions.dataframes or clause.mentions.columns or not PATTERNS["those_two"].search(clause.norm):
        return None
    series = list(dict.fromkeys(series for ask in context.recent_asks if len(ask.series) == 1 and not ask.combine
                                for series in ask.series))
    if len(series) < 2:
        return None
    later = next(ask for ask in reversed(context.recent_asks) if ask.series == [series[-1]])
    return DataAsk(series[-2:], ["mean"], combine="difference", period=later.period,
                   unit=unit_asked(clause.norm) or context_unit(context), text=clause.norm)


def _declined(asked: DataAsk, clause: Clause, context: Context) -> Task | None:
    """Why a request gets no figure: a day that is not one day, a word it cannot use, a day with no row, a month of two years."""
    if clause.date_problems:
        return reply(message("bad_day", understood=understood(asked, with_period=False), problems="; ".join(clause.date_problems)))
    unused = unused_words(clause, asked, context.vocabulary, memory.visible_notes(context.earlier), _names_a_series(clause, context))
    if unused:  # complete or decline (offline_complete.py): never answer the wider question
        return decline_unused(asked, unused)
    why = _day_without_row(asked, context) or _which_year(asked)
    return reply(why) if why else None


def _which_year(ask: DataAsk) -> str | None:
    """'mean EFFR in june' when the data has two Junes: ask which, never pick one silently."""
    if not ask.period.assumed.startswith("no year given") or not ask.period.start:
        return None
    month = ask.period.start[5:7]
    years = sorted({str(year) for ref in ask.frames() if ref.start and ref.end
                    for year in range(int(ref.start[:4]), int(ref.end[:4]) + 1)
                    if ref.start[:7] <= f"{year}-{month}" <= ref.end[:7]})
    if len(years) < 2:
        return None
    named = re.sub(r"^(?:in|for|during|of)\s+", "", ask.period.label).strip() or ask.period.start[:7]
    return message("which_year", understood=understood(ask, with_period=False), named=named, years=", ".join(years), last=years[-1])


def _day_without_row(ask: DataAsk, context: Context) -> str | None:
    """A single day the data has no row for (a weekend, a holiday): why, and the nearest days that have one."""
    day = ask.period.start
    for ref in ask.frames() if day and day == ask.period.end else []:
        dates = trading_days(context.vocabulary, ref)
        if dates and day not in dates:
            return no_row_that_day(dt.date.fromisoformat(day), dates, ref.key)
    return None


def _rows_in_view(ask: DataAsk, context: Context) -> Task | None:
    """A statistic with no period about a dataframe whose rows are in view: use those rows (read back if offloaded)."""
    period = ask.period
    if ask.wants_rows or ask.combine or ask.limit or period.start or period.end or period.last_rows or period.every_row or len(ask.frames()) != 1:
        return None
    found = memory.visible_rows(context.earlier, ask.frames()[0].key)
    if found is None:
        return None
    kind, value = found
    if kind == "stub":
        return Task("data", steps=[Step("read_file", {"path": value, "limit": 2000})], ask=ask)
    return Task("data", steps=[], ask=ask, detail={"rows": value})


def _columns_asked(clause: Clause, context: Context) -> list[str]:
    """The columns a request names, by name or (one clear best match) in the words of their docs."""
    return list(clause.mentions.columns) or list(dict.fromkeys(column for _, column in described(clause, context)))


def _plan_coverage(clause: Clause, context: Context) -> list[Task] | None:
    """'when does the treasury yields data start and end?': its first and last dates and rows, from the catalog."""
    refs = _docs_target(clause, context)
    covers = "; ".join(f"{ref.key} covers {ref.start} to {ref.end} ({ref.rows:,} rows)" for ref in refs if ref.start)
    return [reply(message("coverage", covers=covers))] if covers else None


def _requests(part: str, context: Context) -> list[str]:
    """'the mean sofr in jan 2024 and also the max effr in feb 2024': two requests, each with its own series and period
    (the second leans on the first, so 'and effr in feb 2024' keeps the statistic)."""
    preamble = PATTERNS["preamble"].match(part)
    if preamble and not _names_anything(read_clause(preamble["lead"], context.vocabulary)) \
            and not set(content_words(preamble["lead"])) & context.vocabulary.known_words and not changes_answer(preamble["lead"]):  # 'net of fees:'
        part = part[preamble.end():]  # 'I'm writing a memo: what was ...': the scene it sets is no request
    for joined in PATTERNS["joined"].finditer(part) if not PATTERNS["paired"].search(part.lower()) else []:
        sides = [read_clause(side, context.vocabulary) for side in (part[:joined.start()], part[joined.end():])]
        if all((side.mentions.dataframes or side.mentions.columns) and side.periods for side in sides):
            return [part[:joined.start()]] + _requests("and " + part[joined.end():], context)
    return [part]


def _names_anything(clause: Clause) -> bool:
    """Whether a phrase names a dataframe, a column, a tenor, a period, a number, a path, code or a quoted word."""
    return bool(clause.mentions.dataframes or clause.mentions.columns or tags_in(clause.rest) or clause.periods
                or re.search(r"\d", clause.text) or clause.paths or clause.code or clause.quoted)


def _plan_column_home(clause: Clause, context: Context) -> list[Task]:
    """'which dataframe has the volume_bn column?': the dataframes whose docs list each column named."""
    homes = [(column, [ref.key for ref in context.vocabulary.frames_with_column(column)]) for column in _columns_asked(clause, context)]
    said = "; ".join(f"the column {column} is in {' and '.join(keys)}" for column, keys in homes)
    which = "its docs" if sum(len(keys) for _, keys in homes) == 1 else "the docs of one"
    return [reply(message("column_home", said=said, which=which))]


EXISTS_WORDS = re.compile(r"^(?:is|are)\s+(?:there\s+)?|^(?:do|does)\s+(?:you|the\s+(?:data|catalog|catalogue))\s+(?:have|hold|"
                          r"contain|carry|include)\b|\b(?:in|from)\s+(?:the\s+)?(?:data|catalog|catalogue)\b|\b(?:an?|any|the|columns?|"
                          r"data|series|available|anywhere|at all|for|on)\b|[?.!]")


def _plan_column_exists(clause: Clause, context: Context) -> list[Task] | None:
    """'is the srf rate in the data?', 'do you have reserves?': the column every word names, else the nearest ones that exist."""
    asked = " ".join(EXISTS_WORDS.sub(" ", clause.rest).split())
    wanted = [word for word in content_words(words.PERCENTILE.sub(" ", words.TENOR.sub(" ", asked))) if word not in COMMON_WORDS]
    vocabulary = context.vocabulary
    tags = set(tags_in(asked))  # 'a 10 year yield', 'the 99th percentile': the columns with those tags only
    if not wanted and not tags:  # 'do you have any data?': the catalog's own row
        return None

    def fits(ref: DataframeRef, column: str, own: set[str]) -> bool:  # its tags, and every word asked among its words
        return tags <= set(vocabulary.info(ref, column).tags) and all({word, singular(word)} & own for word in wanted)
    named = [(ref, column) for ref in vocabulary.frames for column in ref.columns if wanted  # in its name or its dataframe's
             and fits(ref, column, set(vocabulary.info(ref, column).name_words) | set(ref.dataframe.split("_")))]  # 'dvp rate': both
    found = named or [(ref, column) for ref, column in (described_in(asked, context) if wanted else [])  # or in its docs
                      if fits(ref, column, series_words(Series(ref, column), vocabulary))]
    if found:
        listed = "; ".join(f"{ref.key} has {column} ({vocabulary.unit(ref, column) or 'no unit'}), from {ref.start} to {ref.end}"
                           for ref, column in found[:6])
        return [reply(message("column_exists", found=listed + (f" (and {len(found) - 6} more)" if len(found) > 6 else "")))]
    if tags:  # 'is there a 15 year yield?': the tenors that exist
        return _plan_data(clause, context)
    having = {word: [(ref, column) for ref in vocabulary.frames for column in ref.columns if word in vocabulary.info(ref, column).name_words]
              for word in wanted}
    rarest = sorted((pairs for pairs in having.values() if pairs), key=len)  # the columns of its rarest word first ('srf', not 'rate')
    nearest = list(dict.fromkeys(f"{ref.key} {column}" for pairs in rarest for ref, column in pairs))[:6]
    return [reply(message("column_missing", asked=asked or clause.rest, nearest="; ".join(nearest) or "none shares a word with it"))]


def _describes_a_column(clause: Clause, context: Context) -> bool:
    """'peak reserves': a statistic of a column named in words, with no dataframe or period named."""
    return bool(stats_in(clause)) and context.vocabulary.match_columns(clause.rest).score >= 3


Test = Callable[[Clause, Context], bool]
GUARDS: dict[str, Test] = {
    "no_dataframe": lambda clause, context: not clause.mentions.dataframes,
    "no_code": lambda clause, context: not clause.code,
    "no_period": lambda clause, context: not clause.periods,
    "no_path": lambda clause, context: not clause.paths,
    "no_statistic": lambda clause, context: not stats_in(clause),
    "several_clauses": lambda clause, context: context.clause_count > 1,
    "alone_or_long": lambda clause, context: context.clause_count == 1 or len(clause.norm.split()) > 3,
    "note": lambda clause, context: memory.is_note(clause.norm) and "?" not in clause.text,
    "note_question": lambda clause, context: memory.is_note_question(clause.norm, context),
    "figure_question": lambda clause, context: memory.is_figure_question(clause.norm),
    "pipelines_only": lambda clause, context: bool(clause.mentions.pipelines and not clause.mentions.columns),
    "docs_again": lambda clause, context: (context.previous_rule == "docs" and bool(clause.mentions.dataframes)
                                          and len(clause.norm.split()) <= 4 and not clause.periods),
    "docs": _is_docs,
    "column_question": lambda clause, context: (not clause.mentions.dataframes and not clause.mentions.pipelines and not clause.periods
                                                and not stats_in(clause) and bool(_columns_asked(clause, context))),
    "data": lambda clause, context: bool(clause.mentions.dataframes or clause.mentions.columns or tags_in(clause.rest) or clause.periods
                                         or clause.date_problems or _follow_up(clause, context) is not None
                                         or _describes_a_column(clause, context)),
    "has_code": lambda clause, context: bool(clause.code and clause.code.strip()),
    "has_path": lambda clause, context: bool(clause.paths),
    "has_script": lambda clause, context: any(path.endswith(".py") for path in clause.paths),
    "last_path": lambda clause, context: bool(context.last_path),
    "run_tests": files._is_run_tests, "show_function": files._is_show_function, "search_files": files._is_search_files,
}
"""The tests a row names under ``guard`` that need the parsed clause or the conversation, not only its words."""


def route(clause: Clause, context: Context) -> tuple[str, list[Task]] | None:
    """The best row whose guards pass and whose planner plans the clause: its plan name and its tasks."""
    for intent in ranked(clause.norm, context.tool_names):
        if all(GUARDS[name](clause, context) for name in intent.guard):
            planner = planner_for(intent)
            if intent.reply:  # a row that only answers: its template, the label of the cue found filled in
                tasks = [reply(fill(intent.reply, label=intent.label(clause.norm) if intent.labels else ""))]
            else:
                tasks = planner(clause, context) if planner else [Task(intent.task, text=clause.text)] if intent.task else None
            if tasks is not None:
                return intent.plan or intent.name, tasks
    return None


MAX_REQUEST_CHARS = 4000
"""A message longer than this (code blocks aside) is material, not a request: it is declined, never parsed."""
MAX_WORD_CHARS = 200
"""A word longer than this (a paste, a hash, a path of many folders) is not in any vocabulary: the request is declined."""
MAX_CLAUSES = 12
"""At most this many requests of one message are planned (one tool call each, at least); the rest are reported."""
CONTROL_CHARACTERS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def bounded(text: str) -> tuple[str, str | None]:
    """The request with control characters made spaces, and why it is declined if it is too long (the work per request is bounded)."""
    text = CONTROL_CHARACTERS.sub(" ", text)
    prose = CODE_BLOCK.sub(" ", text)
    if len(prose) > MAX_REQUEST_CHARS:
        return text, message("too_long", length=len(prose), limit=MAX_REQUEST_CHARS)
    long_word = next((word for word in prose.split() if len(word) > MAX_WORD_CHARS), None)
    if long_word is not None:
        return text, message("long_word", length=len(long_word), start=long_word[:24], limit=MAX_WORD_CHARS)
    return text, None


def plan(text: str, context: Context) -> list[Task]:
    """The tasks for one message, clause by clause, in order."""
    text, too_long = bounded(without_label(text))  # a label, '(2 marks)', an email's greeting, a pasted reply: never an ask
    if too_long:
        return [reply(too_long)]
    parts = [request for part in split_clauses(text) for request in _requests(part, context)]
    context.clause_count = len(parts)
    notice = [reply(message("too_many", count=len(parts), limit=MAX_CLAUSES, rest=parts[MAX_CLAUSES][:60]))] if len(parts) > MAX_CLAUSES else []
    by_clause: list[list[Task]] = []
    for part in parts[:MAX_CLAUSES]:
        previous = context.previous_ask
        corrected = PATTERNS["correction"].match(part) if previous is not None else None
        if corrected and part[corrected.end():].strip(" ,.!?"):
            # 'sorry, make that EFFR', 'no wait, 2024': the previous request with the slots this one names
            part = "what about " + part[corrected.end():]
            by_clause = by_clause[:-1]
        moved = shifted(part, previous.period) if previous is not None else None
        if moved and moved.point:  # 'the end of June 2024', then 'a year earlier?': the end of June 2023
            day = dt.date.fromisoformat(moved.end)
            part = f"what about at the end of {day:%B} {day.year}"
        elif moved:  # 'a year earlier?': the previous request over its period moved
            part = f"what about from {moved.start} to {moved.end}"
        if by_clause and by_clause[-1] and all(task.kind == "reply" and task.text.startswith(DECLINED) for task in by_clause[-1]):
            read_unit(toks := tokens(part))  # 'by how many bp?': a unit, never a spread column
            if read_series(toks) is None:  # 'was sofr above effr? by how many bp?': never an older request's figure
                by_clause.append([reply(f"I can't answer '{part.strip()}': it builds on the ask before it, which I could not answer.")])
                continue
        clause = read_clause(part, context.vocabulary, previous.year if previous else None)
        # no row plans it: with other requests, a sentence that only sets the scene ("The volatility is wrong.")
        name, planned = route(clause, context) or ("", [] if len(parts) > 1 else [reply(message("not_understood", help=help_text(context)))])
        for task in planned:
            task.rule = name
            context.previous_rule = name if task.kind != "reply" else context.previous_rule
            if task.ask is not None:
                context.previous_ask = task.ask
            if task.path:
                context.last_path = task.path
        by_clause.append(planned)
    tasks = notice + [task for planned in by_clause for task in planned]
    social = [task for task in tasks if task.rule in ("thanks", "courtesy")]
    if social and all(task in social or task.kind == "goal_noted" for task in tasks) and any(not planned or any(
            task.kind == "goal_noted" for task in planned) for planned in by_clause):  # 'Good day. I would like
        return [reply(message("not_understood", help=help_text(context)))]  # to know <an ask no rule reads>. I thank you in advance.'
    tasks = [task for i, task in enumerate(tasks) if not any(_restated(task, later) for later in tasks[i + 1:])]  # '... on average? by how many bp?'
    if (unread := next((part for part, planned in zip(parts, by_clause) if not planned and changes_answer(part)), None)) and any(
            task.ask is not None for task in tasks):
        return [reply(f"I could not use '{unread.strip()}': no rule of mine reads it, and it may change what the rest of your message asks, "
                      "so I computed nothing. Ask without it, or say it another way.")]  # 'Mondays only.', 'Exclude month-ends.'
    if len(parts) > 1 and hasattr(written := read_period(tokens(text)), "first"):  # a period on another line: never 'no period was given'
        unsure = reply(f"I read a period in your message ({' '.join(written.words)}) but could not tie it to each part of it, so I computed "
                       "nothing for those parts. Ask it in one sentence: the series, the statistic and the period.")
        tasks = [unsure if task.ask is not None and task.ask.period.assumed == NO_PERIOD else task for task in tasks]
        tasks = [task for i, task in enumerate(tasks) if task is not unsure or tasks.index(unsure) == i]  # said once
    if tasks and all(task.kind == "goal_noted" for task in tasks):
        tasks.append(reply(memory.goal_acknowledgement(tasks[0].text, context)))
    return [task for task in tasks if task.kind != "goal_noted"] or tasks


def _restated(task: Task, later: Task) -> bool:
    """A later ask makes the same calls and differs only in its unit ('was sofr above effr on average? by how many bp?'): asked once, in that unit."""
    return task.kind == later.kind == "data" and task.steps == later.steps and task.ask is not None and later.ask is not None and replace(
        task.ask, unit=later.ask.unit, text=later.ask.text) == later.ask


def changes_answer(sentence: str) -> bool:
    """'Mondays only.', 'Exclude month-ends.': a word of the teaching model's ``[scene]`` list (words that may change an answer), beside others."""
    return bool(set(said := tokens(sentence).words) & SCENE) and not set(said) <= IGNORED


def help_text(context: Context) -> str:
    """What the model can do, with examples from the catalog it was given."""
    example = context.vocabulary.frames[-1].key if context.vocabulary.frames else "money_markets/sofr"
    return introspect.answer("help", introspect.Seen([], example=example))  # teaching/introspect.py


PLANNERS = {
    "remember": lambda clause, context: [reply(memory.acknowledge_note(clause.text))],
    "recall_note": lambda clause, context: [memory.plan_note_recall(clause, context)],
    "recall_figure": lambda clause, context: [memory.plan_figure_recall(clause, context)],
    "fix_code": files._plan_fix_code, "write_file": files._plan_write_file, "run_code": files._plan_run_code,
    "run_tests": files._plan_run_tests, "run_script": files._plan_run_script, "show_function": files._plan_show_function,
    "search_archive": files._plan_search_archive, "search_files": files._plan_search_files,
    "list_files": files._plan_list_files, "read_file": files._plan_read_file,
    "list_catalog": lambda clause, context: [Task("catalog", steps=[Step("list_catalog")],
                                                  detail={"pipelines": clause.mentions.pipelines})],
    "docs": _plan_docs, "data": _plan_data, "coverage": _plan_coverage, "column_home": _plan_column_home, "column_exists": _plan_column_exists,
    "help": lambda clause, context: [reply(help_text(context))],
}
"""The planners of the rows this module routes (the context questions register theirs in offline_introspect.py)."""
for name, planner in PLANNERS.items():
    register_planner(name, planner)
