"""What the offline model remembers: only what is in its window, and what it reads back (docs/offline-model.md).

The goal (from a visible summary, else the first request if nothing was cut), the last tool call, the
user's notes (kept word for word, never data) and the figures its answers stated, matched on the
question's qualifiers; a figure no longer visible is computed again from a scratch/ copy of its rows
(a data task, offline_answers.py), else searched in a visible archive.
Its phrases are data: ``offline_answers.toml``.
"""

from __future__ import annotations

import json
import re
from collections import namedtuple
from functools import cache
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from flawedcode.formats import ARCHIVE_LINE as ARCHIVE_LINE_TEXT
from flawedcode.formats import GOAL_LINE as GOAL_LINE_TEXT
from flawedcode.formats import SUMMARY_PREFIX
from flawedcode.models.offline_cues import data_file
from flawedcode.models.offline_data import DataAsk, Series
from flawedcode.models.offline_plan import Clause, Context, Step, Task, reply
from flawedcode.models.offline_stats import offload_path, parse_loaded_table
from flawedcode.models.offline_words import content_words, normalize, tags_in
from flawedcode.models.teaching import offered, summary
from flawedcode.models.teaching.readers import knowledge, read_series, read_statistics, read_unit, tokens
from flawedcode.models.teaching.router import _read_period
from flawedcode.models.teaching.summary import clip

PHRASES = data_file("offline_answers.toml")
SAY: dict[str, str] = PHRASES["say"]
LANGCHAIN_SUMMARY_PREFIX = "Here is a summary of the conversation to date:"
GOAL_LINE = re.compile(rf"^{re.escape(GOAL_LINE_TEXT.strip())}[ \t]*(.+)$", re.MULTILINE)
ARCHIVE_LINE = re.compile(rf"^{re.escape(ARCHIVE_LINE_TEXT.strip())}\s*(archives/\S+)", re.MULTILINE)
NOTE_LEAD_IN, NOTE_VERBS = PHRASES["notes"]["lead_in"], PHRASES["notes"]["verbs"]
NOTE = re.compile(PHRASES["notes"]["note"].replace("{lead_in}", NOTE_LEAD_IN).replace("{verbs}", NOTE_VERBS), re.IGNORECASE)
"""A statement for the model to keep (a fact, a name, a preference), not a data request."""
FIGURE_QUESTION = re.compile(PHRASES["recall"]["question"])
ASKED_STAT: dict[str, str] = PHRASES["recall"]["stats"]
STAT_KEYS = {"mean": "mean", "median": "median", "min": "min", "max": "max", "standard deviation": "std", "latest": "latest", "change": "change"}
"""The statistics a recall can compute again from a copy of one series' rows (a question's name -> a data task's)."""
SAVED_WORDS = re.compile(PHRASES["recall"]["saved"])
FIGURE = re.compile(r"\b(mean|median|min|max|standard deviation|latest|change|count|\d{1,2}th percentile)\s+([+-]?\d+\.\d+)")
DATES = re.compile(r"(\d{4}-\d{2}-\d{2}) to (\d{4}-\d{2}-\d{2})")


def text_of(message: BaseMessage) -> str:
    """The message's text: its string content, or its text blocks joined (LangChain's ``message.text``)."""
    return message.text


def is_summary_text(text: str) -> bool:
    return text.startswith((SUMMARY_PREFIX, LANGCHAIN_SUMMARY_PREFIX))


def is_summary_message(message: BaseMessage) -> bool:
    return isinstance(message, (HumanMessage, SystemMessage)) and is_summary_text(text_of(message).lstrip())


def section_lines(text: str, title: str) -> list[str]:
    """The ``- `` lines under a summary's ``title`` line ('User notes (verbatim):', 'Numbers reported:')."""
    section = re.search(rf"^{re.escape(title)}\n((?:- .*\n?)+)", text, re.MULTILINE)
    return [line[2:].strip() for line in section.group(1).splitlines()] if section else []


