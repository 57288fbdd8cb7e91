"""The tools an agent offers for its own work, used as their schemas say (issue 41, stage 4).

No agent's tool names are known: a tool's role is read from its description and parameters (words in ``session.toml``): a **plan** tool takes a
list of items with a text field (a status enum gives its values), a **memory** or **delegation** tool takes one text (a boolean named for a
correction marks one), a **loader** names groups of tools not bound ("group 'files' = write_file, list_files"). "Plan: 1) ... 2) ..." calls the
plan tool, items pending; "continue" does the next item of the plan in view (the latest call holding a list of items, or an agent's bracketed ``-
[status] item`` lines) as if asked, then marks it done; "what's the plan?" quotes it. "Delegate to sub-agents: A; B" calls the delegation tool per
part (else does the work); a note or "actually: ..." calls the memory tool. A tool a loader offers is loaded first (a group named for a role when
no bound tool has it)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from flawedcode.models.teaching.summary import SAY, WORDS, is_note, words_in

Call = tuple[str, dict[str, Any]]
ROLES = WORDS["tools"]
LINE = re.compile(r"^- \[(\w+)\] (.+)$", re.MULTILINE)
ITEM_SPLIT = re.compile(r"(?:^|\s|;)\(?\d{1,2}[.)]\s+|\s*;\s*|\n+\s*[-*]?\s*|,?\s+then\s+")
LEAD = WORDS["plan"]["lead_in"]
DONE = ("done", "completed", "complete", "cancelled")


@dataclass
class Work:  # what a message asks of the agent's own tools: said first, asks done as if asked directly, calls after
    say: str = ""
    asks: list[str] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    then_say: str = ""


def params(schema: dict[str, Any], part: str = "properties") -> Any:
    return schema.get("function", schema).get("parameters", {}).get(part, {})


def text_param(schema: dict[str, Any]) -> str | None:
    """The tool's one required parameter when it is a text (a memory, delegation or loader tool takes one)."""
    return named[0] if len(named := params(schema, "required")) == 1 and params(schema).get(named[0], {}).get("type") == "string" else None


def tool_for(role: str, tool_schemas: dict[str, dict[str, Any]]) -> tuple[tuple[str, dict[str, Any]] | None, Call | None]:
    """(the bound tool for ``role`` that takes what it needs, None), or (None, the call loading a group named for it), or (None, None)."""
    for name, schema in tool_schemas.items():
        if name not in loaders(tool_schemas) and words_in(describe(schema), ROLES[role]) and (items if role == "plan" else text_param)(schema):
            return (name, schema), None
    return None, next(((loader, {text_param(tool_schemas[loader]): group}) for group, (loader, tools) in groups(tool_schemas).items()
                       if any(word in " ".join([group, *tools]) for word in ROLES[role])), None)


def items(schema: dict[str, Any]) -> tuple[str, str, str | None, list[str]] | None:
    """A plan tool's (list parameter, text field, status field, status values)."""
    for name, spec in params(schema).items():
        fields = spec.get("items", {}).get("properties", {}) if spec.get("type") == "array" else {}
        text = next((key for key, value in fields.items() if value.get("type") == "string" and "enum" not in value and key != "status"), None)
        if text:
            status = next((key for key, value in fields.items() if "enum" in value or key == "status"), None)
            return name, text, status, list(fields.get(status, {}).get("enum") or ["pending", "in_progress", "done"])
    return None


GROUP = re.compile(r"['\"]([\w-]+)['\"]\s*[=:]?\s*([\w, ]+)")


def loaders(tool_schemas: dict[str, dict[str, Any]]) -> set[str]:
    return {name for name, schema in tool_schemas.items() if text_param(schema) and GROUP.search(describe(schema))
            and words_in(describe(schema), ROLES["load"])}


def describe(schema: dict[str, Any]) -> str:
    return str(schema.get("function", schema).get("description", ""))


def groups(tool_schemas: dict[str, dict[str, Any]]) -> dict[str, tuple[str, set[str]]]:
    """Deferred groups a loader's description names: group -> (the loader, its tools not bound yet)."""
    found = {group: (name, {tool for tool in re.findall(r"\w+", listed) if tool not in ("group", "and")} - set(tool_schemas))
             for name in loaders(tool_schemas) for group, listed in GROUP.findall(describe(tool_schemas[name]))}
    return {group: value for group, value in found.items() if value[1]}


