"""How the offline model reads a request: its clauses, each clause's intent, and the plan.

``plan(text, context)`` splits a message into clauses ("get the docs, then load the
last 10 rows" is two; so are sentences, ``;``, ``1) ... 2) ...``, ``and then``,
``after that`` and ``, <verb>``), normalizes each (``offline_words``), and gives each
to the first rule of ``INTENT_RULES`` whose test it passes. A rule's planner returns
``Task``s (tool steps, or a reply when nothing should be called); it never changes
its input. Clauses are done in order; a clause that names nothing leans on the one
before it ("then load the last 10 rows" loads the dataframe just named), and a short
follow-up leans on the previous request ("and for EFFR?", "what about 2024?").

The rules, in order (the first that matches wins):

====================  =================================================================
rule                  a clause that...
====================  =================================================================
goal_question         asks what the goal / first request / objective was
last_action           asks what was just done ("what did you just read?")
goal_statement        states a goal ("My goal: ...", "I'm trying to ..."): remembered, nothing loaded
remember              asks to keep a fact or preference ("remember that our limit is 3.5%")
recall_note           asks back what the user said ("what limit did I give you?")
recall_figure         asks back a figure found earlier ("the average you found", "the first figure")
decline               asks for what no tool here can do (delete, git, email, advice, prose,
                      forecasts, translations, statistics it cannot compute)
fix_code              asks to fix / repair / patch / debug code
write_file            write / save / create / put / store / jot down + a path
run_code              holds a code block (three backticks, or one backtick inline)
run_tests             run / execute / launch + tests / pytest, or "do the tests pass?"
run_script            run / execute / launch / kick off / start + a script (or "it")
show_function         shows a function (by name, or described: "the volatility function")
search_archive        search / look / check + the archive
search_files          search / grep / find / look for / where is / which files mention
list_files            files / folder / workspace / project tree (ls, dir)
read_file             names a file (a path, or "the readme", "the test file", "the data file")
list_catalog          asks what data, datasets, dataframes, tables or pipelines there are
docs                  docs / documentation / dictionary / schema / describe / "what is X"
data                  loads rows or asks a statistic (see offline_data.py)
help                  greets, thanks, or asks what the model can do
====================  =================================================================

How to add an intent
    Add a row to the cue table (``offline_intents.toml``, or your own TOML file) and register a
    planner for it with ``offline_cues.register_planner`` (or ``register_intent`` for both): rows
    are scored before the rules above, so a new intent needs no change here. The contract, with an
    example, is ``offline_cues.py``'s docstring; ``offline_introspect.py`` is a worked example.
    Add requests in new words to ``tests/corpora/phrases_dev.yaml``.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from dataclasses import dataclass, replace

from flawedcode.models import offline_memory as memory
from flawedcode.models.offline_complete import decline_unused, understood, unused_words
from flawedcode.models.offline_cues import best_intent
from flawedcode.models.offline_data import (
    DESCRIBE_STATS,
    DataAsk,
    Series,
    context_unit,
    names_only_a_series,
    plan_data,
    read_data_ask,
    stats_in,
)
from flawedcode.models.offline_dates import no_row_that_day
from flawedcode.models.offline_entities import trading_days
from flawedcode.models.offline_file_rules import (  # the rules for files and code
    RUN_TESTS_CODE,
    RUN_TIMEOUT_SECONDS,
    _is_fix_code,
    _is_list_files,
    _is_read_file,
    _is_run_code,
    _is_run_script,
    _is_run_tests,
    _is_search_archive,
    _is_search_files,
    _is_show_function,
    _is_write_file,
    _plan_fix_code,
    _plan_list_files,
    _plan_read_file,
    _plan_run_code,
    _plan_run_script,
    _plan_run_tests,
    _plan_search_archive,
    _plan_search_files,
    _plan_show_function,
    _plan_write_file,
    run_script_code,
)
from flawedcode.models.offline_periods import NO_PERIOD, Period, first_rows_range
from flawedcode.models.offline_plan import (
    CODE_BLOCK,
    Clause,
    Context,
    Step,
    Task,
    has_any,
    read_clause,
    reply,
    split_clauses,
)
from flawedcode.models.offline_words import unit_asked

GOAL_WORDS = ("goal", "objective", "aim", "purpose", "set out", "first ask", "first asked", "asked first", "first request",
              "originally", "original request", "original question", "initial", "started with", "at the start",
              "at the beginning", "start of our conversation", "beginning of our conversation", "what was i trying",
              "what am i trying", "what were we trying", "trying to do", "after originally", "task i set", "i asked u first",
              "i asked you first", "first message", "want originally", "first question", "first thing i asked")
QUESTION_CUES = ("what", "remind", "recall", "restate", "tell me", "which", "do you remember", "?")
GOAL_NOUN = r"(?:overall\s+|main\s+|big\s+)?(?:goal|aim|objective|plan|task|mission|purpose)\b"
GOAL_SCOPE = r"(?:\s+(?:for|of|in)\s+(?:today|this session|the session|this conversation|this chat|the day|now))?"
GOAL_STATEMENT = re.compile(
    rf"^(?:so,?\s+)?(?:(?:(?:my|our|the|today's)\s+{GOAL_NOUN}{GOAL_SCOPE}\s*(?:is|:|=|-|today)?)|{GOAL_NOUN}{GOAL_SCOPE}\s*[:=-]|"
    r"(?:today\s+)?i'?m trying to|i am trying to|overall,? i want|today i want|the idea is)")
"""A statement of the goal ('My goal: ...', 'Objective for this session: ...'): remembered, nothing loaded."""
LAST_ACTION = (r"\bwhat did you (?:just )?(?:read|do|load|run|open|call|look at|fetch)\b", r"\bwhat (?:have|did) you just\b",
               r"\b(?:last|previous|most recent) (?:tool|action|step|thing you did|call)\b", r"\bwhat was the last thing\b",
               r"\bwhich tool did you (?:call|use) last\b", r"\bwhat (?:file|tool) did you just\b")
UNSUPPORTED = {"skewness": r"\bskew\w*", "kurtosis": r"\bkurtosis\b", "a forecast": r"\bforecast\w*|\bpredict\w*|\bwill \w+ be\b|"
               r"\bnext (?:month|week|year|meeting)\b|\bwhat will\b", "a regression": r"\bregress\w*|\bbeta of\b",
               "value at risk": r"\bvar\b|\bvalue at risk\b", "a Sharpe ratio": r"\bsharpe\b", "cointegration": r"\bcointegrat\w*",
               "autocorrelation": r"\bautocorrelation\b|\bauto-correlation\b", "an ARIMA model": r"\barima\b",
               "a Granger causality test": r"\bgranger\b"}
NO_TOOL = {"delete files": r"\b(?:delete|remove|rm|erase)\b", "use git": r"\b(?:git|commit|push)\b",
           "send email": r"\be-?mail\b|\bsend (?:it|this|the results)\b", "translate text": r"\btranslat\w*",
           "write prose": r"\b(?:essay|poem|story|blog post|article)\b",
           "give investment advice": r"\bshould i (?:buy|sell|invest)\b|\binvest(?:ment)? advice\b"}
@dataclass(frozen=True)
class IntentRule:
    """One row of the routing table: a name, a test, and the planner that makes its tasks."""

    name: str
    test: Callable[[Clause, Context], bool]
    planner: Callable[[Clause, Context], list[Task]]


# ----------------------------------------------------------------------------- tests and planners, in table order


def _is_goal_question(clause: Clause, context: Context) -> bool:
    return (has_any(clause.norm, GOAL_WORDS) and has_any(clause.norm, QUESTION_CUES)
            and not GOAL_STATEMENT.search(clause.norm) and not clause.mentions.dataframes)


def _plan_goal_question(clause: Clause, context: Context) -> list[Task]:
    return [Task("goal")]


def _is_last_action(clause: Clause, context: Context) -> bool:
    return any(re.search(pattern, clause.norm) for pattern in LAST_ACTION)


def _plan_last_action(clause: Clause, context: Context) -> list[Task]:
    return [Task("last_action")]


def _is_goal_statement(clause: Clause, context: Context) -> bool:
    if GOAL_STATEMENT.search(clause.norm):
        return True
    return bool(re.match(r"^(?:i want to|i'd like to|i would like to)\b", clause.norm)) and context.clause_count > 1


def _plan_goal_statement(clause: Clause, context: Context) -> list[Task]:
    return [Task("goal_noted", text=clause.text)]


def _is_remember(clause: Clause, context: Context) -> bool:
    return memory.is_note(clause.norm) and "?" not in clause.text


def _plan_remember(clause: Clause, context: Context) -> list[Task]:
    return [reply(memory.acknowledge_note(clause.text))]


def _is_recall_note(clause: Clause, context: Context) -> bool:
    return memory.is_note_question(clause.norm, context)


def _plan_recall_note(clause: Clause, context: Context) -> list[Task]:
    return [memory.plan_note_recall(clause, context)]


def _is_recall_figure(clause: Clause, context: Context) -> bool:
    return memory.is_figure_question(clause.norm)


def _plan_recall_figure(clause: Clause, context: Context) -> list[Task]:
    return [memory.plan_figure_recall(clause, context)]


def _cannot(clause: Clause) -> str | None:
    for what, pattern in NO_TOOL.items():
        if re.search(pattern, clause.norm) and not clause.code:
            return f"I can't {what}: none of my tools does that."
    for what, pattern in UNSUPPORTED.items():
        if re.search(pattern, clause.norm):
            return (f"I can't compute {what}. From the data I can compute the mean, median, min, max, standard "
                    "deviation, percentiles, count, correlation, latest value and change over a period.")
    return None


def _is_decline(clause: Clause, context: Context) -> bool:
    return _cannot(clause) is not None


def _plan_decline(clause: Clause, context: Context) -> list[Task]:
    text = _cannot(clause) or ""
    return [reply(text + " I can read, write, list and search files, run Python, and load and summarise ChartBook data.")]


CATALOG_WORDS = ("catalog", "catalogue", "available", "dataframes", "datasets", "data sets", "tables", "pipelines",
                 "what data", "which data", "chartbook", "series can", "financial data", "list the data", "data do you have",
                 "kind of data")


def _is_list_catalog(clause: Clause, context: Context) -> bool:
    if clause.mentions.dataframes and not has_any(clause.norm, ("list", "catalog", "catalogue", "pipelines", "dataframes",
                                                                 "datasets", "what data", "which data")):
        return False
    return has_any(clause.norm, CATALOG_WORDS) or bool(clause.mentions.pipelines and not clause.mentions.columns)


def _plan_list_catalog(clause: Clause, context: Context) -> list[Task]:
    return [Task("catalog", steps=[Step("list_catalog")], detail={"pipelines": clause.mentions.pipelines})]


DOCS_WORDS = ("docs", "doc", "documentation", "dictionary", "schema", "describe", "description", "definition", "define",
              "explain", "readme", "metadata", "what columns", "which columns", "units", "unit", "come from", "source",
              "tell me about", "what is", "what are", "mean", "measure", "called")


DOCS_IGNORE = frozenset({"doc", "docs", "documentation", "dictionary", "schema", "describe", "description", "explain",
                         "tell", "column", "columns", "unit", "units", "source", "mean", "measure", "called", "dataset"})


def _is_docs(clause: Clause, context: Context) -> bool:
    if re.fullmatch(r"\W*(?:the\s+)?(?:docs?|documentation)(?:\s+please)?\W*", clause.norm):
        return True  # 'docs please': docs of which dataframe? (the planner asks)
    if (context.previous_rule == "docs" and clause.mentions.dataframes and len(clause.norm.split()) <= 4
            and not clause.periods and not re.search(r"\b(?:average|mean|median|min|max|latest|rows?|load)\b", clause.norm)):
        return True  # 'and effr?' after a docs request
    if not has_any(clause.norm, DOCS_WORDS) or clause.periods:
        return False
    if stats_in(clause) and not re.search(r"\bwhat (?:does|do)\b.*\bmean\b", clause.rest):
        return False
    if re.search(r"\b(?:\d{1,2}(?:st|nd|rd|th)|p\d{1,2})\s+(?:percentile\s+)?of\b", clause.rest):
        return False  # 'what is the 90th percentile of the 10y?': a statistic, not a definition
    if re.search(r"\b(?:spread|difference|gap|minus|compare)\b", clause.rest) and len(clause.mentions.dataframes) > 1:
        return False
    return bool(clause.mentions.dataframes or clause.mentions.columns or _docs_target(clause, context))


def _docs_target(clause: Clause, context: Context) -> list:
    if clause.mentions.dataframes:
        return list(clause.mentions.dataframes)
    owners = []
    for column in clause.mentions.columns:
        owners += [ref for ref in context.vocabulary.frames_with_column(column) if ref not in owners]
    if owners:
        return owners[:1] if len(clause.mentions.columns) >= 1 and len(owners) > 1 else owners
    match = context.vocabulary.match_columns(clause.rest)
    refs = list(dict.fromkeys(ref for ref, _ in match.columns))
    if match.columns and match.score >= 3 and len(refs) == 1:
        return refs
    if re.search(r"\bit\b", clause.norm) and context.previous_frames:
        return list(context.previous_frames[:1])
    return []


def _plan_docs(clause: Clause, context: Context) -> list[Task]:
    refs = _docs_target(clause, context)
    if not refs:
        return [reply("Docs for which dataframe? Name one (ask me to list the ChartBook dataframes to see them).")]
    context.previous_frames = list(refs)
    columns = list(clause.mentions.columns)
    match = context.vocabulary.match_columns(clause.rest, refs, ignore=clause.mentions.frame_words | DOCS_IGNORE)
    if not columns and match.columns and match.score >= 3 and len(match.columns) <= 2:
        columns = [column for _, column in match.columns]
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


def _is_data(clause: Clause, context: Context) -> bool:
    return bool(clause.mentions.dataframes or clause.mentions.columns or clause.periods
                or re.search(r"\b(?:load|rows?|fetch|pull|average|mean|median|min|max|latest|yield|rate|spread|volume|"
                             r"percentile|correlation|standard deviation|data|compare)\b", clause.rest)
                or _follow_up(clause, context) is not None)


COURTESY = re.compile(r"^\W*(?:thanks|thank you|many thanks|cheers|great|perfect|nice|cool|awesome|ok|okay|got it)\b(?:\W+\w+){0,2}\W*$")
"""'thanks!', 'great, thanks', 'ok cool': a reply to the answer, never a request for more data."""


def _follow_up(clause: Clause, context: Context) -> DataAsk | None:
    if context.previous_ask is None or COURTESY.match(clause.norm):
        return None
    if names_only_a_series(clause):  # 'now do sofr', 'and effr?', 'the 20y?': the same question of another series
        return context.previous_ask
    leaning = re.match(r"^(?:and|what about|how about|same for|same thing for|now|also|for|in|with)\b", clause.norm)
    if clause.mentions.dataframes and not leaning:
        return None
    if re.match(r"^(?:and|what about|how about|same for|same thing for|now|also|for|in)\b", clause.norm) or len(clause.norm.split()) <= 4:
        return context.previous_ask
    if re.search(r"\b(?:it|them|those|that)\b", clause.norm) and not clause.mentions.dataframes:
        return context.previous_ask
    return None


def _plan_data(clause: Clause, context: Context) -> list[Task]:
    follow_up = _follow_up(clause, context) or _frames_only(context, clause)
    asked = _those_two(clause, context) or read_data_ask(clause, context, follow_up)
    if isinstance(asked, Task):
        return [asked]
    if clause.date_problems:
        return [reply(f"I read this as {understood(asked, with_period=False)}, but {'; '.join(clause.date_problems)}. I computed nothing; "
                      "give the day as YYYY-MM-DD and I can answer.")]
    unused = unused_words(clause, asked, context.vocabulary, memory.visible_notes(context.earlier))
    if unused:  # complete or decline (offline_complete.py): never answer the wider question
        return [decline_unused(asked, unused)]
    missing_day = _day_without_row(asked, context)
    if missing_day:
        return [reply(missing_day)]
    which_year = _which_year(asked)
    if which_year:
        return [reply(which_year)]
    if asked.period.first_rows and asked.frames() and asked.frames()[0].start:
        rows = first_rows_range(asked.period, trading_days(context.vocabulary, asked.frames()[0]))
        asked = replace(asked, period=rows, limit=None, stats=["latest"] if rows.start == rows.end and asked.stats ==
                        list(DESCRIBE_STATS) else asked.stats)
    context.previous_frames = asked.frames()
    reuse = _rows_in_view(asked, context)
    if reuse is not None:
        return [reuse]
    if asked.period == Period() and not asked.wants_rows and not asked.limit:
        asked = replace(asked, period=Period(every_row=True, assumed=NO_PERIOD))  # never silently the last rows
    periods = clause.periods if len(clause.periods) > 1 and not asked.combine else [asked.period]
    each = [[series] for series in asked.series] if len(asked.series) > 1 and not asked.combine and not asked.wants_rows \
        else [asked.series]
    tasks = [plan_data(replace(asked, period=period, series=series), context) for period in periods for series in each]
    if len(periods) == 2 and len(each) == 1 and re.search(PERIOD_GAP, clause.norm):
        tasks.append(Task("period_gap", detail={"tasks": tasks[:2]}))  # 'higher in H1 than in H2, by how much?'
    return tasks


PERIOD_GAP = r"\bby how (?:much|many)\b|\b(?:higher|lower|more|less|bigger|smaller|greater) .*\bthan\b|\bdifference\b|\bgap\b"


THOSE_TWO = (r"\b(?:gap|spread|difference|distance|apart|differ\w*)\b.*\b(?:(?:those|these|the|both) two|them|both|those|these)\b|"
             r"\b(?:those|these|the) two\b.*\b(?:gap|spread|difference|apart|differ\w*)\b")


def _those_two(clause: Clause, context: Context) -> DataAsk | None:
    """'how big was the gap between those two?': the spread of the last two series asked, over the later one's period."""
    if clause.mentions.dataframes or clause.mentions.columns or not re.search(THOSE_TWO, clause.norm):
        return None
    series = list(dict.fromkeys(series for ask in context.recent_asks if len(ask.series) == 1 and not ask.combine
                                for series in ask.series))
    if len(series) < 2:
        return None
    later = next(ask for ask in reversed(context.recent_asks) if ask.series == [series[-1]])
    return DataAsk(series[-2:], ["mean"], combine="difference", period=later.period,
                   unit=unit_asked(clause.norm) or context_unit(context), text=clause.norm)


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
    return (f"Which year do you mean? I read this as {understood(ask, with_period=False)} in {named}, and the data has "
            f"it in {', '.join(years)}. Say the year (for example '{named} {years[-1]}') and I'll answer.")


