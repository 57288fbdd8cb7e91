"""Prompt caching: which part of each request a provider's cache would serve, and what the input then costs.

Real providers bill the leading part of a request that an earlier request of the
session already sent (its *cached prefix*) at a fraction of the input price. An
append-only history (v1) re-sends everything it sent before, so nearly all of
its input is cached; every summary or clearing that rewrites the middle of the
prompt breaks the cache from that point on. This module measures that, from
what a ``ModelCallRecorder`` captures at the model boundary, with pure functions.

What is captured per call (``request_blocks``): the request as a list of
``Block`` (digest, exact tokens, role, kind). The first block is the *fixed*
part: the leading system message(s) and the tool schemas, together; its digest
is the system prompt's and the schemas' side by side, so a miss can say which
changed. Then one block per message: its digest is a hash of what the provider
receives (role, content, name, tool calls with their ids, tool_call_id; never
LangChain's own message id), its tokens its exact count, its kind ``summary``
(a summary block or turn digest), ``compacted`` (a cleared result's stub) or
empty. The 3 tokens that prime the reply (``REPLY_PRIMING_TOKENS``) close every
request and are never cached. Each call also records the blocks it marks as
cache breakpoints (``breakpoint_positions``: its agent's ``cache_breakpoints``,
at most ``MAX_BREAKPOINTS``; by default the end of the tools and of the request).

**Schemes** (``SCHEMES``; sources in ``docs/benchmark.md``), each a prefix rule, a
minimum prefix (``MIN_PREFIX_BY_MODEL`` per model), a lifetime and prices as
multiples of the input price; the default is ``anthropic``:

================  ===========  ============================================  =======  ======  ==========
scheme            rule         what is served                                minimum  life    read/write
================  ===========  ============================================  =======  ======  ==========
``openai``        automatic    longest earlier prefix, in 128-token steps    1,024    30 min  0.1 / 1.0
``openai-2026``   automatic    the same (GPT-5.6 on)                         1,024    30 min  0.1 / 1.25
``anthropic``     breakpoints  a prefix an earlier request marked, found at  1,024    5 min   0.1 / 1.25
                               most ``LOOKBACK_BLOCKS`` (20) before a mark
``anthropic-1h``  breakpoints  the same                                      1,024    1 hour  0.1 / 2.0
``gemini``        implicit     longest earlier prefix                        2,048    5 min*  0.1 / 1.0
================  ===========  ============================================  =======  ======  ==========

(* not documented: assumed.) The rules (``SessionCache.observe``, one cache per
session and scheme, call by call at each call's time):

- **read** (``cached_tokens``): automatic and implicit: the longest leading
  run of blocks some earlier request (any purpose) sent and whose entry is
  still alive, if at least the minimum, rounded down to the step; breakpoints:
  the longest prefix ending at a block where an earlier request marked a
  breakpoint (and met the minimum), still alive, and at most 20 blocks before
  one of this request's marks. A read refreshes the entry's lifetime;
- **write** (``write_tokens``): automatic and implicit: a request of at least
  the minimum writes what it did not read (``prompt - cached``); breakpoints:
  each mark that meets the minimum becomes an entry, and the request writes
  from its read up to its last such mark (what follows is billed as input);
- **a reason for every miss** (``miss_reason``, a ``MissReason``): ``first
  request``; what was sent before but not read: ``below minimum``, ``expired``
  (an endless lifetime would have served it) or ``not marked``; else where the
  request departs from every earlier one: ``system changed`` / ``tools changed``
  (the fixed block), ``compacted`` (a summary, digest or stub), ``messages
  changed`` (any other message). None: it goes on from an earlier request;
- a failed request reads and writes nothing (it is not billed);
- **provider-reported cached tokens** (``reported_cached_tokens``, from
  LangChain's ``usage_metadata["input_token_details"]["cache_read"]``) win over
  the model when present: ``billed_cached_tokens``; ``compare_reported`` says
  how far the model was from them.

``analyze(calls, scheme)`` runs recorded calls (``CallRecord`` or its dict) through
a fresh cache at their recorded times, or at a stated pace (``turn_pace_seconds``).
``weighted_input_tokens`` is the input priced that way, in input-token
equivalents: ``uncached + read x cached + write x written``;
``cumulative_by_turn`` the same after each turn, and ``break_even_turn`` the first
turn from which one strategy's cumulative cost stays at or below another's (when
compaction pays: a summary is a cache write). Storage fees are not modelled.

**Figures a bill is made of** (``token_figure``, ``price_figure``): every token count
and price that reaches a cost (a provider's usage, a recording's, a server's
published price, a profile) is checked where it enters: a whole number of tokens
from 0 to ``MAX_TOKEN_FIGURE``; a price in US dollars per million tokens from 0 to
``MAX_PRICE_PER_MILLION``, finite. Anything else (negative, NaN, infinite, absurdly
large, not a number) is refused with one line naming the figure (``BadFigure``), so a
cost can never be negative, NaN or astronomically large.

**The physical limit** (``oracle_tokens`` per call): what an agent call needs at
the least: the fixed block, the user's goal (the session's first user message),
and the current turn (its user message and everything after it in that
request), plus the reply priming. Summary and internal calls need nothing:
their limit is 0. The current turn's user message is the last human message of
the turn's first agent call; when a later request of the turn no longer holds
it, the turn is taken to start at that request's last human message.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from enum import StrEnum
from typing import Any, NamedTuple

from langchain_core.messages import AIMessage, BaseMessage, SystemMessage, ToolMessage

from flawedcode.formats import COMPACTED_PREFIX, SUMMARY_PREFIX
from flawedcode.tokens import REPLY_PRIMING_TOKENS, TokenCounter, message_cache_key

MIN_CACHED_PREFIX_TOKENS = 1_024
"""The shortest prefix a provider caches (OpenAI, Anthropic's larger models, Gemini Flash)."""
CACHE_STEP_TOKENS = 128
"""Cached prefixes grow in steps of this many tokens (OpenAI)."""
FIXED_ROLE = "fixed"
"""The role of the first block: leading system message(s) and tool schemas."""
FIXED_PARTS_SEPARATOR = "."
"""The fixed block's digest is the system prompt's digest, this, then the tool schemas' (a miss names which changed)."""
DIGEST_CHARS = 16
"""Hex characters kept of each block's hash (64 bits: no two blocks of a session collide in practice)."""


class Block(NamedTuple):
    """One part of a request as a cache sees it: what it is (a digest), how many tokens, whose, what kind."""

    digest: str
    tokens: int
    role: str
    kind: str = ""
    """``summary`` (a summary block or a turn digest), ``compacted`` (a cleared tool result's stub), else empty."""


class Breakpoint(StrEnum):
    """Where a request may mark a cache breakpoint (Anthropic's ``cache_control``): the end of ..."""

    TOOLS = "tools"
    """... the fixed block (tools and system prompt: Anthropic renders tools, then system, then messages)."""
    GOAL = "goal"
    """... the first user message (the pinned goal): the end of a stable prefix."""
    DIGESTS = "digests"
    """... the last summary block or turn digest."""
    REQUEST = "request"
    """... the whole request (the one place Anthropic's automatic mode marks)."""


DEFAULT_BREAKPOINTS: tuple[Breakpoint, ...] = (Breakpoint.TOOLS, Breakpoint.REQUEST)
"""What a well-built agent marks: the end of its tools and the end of each request."""
MAX_BREAKPOINTS = 4
"""Anthropic accepts at most four breakpoints per request."""
LOOKBACK_BLOCKS = 20
"""Anthropic looks for an earlier cache entry at a breakpoint and at most this many blocks before it."""


class PrefixRule(StrEnum):
    """Which leading part of a request a provider serves from its cache."""

    BREAKPOINTS = "breakpoints"
    """Anthropic: only a prefix that ends at a breakpoint an earlier request marked (looked up at most 20 blocks
    before each breakpoint of this one)."""
    AUTOMATIC = "automatic"
    """OpenAI: the longest prefix shared with any earlier request, in steps of 128 tokens."""
    IMPLICIT = "implicit"
    """Gemini: the longest prefix shared with any earlier request (no step documented)."""


class MissReason(StrEnum):
    """Why a request read less than it could have (the labels the providers' APIs now report, plus ``first``)."""

    FIRST = "first request"
    SYSTEM = "system changed"
    TOOLS = "tools changed"
    MESSAGES = "messages changed"
    COMPACTED = "compacted"
    EXPIRED = "expired"
    BELOW_MINIMUM = "below minimum"
    NOT_MARKED = "not marked"
    """Anthropic: what was sent before ends where no earlier request marked a breakpoint (or beyond the lookback)."""


@dataclass(frozen=True)
class PricingScheme:
    """How a provider caches and bills input: its prefix rule, minimum, lifetime, and prices (x its input price)."""

    name: str
    read: float
    """A token read from the cache costs this many input tokens."""
    write: float
    """A token written to the cache costs this many input tokens (1.0: writes are not surcharged)."""
    whose: str
    rule: PrefixRule = PrefixRule.AUTOMATIC
    min_prefix_tokens: int = MIN_CACHED_PREFIX_TOKENS
    """The shortest prefix it caches (per model: ``MIN_PREFIX_BY_MODEL``; this is the scheme's reference model)."""
    step_tokens: int = 1
    """A cached prefix is a multiple of this many tokens."""
    ttl_seconds: float = 300.0
    """An entry unused for longer than this is gone (a read refreshes it)."""


SCHEMES: dict[str, PricingScheme] = {
    scheme.name: scheme
    for scheme in (
        PricingScheme("openai", 0.1, 1.0, "OpenAI GPT-5 to GPT-5.5: automatic prefix, reads 0.1x, writes free",
                      PrefixRule.AUTOMATIC, 1_024, CACHE_STEP_TOKENS, 30 * 60),
        PricingScheme("openai-2026", 0.1, 1.25, "OpenAI from GPT-5.6: automatic prefix, reads 0.1x, writes 1.25x",
                      PrefixRule.AUTOMATIC, 1_024, CACHE_STEP_TOKENS, 30 * 60),
        PricingScheme("anthropic", 0.1, 1.25, "Anthropic, 5-minute cache: marked breakpoints, reads 0.1x, writes 1.25x",
                      PrefixRule.BREAKPOINTS, 1_024, 1, 5 * 60),
        PricingScheme("anthropic-1h", 0.1, 2.0, "Anthropic, 1-hour cache: marked breakpoints, reads 0.1x, writes 2x",
                      PrefixRule.BREAKPOINTS, 1_024, 1, 60 * 60),
        PricingScheme("gemini", 0.1, 1.0, "Gemini 2.5+ implicit caching: reads 0.1x (90% off), writes free",
                      PrefixRule.IMPLICIT, 2_048, 1, 5 * 60),
    )
}
DEFAULT_SCHEME = "anthropic"

MIN_PREFIX_BY_MODEL: dict[str, int] = {
    # Anthropic (platform.claude.com prompt caching, checked 2026-12-06)
    "claude-opus-5": 512, "claude-sonnet-5": 1_024, "claude-opus-4-8": 1_024, "claude-sonnet-4-6": 1_024,
    "claude-sonnet-4-5": 1_024, "claude-opus-4-1": 1_024, "claude-opus-4-7": 2_048, "claude-opus-4-6": 4_096,
    "claude-opus-4-5": 4_096, "claude-haiku-4-5": 4_096,
    # Gemini (ai.google.dev context caching, checked 2026-12-06)
    "gemini-2.5-flash": 2_048, "gemini-2.5-pro": 2_048, "gemini-3.1-pro": 4_096, "gemini-3.5-flash": 4_096,
}
"""The shortest cacheable prefix per model, where it differs by model (OpenAI: 1,024 for every model)."""


def scheme_named(name: str, model: str | None = None) -> PricingScheme:
    """The scheme called ``name`` (with ``model``'s own minimum prefix when listed); ``ValueError`` names the known."""
    if name not in SCHEMES:
        raise ValueError(f"unknown pricing scheme {name!r}; choose from {', '.join(SCHEMES)}")
    scheme = SCHEMES[name]
    minimum = next((tokens for prefix, tokens in MIN_PREFIX_BY_MODEL.items() if model and model.startswith(prefix)), None)
    return replace(scheme, min_prefix_tokens=minimum) if minimum else scheme


# --- figures a bill is made of ------------------------------------------------------------

MAX_TOKEN_FIGURE = 100_000_000
"""No request or reply holds more tokens than this (the largest windows hold about 2 million)."""
MAX_PRICE_PER_MILLION = 10_000.0
"""No model costs more US dollars per million tokens than this (the dearest listed, o1-pro's output, costs 600)."""


class BadFigure(ValueError):
    """A token count or price that no bill can hold (negative, NaN, infinite, absurdly large, not a number)."""


def token_figure(value: Any, what: str) -> int:
    """``value`` as a token count (a whole number from 0 to ``MAX_TOKEN_FIGURE``); ``BadFigure`` names ``what``."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) \
            or value != int(value) or not 0 <= value <= MAX_TOKEN_FIGURE:
        raise BadFigure(f"{what} = {value!r} is not a token count (a whole number from 0 to {MAX_TOKEN_FIGURE:,})")
    return int(value)


def price_figure(value: Any, what: str) -> float | None:
    """``value`` as US dollars per million tokens (0 to ``MAX_PRICE_PER_MILLION``, finite); None stays None (unknown)."""
    if value is None:
        return None
    try:
        price = float(value) if not isinstance(value, bool) else math.nan
    except (TypeError, ValueError):
        price = math.nan
    if not math.isfinite(price) or not 0 <= price <= MAX_PRICE_PER_MILLION:
        raise BadFigure(f"{what} = {value!r} is not a price (US dollars per million tokens, from 0 to "
                        f"{MAX_PRICE_PER_MILLION:,.0f})")
    return price


# --- what a request is made of -------------------------------------------------------------

def _digest(payload: Any) -> str:
    text = json.dumps(payload, ensure_ascii=False, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=DIGEST_CHARS // 2).hexdigest()


def message_payload(message: BaseMessage) -> list[Any]:
    """What a provider receives of a message (its cache identity): never LangChain's own id."""
    calls = [[call.get("id"), call["name"], call["args"]] for call in message.tool_calls] \
        if isinstance(message, AIMessage) else []
    tool_call_id = message.tool_call_id if isinstance(message, ToolMessage) else None
    return [message.type, message.content, message.name, calls, tool_call_id]


class BlockMaker:
    """Turns requests into blocks, remembering each message's digest (a session re-sends the same messages)."""

    def __init__(self, counter: TokenCounter, max_cached: int = 50_000) -> None:
        self.counter = counter
        self.max_cached = max_cached
        self._digests: OrderedDict[tuple[Any, ...], str] = OrderedDict()

    def message_block(self, message: BaseMessage) -> Block:
        key = message_cache_key(message)
        digest = self._digests.get(key)
        if digest is None:
            digest = _digest(message_payload(message))
            self._digests[key] = digest
            if len(self._digests) > self.max_cached:
                self._digests.popitem(last=False)
        else:
            self._digests.move_to_end(key)
        return Block(digest, self.counter.count_message(message), message.type, block_kind(message))

    def request_blocks(self, messages: Sequence[BaseMessage], tools: Sequence[Any] = ()) -> list[Block]:
        """The fixed block (leading system messages + tool schemas), then one block per message."""
        leading = 0
        while leading < len(messages) and isinstance(messages[leading], SystemMessage):
            leading += 1
        system = messages[:leading]
        fixed_tokens = sum(self.counter.count_message(message) for message in system) + self.counter.count_tools(tools)
        fixed = Block(f"{_digest([message.content for message in system])}{FIXED_PARTS_SEPARATOR}"
                      f"{_digest([_tool_payload(tool) for tool in tools])}", fixed_tokens, FIXED_ROLE)
        return [fixed, *(self.message_block(message) for message in messages[leading:])]


def block_kind(message: BaseMessage) -> str:
    """``summary`` for a summary block or turn digest, ``compacted`` for a cleared result's stub, else ``""``."""
    text = message.content if isinstance(message.content, str) else ""
    if text.startswith(SUMMARY_PREFIX):
        return "summary"
    return "compacted" if text.startswith(COMPACTED_PREFIX) else ""


def _tool_payload(tool: Any) -> Any:
    if isinstance(tool, Mapping):
        return tool
    from langchain_core.utils.function_calling import convert_to_openai_tool

    return convert_to_openai_tool(tool)


def request_blocks(counter: TokenCounter, messages: Sequence[BaseMessage], tools: Sequence[Any] = ()) -> list[Block]:
    """``BlockMaker(counter).request_blocks(messages, tools)``, for one request on its own."""
    return BlockMaker(counter).request_blocks(messages, tools)


# --- the cache, call by call -----------------------------------------------------------------

def servable(shared_tokens: int, scheme: PricingScheme | None = None) -> int:
    """What a cache serves of a shared prefix: nothing under the minimum, else rounded down to the scheme's step
    (no scheme: OpenAI's, 1,024 and 128)."""
    minimum, step = (scheme.min_prefix_tokens, scheme.step_tokens) if scheme else (MIN_CACHED_PREFIX_TOKENS,
                                                                                 CACHE_STEP_TOKENS)
    if shared_tokens < minimum:
        return 0
    return shared_tokens // step * step


def breakpoint_positions(blocks: Sequence[Block], policy: Iterable[str] = DEFAULT_BREAKPOINTS) -> list[int]:
    """The blocks a request marks with ``policy`` (each breakpoint ends its prefix at that block), at most four."""
    humans = [index for index, block in enumerate(blocks) if block.role == "human" and not block.kind]
    summaries = [index for index, block in enumerate(blocks) if block.kind == "summary"]
    where = {Breakpoint.TOOLS: 0 if blocks else None, Breakpoint.GOAL: humans[0] if humans else None,
             Breakpoint.DIGESTS: summaries[-1] if summaries else None,
             Breakpoint.REQUEST: len(blocks) - 1 if blocks else None}
    marks = sorted({where[Breakpoint(name)] for name in policy} - {None})
    return marks[:1] + marks[1:][-(MAX_BREAKPOINTS - 1):] if len(marks) > MAX_BREAKPOINTS else marks


@dataclass(frozen=True)
class CallCache:
    """One call, as a prompt cache and the physical limit see it."""

    input_tokens: int
    shared_messages: int = 0
    """Leading blocks (the fixed block counts as one) that an earlier request of the session began with."""
    shared_tokens: int = 0
    cached_tokens: int = 0
    """What the scheme's cache serves of it (its prefix rule, minimum, step and lifetime)."""
    write_tokens: int = 0
    oracle_tokens: int = 0
    """The physical limit for this call (0 for summary and internal calls)."""
    reported_cached_tokens: int | None = None
    """What the provider said it read from its cache (None: it did not say)."""
    known: bool = True
    """False when the request's blocks were not captured (the call counts as uncached)."""
    miss_reason: str | None = None
    """Why it read less than it re-sent, or wrote from the start (a ``MissReason``); None: a hit on all it re-sent."""
    turn: int = 0

    @property
    def billed_cached_tokens(self) -> int:
        """The provider's figure when it gave one, else the model's."""
        return self.cached_tokens if self.reported_cached_tokens is None else min(self.reported_cached_tokens,
                                                                                   self.input_tokens)

    def weighted(self, scheme: PricingScheme) -> float:
        """Input-token equivalents under ``scheme``."""
        cached = self.billed_cached_tokens
        written = min(self.write_tokens, self.input_tokens - cached)
        return (self.input_tokens - cached - written) + scheme.read * cached + scheme.write * written


@dataclass
class PrefixNode:
    """One block of some earlier request, reached through the blocks before it (a trie of the session's requests)."""

    tokens: int = 0
    """The prefix's tokens, this block included."""
    used: float | None = None
    """When a cache entry for this prefix was last written or read (None: there is none)."""
    ended: bool = False
    """Some earlier request ended with this block."""
    children: dict[str, PrefixNode] = field(default_factory=dict)


class PrefixIndex:
    """Every request of a session as a path of block digests: longest shared prefix in O(blocks)."""

    def __init__(self) -> None:
        self.root = PrefixNode()
        self.requests = 0

    def path(self, blocks: Sequence[Block]) -> list[PrefixNode]:
        """The nodes of the longest prefix of ``blocks`` that some earlier request began with."""
        node, found = self.root, []
        for block in blocks:
            node = node.children.get(block.digest)
            if node is None:
                break
            found.append(node)
        return found

    def match(self, blocks: Sequence[Block]) -> tuple[int, int]:
        """(whole blocks, their tokens) that some earlier request began with."""
        found = self.path(blocks)
        return len(found), found[-1].tokens if found else 0

    def add(self, blocks: Sequence[Block]) -> list[PrefixNode]:
        node, tokens, nodes = self.root, 0, []
        for block in blocks:
            tokens += block.tokens
            node = node.children.setdefault(block.digest, PrefixNode(tokens))
            nodes.append(node)
        if nodes:
            nodes[-1].ended = True
        self.requests += 1
        return nodes


def _alive(node: PrefixNode, now: float, ttl: float) -> bool:
    return node.used is not None and now - node.used <= ttl


@dataclass
class SessionCache:
    """Feeds each call's blocks through one scheme's rules (module docstring); one per session and scheme."""

    scheme: PricingScheme = field(default_factory=lambda: SCHEMES[DEFAULT_SCHEME])
    index: PrefixIndex = field(default_factory=PrefixIndex)
    goal: Block | None = None
    turn_message: dict[int, str] = field(default_factory=dict)
    """Per turn: the digest of the user message that opened it."""
    last_fixed: str | None = None

    def observe(self, blocks: Sequence[Block] | None, input_tokens: int, *, purpose: str = "agent", turn: int = 0,
                failed: bool = False, reported_cached_tokens: int | None = None, at: float = 0.0,
                marks: Sequence[int] | None = None) -> CallCache:
        """One call made at ``at`` seconds (any clock); ``marks``: its breakpoints (None: ``DEFAULT_BREAKPOINTS``)."""
        if blocks is None:  # not captured: counted at full price, and the limit is unknown (taken as the call)
            return CallCache(input_tokens, oracle_tokens=input_tokens if purpose == "agent" else 0,
                             reported_cached_tokens=reported_cached_tokens, known=False, turn=turn)
        oracle = self._oracle(blocks, purpose, turn)
        if failed:
            return CallCache(input_tokens, oracle_tokens=oracle, reported_cached_tokens=reported_cached_tokens, turn=turn)
        marks = breakpoint_positions(blocks) if marks is None else [mark for mark in marks if mark < len(blocks)]
        path = self.index.path(blocks)
        shared_tokens = path[-1].tokens if path else 0
        cached = self._read(path, marks, at, self.scheme.ttl_seconds)
        reason = self._reason(blocks, path, cached, self._read(path, marks, at, math.inf))
        nodes = self.index.add(blocks)
        written = self._write(nodes, marks, cached, at)
        self.last_fixed = blocks[0].digest if blocks else None
        return CallCache(input_tokens, len(path), shared_tokens, cached, written, oracle, reported_cached_tokens,
                         miss_reason=reason, turn=turn)

    def _read(self, path: list[PrefixNode], marks: Sequence[int], at: float, ttl: float) -> int:
        """The tokens this scheme serves from the cache along ``path`` (and refreshes, when ttl is the real one)."""
        scheme = self.scheme
        if scheme.rule == PrefixRule.BREAKPOINTS:
            hits = [position for position in range(len(path)) if _alive(path[position], at, ttl)
                    and any(0 <= mark - position <= LOOKBACK_BLOCKS for mark in marks)]
        else:  # the longest prefix still alive
            alive = 0
            while alive < len(path) and _alive(path[alive], at, ttl):
                alive += 1
            hits = list(range(alive))
        if not hits:
            return 0
        best = path[hits[-1]]
        cached = servable(best.tokens, scheme)
        if cached and ttl == scheme.ttl_seconds:
            best.used = at
        return cached

    def _write(self, nodes: list[PrefixNode], marks: Sequence[int], cached: int, at: float) -> int:
        """Mark the entries this request leaves behind; the tokens it wrote (billed at the write price)."""
        scheme = self.scheme
        ends = marks if scheme.rule == PrefixRule.BREAKPOINTS else range(len(nodes) - 1, len(nodes))
        ends = [position for position in ends if nodes[position].tokens >= scheme.min_prefix_tokens]
        for node in ([nodes[position] for position in ends] if scheme.rule == PrefixRule.BREAKPOINTS
                     else nodes if ends else []):
            node.used = at
        return max(0, nodes[ends[-1]].tokens - cached) if ends else 0

    def _reason(self, blocks: Sequence[Block], path: list[PrefixNode], cached: int, cached_forever: int) -> str | None:
        """Why this request read less than it re-sent (see ``MissReason``); None for a full hit."""
        if not self.index.requests:
            return MissReason.FIRST
        shared = path[-1].tokens if path else 0
        if shared - cached >= max(self.scheme.step_tokens, 1) and shared > 0:
            if shared < self.scheme.min_prefix_tokens:
                return MissReason.BELOW_MINIMUM
            return MissReason.EXPIRED if cached_forever > cached else MissReason.NOT_MARKED
        if path and (path[-1].ended or len(path) == len(blocks)):  # it goes on from an earlier request
            return None
        return self._divergence(blocks, len(path))

    def _divergence(self, blocks: Sequence[Block], position: int) -> str:
        if position == 0:
            system, _, tools = blocks[0].digest.partition(FIXED_PARTS_SEPARATOR) if blocks else ("", "", "")
            before_system, _, _ = (self.last_fixed or "").partition(FIXED_PARTS_SEPARATOR)
            return MissReason.SYSTEM if system != before_system else MissReason.TOOLS
        if position < len(blocks) and blocks[position].kind:
            return MissReason.COMPACTED
        return MissReason.MESSAGES

    def _oracle(self, blocks: Sequence[Block], purpose: str, turn: int) -> int:
        if purpose != "agent" or not blocks:
            return 0
        humans = [position for position, block in enumerate(blocks) if block.role == "human"]
        if self.goal is None and humans:
            self.goal = blocks[humans[0]]
        if turn not in self.turn_message and humans:
            self.turn_message[turn] = blocks[humans[-1]].digest
        opened = self.turn_message.get(turn)
        start = next((position for position in reversed(humans) if blocks[position].digest == opened),
                     humans[-1] if humans else len(blocks))
        current = sum(block.tokens for block in blocks[start:])
        goal = self.goal.tokens if self.goal is not None and self.goal.digest != opened else 0
        return blocks[0].tokens + goal + current + REPLY_PRIMING_TOKENS


# --- reading many calls ------------------------------------------------------------------------

def _field(call: Any, name: str, default: Any = None) -> Any:
    return call.get(name, default) if isinstance(call, Mapping) else getattr(call, name, default)


def analyze(calls: Iterable[Any], scheme: str | PricingScheme = DEFAULT_SCHEME, *,
            turn_pace_seconds: float | None = None) -> list[CallCache]:
    """Every call of one session (``CallRecord`` objects or their dicts, in order) through a fresh cache of ``scheme``.

    Each call is at its recorded ``time`` (the session's real clock), or, with ``turn_pace_seconds``, at
    ``turn x pace`` (a stated pace: one user turn every so many seconds). Each call's breakpoints are the
    ones it marked (``cache_marks``; not recorded: ``DEFAULT_BREAKPOINTS``)."""
    chosen = scheme if isinstance(scheme, PricingScheme) else scheme_named(scheme)
    cache = SessionCache(chosen)
    results = []
    for call in calls:
        raw = _field(call, "prompt_blocks")
        blocks = [Block(*block) for block in raw] if raw is not None else None
        turn = int(_field(call, "turn", 0))
        at = turn * turn_pace_seconds if turn_pace_seconds is not None else float(_field(call, "time", 0.0) or 0.0)
        results.append(cache.observe(blocks, int(_field(call, "input_tokens", 0)), purpose=_field(call, "purpose", "agent"),
                                     turn=turn, failed=_field(call, "error") is not None,
                                     reported_cached_tokens=_field(call, "reported_cached_tokens"), at=at,
                                     marks=_field(call, "cache_marks")))
    return results


def weighted_input_tokens(caches: Iterable[CallCache], scheme: str | PricingScheme = DEFAULT_SCHEME) -> int:
    """All input priced under ``scheme``, in input-token equivalents (rounded to whole tokens)."""
    chosen = scheme if isinstance(scheme, PricingScheme) else scheme_named(scheme)
    return round(sum(cache.weighted(chosen) for cache in caches))


def cacheable_share(caches: Iterable[CallCache]) -> float | None:
    """Cached input / all input (None when there was no input)."""
    caches = list(caches)
    total = sum(cache.input_tokens for cache in caches)
    return round(sum(cache.billed_cached_tokens for cache in caches) / total, 4) if total else None


def compare_reported(caches: Iterable[CallCache]) -> dict[str, Any] | None:
    """Where the provider reported cached tokens: its total beside the model's (None when it never did)."""
    reported = [cache for cache in caches if cache.reported_cached_tokens is not None]
    if not reported:
        return None
    provider = sum(cache.reported_cached_tokens or 0 for cache in reported)
    model = sum(cache.cached_tokens for cache in reported)
    return {"calls": len(reported), "reported_cached_tokens": provider, "model_cached_tokens": model,
            "model_over_reported": round(model / provider, 4) if provider else None}


def cumulative_by_turn(caches: Iterable[CallCache], scheme: str | PricingScheme = DEFAULT_SCHEME) -> list[int]:
    """The input priced under ``scheme`` up to and including each turn: item ``t - 1`` is turn ``t``'s total."""
    chosen = scheme if isinstance(scheme, PricingScheme) else scheme_named(scheme)
    per_turn: dict[int, float] = {}
    for cache in caches:
        per_turn[max(cache.turn, 1)] = per_turn.get(max(cache.turn, 1), 0.0) + cache.weighted(chosen)
    running, totals = 0.0, []
    for turn in range(1, max(per_turn, default=0) + 1):
        running += per_turn.get(turn, 0.0)
        totals.append(round(running))
    return totals


def break_even_turn(strategy: Sequence[int], reference: Sequence[int]) -> int | None:
    """The first turn from which ``strategy``'s cumulative cost stays at or below ``reference``'s (same session
    length); None when it is still above at the last turn both reached (compaction has not paid yet)."""
    turns = min(len(strategy), len(reference))
    if not turns or strategy[turns - 1] > reference[turns - 1]:
        return None
    turn = turns
    while turn > 1 and strategy[turn - 2] <= reference[turn - 2]:
        turn -= 1
    return turn


def miss_counts(caches: Iterable[CallCache]) -> dict[str, int]:
    """How many calls missed for each reason (``MissReason``), most frequent first."""
    counts: dict[str, int] = {}
    for cache in caches:
        if cache.known and cache.miss_reason is not None:
            counts[str(cache.miss_reason)] = counts.get(str(cache.miss_reason), 0) + 1
    return dict(sorted(counts.items(), key=lambda item: (-item[1], item[0])))


def cache_totals(caches: Iterable[CallCache], by_scheme: Mapping[str, Sequence[CallCache]] | None = None) -> dict[str, Any]:
    """The session's figures: cached / written input (the log's own scheme), the input priced under every scheme
    (``by_scheme``: each scheme's own analysis of the same calls; without it, these calls priced each way), misses
    by reason and cumulative cost by turn per scheme, cacheable share, the limit."""
    caches = list(caches)
    by_scheme = by_scheme or {name: caches for name in SCHEMES}
    return {
        "cached_input_tokens": sum(cache.billed_cached_tokens for cache in caches),
        "cache_write_tokens": sum(cache.write_tokens for cache in caches),
        "cache_weighted_input_tokens": weighted_input_tokens(by_scheme[DEFAULT_SCHEME], DEFAULT_SCHEME),
        "cache_weighted_by_scheme": {name: weighted_input_tokens(found, name) for name, found in by_scheme.items()},
        "cache_misses_by_scheme": {name: miss_counts(found) for name, found in by_scheme.items()},
        "cache_weighted_by_turn": {name: cumulative_by_turn(found, name) for name, found in by_scheme.items()},
        "cacheable_share": cacheable_share(caches),
        "oracle_input_tokens": sum(cache.oracle_tokens for cache in caches),
        "cache_unknown_calls": sum(1 for cache in caches if not cache.known),
        "reported_cache": compare_reported(caches),
    }


def analyze_every_scheme(calls: Sequence[Any], *, turn_pace_seconds: float | None = None) -> dict[str, list[CallCache]]:
    """``analyze`` under every scheme in ``SCHEMES``."""
    return {name: analyze(calls, name, turn_pace_seconds=turn_pace_seconds) for name in SCHEMES}


def call_cost_usd(cache: CallCache, output_tokens: int, input_per_million: float, output_per_million: float,
                  cached_input_per_million: float | None, cache_write_per_million: float | None) -> float:
    """One call in US dollars: cached input at the cached price, writes at the write price (None: the input price)."""
    cached = cache.billed_cached_tokens
    written = min(cache.write_tokens, cache.input_tokens - cached) if cache_write_per_million is not None else 0
    read_price = input_per_million if cached_input_per_million is None else cached_input_per_million
    fresh = cache.input_tokens - cached - written
    return (fresh * input_per_million + cached * read_price + written * (cache_write_per_million or 0.0)
            + output_tokens * output_per_million) / 1e6


def as_dict(cache: CallCache) -> dict[str, Any]:
    return asdict(cache)
