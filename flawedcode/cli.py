"""The ``flawedcode`` command: the FlawedCode REPL, the lesson's demo, the benchmark, the catalog, the archive.

    flawedcode --version
    flawedcode chat [--agent v0|v1|v2|v3] [--budget TOKENS] [--workspace DIR] [--config YAML] [MODEL OPTIONS]
    flawedcode demo [--out DIR] [--budget TOKENS] [--config YAML] [MODEL OPTIONS]
    flawedcode bench [--agents v0,v1,v2,v3,path/to/my_agent.py:MyAgent] [--tasks a,b | --tasks-file PATH] [--runs N]
                     [--config YAML] [--out DIR] [--concurrency N] [--resume | --no-resume]
                     [--yes] [--max-cost USD] [MODEL OPTIONS]
    flawedcode catalog list | docs PIPELINE DATAFRAME | load PIPELINE DATAFRAME [--columns a,b] [--limit N] [--start] [--end]
    flawedcode archive list [--dir DIR] | search QUERY [--conversation ID] | show CONVERSATION [--part N]
                       (paths printed are usable from here; a --dir that does not exist is an error)

MODEL OPTIONS, the same on chat, demo and bench: ``--model SPEC`` (default
``FLAWEDCODE_MODEL``, else the command's offline model), ``--timeout SECONDS``
(one model request; default 120), ``--record FILE`` (every model request and
reply as JSONL, secrets redacted; replay it with ``--model replay:FILE``) and
``--window TOKENS`` (the server's context window, when it does not publish it).

The REPL (``chat``) prints, for every turn: each tool call with the size of its
result, each context event (offload, summary, recovery), the reply, and a
one-line token meter::

    you> Get docs for yield_curve/repo_public
      -> chartbook_get_docs(pipeline='yield_curve', dataframe='repo_public')  [5,465 chars, offloaded]
      * offload: chartbook_get_docs result, 5,465 chars (1,571 tokens) -> scratch/chartbook_get_docs_....txt
    The full result of chartbook_get_docs ...
    [v2] context 2,345/8,192 tokens (29%) | turn: 2 calls, 4,120 in, 96 out | this conversation: offloads 1, summaries 0

On a priced model the meter ends with the session's cost so far
(``| cost $0.0042``), or ``| cost unknown`` when the model's prices are not known.
The context and the offload and summary counts are this conversation's (``clear`` starts them again).

On a terminal, the prompt has line editing and history (readline: arrow keys
recall earlier requests, kept in ``~/.flawedcode_history``), and a long paste
arrives whole. Where Python has no readline, a line that reaches the terminal's
4,095-character limit gets one warning line (the terminal cut it). On exit a
temporary workspace is removed when the session changed nothing in it, and kept
(its path and the changed files printed) when it did; ``--workspace DIR`` is
always kept.
Everything printed goes through ``infra.safe_text.printable``: an escape
sequence, NUL or bidi override from a model, a tool or a server is shown
escaped, never acted on. Under the reply, a turn's reasoning shows folded
(``[reasoning: 2,213 tokens, hidden]``) and ``  * `` lines say what to know
about a reply (no answer text, a content filter, an answer cut short, a tool
call written as text). A replay that misses stops the REPL with one line.
Warnings (a lowered budget, a server that truncated the prompt) print once,
as one ``warning:`` line.

``quit`` or ``exit`` leaves, ``clear`` starts a new conversation. With piped
input the REPL prints ``you> <line>`` for each line read (a readable
transcript) and exits 0 at the end of the input. Input that is not valid UTF-8
is decoded with replacement (an invalid byte becomes U+FFFD), so it never
becomes text that cannot be sent, saved or archived. Ctrl-C at the prompt leaves;
Ctrl-C during a turn abandons that turn and puts the conversation back as it
was. A failed turn prints one ``error:`` line and the REPL goes on.

``bench`` with a model that is not offline first prints a cost preview (the
same suite on the offline model, priced with the model's profile) and asks
before spending; ``--yes`` skips the question, and without a terminal to ask
on it stops unless ``--yes`` was given. ``--max-cost USD`` stops cleanly once
the estimated cost reaches USD (finished runs are kept; the same command
resumes). ``--config`` is read as ``chat`` reads it: every agent takes the
settings its config knows (v1 ``budget_tokens``; v2 also ``offload`` and
``summarization``), and the peers are tuned to that v2.

Errors the user can fix (bad arguments, an unknown dataframe, a malformed
config, a bad model spec, a bad ``--agents`` entry) print one line
``flawedcode: error: ...`` on stderr and exit with code 2. Set
``FLAWEDCODE_DEBUG=1`` to see the traceback instead.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

from flawedcode import paths
from flawedcode.constants import DEFAULT_BUDGET_TOKENS
from flawedcode.formats import STUB_PREFIX
from flawedcode.infra.safe_text import printable

CUT_OFF_START = "Error: your call to "  # the start of context.repair.CUT_OFF_RESULT (imported lazily there)

EXIT_OK = 0
EXIT_CANCELLED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
DEFAULT_BENCH_RUNS = 3
QUIT_WORDS = frozenset({"quit", "exit"})
CLEAR_WORDS = frozenset({"clear"})
ARGUMENT_PREVIEW_CHARS = 60
MIN_BUDGET_TOKENS = 1024  # below this not even the system prompt and the tool schemas fit


class UsageError(Exception):
    """A mistake the user can fix; printed as one line, exit code 2."""


class OneLineParser(argparse.ArgumentParser):
    """argparse that reports a bad argument in one line instead of the usage block."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