def _day_without_row(ask: DataAsk, context: Context) -> str | None:
    """A single day the data has no row for (a weekend, a holiday): why, and the nearest days that have one."""
    period = ask.period
    if not period.start or period.start != period.end:
        return None
    for ref in ask.frames():
        dates = trading_days(context.vocabulary, ref)
        if dates and period.start not in dates:
            return no_row_that_day(dt.date.fromisoformat(period.start), dates, ref.key)
    return None


def _rows_in_view(ask: DataAsk, context: Context) -> Task | None:
    """A statistic with no period about a dataframe whose rows are in view: use those rows (read back if offloaded)."""
    period = ask.period
    if ask.wants_rows or ask.combine or ask.limit or period.start or period.end or period.last_rows or period.every_row:
        return None
    if len(ask.frames()) != 1:
        return None
    found = memory.visible_rows(context.earlier, ask.frames()[0].key)
    if found is None:
        return None
    kind, value = found
    if kind == "stub":
        return Task("data", steps=[Step("read_file", {"path": value, "limit": 2000})], ask=ask)
    return Task("data", steps=[], ask=ask, detail={"rows": value})


def _frames_only(context: Context, clause: Clause) -> DataAsk | None:
    """'then load the last 10 rows': the dataframe an earlier clause named."""
    if clause.mentions.dataframes or not context.previous_frames:
        return None
    return DataAsk([Series(ref, "") for ref in context.previous_frames], wants_rows=True)


