"""How the offline model reads a request: its intent, its entities and its arguments.

``read_request(text, vocabulary)`` returns a ``Request``: what kind of request
it is and, for tool work, the ``Step``s to take (one tool call each). Intents
are found by meaning-bearing words, not exact sentences:

=================  ====================================================================
question kinds     words that signal them
=================  ====================================================================
goal               goal / objective / purpose / set out / first ask / originally ...
last action        "what did you just read/do", "last tool", "previous step"
recall             a statistic word + past tense: "what was the average ... you found"
summary            a summary prompt holding ``<message type=...>`` blocks
=================  ====================================================================

=================  ====================================================================
tool intents       words that signal them
=================  ====================================================================
list catalog       list / available / catalog / which datasets, with no dataframe named
docs               docs / documentation / dictionary / schema / describe / "what does X mean"
                   (or a dataframe or a column named with nothing else to do)
load               load / rows / fetch / pull / records / "last 30" / a year or date /
                   a statistic (mean, average, min, max, latest, spread)
read file          read / open / show / cat + a path (``analyze.py``, ``scratch/x.txt``)
list files         files / folder / directory / ls
search files       search / grep / find / look for + a quoted or following word
write file         write / save / create + a path, content in a ``` block or quotes
run                run / execute + a .py file, or a ``` code block
search archive     archive + search / find / look / recover
=================  ====================================================================

Arguments: ``50 rows`` / ``last 30`` set ``limit``; ``2024-03-01`` dates,
``2024`` years and ``March 2024`` / ``2024-03`` months set ``start``/``end``;
column names of the dataframe set ``columns``. A statistic without a limit or
dates loads the last ``STAT_ROWS`` rows of the asked column; with dates, up to
``MAX_ROWS``. Two dataframes in one request ("docs for sofr and effr") make
one step each, at most ``MAX_STEPS``.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any, Literal

from flawedcode.models.offline_entities import DataframeRef, Mentions, Vocabulary

MAX_STEPS = 4
STAT_ROWS = 100
MAX_ROWS = 500

RequestKind = Literal["goal", "last_action", "recall", "summary", "tools", "chat"]
Intent = Literal[
    "list_catalog", "docs", "load", "read_file", "list_files", "search_files", "write_file",
    "run_python", "search_archive",
]

TOOL_NAMES_BY_INTENT: dict[str, tuple[str, ...]] = {
    "list_catalog": ("chartbook_list",),
    "docs": ("chartbook_get_docs",),
    "load": ("chartbook_load_data",),
    "read_file": ("read_file",),
    "list_files": ("list_files", "ls"),
    "search_files": ("search_files", "grep", "grep_search"),
    "write_file": ("write_file",),
    "run_python": ("run_python", "execute", "python"),
    "search_archive": ("search_archive",),
}
"""Which tool names can carry out an intent (ours first, then Deep Agents' names)."""

PARAMETER_NAMES_BY_ROLE: dict[str, tuple[str, ...]] = {
    "pipeline": ("pipeline",),
    "dataframe": ("dataframe", "dataframe_id", "name"),
    "columns": ("columns", "cols"),
    "limit": ("limit", "n", "rows"),
    "start": ("start", "start_date"),
    "end": ("end", "end_date"),
    "path": ("path", "file_path", "filename", "file"),
    "pattern": ("pattern", "regex", "query", "search"),
    "query": ("query", "q", "pattern", "text"),
    "content": ("content", "text", "contents", "data"),
    "code": ("code", "source", "script"),
    "command": ("command", "cmd"),
}
"""How a role is spelled in different tools' schemas: arguments are filled by the schema's own names."""

STAT_WORDS: dict[str, str] = {
    "mean": "mean", "average": "mean", "avg": "mean",
    "min": "min", "minimum": "min", "lowest": "min",
    "max": "max", "maximum": "max", "highest": "max", "peak": "max",
    "latest": "latest", "current": "latest", "most recent": "latest",
    "spread": "spread", "difference": "spread", "gap": "spread",
}

PATH_PATTERN = re.compile(
    r"(?<![\w/.-])((?:scratch|archives)/[\w./-]+|[\w./-]*[\w-]\.(?:py|md|txt|csv|json|toml|ya?ml|cfg|ini|log|html))\b"
)
CODE_BLOCK = re.compile(r"```[a-zA-Z0-9_+-]*\n?(.*?)```", re.DOTALL)
QUOTED = re.compile(r"[\"'`“‘]([^\"'`”’]+)[\"'`”’]")
MONTHS = {name.lower(): number for number, name in enumerate(calendar.month_name) if name}
MONTHS.update({name.lower(): number for number, name in enumerate(calendar.month_abbr) if name})


@dataclass
class Step:
    """One planned tool call: an intent and its arguments by role."""

    intent: str
    roles: dict[str, Any] = field(default_factory=dict)


@dataclass
class Request:
    """What the offline model understood from the latest human message."""

    text: str
    kind: RequestKind
    steps: list[Step] = field(default_factory=list)
    stats: list[str] = field(default_factory=list)
    columns: list[str] = field(default_factory=list)
    mentions: Mentions = field(default_factory=Mentions)
    note: str = ""
    """Why no step could be planned (said to the user instead)."""


# ----------------------------------------------------------------------------- words


def words_of(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9_]+", text.lower()))


def has_any(text: str, phrases: tuple[str, ...]) -> bool:
    lowered = text.lower()
    return any(re.search(r"(?<![\w])" + re.escape(phrase) + r"(?![\w])", lowered) for phrase in phrases)


def stats_asked(text: str) -> list[str]:
    """The statistics a request names, in a stable order (``what does X mean`` is not a mean)."""
    lowered = re.sub(r"what (?:does|do)\b.*\bmean\b", " ", text.lower())
    lowered = re.sub(r"\b(?:latest|most recent|last)\s+\d+", " ", lowered)
    found = {stat for word, stat in STAT_WORDS.items() if has_any(lowered, (word,))}
    return [stat for stat in ("mean", "min", "max", "latest", "spread") if stat in found]


GOAL_PHRASES = (
    "goal", "objective", "purpose", "set out", "first ask", "first asked", "asked first", "first request",
    "originally", "original request", "original question", "started with", "start of our conversation",
    "beginning of our conversation", "what was i trying", "what am i trying", "what were we trying",
)
QUESTION_CUES = ("what", "remind", "recall", "tell me", "which", "do you remember", "?")
LAST_ACTION_PATTERNS = (
    r"\bwhat did you (?:just )?(?:read|do|load|run|open|call|look at|fetch)\b",
    r"\bwhat (?:have|did) you just\b",
    r"\b(?:last|previous|most recent) (?:tool|action|step|thing you did|call)\b",
    r"\bwhat was the last thing\b",
)
PAST_CUES = (
    "was", "were", "you found", "you loaded", "you fetched", "those", "that number", "you reported", "you computed", "you got", "you said", "earlier",
    "before", "previously", "remind", "did you", "we found", "we got",
)
SUMMARY_WORDS = ("summar", "extract", "condense", "compress", "context")


# ----------------------------------------------------------------------------- the request


def read_request(text: str, vocabulary: Vocabulary) -> Request:
    """Classify one human message and plan its tool steps."""
    if is_summary_request(text):
        return Request(text, "summary")
    lowered = text.lower()
    mentions = vocabulary.find(text)
    stats = stats_asked(text)
    if _is_goal_question(lowered):
        return Request(text, "goal", mentions=mentions)
    if any(re.search(pattern, lowered) for pattern in LAST_ACTION_PATTERNS):
        return Request(text, "last_action", mentions=mentions)
    if stats and _is_past_tense_question(lowered) and not _limit_of(lowered):
        return Request(text, "recall", stats=stats, mentions=mentions)
    request = Request(text, "tools", stats=stats, mentions=mentions)
    request.steps = plan_steps(text, mentions, stats, vocabulary, request)[:MAX_STEPS]
    if not request.steps and not request.note:
        request.kind = "chat"
    return request


def is_summary_request(text: str) -> bool:
    if "<message type=" not in text:
        return False
    instructions = re.sub(r"<message type=.*?</message>", " ", text, flags=re.DOTALL).lower()
    return any(word in instructions for word in SUMMARY_WORDS)


def _is_goal_question(lowered: str) -> bool:
    return has_any(lowered, GOAL_PHRASES) and has_any(lowered, QUESTION_CUES)


def _is_past_tense_question(lowered: str) -> bool:
    about_earlier_work = re.sub(r"\b(?:you|we) (?:loaded|fetched|pulled|computed|calculated)\b", " ", lowered)
    return has_any(lowered, PAST_CUES) and not has_any(about_earlier_work, ("load", "fetch", "pull", "compute", "calculate"))


def plan_steps(text: str, mentions: Mentions, stats: list[str], vocabulary: Vocabulary, request: Request) -> list[Step]:
    """The tool steps for a request, file work first when it names a file."""
    lowered = text.lower()
    file_steps = _file_steps(text, lowered)
    if file_steps:
        return file_steps
    if has_any(lowered, ("archive", "archives", "archived")) and has_any(
        lowered, ("search", "find", "look", "check", "recover", "grep")
    ):
        return [Step("search_archive", {"query": _search_words(text, drop=("archive", "archives", "archived"))})]
    if has_any(lowered, ("search", "grep", "look for", "find where", "occurrences", "where is", "where are")):
        pattern = _search_pattern(text)
        if pattern:
            return [Step("search_files", {"pattern": pattern})]
    if has_any(lowered, ("files", "folder", "directory", "ls", "project structure", "workspace")) and has_any(
        lowered, ("list", "show", "what", "which", "ls", "see")
    ):
        return [Step("list_files", {"path": "."})]
    frames = _frames_meant(mentions, vocabulary, request)
    if not frames:
        if mentions.pipelines or _is_catalog_question(lowered):
            return [Step("list_catalog")]
        return []
    intent = _catalog_intent(lowered, stats, mentions)
    return [_catalog_step(intent, ref, lowered, stats, mentions) for ref in frames]


def _is_catalog_question(lowered: str) -> bool:
    return has_any(
        lowered,
        ("list", "catalog", "catalogue", "available", "dataframes", "datasets", "data sets", "tables", "pipelines",
         "what data", "which data", "chartbook"),
    )


def _frames_meant(mentions: Mentions, vocabulary: Vocabulary, request: Request) -> list[DataframeRef]:
    """Dataframes named, or the one dataframe a named column belongs to."""
    if mentions.dataframes:
        return list(mentions.dataframes)
    owners: list[DataframeRef] = []
    for column in mentions.columns:
        candidates = vocabulary.frames_with_column(column)
        if mentions.pipelines:
            candidates = [ref for ref in candidates if ref.pipeline in mentions.pipelines]
        if len(candidates) == 1 and candidates[0] not in owners:
            owners.append(candidates[0])
        elif len(candidates) > 1 and not owners:
            keys = ", ".join(ref.key for ref in candidates)
            request.note = f"The column '{column}' is in several dataframes ({keys}); which one do you mean?"
    return owners


DOCS_WORDS = ("docs", "doc", "documentation", "dictionary", "schema", "describe", "description", "definition",
              "define", "explain", "readme", "metadata")
LOAD_WORDS = ("load", "rows", "row", "fetch", "pull", "records", "observations", "values", "data", "series",
              "download", "history", "time series", "numbers", "plot", "daily")
WEAK_DOCS_WORDS = ("columns", "column", "fields", "about", "info", "information", "units", "meaning")


def _catalog_intent(lowered: str, stats: list[str], mentions: Mentions) -> str:
    if has_any(lowered, DOCS_WORDS) or re.search(r"\bwhat (?:does|do)\b.*\bmean\b", lowered):
        return "docs"
    if stats or _limit_of(lowered) or _date_range(lowered) != (None, None) or has_any(lowered, LOAD_WORDS):
        return "load"
    return "docs"


def _catalog_step(intent: str, ref: DataframeRef, lowered: str, stats: list[str], mentions: Mentions) -> Step:
    roles: dict[str, Any] = {"pipeline": ref.pipeline, "dataframe": ref.dataframe}
    if intent == "docs":
        return Step("docs", roles)
    columns = [column for column in mentions.columns if column in ref.columns]
    if not columns and stats:
        main = main_column(list(ref.columns))
        columns = [main] if main else []
    if columns:
        roles["columns"] = columns
    start, end = _date_range(lowered)
    limit = _limit_of(lowered)
    if start or end:
        roles["start"], roles["end"] = start, end
        limit = limit or MAX_ROWS
    elif stats and not limit:
        limit = STAT_ROWS
    if limit:
        roles["limit"] = min(limit, MAX_ROWS)
    return Step("load", {key: value for key, value in roles.items() if value is not None})


def main_column(columns: list[str]) -> str | None:
    """The column a question about a dataframe is most likely about: a rate, else a yield, else the first."""
    candidates = [column for column in columns if column != "date"]
    for test in (
        lambda name: name in ("rate", "sofr"),
        lambda name: name.endswith("_rate") or name.startswith("rate"),
        lambda name: name in ("10y", "y10", "yield_10y", "dgs10", "sveny10"),
        lambda name: "rate" in name and "volume" not in name,
        lambda name: "yield" in name,
    ):
        for column in candidates:
            if test(column.lower()):
                return column
    return candidates[0] if candidates else None


# ----------------------------------------------------------------------------- arguments


def _limit_of(lowered: str) -> int | None:
    for pattern in (
        r"\b(\d{1,4})\s+(?:\w+\s+){0,2}?(?:rows|row|records|observations|days|entries|values|points|lines|obs)\b",
        r"\b(?:last|latest|recent|most recent|top|first)\s+(\d{1,4})\b",
    ):
        match = re.search(pattern, lowered)
        if match and not re.fullmatch(r"(19|20)\d\d", match.group(1)):
            return int(match.group(1))
    return None


def _date_range(lowered: str) -> tuple[str | None, str | None]:
    """(start, end) from ISO dates, 'March 2024', '2024-03' or bare years; None where not given."""
    intervals: list[tuple[str, str]] = []
    rest = lowered
    for match in re.finditer(r"\b(\d{4})-(\d{2})-(\d{2})\b", rest):
        intervals.append((match.group(0), match.group(0)))
    rest = re.sub(r"\b\d{4}-\d{2}-\d{2}\b", " ", rest)
    for match in re.finditer(r"\b(\d{4})-(\d{2})\b", rest):
        intervals.append(_month_interval(int(match.group(1)), int(match.group(2))))
    rest = re.sub(r"\b\d{4}-\d{2}\b", " ", rest)
    month_names = "|".join(sorted(MONTHS, key=len, reverse=True))
    for match in re.finditer(rf"\b({month_names})\.?\s+((?:19|20)\d\d)\b", rest):
        intervals.append(_month_interval(int(match.group(2)), MONTHS[match.group(1)]))
    rest = re.sub(rf"\b({month_names})\.?\s+((?:19|20)\d\d)\b", " ", rest)
    for match in re.finditer(r"\b((?:19|20)\d\d)\b", rest):
        intervals.append((f"{match.group(1)}-01-01", f"{match.group(1)}-12-31"))
    if not intervals:
        return None, None
    start, end = min(a for a, _ in intervals), max(b for _, b in intervals)
    if len(intervals) == 1 and start == end:
        if has_any(lowered, ("since", "from", "after", "starting")):
            return start, None
        if has_any(lowered, ("until", "before", "through", "up to", "to")):
            return None, end
    return start, end


def _month_interval(year: int, month: int) -> tuple[str, str]:
    last_day = calendar.monthrange(year, month)[1]
    return f"{year:04d}-{month:02d}-01", f"{year:04d}-{month:02d}-{last_day:02d}"


def _file_steps(text: str, lowered: str) -> list[Step]:
    code = CODE_BLOCK.search(text)
    paths = [match.group(1).rstrip(".") for match in PATH_PATTERN.finditer(text)]
    if has_any(lowered, ("write", "save", "create", "overwrite", "put")) and paths:
        content = code.group(1) if code else _quoted_or_after_colon(text, paths[0])
        if content is not None:
            return [Step("write_file", {"path": paths[0], "content": content})]
    if code and has_any(lowered, ("run", "execute", "try", "python", "eval")) or (code and not paths):
        return [Step("run_python", {"code": code.group(1)})]
    if has_any(lowered, ("run", "execute", "launch")) and (paths or has_any(lowered, ("tests", "test suite", "pytest"))):
        wants_tests = has_any(lowered, ("tests", "test suite", "pytest"))
        script = next((path for path in paths if path.endswith(".py")), None)
        if script and not (wants_tests and PurePosixPath(script).name.startswith("test")):
            return [Step("run_python", {"code": run_script_code(script), "command": f"python {script}"})]
        if wants_tests:
            return [Step("run_python", {"code": RUN_TESTS_CODE, "command": "python -m pytest -q"})]
    if paths and has_any(lowered, ("list", "ls")) and paths[0].endswith("/"):
        return [Step("list_files", {"path": paths[0]})]
    if paths:
        return [Step("read_file", {"path": path}) for path in dict.fromkeys(paths)]
    return []


def run_script_code(script: str) -> str:
    return f"import runpy\nrunpy.run_path({script!r}, run_name='__main__')\n"


RUN_TESTS_CODE = "import sys, pytest\nsys.exit(pytest.main(['-q']))\n"


def _quoted_or_after_colon(text: str, path: str) -> str | None:
    after_path = text.split(path, 1)[1] if path in text else text
    quoted = QUOTED.search(after_path)
    if quoted:
        return quoted.group(1)
    if ":" in after_path:
        content = after_path.split(":", 1)[1].strip()
        return content + "\n" if content else None
    return None


SEARCH_STOPWORDS = frozenset(
    "a an the for of in on to and or please can you could would me my our we i is are was were be where "
    "search find look grep occurrences show all any every files file project code workspace that which what "
    "used defined called mentioned appears appear there it this these those with from".split()
)


def _search_pattern(text: str) -> str | None:
    quoted = QUOTED.search(text)
    if quoted:
        return quoted.group(1)
    words = _search_words(text)
    return words.split()[0] if words else None


def _search_words(text: str, drop: tuple[str, ...] = ()) -> str:
    words = [word for word in re.findall(r"[A-Za-z0-9_./-]+", text)
             if word.lower() not in SEARCH_STOPWORDS and word.lower() not in drop]
    return " ".join(words)


# ----------------------------------------------------------------------------- tool calls


def tool_name_for(intent: str, tool_schemas: dict[str, dict[str, Any]]) -> str | None:
    """The bound tool that carries out an intent, or None if none was given to the model."""
    return next((name for name in TOOL_NAMES_BY_INTENT.get(intent, ()) if name in tool_schemas), None)


def fill_arguments(schema: dict[str, Any], roles: dict[str, Any]) -> dict[str, Any] | None:
    """Arguments named as this tool's schema names them; None if a required one has no value."""
    parameters = schema.get("function", {}).get("parameters", {})
    properties: dict[str, Any] = parameters.get("properties", {})
    required = set(parameters.get("required", []))
    arguments: dict[str, Any] = {}
    for role, value in roles.items():
        name = next((candidate for candidate in PARAMETER_NAMES_BY_ROLE.get(role, (role,)) if candidate in properties
                     and candidate not in arguments), None)
        if name is not None and value is not None:
            arguments[name] = value
    if "command" in arguments and "code" in arguments:
        del arguments["command"]
    if not required <= set(arguments):
        return None
    return arguments