def goal_in_summary(text: str) -> str | None:
    """The goal a summary states: its 'Original goal (verbatim):' line or its SESSION INTENT section."""
    if match := GOAL_LINE.search(text):
        return match.group(1).strip()
    section = re.search(r"^## SESSION INTENT\s*\n(.*?)(?=^## |\Z)", text, re.MULTILINE | re.DOTALL)
    return (" ".join(line.strip() for line in section.group(1).splitlines() if line.strip()) or None) if section else None


def goal_acknowledgement(goal: str, context: Context) -> str:
    """The reply to a goal stated on its own: kept word for word, nothing loaded, a first step offered."""
    found = context.vocabulary.find(normalize(goal))
    example = f"get the docs for {found.dataframes[0].key}" if found.dataframes else "list the ChartBook dataframes"
    return SAY["goal_noted"].format(goal=goal.strip(), example=example)


def is_note(text: str) -> bool:  # its own openings, the teaching model's ('... can u remember that for me pls'), or a correction
    return (bool(NOTE.search(text.strip())) or summary.is_note(text) or offered.correction(text) and not data_correction(text)) and "?" not in text


PERSONAL = {"my", "i", "i'm", "we", "our", "me", "is", "are"}


def data_correction(text: str) -> bool:
    """'correction: the 75th percentile', 'actually, the winter of 2023': a change of the last request (a statistic, unit, series or
    period, and no 'my', 'I', 'is'), never a fact to keep ('correction: my bank uses the 7-year' is one)."""
    fact = tokens(offered.correction(text) or "")
    return bool(fact.words) and not PERSONAL & set(fact.words) and bool(read_statistics(fact) or read_unit(fact) or read_series(fact)
                                                                         or _read_period(fact))


def note_words(text: str, strip: str | None = None) -> str:
    """The fact a note keeps: the user's words without 'remember that' (and without ``strip`` at either end)."""
    kept = re.sub(rf"^{NOTE_LEAD_IN}(?:{NOTE_VERBS}(?:\s*(?:that|:|,))?)?\s*", "", text.strip(), flags=re.IGNORECASE)
    return re.sub(r",?\s*remember (?:that|this)\s*[.!]?$", "", kept, flags=re.IGNORECASE).strip(strip) or text.strip()


def acknowledge_note(text: str) -> str:
    return SAY["note_noted"].format(note=note_words(text))


def visible_notes(earlier: list[BaseMessage]) -> list[str]:
    notes = []
    for message in earlier:
        text = text_of(message)
        if isinstance(message, HumanMessage) and not is_summary_message(message) and is_note(text):
            notes.append(text.strip())
        elif is_summary_message(message) or (isinstance(message, SystemMessage) and "User notes" in text):
            notes += section_lines(text, "User notes (verbatim):")
    return list(dict.fromkeys(notes))


WORKSPACE_NOUNS = r"\b(?:files?|tests?|folders?|director(?:y|ies)|scratch|archives?|catalog(?:ue)?|dataframes?|datasets?|docs)\b"


def is_note_question(norm: str, context: Context) -> bool:
    if not re.search(r"\?|^(?:what|which|who|when|where|remind|tell me|list|show)\b", norm) or is_figure_question(norm):
        return False
    if (asked := re.search(PHRASES["notes"]["question"], norm)) and not (asked.group(0) == "again" and re.search(WORKSPACE_NOUNS, norm)):
        return True  # 'list the files again' asks the tools again, not for a note
    found = context.vocabulary.find(norm)
    about_data = found.dataframes or found.columns or tags_in(norm) or re.search(PHRASES["notes"]["about_data"], norm)
    return bool(_matching_notes(norm, visible_notes(context.earlier))) and not about_data


def _matching_notes(norm: str, notes: list[str]) -> list[str]:
    if re.search(PHRASES["notes"]["all_notes"], norm):
        return notes
    words = set(content_words(norm)) - set(PHRASES["notes"]["not_matched"])
    scored = [(len(words & set(content_words(note))), note) for note in notes]
    best = max((score for score, _ in scored), default=0)
    return [note for score, note in scored if score > 0 and (score == best or offered.correction(note))]  # a correction: always with them