HELP_WORDS = ("hello", "hi", "hey", "help", "what can you do", "who are you", "how does this work", "thanks", "thank you",
              "good morning", "what are you")


def _is_help(clause: Clause, context: Context) -> bool:
    return ((has_any(clause.norm, HELP_WORDS) and (context.clause_count == 1 or len(clause.norm.split()) > 3))
            or bool(COURTESY.match(clause.norm) and context.clause_count == 1))


def _plan_help(clause: Clause, context: Context) -> list[Task]:
    if has_any(clause.norm, ("thanks", "thank you")) and not has_any(clause.norm, ("help", "what can")):
        return [reply("You're welcome. Ask me for data, docs or files whenever you like.")]
    if COURTESY.match(clause.norm):
        return [reply("Good. Ask me for data, docs or files whenever you like.")]
    return [reply(help_text(context))]


INTENT_RULES: tuple[IntentRule, ...] = (
    IntentRule("goal_question", _is_goal_question, _plan_goal_question),
    IntentRule("last_action", _is_last_action, _plan_last_action),
    IntentRule("goal_statement", _is_goal_statement, _plan_goal_statement),
    IntentRule("remember", _is_remember, _plan_remember),
    IntentRule("recall_note", _is_recall_note, _plan_recall_note),
    IntentRule("recall_figure", _is_recall_figure, _plan_recall_figure),
    IntentRule("decline", _is_decline, _plan_decline),
    IntentRule("fix_code", _is_fix_code, _plan_fix_code),
    IntentRule("write_file", _is_write_file, _plan_write_file),
    IntentRule("run_code", _is_run_code, _plan_run_code),
    IntentRule("run_tests", _is_run_tests, _plan_run_tests),
    IntentRule("run_script", _is_run_script, _plan_run_script),
    IntentRule("show_function", _is_show_function, _plan_show_function),
    IntentRule("search_archive", _is_search_archive, _plan_search_archive),
    IntentRule("search_files", _is_search_files, _plan_search_files),
    IntentRule("list_files", _is_list_files, _plan_list_files),
    IntentRule("read_file", _is_read_file, _plan_read_file),
    IntentRule("list_catalog", _is_list_catalog, _plan_list_catalog),
    IntentRule("docs", _is_docs, _plan_docs),
    IntentRule("data", _is_data, _plan_data),
    IntentRule("help", _is_help, _plan_help),
)
"""The routing table, read in order by ``plan``: the first rule whose test passes plans the clause."""