def offered(tool_schemas: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:  # bound, or offered by a loader
    return {**{tool: {} for _, tools in groups(tool_schemas).values() for tool in tools}, **tool_schemas}


def load_call(wanted: set[str], tool_schemas: dict[str, dict[str, Any]], asked: set[str] = frozenset()) -> Call | None:
    """The loader call that makes one of ``wanted`` bound (a group not already asked for), or None."""
    for group, (loader, tools) in groups(tool_schemas).items():
        if wanted & tools and group not in asked:
            return loader, {text_param(tool_schemas[loader]): group}
    return None


def read(text: str, earlier: list[BaseMessage], tool_schemas: dict[str, dict[str, Any]]) -> Work | None:
    plain = " ".join(re.findall(r"[\w'-]+", text.lower()))
    for lead in LEAD:
        plain = plain.removeprefix(f"{lead} ")
    plan_tool, load = tool_for("plan", tool_schemas)
    if (plan_tool or load) and (steps := stated_plan(text)):
        return Work(calls=[load or (plan_tool[0], written(plan_tool[1], [(step, None) for step in steps]))])
    if plain in WORDS["plan"]["continue"] or any(plain == f"{go} {tail}" for go in WORDS["plan"]["continue"] for tail in WORDS["plan"]["tail"]):
        return next_item(earlier, plan_tool)
    if plain in WORDS["plan"]["show"]:
        todos = in_view(earlier)
        return Work(say=SAY["plan_seen"].format(plan="\n".join(f"- [{s}] {t}" for t, s in todos)) if todos else SAY["no_plan"])
    if work := delegated(text):
        tool, load = tool_for("delegate", tool_schemas)
        parts = [part.strip(" .") for part in re.split(r"\s*;\s*|\n+", work) if part.strip(" .")]
        return Work(calls=[load] if load else [(tool[0], {text_param(tool[1]): part}) for part in parts]) if (tool or load) and parts \
            else Work(asks=[work])
    return remembered(text, *tool_for("memory", tool_schemas))


def stated_plan(text: str) -> list[str]:
    """The items of a stated plan: an opening that says a plan, then ':' or '--', then the items."""
    head, sep, rest = (re.split(r"(:|\s--?\s|\s—\s)", text, maxsplit=1) + ["", ""])[:3]
    opening = [word for word in re.findall(r"[\w'-]+", head.lower()) if word not in WORDS["plan"]["opening"] and not word.isdigit()]
    if not sep or not opening or not set(opening) <= set(WORDS["plan"]["words"]):
        return []  # the opening says a plan and nothing else ('Plan:', "here's my plan for today:", 'steps --')
    steps = [re.sub(r"^(?:first|then|and|finally)\s+", "", step.strip(" .,"), flags=re.IGNORECASE) for step in ITEM_SPLIT.split(rest)]
    return [step for step in steps if step]


def written(schema: dict[str, Any], todos: list[tuple[str, str | None]]) -> dict[str, Any]:  # (text, status or None)
    array, text, status, values = items(schema)
    return {array: [{text: item, **({status: state or values[0]} if status else {})} for item, state in todos]}


def in_view(earlier: list[BaseMessage]) -> list[tuple[str, str]]:
    """The latest plan in view, as (text, status) pairs: a call's list of items, or an agent's note of '- [status] item' lines."""
    for message in reversed(earlier):
        if isinstance(message, HumanMessage) and message.text.startswith("[") and (lines := LINE.findall(message.text)):
            return [(item, state) for state, item in lines]
        for call in reversed(message.tool_calls if isinstance(message, AIMessage) else []):
            for value in call["args"].values():
                todos = [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []
                texts = [next((v for k, v in item.items() if isinstance(v, str) and k != "status"), None) for item in todos]
                if todos and all(texts):
                    return [(t, str(item.get("status", "pending"))) for t, item in zip(texts, todos)]
    return []


def next_item(earlier: list[BaseMessage], plan_tool: tuple[str, dict[str, Any]] | None) -> Work:
    if not (todos := in_view(earlier)):
        return Work(say=SAY["no_plan_next"])
    current = next((i for i, (_, state) in enumerate(todos) if "progress" in state),
                   next((i for i, (_, state) in enumerate(todos) if state not in DONE), None))
    if current is None:
        return Work(say=SAY["plan_done"].format(count=len(todos)))
    work = Work(say=SAY["plan_step"].format(number=current + 1, count=len(todos), item=todos[current][0]), asks=[todos[current][0]])
    if plan_tool:
        done = next((v for v in items(plan_tool[1])[3] if v in DONE), "done")
        work.calls = [(plan_tool[0], written(plan_tool[1], [(t, done if i == current else s) for i, (t, s) in enumerate(todos)]))]
    return work


def delegated(text: str) -> str | None:
    """The work a message hands to sub-agents ('delegate to sub-agents: A; B', 'use a sub-agent to A')."""
    for sep in (":", " to ", " for ", ","):
        head, found, work = text.partition(sep)
        opening = head.lower().strip().removeprefix("please ")
        if found and work.strip() and len(head.split()) <= 8 and not {"without", "what", "did", "which", "how"} & set(opening.split()) and (
                words_in(head, WORDS["delegate"]["words"]) or opening.startswith(tuple(WORDS["delegate"]["opens"]))):
            return work.strip()
    return None


def remembered(text: str, tool: tuple[str, dict[str, Any]] | None, load: Call | None) -> Work | None:
    """A note or a correction, kept with the memory tool (loaded first when a loader offers it)."""
    if tool is None or not (is_note(text) or correction(text)):
        return Work(calls=[load]) if load and (is_note(text) or correction(text)) else None
    (name, schema), fact = tool, correction(text)
    flag = next((key for key, spec in params(schema).items() if spec.get("type") == "boolean" and "correct" in key), None)
    if fact:
        return Work(calls=[(name, {text_param(schema): fact, **({flag: True} if flag else {})})])
    return Work(calls=[(name, {text_param(schema): note_words(text).strip(" .")})], then_say=SAY["note_noted"].format(note=note_words(text)))


def correction(text: str) -> str | None:
    head, found, fact = (re.split(r"\s*([:,-])\s*", re.sub(r"(?i)^(?:sorry|oops|ugh|wait|hmm)\W+", "", text.strip()), maxsplit=1) + ["", ""])[:3]
    return fact.strip() if found and head.lower() in WORDS["notes"]["corrections"] and fact.strip() and "?" not in fact else None


def note_words(text: str) -> str:
    """The fact a note keeps: the user's words without 'remember that' and the words leading to it."""
    lead, verbs = ("|".join(map(re.escape, WORDS["notes"][key])) for key in ("lead_in", "verbs"))
    kept = re.sub(rf"^(?:(?:{lead})\b[\s,:;.!-]*)*(?:(?:{verbs})\b(?:\s*(?:that|:|,))?)?\s*", "", text.strip(), flags=re.IGNORECASE)
    return re.sub(r",?\s*remember (?:that|this)\s*[.!]?$", "", kept, flags=re.IGNORECASE).strip() or text.strip()
