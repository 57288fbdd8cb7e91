"""What the offline model remembers: only what is in its window (and what it reads back).

- **Goal.** "What was my original goal?" is answered from a visible summary (a message
  starting ``[Conversation summary`` with a line ``Original goal (verbatim): ...``, or
  LangChain's ``Here is a summary of the conversation to date:`` with a ``## SESSION
  INTENT`` section), else from the earliest visible request *if nothing was cut from the
  window*; otherwise it says it does not know. A goal stated first ("My goal: ...") is
  that first request, kept word for word; stating it loads nothing.
- **Last action.** "What did you just do?" comes from the last visible tool call.
- **Notes.** "Remember that our limit is 3.5%" (also: note that, keep in mind, fyi,
  my name is, I prefer) is acknowledged and kept as the user's words: it is never data.
  Asked back ("what limit did I give you?"), the note whose words match the question
  is quoted; summaries carry notes under ``User notes (verbatim):``; when none is
  visible but an archive is, it searches the archive; else it says it does not know.
- **Figures.** "What was the average SOFR you found?" is matched on its qualifiers
  (dataframe, column or tenor, statistic, year, "first" / "last") against the figures
  in its visible answers and summaries. One match: that figure. Several: it lists them
  and asks which. None: it reads a visible scratch/ file about that dataframe, or
  searches a visible archive, and answers from what it read; else it says it does not know.
  A scratch/ copy of a load read back only in part (a page ending with a continuation
  line) is never answered from: its figures are computed again by a stat script over the
  same rows (the load's dataframe, column and first and last dates), else the next pages
  are read (at most ``READ_BACK_PAGES``), else it says it saw only part of the rows.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from flawedcode.figures import figures
from flawedcode.formats import ARCHIVE_LINE as ARCHIVE_LINE_TEXT
from flawedcode.formats import GOAL_LINE as GOAL_LINE_TEXT
from flawedcode.formats import LOAD_HEADER, SUMMARY_PREFIX
from flawedcode.models.offline_plan import Clause, Context, Step, Task, reply
from flawedcode.models.offline_stats import (
    READ_BACK_PAGES,
    READ_HEADER,
    assemble_pages,
    offload_path,
    parse_loaded_table,
    read_stat_output,
    stat_script,
)
from flawedcode.models.offline_words import content_words, normalize, tags_in

OUR_SUMMARY_PREFIX = SUMMARY_PREFIX
LANGCHAIN_SUMMARY_PREFIX = "Here is a summary of the conversation to date:"
GOAL_LINE = re.compile(rf"^{re.escape(GOAL_LINE_TEXT.strip())}[ \t]*(.+)$", re.MULTILINE)
ARCHIVE_LINE = re.compile(rf"^{re.escape(ARCHIVE_LINE_TEXT.strip())}\s*(archives/\S+)", re.MULTILINE)

DONT_KNOW_GOAL_TRUNCATED = "I don't know: the start of our conversation is no longer in my context window."
DONT_KNOW_GOAL_EMPTY = "I don't know: I can't see any earlier request from you in my context window."



def text_of(message: BaseMessage) -> str:
    """The message's text: its string content, or its text blocks joined (LangChain's ``message.text``)."""
    return message.text


def is_summary_text(text: str) -> bool:
    return text.startswith(OUR_SUMMARY_PREFIX) or text.startswith(LANGCHAIN_SUMMARY_PREFIX)


def is_summary_message(message: BaseMessage) -> bool:
    return isinstance(message, (HumanMessage, SystemMessage)) and is_summary_text(text_of(message).lstrip())


def goal_in_summary(text: str) -> str | None:
    """The goal a summary states: its 'Original goal (verbatim):' line or its SESSION INTENT section."""
    match = GOAL_LINE.search(text)
    if match:
        return match.group(1).strip()
    section = re.search(r"^## SESSION INTENT\s*\n(.*?)(?=^## |\Z)", text, re.MULTILINE | re.DOTALL)
    if section:
        intent = " ".join(line.strip() for line in section.group(1).strip().splitlines() if line.strip())
        return intent or None
    return None


# ----------------------------------------------------------------------------- goal and last action


def answer_goal(earlier: list[BaseMessage], system: list[BaseMessage], truncated: bool) -> str:
    """The original goal, from what is visible before the question, or an honest 'I don't know'."""
    for message in [*reversed(earlier), *system]:
        if is_summary_message(message) or (isinstance(message, SystemMessage) and GOAL_LINE.search(text_of(message))):
            goal = goal_in_summary(text_of(message))
            if goal:
                return f'Your original goal was: "{goal}" (from the conversation summary I can see).'
    requests = [message for message in earlier if isinstance(message, HumanMessage) and not is_summary_message(message)]
    if truncated:
        return DONT_KNOW_GOAL_TRUNCATED
    if not requests:
        return DONT_KNOW_GOAL_EMPTY
    return f'Your original goal was: "{text_of(requests[0]).strip()}" (your first message in this conversation).'