# ----------------------------------------------------------------------------- the plan


MAX_REQUEST_CHARS = 4000
"""A message longer than this (code blocks aside) is material, not a request: it is declined, never parsed."""
MAX_WORD_CHARS = 200
"""A word longer than this (a paste, a hash, a path of many folders) is not in any vocabulary: the request is declined."""
MAX_CLAUSES = 12
"""At most this many requests of one message are planned (one tool call each, at least); the rest are reported."""
CONTROL_CHARACTERS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def bounded(text: str) -> tuple[str, str | None]:
    """The request with control characters made spaces, and a reason to decline it if it is too long to read.

    This keeps the work per request bounded: nothing after this sees more than ``MAX_REQUEST_CHARS``
    characters of prose or a word longer than ``MAX_WORD_CHARS``.
    """
    text = CONTROL_CHARACTERS.sub(" ", text)
    prose = CODE_BLOCK.sub(" ", text)
    if len(prose) > MAX_REQUEST_CHARS:
        return text, (f"I can't read that message as a request: it is {len(prose):,} characters long (outside code "
                      f"blocks) and I read requests of at most {MAX_REQUEST_CHARS:,}. Put long material in a file or a "
                      "code block, then ask me about it.")
    long_word = next((word for word in prose.split() if len(word) > MAX_WORD_CHARS), None)
    if long_word is not None:
        return text, (f"I can't use the {len(long_word):,}-character word '{long_word[:24]}...' in your message: "
                      f"no name, date or path I know is longer than {MAX_WORD_CHARS} characters. Nothing was run. "
                      "Put long material in a file or a code block, then ask me about it.")
    return text, None


