"""Typed configuration for the agents, with defaults in code and overrides from YAML.

One object per concern (CONTRIBUTING.md, point 3):

- ``AgentConfig``: what every agent version needs (model, budget, system prompt).
- ``OffloadConfig``: when a tool result is saved to scratch/ and replaced by a stub.
- ``SummarizationConfig``: shaped like DeerFlow's ``summarization:`` block
  (``enabled``, ``model_name``, ``trigger``, ``keep``, ``trim_tokens_to_summarize``,
  ``summary_prompt``).
- ``V2Config`` extends ``AgentConfig`` with the two blocks above; it does not copy it.

A YAML file (see ``flawedcode/flawedcode.yaml``, which lists every setting) overrides any field::

    budget_tokens: 8192
    summarization:
      trigger: [{type: fraction, value: 0.6}, {type: messages, value: 60}]
      keep: {type: tokens, value: 1500}
    offload:
      threshold_chars: 5000

A malformed file fails with one message that names the key, what was expected
and what was found, e.g.
``flawedcode.yaml: summarization.trigger[0].type: expected one of 'tokens', 'messages', 'fraction'; found 'percent'``.

Values are checked for meaning, not only for type:

- numbers are numbers: ``budget_tokens: true`` is refused (no ``true`` = 1), and so is ``"8192"``;
- every threshold is positive, per-tool ones included; ``trigger`` lists at least one trigger;
- ``keep`` is below every trigger it can be compared with (same kind; or tokens and fractions
  when ``budget_tokens`` is set): otherwise the context is over the trigger again right after a summary;
- a key written twice in one mapping is refused (YAML would silently keep the last);
- anchors and aliases may not expand a file by more than ``MAX_ALIAS_NODES`` nodes (a few hundred
  bytes of aliases can expand to billions), and a file must be UTF-8 text;
- an error quotes at most ``QUOTE_CHARS`` characters of a bad value;
- a file is read only if it is a regular file of at most ``MAX_INPUT_FILE_BYTES`` (4 MB):
  ``/dev/zero`` or a FIFO as ``--config`` is refused in one line, never read without end.

``read_yaml_file`` applies the YAML rules to task files too.
"""

from __future__ import annotations

import os
import re
import reprlib
import stat
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from flawedcode.constants import DEFAULT_BUDGET_TOKENS

PROMPTS_DIR = Path(__file__).parent / "prompts"
MAX_ALIAS_NODES = 10_000
"""Most YAML nodes that anchors and aliases may add to a file when expanded."""
QUOTE_CHARS = 60
"""Most characters of a bad value quoted in an error message."""
MAX_INPUT_FILE_BYTES = 4 * 1024**2
"""Largest config or task file read (a bigger one, or a device such as ``/dev/zero``, is refused unread)."""


class ConfigError(ValueError):
    """A configuration file or value is malformed; the message says where and why."""


class _Strict(BaseModel):
    # strict: a YAML ``true`` is not the number 1, nor "8192" the number 8192 (an int is still a float)
    model_config = ConfigDict(extra="forbid", validate_assignment=True, strict=True)


class ContextSize(_Strict):
    """One threshold: ``tokens`` (absolute), ``messages`` (count) or ``fraction`` (of the budget)."""

    type: Literal["tokens", "messages", "fraction"]
    value: float = Field(gt=0, description="Tokens, messages, or a fraction in (0, 1].")

    @model_validator(mode="after")
    def _check_value(self) -> ContextSize:
        if self.type == "fraction" and self.value > 1:
            raise ValueError(f"a fraction must be in (0, 1]; found {self.value}")
        if self.type != "fraction" and self.value != int(self.value):
            raise ValueError(f"{self.type} must be a whole number; found {self.value}")
        return self

    def in_tokens(self, budget_tokens: int) -> int | None:
        """This size in tokens, or None when it counts messages."""
        if self.type == "tokens":
            return int(self.value)
        if self.type == "fraction":
            return int(self.value * budget_tokens)
        return None