def answer_last_action(earlier: list[BaseMessage]) -> str:
    results = {message.tool_call_id: text_of(message) for message in earlier if isinstance(message, ToolMessage)}
    for message in reversed(earlier):
        if isinstance(message, AIMessage) and message.tool_calls:
            call = message.tool_calls[-1]
            line = f"The last thing I did was call {format_call(call['name'], call['args'])}"
            result = results.get(call.get("id") or "")
            if result is not None:
                first_line = next((text for text in result.splitlines() if text.strip()), "(empty)")
                line += f"; it returned: {first_line[:300]}"
            return line + "."
    return "I don't know: I can't see any earlier tool call in my context window."


def format_call(name: str, args: dict[str, Any]) -> str:
    shown = ", ".join(f"{key}={_short_repr(value)}" for key, value in args.items())
    return f"{name}({shown})"


def _short_repr(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "...'"


def goal_acknowledgement(goal: str, context: Context) -> str:
    """The reply to a goal stated on its own: kept word for word, nothing loaded, a first step offered."""
    found = context.vocabulary.find(normalize(goal))
    example = f"get the docs for {found.dataframes[0].key}" if found.dataframes else "list the ChartBook dataframes"
    return (f'Noted your goal: "{goal.strip()}". I have not loaded anything yet. What should I do first? '
            f"For example, I can {example}.")


# ----------------------------------------------------------------------------- notes (what the user said)

NOTE_LEAD_IN = (r"(?:(?:hey|hi|ok|okay|so|oh|also|and|btw|by the way|one more thing|quick note|before (?:anything|we start|"
                r"we begin|you start)|first(?: of all)?|just|important)\b[\s,:;.!-]*){0,3}")
"""Words a student puts before the request itself: 'hey, before anything: remember ...'."""
NOTE_VERBS = (r"(?:please\s+)?(?:remember|note|keep in mind|bear in mind|don't forget|do not forget|fyi|for the record|"
              r"take note|make a note|for reference)\b")
NOTE = re.compile(rf"^{NOTE_LEAD_IN}{NOTE_VERBS}|\bremember (?:that|this)\s*[.!]?$|^{NOTE_LEAD_IN}(?:my name is|call me|"
                  r"i (?:prefer|'d prefer|would prefer))\b", re.IGNORECASE)
"""A statement for the model to keep (a fact, a name, a preference), not a data request."""
NOTE_QUESTION = re.compile(r"\bi (?:told|said|gave|set|mentioned|asked you to remember|asked you to note|noted|shared)\b|"
                           r"\bdid i (?:say|tell|give|set|mention)\b|\bmy name\b|\bwho is the\b|\bagain\b|\bremember\b|\bwhen is\b")


def is_note(text: str) -> bool:
    return bool(NOTE.search(text.strip())) and "?" not in text


def acknowledge_note(text: str) -> str:
    kept = re.sub(rf"^{NOTE_LEAD_IN}(?:{NOTE_VERBS}(?:\s*(?:that|:|,))?)?\s*", "", text.strip(), flags=re.IGNORECASE)
    kept = re.sub(r",?\s*remember (?:that|this)\s*[.!]?$", "", kept, flags=re.IGNORECASE).strip() or text.strip()
    return f'Noted: "{kept}". I\'ll keep it in mind; it is your note, not data. Ask me for it whenever you need it.'


def visible_notes(earlier: list[BaseMessage]) -> list[str]:
    notes = []
    for message in earlier:
        text = text_of(message)
        if isinstance(message, HumanMessage) and not is_summary_message(message) and is_note(text):
            notes.append(text.strip())
        elif is_summary_message(message) or (isinstance(message, SystemMessage) and "User notes" in text):
            section = re.search(r"^User notes \(verbatim\):\n((?:- .*\n?)+)", text, re.MULTILINE)
            if section:
                notes += [line[2:].strip() for line in section.group(1).splitlines()]
    return list(dict.fromkeys(notes))


def is_note_question(norm: str, context: Context) -> bool:
    if not re.search(r"\?|^(?:what|which|who|when|where|remind|tell me)\b", norm) or is_figure_question(norm):
        return False
    if NOTE_QUESTION.search(norm):
        return True
    found = context.vocabulary.find(norm)
    about_data = found.dataframes or found.columns or tags_in(norm) or re.search(
        r"\b(?:average|mean|median|min|max|highest|lowest|latest|spread|how many|20\d\d)\b", norm)
    return bool(_matching_notes(norm, visible_notes(context.earlier))) and not about_data


def _matching_notes(norm: str, notes: list[str]) -> list[str]:
    words = set(content_words(norm)) - {"remember", "tell", "told", "say", "said", "give", "gave", "set", "mention",
                                        "mentioned", "ask", "asked", "again", "note", "noted", "care", "want"}
    scored = [(len(words & set(content_words(note))), note) for note in notes]
    best = max((score for score, _ in scored), default=0)
    if re.search(r"\bwhat did i ask you to (?:remember|note)\b|\bwhat (?:notes|did i tell you)\b", norm):
        return notes
    return [note for score, note in scored if score == best and score > 0]


def plan_note_recall(clause: Clause, context: Context) -> Task:
    notes = _matching_notes(clause.norm, visible_notes(context.earlier))
    if notes:
        quoted = "; ".join(f'"{note}"' for note in notes)
        return reply(f"You told me: {quoted}.")
    query = " ".join(word for word in content_words(clause.norm) if word not in ("told", "said", "gave", "again", "tell"))[:60]
    if archive_visible(context.earlier) and "search_archive" in context.tool_names and query:
        return Task("note_recall", steps=[Step("search_archive", {"query": query.split()[0] if query else "remember"})])
    return reply("I don't know: I can't see that you told me that in my context window. You can tell me again and "
                 "I'll keep it in mind.")


def answer_note_from_archive(results: list[Any]) -> str:
    for result in results:
        for line in result.content.splitlines():
            if NOTE.search(line.split("]:", 1)[-1].strip(" .")) or "remember" in line.lower():
                return f"From the archive ({line.split(' ', 2)[1] if line.startswith('- ') else 'archive'}): {line.strip('- ')}"
    return "I don't know: I searched the archive and found no note of that. You can tell me again."


def archive_visible(earlier: list[BaseMessage]) -> bool:
    return any(is_summary_message(message) and ARCHIVE_LINE.search(text_of(message)) for message in earlier)


# ----------------------------------------------------------------------------- figures

FIGURE_QUESTION = re.compile(
    r"\byou (?:found|computed|calculated|reported|got|gave|said|mentioned|loaded|worked out|came up with)\b|"
    r"\bdid you (?:find|get|report|compute|calculate|give)\b|\b(?:earlier|previously)\b|\bremind me (?:of )?the\b|"
    r"\bthat (?:number|figure)\b|\bthe first (?:figure|number|result)\b|\bthe [\w-]+ (?:figure|number)\b|"
    r"\bwe (?:found|got|computed)\b|\b(?:figure|number) you\b")
ASKED_STAT = {"mean": r"\baverage|\bmean\b|\bavg\b", "median": r"\bmedian\b", "min": r"\bmin\b|\blowest\b|\bminimum\b",
              "max": r"\bmax\b|\bhighest\b|\bmaximum\b|\bpeak\b", "standard deviation": r"\bstandard deviation\b|\bvolatil",
              "latest": r"\blatest\b|\bcurrent\b", "change": r"\bchange\b", "correlation": r"\bcorrelat",
              "minus": r"\bspread\b|\bdifference\b|\bgap\b"}
FIGURE = re.compile(r"\b(mean|median|min|max|standard deviation|latest|change|count|\d{1,2}th percentile)\s+([+-]?\d+\.\d+)")
DATES = re.compile(r"(\d{4}-\d{2}-\d{2}) to (\d{4}-\d{2}-\d{2})")


@dataclass
class Figure:
    order: int
    stat: str
    value: str
    line: str
    source: str


def is_figure_question(norm: str) -> bool:
    return bool(FIGURE_QUESTION.search(norm)) and not re.search(r"\b(?:load|fetch|pull)\b", norm)


def visible_figures(earlier: list[BaseMessage]) -> list[Figure]:
    found: list[Figure] = []
    for message in earlier:
        if isinstance(message, AIMessage) and text_of(message).strip():
            source = "my earlier answer"
        elif is_summary_message(message):
            source = "the conversation summary"
        else:
            continue
        for line in re.split(r"\n|(?<=\.)\s+(?=[A-Z])", text_of(message)):
            for match in FIGURE.finditer(line):
                found.append(Figure(len(found), match.group(1), match.group(2), line.strip(" -"), source))
            corr = re.search(r"^Correlation of .*: (-?\d+\.\d+)", line.strip())
            if corr:
                found.append(Figure(len(found), "correlation", corr.group(1), line.strip(), source))
    return found


def _qualified(figures_seen: list[Figure], clause: Clause, context: Context) -> list[Figure]:
    norm = clause.norm
    chosen = figures_seen
    names = [name for ref in clause.mentions.dataframes for name in (ref.key, ref.dataframe)]
    if names:
        chosen = [f for f in chosen if any(re.search(rf"(?<![\w/]){re.escape(n)}(?![\w])", f.line.lower()) for n in names)
                  and _first_key_is(f.line, clause, context)]
    stats = [stat for stat, pattern in ASKED_STAT.items() if re.search(pattern, norm)]
    if "minus" in stats:
        chosen = [f for f in chosen if " minus " in f.line]
        stats.remove("minus")
    if stats:
        chosen = [f for f in chosen if f.stat in stats]
    for column in clause.mentions.columns:
        chosen = [f for f in chosen if column in f.line]
    tags = tags_in(clause.rest)
    if tags:
        chosen = [f for f in chosen if any(set(tags) <= context.vocabulary.info(ref, column).tags
                                           for ref in context.vocabulary.frames for column in ref.columns if column in f.line)]
    years = re.findall(r"\b(20\d\d)\b", norm)
    if years:
        chosen = [f for f in chosen if any(year in (DATES.search(f.line).group(1)[:4] if DATES.search(f.line) else "") for year in years)]
    quarter = re.search(r"\bq([1-4])\b", norm)
    if quarter:
        months = {f"-{3 * int(quarter.group(1)) - offset:02d}-" for offset in (2, 1, 0)}
        chosen = [f for f in chosen if DATES.search(f.line) and DATES.search(f.line).group(1)[4:8] in months]
    if re.search(r"\bfirst\b|\bnear the start\b|\bearliest\b|\bat the (?:start|beginning)\b", norm):
        chosen = chosen[:1]
    elif re.search(r"\b(?:last|most recent|latest) (?:figure|number|one|result)\b", norm):
        chosen = chosen[-1:]
    return chosen


def _first_key_is(line: str, clause: Clause, context: Context) -> bool:
    keys = re.findall(r"\b[a-z_]+/[a-z_]+\b", line)
    return not keys or any(ref.key == keys[0] for ref in clause.mentions.dataframes)


def plan_figure_recall(clause: Clause, context: Context) -> Task:
    chosen = _qualified(visible_figures(context.earlier), clause, context)
    values = list(dict.fromkeys((f.stat, f.value, f.line) for f in chosen))
    if len({(stat, value) for stat, value, _ in values}) == 1:
        figure = chosen[0]
        return reply(f"The {figure.stat}{_of(figure.line)} was {figure.value} (from {figure.source}: {_clip(figure.line, 220)}).")
    if len(values) > 1:
        listed = "; ".join(_clip(line, 160) for _, _, line in values[:5])
        return reply(f"I can see several figures that fit: {listed}. Which one do you mean?")
    path = scratch_path_about(context.earlier, [n for ref in clause.mentions.dataframes for n in (ref.key, ref.dataframe)])
    if path and "read_file" in context.tool_names:
        return Task("recall", steps=[Step("read_file", {"path": path, "limit": 2000})], detail={"clause": clause})
    if archive_visible(context.earlier) and "search_archive" in context.tool_names:
        specific = [c for c in clause.mentions.columns if "_" in c or any(ch.isdigit() for ch in c)]
        words = [ref.dataframe for ref in clause.mentions.dataframes] + specific[:1]
        words += [s for s, p in ASKED_STAT.items() if re.search(p, clause.norm) and s != "minus"][:1]
        return Task("recall", steps=[Step("search_archive", {"query": " ".join(words) or "mean"})], detail={"clause": clause})
    asked = next((stat for stat, pattern in ASKED_STAT.items() if re.search(pattern, clause.norm)), "figure")
    return reply(f"I don't know: I can't see the {asked if asked != 'minus' else 'spread'} you are asking about in my "
                 "context window, and I can see no saved file that holds it. I can compute it again if you ask me "
                 "for it (name the data and the period).")


def recall_next_step(task: Task, results: list[Any], context: Context) -> Step | None:
    """After a read of a scratch/ copy of a load: nothing more if it was whole, else a script over the same rows, else the next page."""
    pages = [result.content for result in results if result.name == "read_file"]
    text, next_offset = assemble_pages(pages)
    if text is not None or next_offset is None or len(pages) != len(results):
        return None
    script = _recount_script(task, pages[0], context)
    if script is not None:
        return Step("run_python", {"code": script, "timeout": 60})
    return Step("read_file", {**task.steps[0].roles, "offset": next_offset}) if len(pages) < READ_BACK_PAGES else None


def _loaded_series(task: Task, page: str, context: Context) -> tuple[Any, str, re.Match] | None:
    """The dataframe, column and load header of a copy's first page (the column asked, else the main one it holds)."""
    header = LOAD_HEADER.search(page)
    ref = context.vocabulary.frame(header["key"]) if header else None
    if ref is None:
        return None
    after = page[header.end():].lstrip("\n").splitlines()
    held = after[0].split(",") if after and not after[0].startswith("# ") else list(ref.columns)
    asked = [column for column in task.detail["clause"].mentions.columns if column in held]
    column = asked[0] if asked else context.vocabulary.main_column(ref)
    return (ref, column, header) if column in held else None


def _recount_script(task: Task, page: str, context: Context) -> str | None:
    series = _loaded_series(task, page, context)
    if series is None or "run_python" not in context.tool_names:
        return None
    ref, column, header = series
    return stat_script(f"figures of {ref.key} {column}, the rows of the copy in scratch/", [(ref.pipeline, ref.dataframe, column,
                       ref.date_column)], header["start"], header["end"], None, None, [], None, context.catalog_root)


def _partial_read(task: Task, results: list[Any], stat: str, context: Context) -> str | None:
    """The answer when a copy was read only in part: from the script over the same rows, or saying what was seen."""
    pages = [result.content for result in results if result.name == "read_file"]
    if not pages or assemble_pages(pages)[0] is not None or READ_HEADER.match(pages[0]) is None:
        return None
    where = READ_HEADER.match(pages[0])
    seen = max(int(match["b"]) for page in pages if (match := READ_HEADER.match(page)))
    scripts = [read_stat_output(result.content) for result in results if result.name == "run_python"]
    series = _loaded_series(task, pages[0], context)
    if scripts and scripts[0] and series and stat in scripts[0]:
        ref, column, header = series
        out = scripts[0]
        return (f"The {stat} of {ref.key} {column} was {out[stat]:.4f} ({out['first_date']} to {out['last_date']}, "
                f"{int(out['count'])} values). I could read only lines 1-{seen} of the {where['n']} in {where['path']}, so I "
                f"computed it again with a script over the same rows ({ref.key} from {header['start']} to {header['end']}).")
    return (f"I could read only lines 1-{seen} of the {where['n']} in {where['path']} (my window has no room for more), "
            f"so I won't state a {stat} of part of the rows. I can compute it again if you ask me for it (name the data "
            "and the period).")


def answer_recall_from_read(task: Task, results: list[Any], context: Context) -> str:
    """After reading a scratch/ file or searching the archive: the figure that fits every qualifier asked, or 'I don't know'."""
    clause: Clause = task.detail["clause"]
    stat = next((s for s, p in ASKED_STAT.items() if re.search(p, clause.norm) and s in ("mean", "median", "min", "max",
                                                                                           "latest")), "mean")
    if (partial := _partial_read(task, results, stat, context)) is not None:
        return partial
    found: list[Figure] = []
    pages = [result.content for result in results if result.name == "read_file" and READ_HEADER.match(result.content)]
    if len(pages) > 1:  # a copy read back page by page, whole: one text
        results = [replace(results[0], content=assemble_pages(pages)[0] or "")]
    for result in results:
        where = READ_HEADER.match(pages[0] if pages else result.content)
        table = parse_loaded_table(result.content)
        if table is not None:
            ref = context.vocabulary.frame(table.key)
            column = next((c for c in clause.mentions.columns if c in table.header), None) or (context.vocabulary.main_column(ref) if ref else None)
            if column and table.values(column):
                out = figures(table.values(column))
                source = where["path"] if where else result.name
                return (f"The {stat} of {table.key} {column} was {out[stat]:.4f} ({out['first_date']} to {out['last_date']}, "
                        f"{out['count']} values, computed from {source}).")
        items = [item for line in result.content.splitlines() for item in re.split(r"\s-\s|\.\.\.|(?<=\.)\s+(?=[a-z_]+/)", line)]
        for item in items:
            for match in FIGURE.finditer(item):
                found.append(Figure(len(found), match.group(1), match.group(2), item.strip(" -"), "the archive"))
    chosen = _qualified(found, clause, context) if _has_qualifiers(clause, context) else []
    values = list(dict.fromkeys((f.stat, f.value, f.line) for f in chosen))
    if len({(s, v) for s, v, _ in values}) == 1:
        figure = chosen[0]
        return f"The {figure.stat}{_of(figure.line)} was {figure.value} (from the archive: {_clip(figure.line, 220)})."
    if len(values) > 1:
        return "I found several figures that fit: " + "; ".join(_clip(line, 160) for _, _, line in values[:5]) + ". Which one do you mean?"
    return ("I don't know: I looked in what I could read back and found no figure that fits what you asked. "
            "I can compute it again if you ask me for it.")


def _has_qualifiers(clause: Clause, context: Context) -> bool:
    return bool(clause.mentions.dataframes or clause.mentions.columns or tags_in(clause.rest)
                or any(re.search(pattern, clause.norm) for pattern in ASKED_STAT.values()))


def _of(line: str) -> str:
    keys = re.findall(r"(?<![\w/])[a-z_]+/[a-z_]+\b", line)
    return f" of {keys[0]}" if keys and not keys[0].startswith(("scratch/", "archives/")) else ""


def visible_rows(earlier: list[BaseMessage], key: str) -> tuple[str, str] | None:
    """The newest visible load of a dataframe: ('table', content) or ('stub', scratch path); None if none is visible."""
    calls = {call["id"]: call for message in earlier if isinstance(message, AIMessage) for call in message.tool_calls}
    pipeline, _, dataframe = key.partition("/")
    for message in reversed(earlier):
        if not isinstance(message, ToolMessage):
            continue
        call = calls.get(message.tool_call_id, {})
        if call.get("name") != "chartbook_load_data" or call.get("args", {}).get("dataframe") not in (dataframe, key):
            continue
        content = text_of(message)
        if (path := offload_path(content)):
            return "stub", path
        if parse_loaded_table(content) is not None:
            return "table", content
    return None


def scratch_path_about(earlier: list[BaseMessage], names: list[str]) -> str | None:
    """The newest scratch/ file that a visible stub (by its path and call) or summary line names, about ``names``."""
    calls = {call["id"]: call for message in earlier if isinstance(message, AIMessage) for call in message.tool_calls}
    for message in reversed(earlier):
        text = text_of(message)
        if isinstance(message, ToolMessage) and (path := offload_path(text)):
            call = calls.get(message.tool_call_id, {})
            if call.get("name") == "chartbook_load_data" and _names_in(path + " " + json.dumps(call.get("args", {})), names):
                return path
        elif is_summary_message(message):
            for line in text.splitlines():
                for path in re.findall(r"(scratch/[\w/.-]*chartbook_load_data[\w.-]*\.txt)", line):
                    if _names_in(line, names):
                        return path
    return None


def docs_stub_path(earlier: list[BaseMessage], key: str) -> str | None:
    """The scratch/ file holding a dataframe's docs, if a visible offload stub of chartbook_get_docs names it."""
    calls = {call["id"]: call for message in earlier if isinstance(message, AIMessage) for call in message.tool_calls}
    pipeline, _, dataframe = key.partition("/")
    for message in reversed(earlier):
        if isinstance(message, ToolMessage) and (path := offload_path(text_of(message))):
            call = calls.get(message.tool_call_id, {})
            args = call.get("args", {})
            if call.get("name") == "chartbook_get_docs" and (args.get("dataframe") in (dataframe, key)):
                return path
    return None


SAVED_WORDS = re.compile(r"\b(?:saved|offloaded|scratch|stored|full docs|full result|full file|the file you)\b")


def _names_in(text: str, names: list[str]) -> bool:
    if not names:
        return True
    lowered = text.lower()
    return any(re.search(r"(?<![a-z])" + re.escape(name.lower()) + r"(?![a-z])", lowered) for name in names)


def _clip(text: str, limit: int) -> str:
    flat = re.sub(r"\s+", " ", text).strip()
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."