CORRECTION = re.compile(
    r"^\s*(?:(?:sorry|oops|no|wait|actually|correction|scratch that|i mean|i meant|rather)\b[\s,:;.!-]+)+"
    r"(?:(?:make (?:that|it)|i meant?|change (?:that|it) to)\b\s*)?|^\s*(?:make (?:that|it)|change (?:that|it) to)\b\s*",
    re.IGNORECASE)
"""A correction of the previous request: what follows replaces the slots it names, the rest is kept."""


def _cue_rule(clause: Clause, context: Context) -> IntentRule | None:
    """The cue table's row for this clause (offline_cues.py), tried before the built-in rules; None if none plans it."""
    found = best_intent(clause.norm, context.tool_names)
    planned = found[1](clause, context) if found is not None else None
    if found is None or planned is None:
        return None
    return IntentRule(found[0], lambda clause, context: True, lambda clause, context: planned)


def plan(text: str, context: Context) -> list[Task]:
    """The tasks for one message, clause by clause, in order."""
    text, too_long = bounded(text)
    if too_long:
        return [reply(too_long)]
    tasks: list[Task] = []
    parts = split_clauses(text)
    context.clause_count = len(parts)
    if len(parts) > MAX_CLAUSES:
        tasks.append(reply(f"Your message holds {len(parts)} requests; I do the first {MAX_CLAUSES} (ask again for "
                           f"the rest, from '{parts[MAX_CLAUSES][:60]}')."))
        parts = parts[:MAX_CLAUSES]
    last_clause_tasks = 0
    for part in parts:
        previous = context.previous_ask
        corrected = CORRECTION.match(part) if previous is not None else None
        if corrected and part[corrected.end():].strip(" ,.!?"):
            # 'sorry, make that EFFR', 'no wait, 2024': the previous request with the slots this one names
            part = "what about " + part[corrected.end():]
            del tasks[len(tasks) - last_clause_tasks:]
        clause = read_clause(part, context.vocabulary, previous.year if previous else None)
        last_clause_tasks = 0
        rule = _cue_rule(clause, context) or next((rule for rule in INTENT_RULES if rule.test(clause, context)), None)
        if rule is None:
            if len(parts) > 1:
                continue  # a sentence that only sets the scene ("The volatility is wrong.")
            tasks.append(reply(not_understood(context)))
            continue
        for task in rule.planner(clause, context):
            task.rule = rule.name
            context.previous_rule = rule.name if task.kind != "reply" else context.previous_rule
            if task.ask is not None:
                context.previous_ask = task.ask
            if task.path:
                context.last_path = task.path
            tasks.append(task)
            last_clause_tasks += 1
    if tasks and all(task.kind == "goal_noted" for task in tasks):
        tasks.append(reply(memory.goal_acknowledgement(tasks[0].text, context)))
    return [task for task in tasks if task.kind != "goal_noted"] or tasks


def not_understood(context: Context) -> str:
    return ("I don't understand that request: I'm the offline teaching model, a deterministic simulator with fixed "
            "rules, not an LLM. " + help_text(context))


def help_text(context: Context) -> str:
    example = context.vocabulary.frames[-1].key if context.vocabulary.frames else "money_markets/sofr"
    return ("I'm the offline teaching model: I can list the ChartBook catalog, get a dataframe's docs, load its rows and "
            "compute statistics (mean, median, min, max, standard deviation, percentiles, count, correlation, latest "
            "value, change, spreads), and read, write, list, search and run files. Try: 'List ChartBook dataframes', "
            f"'Get docs for {example}', 'What was the average of {example} in 2024?', 'Read analyze.py', "
            "'Run the tests', 'What was my original goal?'.")


__all__ = ["INTENT_RULES", "IntentRule", "RUN_TESTS_CODE", "RUN_TIMEOUT_SECONDS", "plan", "read_clause", "run_script_code"]