def plan_note_recall(clause: Clause, context: Context) -> Task:
    if notes := _matching_notes(clause.norm, visible_notes(context.earlier)):
        return reply("You told me: " + "; ".join(f'"{note}"' for note in notes) + ".")
    query = [word for word in content_words(clause.norm) if word not in ("told", "said", "gave", "again", "tell")]
    if archive_visible(context.earlier) and "search_archive" in context.tool_names and query:
        return Task("note_recall", steps=[Step("search_archive", {"query": query[0][:60]})])
    return reply(SAY["note_unknown"])


def answer_note_from_archive(results: list[Any]) -> str:
    for line in (line for result in results for line in result.content.splitlines()):
        if NOTE.search(line.split("]:", 1)[-1].strip(" .")) or "remember" in line.lower():
            return f"From the archive ({line.split(' ', 2)[1] if line.startswith('- ') else 'archive'}): {line.strip('- ')}"
    return SAY["note_not_archived"]


def archive_visible(earlier: list[BaseMessage]) -> bool:
    return any(is_summary_message(message) and ARCHIVE_LINE.search(text_of(message)) for message in earlier)


Figure = namedtuple("Figure", "stat value line source")
"""A figure an answer stated: its statistic, its value, the line stating it and where that line was seen."""


def is_figure_question(norm: str) -> bool:
    return bool(FIGURE_QUESTION.search(norm)) and not re.search(r"\b(?:load|fetch|pull)\b", norm)


def _stats_asked(norm: str) -> list[str]:
    return [stat for stat, pattern in ASKED_STAT.items() if re.search(pattern, norm)]


def _figures_in(lines: list[str], source: str) -> list[Figure]:
    return [Figure(match.group(1), match.group(2), line.strip(" -"), source) for line in lines for match in FIGURE.finditer(line)]


def visible_figures(earlier: list[BaseMessage]) -> list[Figure]:
    found: list[Figure] = []
    for message in earlier:
        if not (is_summary_message(message) or (isinstance(message, AIMessage) and text_of(message).strip())):
            continue
        source = "the conversation summary" if is_summary_message(message) else "my earlier answer"
        for line in re.split(r"\n|(?<=\.)\s+(?=[A-Z])", text_of(message)):
            found += _figures_in([line], source)
            if corr := re.search(r"^Correlation of .*: (-?\d+\.\d+)", line.strip()):
                found.append(Figure("correlation", corr.group(1), line.strip(), source))
    return found


def _qualified(chosen: list[Figure], clause: Clause, context: Context) -> list[Figure]:
    """The figures that fit every qualifier the question names: dataframe, statistic, column, tags, period, first/last."""
    norm, names = clause.norm, [name for ref in clause.mentions.dataframes for name in (ref.key, ref.dataframe)]
    if names:
        chosen = [f for f in chosen if any(re.search(rf"(?<![\w/]){re.escape(n)}(?![\w])", f.line.lower()) for n in names)
                  and _first_key_is(f.line, clause)]
    stats = _stats_asked(norm)
    if "minus" in stats:
        chosen = [f for f in chosen if " minus " in f.line]
        stats.remove("minus")
    chosen = [f for f in chosen if f.stat in stats] if stats else chosen
    chosen = [f for f in chosen if all(column in f.line for column in clause.mentions.columns)]
    subject = [word for word in re.findall(r"[a-z]{4,}", norm) if word in _column_words()]  # 'the reserves figure': a line about reserves
    chosen = [f for f in chosen if all(word in f.line.lower() for word in subject)]
    if tags := tags_in(clause.rest):
        chosen = [f for f in chosen if any(set(tags) <= context.vocabulary.info(ref, column).tags
                                           for ref in context.vocabulary.frames for column in ref.columns if column in f.line)]
    # the period asked (a year, a quarter, a month...; without a year, any year's): the figure's dates fall inside it
    if periods := [(p.start, p.end, 5 if p.assumed.startswith("no year given") else 0) for p in clause.periods if p.start and p.end]:
        chosen = [f for f in chosen if (dates := DATES.search(f.line))
                  and any(all(start[cut:] <= day[cut:] <= end[cut:] for day in dates.groups()) for start, end, cut in periods)]
    if re.search(PHRASES["recall"]["first"], norm):
        return chosen[:1]
    return chosen[-1:] if re.search(PHRASES["recall"]["last"], norm) else chosen