class AgentConfig(_Strict):
    """What every agent version needs."""

    model: str | None = Field(None, description="Model spec ('offline', 'openai:gpt-4o-mini'); None = FLAWEDCODE_MODEL or offline.")
    budget_tokens: int | None = Field(DEFAULT_BUDGET_TOKENS, gt=0, description="Context budget managed by the agent; None = the model's window.")
    system_prompt: str = Field(default_factory=lambda: (PROMPTS_DIR / "system.md").read_text(encoding="utf-8"), description="System prompt text.")
    recursion_limit: int = Field(25, gt=0, description="Most steps per user turn: a model call or a round of tool calls each (hooks not counted).")
    timeout_seconds: float | None = Field(None, gt=0, description="Seconds one model request may take; None = 120 (a real model's default).")


class OffloadConfig(_Strict):
    """When a tool result is saved to scratch/ and replaced by a stub."""

    enabled: bool = Field(True, description="Turn offloading on or off.")
    threshold_chars: int | None = Field(5000, gt=0, description="Offload results longer than this many characters.")
    threshold_tokens: int | None = Field(1250, gt=0, description="Offload results longer than this many tokens (OR'ed with characters).")
    per_tool_chars: dict[Annotated[str, Field(min_length=1)], Annotated[int, Field(gt=0)]] = Field(
        default_factory=dict, description="Per-tool character thresholds that replace threshold_chars.")
    exempt_tools: list[str] = Field(
        default_factory=list,
        description="More tools never offloaded, besides the read-only ones of tools.TOOL_SPECS (always exempt).",
    )
    preview_fraction: float = Field(0.12, gt=0, le=0.5, description="Stub size as a fraction of the original's tokens.")
    key_lines_whole: bool = Field(False, description="Keep a preview's key lines (column list, statistics) whole whatever the share.")