def say(text: str = "") -> None:
    """Print a line of the REPL (or any command): escape sequences, NUL and bidi overrides in it are made visible."""
    print(printable(text), flush=True)


def warn(text: str) -> None:
    print(printable(text), file=sys.stderr, flush=True)


# --- chat: the FlawedCode REPL -------------------------------------------------------
def command_chat(args: argparse.Namespace) -> int:
    if hasattr(sys.stdin, "reconfigure"):  # an invalid byte in the input becomes U+FFFD, not a poisoned turn
        sys.stdin.reconfigure(errors="replace")
    from flawedcode import notices

    with notices.capture() as warnings_seen:  # a name a server sent may hold escape sequences: print them escaped
        try:
            agent = build_chat_agent(args)
        finally:
            for notice in warnings_seen:
                warn(notices.PREFIX + notice)
    interactive = sys.stdin.isatty()
    if interactive and getattr(agent, "memory", None) is not None:  # a fact that looks like a credential: ask first
        agent.memory.confirm = confirm_memory
    before = workspace_files(agent.workspace.root)
    try:
        say(f"FlawedCode REPL: agent {agent.version}, model {agent.model_name}, budget {agent.budget_tokens:,} tokens, "
            f"workspace {agent.workspace.root}")
        if getattr(agent, "replay_copy_of", None):
            say(f"Replaying: the recording's tool calls run in a temporary copy of {printable(agent.replay_copy_of)}; "
                "that folder is never changed.")
        say("Type a request; 'clear' starts a new conversation, 'quit' leaves."
            + (" Arrow keys edit the line and recall earlier requests." if interactive and line_editing() else ""))
        options = getattr(agent, "model_options", None)
        next_id = (lambda: options.conversation_id(agent.version, agent.workspace.archive_dir)) if options else None
        repl(agent, interactive=interactive, next_conversation_id=next_id)
    except KeyboardInterrupt:  # Ctrl-C outside a turn: leave quietly
        say()
    finally:
        say(close_workspace(agent.workspace, before))
    return EXIT_OK


def confirm_memory(text: str) -> bool:
    """Ask the user before a fact that looks like a credential (shown redacted) is kept in memory.md."""
    from flawedcode.infra.safe_text import printable

    try:
        answer = input(f"The agent wants to remember a fact that looks like a credential: {printable(text)[:200]}\n"
                       "Keep it in memory.md (the secret itself is redacted)? [y/N] ")
    except EOFError:
        return False
    return answer.strip().lower() in ("y", "yes")