@cache
def _column_words() -> frozenset[str]:
    """The catalog's column-name words that name a subject ('reserves', 'tgcr'), not a statistic or a unit ('average', 'rate')."""
    generic = {"rate", "average", "mean", "median", "high", "value", "yield", "spread", "target", "percentile", "minus", "volume"}
    return frozenset(part for column in knowledge().columns for part in column.name.lower().split("_") if part.isalpha() and len(part) >= 4
                     and part not in generic)


def _first_key_is(line: str, clause: Clause) -> bool:
    keys = re.findall(r"\b[a-z_]+/[a-z_]+\b", line)
    return not keys or any(ref.key == keys[0] for ref in clause.mentions.dataframes)


def _one_figure(chosen: list[Figure], several: str) -> str | None:
    """One figure that fits (stated with where it came from), or the list of those that fit, asking which; None if none."""
    values = list(dict.fromkeys((f.stat, f.value, f.line) for f in chosen))
    if len({(stat, value) for stat, value, _ in values}) == 1:
        keys = re.findall(r"(?<![\w/])[a-z_]+/[a-z_]+\b", chosen[0].line)
        of = f" of {keys[0]}" if keys and not keys[0].startswith(("scratch/", "archives/")) else ""
        return f"The {chosen[0].stat}{of} was {chosen[0].value} (from {chosen[0].source}: {clip(chosen[0].line, 220)})."
    if len(values) > 1:
        return f"{several}: " + "; ".join(clip(line, 160) for _, _, line in values[:5]) + ". Which one do you mean?"
    return None


def plan_figure_recall(clause: Clause, context: Context) -> Task:
    """A figure asked back: the visible one that fits, else computed again from a scratch/ copy, else searched in the archive."""
    if found := _one_figure(_qualified(visible_figures(context.earlier), clause, context), "I can see several figures that fit"):
        return reply(found)
    asked = _stats_asked(clause.norm)
    stats = [STAT_KEYS[stat] for stat in asked if stat in STAT_KEYS] if set(asked) <= set(STAT_KEYS) else []
    copy = scratch_copy_about(context, clause.mentions.dataframes)
    if copy and (stats or not asked) and "read_file" in context.tool_names:
        path, ref = copy
        column = next((c for c in clause.mentions.columns if c in ref.columns), None) or context.vocabulary.main_column(ref)
        return Task("data", steps=[Step("read_file", {"path": path, "limit": 2000})], ask=DataAsk([Series(ref, column)], stats or ["mean"]))
    if archive_visible(context.earlier) and "search_archive" in context.tool_names:
        specific = [c for c in clause.mentions.columns if "_" in c or any(ch.isdigit() for ch in c)]
        words = [ref.dataframe for ref in clause.mentions.dataframes] + specific[:1] + [s for s in asked if s != "minus"][:1]
        return Task("recall", steps=[Step("search_archive", {"query": " ".join(words) or "mean"})], detail={"clause": clause})
    what = (asked or ["figure"])[0]
    return reply(SAY["figure_unknown"].format(what=what if what != "minus" else "spread"))


def answer_recall_from_archive(task: Task, results: list[Any], context: Context) -> str:
    """After searching the archive: the figure that fits every qualifier asked, or 'I don't know'."""
    clause: Clause = task.detail["clause"]
    found = _figures_in([item for result in results for line in result.content.splitlines()
                         for item in re.split(r"\s-\s|\.\.\.|(?<=\.)\s+(?=[a-z_]+/)", line)], "the archive")
    qualified = bool(clause.mentions.dataframes or clause.mentions.columns or tags_in(clause.rest) or _stats_asked(clause.norm))
    return _one_figure(_qualified(found, clause, context) if qualified else [], "I found several figures that fit") or SAY["figure_not_archived"]