class SummarizationConfig(_Strict):
    """DeerFlow-shaped summarization block."""

    enabled: bool = Field(True, description="Turn summarization on or off.")
    model_name: str | None = Field(None, description="Separate summary model spec; None = the run's own model (also the fallback).")
    trigger: list[ContextSize] = Field(
        default_factory=lambda: [ContextSize(type="fraction", value=0.6)],
        description="Summarize before a model call when ANY of these is met.",
    )
    keep: ContextSize = Field(
        default_factory=lambda: ContextSize(type="fraction", value=0.10),
        description="How much recent history stays verbatim after a summary.",
    )
    trim_tokens_to_summarize: int | None = Field(1500, gt=0, description="Most tokens of history sent to the summarizer (earlier summary pinned).")
    summary_prompt: str | None = Field(None, description="Prompt text with a {messages} slot; None = prompts/summary.md.")

    @field_validator("trigger", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        if isinstance(value, list) and not value:
            raise ValueError("at least one trigger is needed (to turn summarization off, set enabled: false)")
        return [value] if isinstance(value, dict) else value

    @model_validator(mode="after")
    def _keep_below_triggers(self) -> SummarizationConfig:
        for trigger in self.trigger:
            if trigger.type == self.keep.type and self.keep.value >= trigger.value:
                raise ValueError(f"keep ({_size(self.keep)}) must be below the trigger ({_size(trigger)}), "
                                 "or the context is over the trigger again right after each summary")
        return self

    def keep_problem(self, budget_tokens: int) -> str | None:
        """Why ``keep`` is not below a token trigger at this budget (tokens vs fraction), or None."""
        keep_tokens = self.keep.in_tokens(budget_tokens)
        for trigger in self.trigger:
            trigger_tokens = trigger.in_tokens(budget_tokens)
            if keep_tokens is not None and trigger_tokens is not None and keep_tokens >= trigger_tokens:
                return (f"summarization.keep ({_size(self.keep)} = {keep_tokens:,} tokens) must be below the trigger "
                        f"({_size(trigger)} = {trigger_tokens:,} tokens of the {budget_tokens:,}-token budget), "
                        "or the context is over the trigger again right after each summary")
        return None

    @field_validator("summary_prompt")
    @classmethod
    def _has_messages_slot(cls, value: str | None) -> str | None:
        if value is not None and "{messages}" not in value:
            raise ValueError("the summary prompt must contain a {messages} slot for the conversation")
        return value

    def trigger_tokens(self, budget_tokens: int) -> int | None:
        """The lowest token trigger (the chart's trigger line), or None if only message counts trigger."""
        limits = [limit for trigger in self.trigger if (limit := trigger.in_tokens(budget_tokens)) is not None]
        return min(limits, default=None)

    def prompt_text(self) -> str:
        return self.summary_prompt or (PROMPTS_DIR / "summary.md").read_text(encoding="utf-8")


class V2Config(AgentConfig):
    """v2 = v1's config plus offloading and summarize-with-archive."""

    offload: OffloadConfig = Field(default_factory=OffloadConfig, description="Offloading of large tool results.")
    summarization: SummarizationConfig = Field(default_factory=SummarizationConfig, description="Summarize with archive.")

    @model_validator(mode="after")
    def _keep_below_triggers_at_this_budget(self) -> V2Config:
        problem = self.summarization.keep_problem(self.budget_tokens) if self.budget_tokens else None
        if problem is not None:
            raise ValueError(problem)
        return self



# --- v3 (agents/v3.py): one block per mechanism --------------------------------------------------

class StableCompactionConfig(_Strict):
    """When v3 clears tool results and appends summaries (fractions of the budget)."""

    enabled: bool = Field(True, description="Turn compaction on or off.")
    clear_trigger: float = Field(0.25, gt=0, le=1, description="Clear answered tool results once the context reaches this share of the budget.")
    clear_at_least: int = Field(600, ge=0, description="Clear only when it frees at least this many tokens (one cache break must pay).")
    summary_trigger: float = Field(0.8, gt=0, le=1, description="Summarize within a turn once the context (after clearing) reaches this share.")
    keep_turns: int = Field(0, ge=0, description="Earlier turns kept whole (results cleared); older ones become digests.")
    keep_requests: int = Field(0, ge=0, description="The latest digested requests also kept verbatim (0: a digest's "
                                                     "'Last request:' line is what a follow-up such as 'and for EFFR?' reads).")
    keep: float = Field(0.05, gt=0, lt=1, description="Share of the budget kept verbatim after the summary blocks.")
    summaries_max: int = Field(650, gt=0, description="Consolidate the summary blocks and digests (one summary call) "
                                                      "once they pass this many tokens.")
    summary_chars: int = Field(400, gt=100, description="The length the summary instruction asks for (characters).")


class SubagentConfig(_Strict):
    """A child agent's own limits (none of them is the parent's)."""

    budget_tokens: int = Field(4096, gt=0, description="The child's context budget (its own, whatever the parent's).")
    recursion_limit: int = Field(30, gt=0, description="Most steps of the child's one turn (a model call or a round of tools each).")
    summary_trigger: float = Field(0.6, gt=0, le=1, description="The child's own summary trigger, a share of its budget.")
    result_tokens: int = Field(64, gt=20, description="Most tokens of the child's answer the parent receives (at most ~300).")
    max_tasks_per_turn: int = Field(8, gt=0, le=64, description="Most task calls run in one parent turn; more are refused.")
    max_concurrent: int = Field(2, gt=0, le=16, description="Most children running at once; more wait their turn.")


class MemoryConfig(_Strict):
    """memory.md: facts the user asked to keep, injected within a token budget."""

    enabled: bool = Field(True, description="Keep and inject memory.md.")
    path: str | None = Field(None, description="The memory file; None = memory.md in the workspace's parent of archives/.")
    budget_tokens: int = Field(500, ge=0, description="Most tokens the memory block takes in every request.")


class LoadoutConfig(_Strict):
    """Which tools are sent, and how compactly."""

    compact_schemas: bool = Field(True, description="Send one-line tool descriptions (prompts/tools_compact.yaml).")
    defer_file_tools: bool = Field(True, description="The file tools join when load_tools('files') is called.")
    defer_unused_tools: bool = Field(False, description="run_python, write_todos, task, save_memory join when load_tools names "
                                                         "their group (off: measured dearer under a prompt cache; docs/benchmark.md).")
    archive_tools_when_archived: bool = Field(True, description="search_archive joins once the archive holds a part.")


class V3OffloadConfig(OffloadConfig):
    """v3 offloads earlier than v2: a result the current turn carries is written to the cache at full price."""

    threshold_tokens: int | None = Field(600, gt=0, description="Offload results longer than this many tokens (OR'ed with characters).")
    preview_fraction: float = Field(0.1, gt=0, le=0.5,
                                    description="Stub size as a fraction of the original's tokens (its key lines are kept whole).")
    key_lines_whole: bool = Field(True, description="Keep a preview's key lines (column list, statistics) whole whatever the share.")


class V3Config(V2Config):
    """v3 = v2's config plus cache-stable compaction, sub-agents, memory and the tool loadout."""

    offload: V3OffloadConfig = Field(default_factory=V3OffloadConfig, description="Offloading of large tool results (earlier than v2).")

    compaction: StableCompactionConfig = Field(default_factory=lambda: StableCompactionConfig(), description="Cache-stable compaction.")
    subagents: SubagentConfig = Field(default_factory=lambda: SubagentConfig(), description="The task tool's child agents.")
    memory: MemoryConfig = Field(default_factory=lambda: MemoryConfig(), description="Budgeted memory across conversations.")
    loadout: LoadoutConfig = Field(default_factory=lambda: LoadoutConfig(), description="The tool loadout.")

def _size(size: ContextSize) -> str:
    return f"{size.type} {size.value:g}"


def brief_repr(value: Any, limit: int = QUOTE_CHARS) -> str:
    """``repr(value)`` cut to ``limit`` characters, without ever building the whole of a huge value."""
    shortener = reprlib.Repr()
    shortener.maxlevel, shortener.maxstring, shortener.maxother = 2, limit, limit
    shortener.maxdict = shortener.maxlist = shortener.maxtuple = shortener.maxset = 4
    return shorten(shortener.repr(value), limit)


def shown_path(path: Path) -> str:
    """A path as an error shows it: whole when short, else ``.../<name>`` (the name itself cut if huge)."""
    text = str(path)
    return text if len(text) <= QUOTE_CHARS else ".../" + shorten(path.name)


def shorten(text: str, limit: int = QUOTE_CHARS) -> str:
    """``text``, or its first ``limit`` characters ending in "..."."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _describe_error(source: str, error: ValidationError) -> str:
    first = error.errors()[0]
    location = ""
    for part in first["loc"]:
        part = part if isinstance(part, int) else shorten(str(part))
        location += f"[{part}]" if isinstance(part, int) else (f".{part}" if location else str(part))
    expected = first["msg"].removeprefix("Value error, ")
    if expected.startswith("Input should be "):
        expected = "expected " + re.sub(r", unable to .*$", "", expected.removeprefix("Input should be "))
    found = first.get("input")
    found_text = "" if first["type"] == "missing" or isinstance(found, dict) else f"; found {brief_repr(found)}"
    if first["type"] == "extra_forbidden":
        expected, found_text = "unknown setting (check its spelling and indentation)", ""
    where = location or ("" if first["type"] == "value_error" else "(top level)")  # a check across settings names them
    return f"{source}: {where + ': ' if where else ''}{expected}{found_text}"


def parse_config(data: dict[str, Any] | None, config_class: type[AgentConfig] = V2Config, source: str = "config") -> AgentConfig:
    """Validate a dict (from YAML or code) into a config object, with one clear error."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: expected a mapping of settings at the top level; found {type(data).__name__}")
    try:
        return config_class.model_validate(data)
    except ValidationError as error:
        raise ConfigError(_describe_error(source, error)) from None


