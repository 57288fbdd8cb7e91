"""Which agents a benchmark runs: the built-in versions, the peers, and your own classes.

An entry of ``--agents`` (or of ``run_benchmark(agents=...)``) is one of:

- a built-in name: ``v0``, ``v1``, ``v2``, ``v3`` (``flawedcode.agents``), a peer
  (``lc-summarization``, ``lc-summarization-tuned``, ``lc-context-editing``,
  ``lc-context-editing-tuned``, ``deepagents``; see ``peers.py``) or one of the
  field's strategies (``swe-agent-last-5``, ``swe-agent-last-5-polling-5``,
  ``anthropic-clear-tool-uses``, ``openhands-condenser``, ``codex-compaction``,
  ``jetbrains-hybrid``; see ``field_peers.py``), or one of the peers that show the model its
  budget (``anthropic-context-awareness``, ``codex-context-windows``; see ``budget_peers.py``);
- ``path/to/my_agent.py:MyAgent``: the class ``MyAgent`` defined in that file;
- ``package.module:MyAgent``: the class from an importable module.

Your class must subclass ``flawedcode.agents.BaseAgent``; it is built and run
exactly like v2: ``MyAgent(model, workspace=..., conversation_id=..., name=..., config=...)``,
then ``send(text)`` once per step. Its name in tables and file names is the
class's own ``version`` when it sets one (a subclass of ``AgentV2`` that does
not set it would clash with ``v2``), else the class name. A name that is a built-in
agent's (``v3``, a peer's) is refused: its row would be read as the built-in one.

A wrong entry is one ``AgentSpecError`` line: a file that does not exist, a file
that fails to import, a name the file does not define (the classes it does
define are listed), or an object that is not a ``BaseAgent`` subclass.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from langchain_core.language_models import BaseChatModel

from flawedcode.agents import AGENTS, BaseAgent
from flawedcode.bench.budget_peers import BUDGET_PEERS
from flawedcode.bench.field_peers import FIELD_PEERS
from flawedcode.bench.peers import PEERS, PeerAgent, deepagents_missing
from flawedcode.config import AgentConfig, ConfigError, V2Config, parse_config
from flawedcode.tools import Workspace

BUILTIN_AGENTS: dict[str, type[BaseAgent]] = {**AGENTS, **PEERS, **FIELD_PEERS, **BUDGET_PEERS}
KNOWN_AGENTS = tuple(BUILTIN_AGENTS)


class AgentSpecError(ValueError):
    """An ``--agents`` entry names no usable agent; the message says which and why, in one line."""


@dataclass(frozen=True)
class AgentEntry:
    """One agent of a benchmark: the name it goes by and the class that builds it."""

    name: str
    agent_class: type[BaseAgent]
    spec: str


def resolve_agent(spec: str) -> AgentEntry:
    """The agent an ``--agents`` entry names (a built-in name, ``file.py:Class`` or ``module:Class``)."""
    spec = spec.strip()
    if spec in BUILTIN_AGENTS:
        return AgentEntry(spec, BUILTIN_AGENTS[spec], spec)
    if ":" not in spec:
        raise AgentSpecError(f"unknown agent {spec!r}; choose from {', '.join(KNOWN_AGENTS)}, "
                             "or name your own class as path/to/file.py:ClassName or package.module:ClassName")
    where, _, class_name = spec.rpartition(":")
    if not where or not class_name.isidentifier():
        raise AgentSpecError(f"{spec!r}: expected path/to/file.py:ClassName or package.module:ClassName")
    module = _load_module(spec, where)
    found = getattr(module, class_name, None)
    if found is None:
        defined = sorted(name for name, value in vars(module).items() if inspect.isclass(value) and value.__module__ == module.__name__)
        hint = f"; it defines: {', '.join(defined)}" if defined else "; it defines no classes"
        raise AgentSpecError(f"{spec!r}: {where} has no {class_name!r}{hint}")
    if not (inspect.isclass(found) and issubclass(found, BaseAgent)):
        kind = type(found).__name__ if not inspect.isclass(found) else f"class {found.__name__}"
        raise AgentSpecError(f"{spec!r}: {class_name} is a {kind}, not an agent; subclass flawedcode.agents.BaseAgent")
    if inspect.isabstract(found) or found is BaseAgent:
        raise AgentSpecError(f"{spec!r}: {class_name} cannot be built on its own; subclass it and define send()")
    name = _name_of(found)
    if name in BUILTIN_AGENTS and BUILTIN_AGENTS[name] is not found:
        raise AgentSpecError(f"{spec!r}: {class_name} goes by the name {name!r}, which is a built-in agent's; "
                             "set a `version` of your own on the class (e.g. 'my-v2')")
    return AgentEntry(name, found, spec)


def resolve_agents(specs: list[str | AgentEntry]) -> list[AgentEntry]:
    """Resolve every entry (already resolved ones pass through); two entries may not go by the same name."""
    entries = [spec if isinstance(spec, AgentEntry) else resolve_agent(spec) for spec in specs]
    seen: dict[str, str] = {}
    for entry in entries:
        if entry.name in seen:
            raise AgentSpecError(f"{entry.spec!r} and {seen[entry.name]!r} both go by the name {entry.name!r}; "
                                 "set a distinct `version` on your class")
        seen[entry.name] = entry.spec
    return entries


def _name_of(agent_class: type[BaseAgent]) -> str:
    own = agent_class.__dict__.get("version")
    name = own if isinstance(own, str) and own else agent_class.__name__
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)  # it names folders under out_dir


def _load_module(spec: str, where: str) -> ModuleType:
    looks_like_file = where.endswith(".py") or "/" in where or "\\" in where
    if looks_like_file:
        path = Path(where).expanduser()
        if not path.is_file():
            raise AgentSpecError(f"{spec!r}: no such file {where}" + (" (it is a folder)" if path.is_dir() else ""))
        module_name = "flawedcode_bench_agent_" + re.sub(r"\W", "_", path.resolve().with_suffix("").as_posix())
        if module_name in sys.modules:
            return sys.modules[module_name]
        loader_spec = importlib.util.spec_from_file_location(module_name, path)
        if loader_spec is None or loader_spec.loader is None:
            raise AgentSpecError(f"{spec!r}: {where} is not a Python file")
        module = importlib.util.module_from_spec(loader_spec)
        sys.modules[module_name] = module
        try:
            loader_spec.loader.exec_module(module)
        except Exception as error:  # any error in the user's file is reported, in one line
            del sys.modules[module_name]
            raise AgentSpecError(f"{spec!r}: importing {where} failed: {_one_line(error)}") from None
        return module
    try:
        return importlib.import_module(where)
    except ModuleNotFoundError as error:
        raise AgentSpecError(f"{spec!r}: no module named {error.name!r}") from None
    except Exception as error:
        raise AgentSpecError(f"{spec!r}: importing {where} failed: {_one_line(error)}") from None


def _one_line(error: BaseException) -> str:
    return " ".join(f"{type(error).__name__}: {error}".split())


def unavailable_agents(entries: list[AgentEntry]) -> dict[str, str]:
    """Agents that cannot run here, with the reason (shown as a note in the table)."""
    notes: dict[str, str] = {}
    for entry in entries:
        if entry.name == "deepagents" and (reason := deepagents_missing()):
            notes[entry.name] = reason
    return notes


# --- configuration --------------------------------------------------------------------------

def configs_for(entries: list[AgentEntry], data: dict[str, Any] | None, source: str = "config") -> dict[str, AgentConfig | None]:
    """Each agent's config from one settings mapping (a YAML file read as ``chat`` reads it).

    Every agent takes the settings its config class knows (v1 takes ``budget_tokens``; v2 also
    ``offload`` and ``summarization``); a setting no agent's config knows is an error.
    """
    if data is None:
        return {entry.name: None for entry in entries}
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: expected a mapping of settings at the top level; found {type(data).__name__}")
    classes = [entry.agent_class.config_class for entry in entries] + [V2Config]
    unknown = [key for key in data if not any(key in config_class.model_fields for config_class in classes)]
    if unknown:
        raise ConfigError(f"{source}: {unknown[0]}: unknown setting (check its spelling and indentation)")
    return {entry.name: parse_config({key: value for key, value in data.items() if key in entry.agent_class.config_class.model_fields},
                                     entry.agent_class.config_class, source)
            for entry in entries}


def v2_config_from(data: dict[str, Any] | None, source: str = "config") -> V2Config | None:
    """The v2 config the peers are tuned to (v2's defaults when no file was given)."""
    if data is None:
        return None
    config = parse_config({key: value for key, value in data.items() if key in V2Config.model_fields}, V2Config, source)
    assert isinstance(config, V2Config)
    return config


def build_agent(entry: AgentEntry, model: BaseChatModel, workspace: Workspace, conversation_id: str,
                config: AgentConfig | None = None, v2_config: V2Config | None = None) -> BaseAgent:
    """A fresh agent for one run."""
    options: dict[str, Any] = {"workspace": workspace, "conversation_id": conversation_id, "name": entry.name}
    if config is not None:
        options["config"] = config
    if issubclass(entry.agent_class, PeerAgent):
        options["v2_config"] = v2_config
    if entry.agent_class in BUILTIN_AGENTS.values():
        return entry.agent_class(model, **options)
    try:
        return entry.agent_class(model, **options)
    except Exception as error:  # the user's class: say which one failed to build, in one line
        raise AgentSpecError(f"{entry.spec!r}: building it as {entry.agent_class.__name__}(model, workspace=..., "
                             f"conversation_id=..., name=..., config=...) failed: {_one_line(error)}") from error