def workspace_files(root: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``root`` with its size and modification time: what the session may change."""
    found = {}
    for path in root.rglob("*"):
        try:
            if path.is_file():
                status = path.stat()
                found[path.relative_to(root).as_posix()] = (status.st_size, status.st_mtime_ns)
        except OSError:
            continue
    return found


def close_workspace(workspace: Any, before: dict[str, tuple[int, int]]) -> str:
    """Remove a temporary workspace the session left as it was; keep one it changed, and say which."""
    if not getattr(workspace, "temporary", False):
        return f"(workspace kept: {workspace.root})"
    after = workspace_files(workspace.root)
    changed = sorted(name for name, stamp in after.items() if before.get(name) != stamp)
    removed = sorted(set(before) - set(after))
    if not changed and not removed:
        workspace.cleanup()
        return "(the workspace was a temporary copy and nothing in it changed: removed; --workspace DIR keeps one)"
    if workspace._finalizer is not None:
        workspace._finalizer.detach()  # keep it: the agent wrote something the user may want
    names = [*changed, *(f"{name} (deleted)" for name in removed)]
    shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
    return f"(workspace kept, because this session changed {shown}: {workspace.root})"


HISTORY_FILE = Path("~/.flawedcode_history")
HISTORY_LENGTH = 1000
TERMINAL_LINE_LIMIT = 4095  # a terminal's canonical-mode line buffer (Linux N_TTY) without readline


def line_editing() -> bool:
    """Turn on readline (line editing, arrow-key history, saved in ~/.flawedcode_history) where Python has it."""
    global _readline
    if _readline is not None:
        return bool(_readline)
    try:
        import readline  # the standard library's line editor; absent on some platforms (plain Windows)
    except ImportError:
        _readline = False
        return False
    history = HISTORY_FILE.expanduser()
    try:
        readline.read_history_file(history)
    except OSError:  # no history yet, or not readable: start empty
        pass
    readline.set_history_length(HISTORY_LENGTH)

    def save() -> None:
        try:
            readline.write_history_file(history)
        except OSError:
            pass

    import atexit

    atexit.register(save)
    _readline = readline
    return True


_readline: Any = None


def repl(agent: Any, interactive: bool, next_conversation_id: Callable[[], str | None] | None = None) -> None:
    """Read requests until quit or the end of the input; a turn's own Ctrl-C is handled in run_chat_turn.

    ``next_conversation_id`` names the conversation ``clear`` starts (a recording or replay keeps them in step)."""
    while (line := read_request(interactive)) is not None:
        text = line.strip()
        if not text:
            continue
        if not interactive:
            say(f"you> {text}")
        if text.lower() in QUIT_WORDS:
            return
        if text.lower() in CLEAR_WORDS:
            agent.reset(next_conversation_id() if next_conversation_id else None)
            agent.conversation_first_event = len(agent.log.events)  # the meter counts this conversation's events
            say(f"(new conversation; context {agent.context_tokens():,} tokens)")
            continue
        run_chat_turn(agent, text)
    if interactive:
        say()


def build_chat_agent(args: argparse.Namespace) -> Any:
    from flawedcode.agents import AGENTS, make_agent
    from flawedcode.config import load_config

    config = load_config(args.config, AGENTS[args.agent].config_class) if args.config else None
    if args.budget is not None:  # --budget wins over the config file's budget_tokens
        config = (config or AGENTS[args.agent].config_class()).model_copy(update={"budget_tokens": args.budget})
    options = model_options(args, config_model=config.model if config else None,
                            config_timeout=config.timeout_seconds if config else None)
    from flawedcode.models.replay import REPLAY_PREFIX

    replaying = str(options.resolved_spec() or "").startswith(REPLAY_PREFIX)
    workspace = chat_workspace(args.workspace, replaying=replaying)
    agent = make_agent(args.agent, model=options.build(), workspace=workspace, config=config,
                       conversation_id=options.conversation_id(args.agent, workspace.archive_dir))
    agent.model_options = options  # the REPL's `clear` takes the next conversation id from it
    agent.replay_copy_of = args.workspace if replaying else None
    return agent


def chat_workspace(folder: str | None, replaying: bool = False) -> Any:
    """A fresh copy of the demo project; or ``folder`` itself when it already holds files.

    A replay (``--model replay:FILE``) never works in the user's folder: the recording's tool calls (written
    by whoever made the file) run in a temporary copy of it, kept afterwards only if they changed something.
    """
    from flawedcode.tools import Workspace

    if folder is None:
        return Workspace.create()
    root = Path(folder).expanduser()
    if root.is_file():
        raise UsageError(f"--workspace {folder}: is a file, not a folder")
    if replaying:
        source = root if root.exists() and any(root.iterdir()) else None
        if source is not None and (size := folder_bytes(source, MAX_REPLAY_COPY_BYTES)) > MAX_REPLAY_COPY_BYTES:
            raise UsageError(f"--workspace {folder}: a replay works on a copy of it, and it holds over "
                             f"{MAX_REPLAY_COPY_BYTES // 1024**2} MB ({size // 1024**2} MB so far); give a smaller folder")
        return Workspace.create(source=source)
    if root.exists() and any(root.iterdir()):
        workspace = Workspace(root, paths.scratch_dir(), paths.archive_dir())
        workspace.scratch_dir.mkdir(parents=True, exist_ok=True)
        workspace.archive_dir.mkdir(parents=True, exist_ok=True)
        return workspace
    return Workspace.create(root)


MAX_REPLAY_COPY_BYTES = 256 * 1024**2
"""Largest folder a replay copies to work in."""


def folder_bytes(root: Path, limit: int) -> int:
    """The bytes of the files under ``root`` (symbolic links not followed), counted until past ``limit``."""
    total = 0
    for path in root.rglob("*"):
        try:
            if path.is_file() and not path.is_symlink():
                total += path.stat().st_size
        except OSError:
            continue
        if total > limit:
            break
    return total


def read_request(interactive: bool) -> str | None:
    """One line from the user; None at the end of the input."""
    if interactive:
        try:
            line = input("you> ")
        except EOFError:
            return None
        if not line_editing() and len(line) >= TERMINAL_LINE_LIMIT - 1:
            warn(f"warning: this line is {len(line):,} characters, the terminal's limit without line editing: the end of a "
                 "longer paste was cut by the terminal. Pipe long text instead: flawedcode chat < request.txt")
        return line
    line = sys.stdin.readline()
    return line if line else None


def run_chat_turn(agent: Any, text: str) -> None:
    """Send one request; print its tool calls, context events, the reply and the token meter."""
    from flawedcode.agents import AgentError
    from flawedcode.infra.safe_text import escape_surrogates

    text = escape_surrogates(text)  # whatever the terminal's decoding, a turn never stores text that cannot be encoded
    before_messages = list(agent.messages)
    before_keys = {_message_key(message) for message in before_messages}
    from flawedcode import notices

    first_event, first_call = len(agent.log.events), len(agent.log.calls)
    with notices.capture() as warnings_seen:  # printed below, in order with the turn's other lines
        try:
            reply = agent.send(text)
        except AgentError as error:
            if (missed := replay_miss(error)) is not None:  # a replay that misses stops, in one line (not every turn)
                raise missed from None
            warn(f"error: {error}")
            reply = None
        except KeyboardInterrupt:
            agent.messages = before_messages
            say("\n(turn interrupted; the conversation is as it was before it)")
            return
    for notice in warnings_seen:
        warn(notices.PREFIX + notice)
    new_messages = [message for message in agent.messages if _message_key(message) not in before_keys]
    turn_events = agent.log.events[first_event:]
    for line in tool_call_lines(new_messages, turn_events):
        say(line)
    for event in turn_events:
        if (line := event_line(event)) is not None:
            say(line)
    folded, notes = reply_lines(new_messages)
    if folded:
        say(folded)
    if reply is not None:
        say(reply)
    for line in notes:
        say(line)
    say(token_meter(agent, agent.log.calls[first_call:]))
    say()


def replay_miss(error: BaseException) -> BaseException | None:
    """The ``ReplayMismatchError`` a failed turn was raised from, if it was: the replay cannot go on."""
    from flawedcode.models import ReplayMismatchError

    current: BaseException | None = error
    while current is not None:
        if isinstance(current, ReplayMismatchError):
            return current
        current = current.__cause__ or current.__context__
    return None


def reply_lines(messages: Sequence[Any]) -> tuple[str | None, list[str]]:
    """The turn's reasoning, folded (``[reasoning: 2,213 tokens, hidden]``, shown before the reply), and a ``  * `` line
    for each thing to know about a reply (shown after it: no answer text, a content filter, an answer cut short, a tool
    call written as text)."""
    from flawedcode.models.replies import folded_reasoning, reply_notes

    notes = [f"  * {note}" for message in messages if message.type == "ai" for note in reply_notes(message)]
    return folded_reasoning(messages), notes


def _message_key(message: Any) -> Any:
    return message.id or id(message)


def tool_call_lines(messages: Sequence[Any], events: Sequence[Any]) -> list[str]:
    """``  -> name(arg='value')  [N chars]`` for each tool call among ``messages``."""
    from flawedcode.telemetry import EventKind  # the CLI starts without the agent machinery

    results = {message.tool_call_id: message for message in messages if message.type == "tool"}
    offloads = [event for event in events if event.kind == EventKind.OFFLOAD]
    lines = []
    for message in messages:
        for call in getattr(message, "tool_calls", None) or []:
            result = results.get(call.get("id"))
            if result is not None and str(result.content).startswith(CUT_OFF_START):
                continue  # never run: its event line says so
            size = _result_size(result, call["name"], offloads)
            lines.append(f"  -> {format_call(call['name'], call.get('args') or {})}{size}")
    return lines


def format_call(name: str, arguments: dict[str, Any]) -> str:
    shown = []
    for key, value in arguments.items():
        text = repr(value)
        if len(text) > ARGUMENT_PREVIEW_CHARS:
            text = text[: ARGUMENT_PREVIEW_CHARS - 4] + "...'"
        shown.append(f"{key}={text}")
    return f"{name}({', '.join(shown)})"


def _result_size(result: Any, tool_name: str, offloads: list[Any]) -> str:
    if result is None:
        return ""
    content = result.content if isinstance(result.content, str) else str(result.content)
    if content.startswith(STUB_PREFIX):
        event = next((event for event in offloads if event.detail.get("tool") == tool_name), None)
        if event is not None:
            offloads.remove(event)
            return f"  [{event.detail.get('characters', len(content)):,} chars, offloaded]"
    return f"  [{len(content):,} chars]"


def event_line(event: Any) -> str | None:
    """One line for a context event the user should notice, or None."""
    from flawedcode.telemetry import EventKind  # the CLI starts without the agent machinery

    detail = event.detail
    if event.kind == EventKind.OFFLOAD:
        return (f"  * offload: {detail.get('tool')} result, {detail.get('characters', 0):,} chars "
                f"({event.tokens_before:,} tokens) -> {detail.get('path')}")
    if event.kind == EventKind.SUMMARIZE:
        return (f"  * summary: {detail.get('removed')} messages archived to {detail.get('archive')}; "
                f"context {event.tokens_before:,} -> {event.tokens_after:,} tokens")
    if event.kind == EventKind.RECOVERY:
        return f"  * recovery: {detail.get('tool')} {detail.get('target')}"
    if event.kind == EventKind.OVERFLOW_RETRY:
        return f"  * context overflow: summarized and retried ({event.tokens_before:,} -> {event.tokens_after:,} tokens)"
    if event.kind == EventKind.COMPACT:
        return (f"  * compaction (no model): {detail.get('stubbed', 0)} tool result(s) and {detail.get('removed', 0)} "
                f"message(s) archived to {detail.get('archive')}; context {event.tokens_before:,} -> {event.tokens_after:,} tokens")
    if event.kind == EventKind.TOOL_CALL_CUT_OFF:
        return (f"  * tool call cut off: {', '.join(detail.get('tools', []))} not run ({detail.get('reason')}); "
                "the model was told")
    if event.kind == EventKind.READBACK_PAGED:
        return (f"  * read back in pages: {detail.get('path')}, {detail.get('lines')} line(s) fit under the trigger "
                f"({event.tokens_before:,} tokens in full)")
    if event.kind.endswith("_failed"):
        return f"  * {event.kind.replace('_', ' ')}: {detail.get('error', '')}"
    return None


def token_meter(agent: Any, turn_calls: Sequence[Any]) -> str:
    """``[v2] context 2,345/8,192 tokens (29%) | turn: 2 calls, 4,120 in, 96 out | this conversation: offloads 1,
    summaries 0``, then ``| cost $0.0042`` (the session's) on a priced model (``| cost unknown`` when its prices are not
    known). Each figure says its scope: the context and the offload and summary counts start again at ``clear``; the
    cost covers the whole session."""
    from flawedcode.telemetry import EventKind

    context, budget = agent.context_tokens(), agent.log.budget_tokens or agent.budget_tokens
    share = f" ({100 * context / budget:.0f}%)" if budget else ""
    agent_calls = sum(1 for call in turn_calls if call.purpose == "agent")
    summary_calls = len(turn_calls) - agent_calls
    calls = f"{agent_calls} call{'s' if agent_calls != 1 else ''}" + (f" + {summary_calls} summary" if summary_calls else "")
    tokens_in = sum(call.input_tokens for call in turn_calls)
    tokens_out = sum(call.output_tokens for call in turn_calls)
    return (f"[{agent.log.agent_name}] context {context:,}/{budget:,} tokens{share} | "
            f"turn: {calls}, {tokens_in:,} in, {tokens_out:,} out | "
            f"this conversation: offloads {_count_since(agent, EventKind.OFFLOAD)}, summaries {_count_since(agent, EventKind.SUMMARIZE)}"
            f"{cost_text(agent.log)}")


def _count_since(agent: Any, kind: str) -> int:
    first = getattr(agent, "conversation_first_event", 0)
    return sum(1 for event in agent.log.events[first:] if event.kind == kind)


def cost_text(log: Any) -> str:
    """`` | cost $0.0042`` on a priced model, `` | cost unknown`` when its prices are unknown, nothing when free."""
    prices = (log.price_input_per_million, log.price_output_per_million)
    if None in prices:
        return " | cost unknown"
    if not any(prices):
        return ""
    return f" | cost ${log.cost_usd():.4f}"


# --- demo ------------------------------------------------------------------------------------
def command_demo(args: argparse.Namespace) -> int:
    from flawedcode.config import V2Config, load_config
    from flawedcode.demo import DemoOutputError, run_demo

    config = load_config(args.config, V2Config) if args.config else None
    budget = args.budget or (config.budget_tokens if config is not None and config.budget_tokens else DEFAULT_BUDGET_TOKENS)
    out_dir = Path(args.out) if args.out else paths.results_dir() / "demo"
    options = model_options(args, config_model=config.model if config else None,
                            config_timeout=config.timeout_seconds if config else None)
    try:
        result = run_demo(out_dir, model_spec=options, budget_tokens=budget, config=config)
    except DemoOutputError as error:  # a bad --out is the user's to fix: one line, exit 2
        raise UsageError(str(error)) from None
    say(result.report())
    return EXIT_OK


# --- bench ------------------------------------------------------------------------------------
def command_bench(args: argparse.Namespace) -> int:
    from flawedcode import bench  # imported only when asked for: it pulls in the peers
    from flawedcode.charts import save_comparison_chart
    from flawedcode.config import ConfigError, read_yaml_file

    options = {
        "agents": _comma_list(args.agents), "task_names": _comma_list(args.tasks), "tasks_file": args.tasks_file,
        "runs": args.runs, "model": None, "out_dir": Path(args.out) if args.out else paths.results_dir() / "bench",
        "concurrency": args.concurrency, "resume": args.resume, "max_cost_usd": args.max_cost,
    }
    if args.config:
        options["settings"] = read_yaml_file(args.config, ConfigError, "config file")
        options["settings_source"] = Path(args.config).name
    settings = options.get("settings") if isinstance(options.get("settings"), dict) else {}
    options["model"] = model_options(args, config_model=settings.get("model"), config_timeout=settings.get("timeout_seconds"))
    try:
        table = bench.run_benchmark(**{key: value for key, value in options.items() if value is not None},
                                    before_spending=lambda preview: show_cost_and_confirm(preview, args.yes),
                                    chart=save_comparison_chart)
    except (bench.TaskFileError, bench.AgentSpecError, bench.BenchOutputError) as error:  # the user's to fix: one line, exit 2
        raise UsageError(str(error)) from None
    except bench.SpendingDeclined:
        say("Cancelled: nothing was sent to the model.")
        return EXIT_CANCELLED
    except bench.CostLimitReached as reached:
        say(reached.table)
        warn(f"flawedcode: {reached}")
        return EXIT_OK
    say(table)
    return EXIT_OK


def show_cost_and_confirm(preview: Any, yes: bool) -> bool:
    say(preview.text())
    return confirm_spending(yes)


def confirm_spending(yes: bool) -> bool:
    """True to go ahead: ``--yes``, or 'y' typed at a terminal. Without a terminal and without --yes, a UsageError."""
    if yes:
        return True
    if not sys.stdin.isatty():
        raise UsageError("bench with a real model spends money (see the estimate above) and there is no terminal "
                         "to confirm it: run again with --yes to go ahead")
    try:
        answer = input("Run the benchmark on this model? [y/N] ")
    except EOFError:
        return False
    return answer.strip().lower() in ("y", "yes")


# --- the model options every command shares ----------------------------------------------------
def add_model_options(parser: argparse.ArgumentParser, model_help: str) -> None:
    """``--model``, ``--timeout``, ``--record`` and ``--window``: the same on chat, demo and bench."""
    parser.add_argument("--model", help=model_help + "; replay:FILE plays a recording back offline")
    parser.add_argument("--timeout", type=_positive_float, metavar="SECONDS",
                        help="seconds one model request may take (default 120)")
    parser.add_argument("--record", metavar="FILE", help="write every model request and reply to FILE (JSONL, secrets redacted)")
    parser.add_argument("--window", type=_window_tokens, metavar="TOKENS",
                        help="the server's context window in tokens (e.g. Ollama's num_ctx), when it does not publish it")


def model_options(args: argparse.Namespace, config_model: str | None = None, config_timeout: float | None = None) -> Any:
    """The command's ModelOptions: --model, else FLAWEDCODE_MODEL, else the config file's model; the other options."""
    from flawedcode.models import ModelOptions

    record = _record_path(args.record) if getattr(args, "record", None) else None
    spec = args.model or os.environ.get("FLAWEDCODE_MODEL") or config_model
    if record and spec and spec.startswith("replay:") and Path(spec[len("replay:"):]).expanduser().resolve() == record.resolve():
        raise UsageError(f"--record {args.record}: that is the recording being replayed; record to another file")
    if record and record.exists() and not is_recording(record):
        raise UsageError(f"--record {args.record}: the file exists and is not a flawedcode recording; it is not replaced "
                         "(record to a new file name)")
    command = " ".join(["flawedcode", *getattr(args, "argv", [])])
    return ModelOptions(spec=spec,
                        timeout_seconds=args.timeout or config_timeout, record_path=record, window_tokens=args.window,
                        command=command)


def _record_path(text: str) -> Path:
    path = Path(text).expanduser()
    if path.is_dir():
        raise UsageError(f"--record {text}: is a folder; give a file name, e.g. {Path(text) / 'session.jsonl'}")
    if not path.parent.is_dir():
        raise UsageError(f"--record {text}: the folder {path.parent} does not exist")
    if not os.access(path.parent, os.W_OK):
        raise UsageError(f"--record {text}: cannot write in {path.parent}")
    if path.is_symlink():
        raise UsageError(f"--record {text}: is a symbolic link; record to a plain file name (the link's target is never written)")
    return path


def is_recording(path: Path) -> bool:
    """True when ``path`` is empty or starts with a recording's header line (a file --record may replace)."""
    import json

    from flawedcode.models.replay import FORMAT

    try:
        with open(path, "rb") as stream:
            first = stream.readline(64 * 1024)
    except OSError:
        return False
    if not first:  # an empty file holds nothing to lose
        return True
    try:
        header = json.loads(first)
    except ValueError:
        return False
    return isinstance(header, dict) and header.get("type") == "header" and header.get("format") == FORMAT


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds; got {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds; got {text}")
    return value


def _budget_tokens(text: str) -> int:
    value = _positive_int(text.replace(",", "").replace("_", ""))
    if value < MIN_BUDGET_TOKENS:
        raise argparse.ArgumentTypeError(f"expected a budget of at least {MIN_BUDGET_TOKENS:,} tokens; got {value:,}")
    return value


def _window_tokens(text: str) -> int:
    value = _positive_int(text.replace(",", "").replace("_", ""))
    if value < 512:
        raise argparse.ArgumentTypeError(f"expected a window of at least 512 tokens; got {value}")
    return value


def _comma_list(text: str | None) -> list[str] | None:
    if text is None:
        return None
    names = [name.strip() for name in text.split(",") if name.strip()]
    if not names:
        raise UsageError(f"expected a comma-separated list of names; got {text!r}")
    return names


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number; got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a number of at least 1; got {value}")
    return value


def _dollars(text: str) -> float:
    try:
        value = float(text.strip().lstrip("$"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an amount in US dollars such as 0.50; got {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected an amount above 0; got {text!r}")
    return value


# --- catalog ------------------------------------------------------------------------------------
def command_catalog(args: argparse.Namespace) -> int:
    from flawedcode.catalog import Catalog

    catalog = Catalog()
    if args.catalog_command == "list":
        for info in catalog.dataframes():
            say(info.summary_line())
        return EXIT_OK
    pipeline, dataframe = _dataframe_name(catalog, args.pipeline, args.dataframe)
    if args.catalog_command == "docs":
        say(catalog.docs(pipeline, dataframe).rstrip("\n"))
        return EXIT_OK
    columns = _comma_list(args.columns)
    frame = catalog.load(pipeline, dataframe, columns=columns, start=args.start, end=args.end, limit=args.limit)
    if frame.empty:
        raise UsageError(f"no rows in {pipeline}/{dataframe} between {args.start or 'the start'} and {args.end or 'the end'}")
    sys.stdout.write(frame.to_csv(index=False))
    sys.stdout.flush()
    return EXIT_OK


def _dataframe_name(catalog: Any, pipeline: str, dataframe: str | None) -> tuple[str, str]:
    """``PIPELINE DATAFRAME``, or one name: ``pipeline/dataframe`` or a dataframe id alone."""
    return catalog.resolve(pipeline) if dataframe is None else (pipeline, catalog.info(pipeline, dataframe).dataframe)


# --- archive ------------------------------------------------------------------------------------
def command_archive(args: argparse.Namespace) -> int:
    root = Path(args.dir).expanduser() if args.dir else paths.archive_dir()
    if args.dir and not root.is_dir():
        raise UsageError(f"--dir {args.dir}: {'is a file, not a folder' if root.exists() else 'no such folder'}")
    return {"list": archive_list, "search": archive_search, "show": archive_show}[args.archive_command](root, args)


def conversation_ids(root: Path) -> list[str]:
    if not root.is_dir():
        return []
    return sorted(folder.name for folder in root.iterdir() if (folder / "index.json").is_file())


def _archive(root: Path, conversation: str) -> Any:
    from flawedcode.context import ConversationArchive

    known = conversation_ids(root)
    if conversation not in known:
        import difflib

        close = difflib.get_close_matches(conversation, known, n=3, cutoff=0.5)
        hint = f"; did you mean {', '.join(close)}?" if close else (f"; known: {', '.join(known[:5])}" if known else "; the archive is empty")
        raise UsageError(f"no archived conversation {conversation!r} in {root}{hint}")
    return ConversationArchive(root, conversation)


def archive_list(root: Path, args: argparse.Namespace) -> int:
    known = conversation_ids(root)
    if not known:
        say(f"No archived conversations in {root}.")
        return EXIT_OK
    say(f"{len(known)} archived conversation(s) in {root}:")
    for conversation in known:
        archive = _archive(root, conversation)
        parts = archive.parts()
        messages = sum(part.last_seq - part.first_seq + 1 for part in parts)
        say(f"{conversation}: {len(parts)} part(s), {messages} message(s)")
        for note in dict.fromkeys(archive.notes):  # e.g. an index.json rebuilt from the parts
            say(f"  note: {note}")
        for part in parts:
            say(f"  part {part.number}: {usable_path(part.markdown_path)} (messages {part.first_seq}-{part.last_seq})")
    return EXIT_OK


def archive_search(root: Path, args: argparse.Namespace) -> int:
    conversations = [args.conversation] if args.conversation else conversation_ids(root)
    hits = [hit for conversation in conversations for hit in _archive(root, conversation).search(args.query)]
    if not hits:
        say(f"No archived message contains all of: {args.query!r}.")
        return EXIT_OK
    say(f"{len(hits)} archived message(s) match {args.query!r}:")
    for hit in hits:
        say(f"- {usable_path(archive_file(root, hit.display_path))} [message {hit.seq}, {hit.message_type}]: {hit.snippet}")
    return EXIT_OK


def archive_show(root: Path, args: argparse.Namespace) -> int:
    parts = _archive(root, args.conversation).parts()
    if args.part is not None:
        chosen = [part for part in parts if part.number == args.part]
        if not chosen:
            raise UsageError(f"conversation {args.conversation!r} has parts 1-{len(parts)}; there is no part {args.part}")
        parts = chosen
    for part in parts:
        try:
            text = part.markdown_path.read_text(encoding="utf-8", errors="replace").rstrip("\n")
        except OSError as error:  # reading only: a closed pipe while printing is not a read error
            raise UsageError(f"cannot read {usable_path(part.markdown_path)}: {error.strerror or error}") from None
        say(text)
        say()
    return EXIT_OK


def archive_file(root: Path, display_path: str) -> Path:
    """The file an archive's ``archives/<conversation>/NNNN.md`` names, under the folder being read."""
    parts = Path(display_path).parts
    return root.joinpath(*parts[1:]) if parts and parts[0] == "archives" else root / display_path


def usable_path(path: Path) -> str:
    """A path the user can paste in this shell: relative to the current folder when under it, else absolute."""
    absolute = Path(os.path.abspath(path))
    try:
        return str(absolute.relative_to(Path.cwd()))
    except ValueError:
        return str(absolute)


# --- the parser -----------------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    from flawedcode import __version__

    parser = OneLineParser(prog="flawedcode", description="Agent context management, taught with v0/v1/v2/v3 agents.")
    parser.add_argument("--version", action="version", version=f"flawedcode {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    chat = commands.add_parser("chat", help="the FlawedCode REPL: talk to an agent, see its tool calls and tokens")
    chat.add_argument("--agent", choices=["v0", "v1", "v2", "v3"], default="v2", help="agent version: v0, v1, v2 or v3 (default v2)")
    add_model_options(chat, "model spec: offline, offline:<window>, openai:<name> (default FLAWEDCODE_MODEL or offline)")
    chat.add_argument("--workspace", help="work in this folder (an empty or new one gets a copy of the demo project)")
    chat.add_argument("--budget", type=_budget_tokens, metavar="TOKENS",
                      help=f"context budget in tokens (default: the config's, else {DEFAULT_BUDGET_TOKENS})")
    chat.add_argument("--config", help="YAML config file (see flawedcode/flawedcode.yaml)")
    chat.set_defaults(handler=command_chat)

    demo = commands.add_parser("demo", help="the lesson's session through v1 and v2, side by side")
    demo.add_argument("--out", help="output folder (default results/demo)")
    add_model_options(demo, "model spec (default FLAWEDCODE_MODEL, else the offline model with a window equal to the budget)")
    demo.add_argument("--budget", type=_positive_int, help=f"context budget in tokens (default: the config's, else {DEFAULT_BUDGET_TOKENS})")
    demo.add_argument("--config", help="YAML config file, read as chat reads it (see flawedcode/flawedcode.yaml)")
    demo.set_defaults(handler=command_demo)

    bench = commands.add_parser("bench", help="run the benchmark and print its table", epilog=bench_task_list(),
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    bench.add_argument("--agents", help="comma-separated agents, e.g. v0,v1,v2,v3,lc-summarization or path/to/my_agent.py:MyAgent")
    tasks = bench.add_mutually_exclusive_group()
    tasks.add_argument("--tasks", help="comma-separated task names from the built-in suite")
    tasks.add_argument("--tasks-file", help="a YAML task file")
    bench.add_argument("--runs", type=_positive_int, help=f"runs per task per agent (default {DEFAULT_BENCH_RUNS})")
    add_model_options(bench, "model spec (default FLAWEDCODE_MODEL, else the offline model, window 8,192 tokens)")
    bench.add_argument("--config", help="YAML config file for the agents, read as chat reads it")
    bench.add_argument("--out", help="output folder (default results/bench)")
    bench.add_argument("--concurrency", type=_positive_int, help="runs at once (for real models)")
    bench.add_argument("--resume", action=argparse.BooleanOptionalAction, default=True,
                       help="skip runs already on disk (default: --resume)")
    bench.add_argument("--yes", action="store_true", help="spend on a real model without asking (after the cost preview)")
    bench.add_argument("--max-cost", type=_dollars, metavar="USD", help="stop once the estimated cost reaches USD (resumable)")
    bench.set_defaults(handler=command_bench)

    catalog = commands.add_parser("catalog", help="the ChartBook catalog: list, docs, load")
    catalog_commands = catalog.add_subparsers(dest="catalog_command", required=True, metavar="ACTION")
    catalog_commands.add_parser("list", help="one line per dataframe")
    docs = catalog_commands.add_parser("docs", help="a dataframe's documentation")
    load = catalog_commands.add_parser("load", help="rows of a dataframe as CSV")
    for sub in (docs, load):
        sub.add_argument("pipeline", help="pipeline (or pipeline/dataframe, or a dataframe id alone)")
        sub.add_argument("dataframe", nargs="?", help="dataframe id")
    load.add_argument("--columns", help="comma-separated columns (date is always included)")
    load.add_argument("--limit", type=_positive_int, default=20, help="last N rows after date filtering (default 20)")
    load.add_argument("--start", help="first date, YYYY-MM-DD")
    load.add_argument("--end", help="last date, YYYY-MM-DD")
    catalog.set_defaults(handler=command_catalog)

    archive = commands.add_parser("archive", help="conversation archives: list, search, show")
    archive_commands = archive.add_subparsers(dest="archive_command", required=True, metavar="ACTION")
    listing = archive_commands.add_parser("list", help="archived conversations and their parts")
    search = archive_commands.add_parser("search", help="archived messages containing every word of QUERY")
    search.add_argument("query")
    search.add_argument("--conversation", help="only this conversation")
    show = archive_commands.add_parser("show", help="print a conversation's archive (Markdown)")
    show.add_argument("conversation")
    show.add_argument("--part", type=_positive_int, help="only this part")
    for sub in (listing, search, show):
        sub.add_argument("--dir", help="archive folder (default archives/ or FLAWEDCODE_ARCHIVE_DIR)")
    archive.set_defaults(handler=command_archive)
    return parser


def bench_task_list() -> str:
    """``bench --help``'s epilog: the built-in tasks by category, for --tasks."""
    try:
        from flawedcode.bench.tasks import load_tasks

        tasks = load_tasks()
    except Exception as error:  # a broken task file must not break --help: say so instead
        return f"built-in tasks: could not be read ({_one_line(error)})"
    by_category: dict[str, list[str]] = {}
    for task in tasks:
        by_category.setdefault(task.category, []).append(task.name)
    lines = [f"built-in tasks for --tasks ({len(tasks)}, in flawedcode/bench/tasks/*.yaml):"]
    lines += [f"  {category}: {', '.join(names)}" for category, names in by_category.items()]
    return "\n".join(lines)


def user_errors() -> tuple[type[BaseException], ...]:
    """Exceptions whose message is the whole story: bad input, not a bug."""
    from flawedcode.catalog import CatalogError
    from flawedcode.config import ConfigError
    from flawedcode.models import ModelConfigError

    errors: list[type[BaseException]] = [UsageError, CatalogError, ConfigError, ModelConfigError, FileNotFoundError,
                                         FileExistsError, NotADirectoryError]
    from flawedcode.agents import AgentError

    errors.append(AgentError)
    return tuple(errors)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``flawedcode`` command; returns the exit code."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        args.argv = list(sys.argv[1:] if argv is None else argv)  # written into recordings' headers
        handler: Callable[[argparse.Namespace], int] = args.handler
        return handler(args)
    except KeyboardInterrupt:
        warn("\ninterrupted")
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # e.g. `flawedcode catalog docs ... | head`
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OK
    except Exception as error:
        if os.environ.get("FLAWEDCODE_DEBUG") or not isinstance(error, user_errors()):
            raise
        warn(f"flawedcode: error: {_one_line(error)}")
        return EXIT_USAGE


def _one_line(error: BaseException) -> str:
    text = " ".join(str(error).split())
    return text or type(error).__name__


if __name__ == "__main__":
    raise SystemExit(main())