def _results_for(earlier: list[BaseMessage], tool: str, key: str) -> list[str]:
    """The result texts of the visible calls of ``tool`` for the dataframe ``key``, newest first."""
    calls = {call["id"]: call for message in earlier if isinstance(message, AIMessage) for call in message.tool_calls}
    return [text_of(message) for message in reversed(earlier) if isinstance(message, ToolMessage)
            and (call := calls.get(message.tool_call_id, {})).get("name") == tool
            and call.get("args", {}).get("dataframe") in (key.partition("/")[2], key)]


def visible_rows(earlier: list[BaseMessage], key: str) -> tuple[str, str] | None:
    """The newest visible load of a dataframe: ('table', content) or ('stub', scratch path); None if none is visible."""
    for content in _results_for(earlier, "chartbook_load_data", key):
        if path := offload_path(content):
            return "stub", path
        if parse_loaded_table(content) is not None:
            return "table", content
    return None


def docs_stub_path(earlier: list[BaseMessage], key: str) -> str | None:
    """The scratch/ file holding a dataframe's docs, if a visible offload stub of chartbook_get_docs names it."""
    return next(filter(None, map(offload_path, _results_for(earlier, "chartbook_get_docs", key))), None)


def scratch_copy_about(context: Context, refs: list[Any]) -> tuple[str, Any] | None:
    """The newest scratch/ copy of a load that a visible stub or summary line names, of one of ``refs`` (any dataframe
    if none), and that dataframe: its file name holds the load's arguments (``chartbook_load_data_<pipeline>_<dataframe>_...``)."""
    for message in reversed(context.earlier):
        text = text_of(message)
        paths = [offload_path(text)] if isinstance(message, ToolMessage) else \
            re.findall(r"scratch/[\w/.-]*chartbook_load_data[\w.-]*\.txt", text) if is_summary_message(message) else []
        for path in (path for path in paths if path and "chartbook_load_data_" in path):
            held = [ref for ref in refs or context.vocabulary.frames if f"_{ref.pipeline}_{ref.dataframe}_" in path]
            if held:
                return path, max(held, key=lambda ref: len(ref.key))
    return None


# --- notes from a memory block in the leading data (v3's memory.md, any agent's) ---------------

SAY_FROM_MEMORY = "From memory ({source}): {quoted}."


def memory_notes(system: list[BaseMessage]) -> tuple[list[str], str]:
    """The user's notes in the leading data (a ``User notes (verbatim):`` list) and where they are kept (a file it names)."""
    notes: list[str] = []
    source = "my instructions"
    for message in system:
        block = re.search(r"User notes \(verbatim\):\n((?:- .*\n?)+)", text_of(message))
        if block:
            notes += [unquoted(line[2:].strip()) for line in block.group(1).splitlines() if line.startswith("- ")]
            source = next(iter(re.findall(r'file="([^"]+)"', text_of(message))), source)
    return notes, source


def unquoted(note: str) -> str:
    """A block's note as text: its JSON string read back, after the ``[correction]`` mark when it has one."""
    mark = "[correction] " if note.startswith("[correction] ") else ""
    try:
        text = json.loads(note[len(mark):])
    except ValueError:
        return note
    return mark + text if isinstance(text, str) else note


def recall_from_memory(text: str, context: Context) -> Task | None:
    """A question about what the user said, answered from the memory block when no visible note answers it."""
    notes, source = memory_notes(getattr(context, "system", []) or [])
    norm = normalize(text)
    if not notes or "?" not in text or visible_notes(context.earlier) and is_note_question(norm, context):
        return None
    if re.search(r"\b(?:average|mean|median|min|max|rows?|docs|load|spread|20\d\d)\b", norm):
        return None  # a data question, not a recall
    if not (matches := _matching_notes(norm, notes)):
        return None
    corrections = [note for note in matches if note.lower().startswith("[correction]")]
    return reply(SAY_FROM_MEMORY.format(source=source, quoted="; ".join(f'"{note}"' for note in (corrections or matches))))