def read_yaml_file(path: str | Path, error_type: type[ValueError], what: str) -> Any:
    """Parse a YAML file, or raise ``error_type`` saying which file, and where the YAML breaks."""
    path = Path(path)
    try:
        text = read_bounded(path, what).decode("utf-8")
    except FileTooLargeError as error:
        raise error_type(str(error)) from None
    except OSError as error:
        raise error_type(f"{shown_path(path)}: cannot read the {what} ({error.strerror or error})") from None
    except UnicodeDecodeError as error:
        raise error_type(f"{shorten(path.name)}: the {what} is not UTF-8 text (byte 0x{error.object[error.start]:02x} "
                         f"at position {error.start:,}); save it as UTF-8") from None
    try:
        return load_yaml(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise error_type(f"{shorten(path.name)}: not valid YAML{where}: {getattr(error, 'problem', error)}") from None
    except YamlLimitError as error:
        raise error_type(f"{shorten(path.name)}: {error}") from None
    except RecursionError:
        raise error_type(f"{shorten(path.name)}: the YAML is nested too deeply to read") from None


class FileTooLargeError(ValueError):
    """A file given as input is not a regular file, or is larger than ``MAX_INPUT_FILE_BYTES``."""


def read_bounded(path: Path, what: str, limit: int = 0) -> bytes:
    """A regular file's bytes, reading at most ``limit`` (default ``MAX_INPUT_FILE_BYTES``) + 1 bytes of it.

    ``/dev/zero``, a FIFO or a 64 MB file is refused in one line (``FileTooLargeError``), never read whole.
    """
    limit = limit or MAX_INPUT_FILE_BYTES
    descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(descriptor, "rb") as stream:
        kind = os.fstat(stream.fileno()).st_mode
        if not stat.S_ISREG(kind):
            raise FileTooLargeError(f"{shown_path(path)}: the {what} is not a regular file (a device, a FIFO or a "
                                    "folder); give a YAML file")
        data = stream.read(limit + 1)
    if len(data) > limit:
        raise FileTooLargeError(f"{shown_path(path)}: the {what} is larger than {limit:,} bytes; "
                                "a settings or task file is a few kilobytes")
    return data


class YamlLimitError(ValueError):
    """A YAML document breaks one of the rules above (an alias bomb, a duplicate key)."""


NUMBER_TAGS = ("tag:yaml.org,2002:int", "tag:yaml.org,2002:float")
MAX_YAML_NUMBER_CHARS = 100
"""Longest number a YAML file may write (Python refuses to read integers past 4,300 digits)."""


def load_yaml(text: str) -> Any:
    """``yaml.safe_load``, refusing duplicate keys and aliases that expand beyond ``MAX_ALIAS_NODES`` nodes."""
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_yaml_nodes(node)
        return loader.construct_document(node)
    finally:
        loader.dispose()


def _check_yaml_nodes(root: yaml.Node) -> None:
    """Count the nodes the document has once its aliases are expanded (each distinct node counted once per use)."""
    expanded: dict[int, int] = {}
    in_progress: set[int] = set()

    def size(node: yaml.Node) -> int:
        if id(node) in expanded:
            return expanded[id(node)]
        if id(node) in in_progress:
            raise YamlLimitError(f"line {node.start_mark.line + 1}: an alias refers to a node that contains it")
        in_progress.add(id(node))
        total = 1
        if isinstance(node, yaml.ScalarNode) and node.tag in NUMBER_TAGS and len(node.value) > MAX_YAML_NUMBER_CHARS:
            raise YamlLimitError(f"line {node.start_mark.line + 1}: a number written with {len(node.value):,} characters; "
                                 f"numbers here have at most {MAX_YAML_NUMBER_CHARS}")
        if isinstance(node, yaml.MappingNode):
            _refuse_duplicate_keys(node)
            total += sum(size(key) + size(value) for key, value in node.value)
        elif isinstance(node, yaml.SequenceNode):
            total += sum(size(item) for item in node.value)
        in_progress.discard(id(node))
        expanded[id(node)] = total
        if total - len(expanded) > MAX_ALIAS_NODES:
            raise YamlLimitError(f"line {node.start_mark.line + 1}: anchors and aliases expand to more than "
                                 f"{MAX_ALIAS_NODES:,} extra nodes; write the values out instead")
        return total

    size(root)


def _refuse_duplicate_keys(node: yaml.MappingNode) -> None:
    seen: set[tuple[str, str]] = set()
    for key, _ in node.value:
        if not isinstance(key, yaml.ScalarNode) or key.tag == "tag:yaml.org,2002:merge":
            continue
        if (key.tag, key.value) in seen:
            raise YamlLimitError(f"line {key.start_mark.line + 1}: duplicate key {brief_repr(key.value)} "
                                 "(each setting may appear once in a mapping)")
        seen.add((key.tag, key.value))


def load_config(path: str | Path, config_class: type[AgentConfig] = V2Config) -> AgentConfig:
    """Read a YAML file into ``config_class``; defaults fill what the file leaves out."""
    data = read_yaml_file(path, ConfigError, "config file")
    return parse_config(data, config_class, source=Path(path).name)
