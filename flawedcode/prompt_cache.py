"""Prompt caching: which part of each request a provider's cache would serve, and what the input then costs.

Real providers bill the leading part of a request that an earlier request of the
session already sent (its *cached prefix*) at a fraction of the input price. An
append-only history (v1) re-sends everything it sent before, so nearly all of
its input is cached; every summary or clearing that rewrites the middle of the
prompt breaks the cache from that point on. This module measures that, from
what a ``ModelCallRecorder`` captures at the model boundary, with pure functions.

What is captured per call (``request_blocks``): the request as a list of
``Block`` (digest, exact tokens, role). The first block is the *fixed* part:
the leading system message(s) and the tool schemas, together (a change to
either changes it). Then one block per message: its digest is a hash of what
the provider receives (role, content, name, tool calls with their ids,
tool_call_id; never LangChain's own message id), its tokens are its exact
count (``TokenCounter.count_message``). The 3 tokens that prime the reply
(``REPLY_PRIMING_TOKENS``) close every request and are never cached.

The rules (``SessionCache.observe``, call by call, in the order they were made):

- **cached prefix**: the longest run of leading blocks that some earlier
  request of the session (any purpose: agent, summary, internal) began with,
  counted in whole blocks (``shared_messages``) and their exact tokens
  (``shared_tokens``). It is served from the cache when it is at least
  ``MIN_CACHED_PREFIX_TOKENS`` (1,024), rounded down to a multiple of
  ``CACHE_STEP_TOKENS`` (128): ``cached_tokens``. The cache is assumed to
  live for the whole session (providers keep it 5 minutes to an hour
  between uses; a session that pauses longer caches less);
- **cache writes**: a request of at least 1,024 tokens (without the reply
  priming) writes what it did not read: ``write_tokens = prompt - cached``
  (a cache breakpoint at its end, as an agent sets it); a shorter one writes
  nothing and reads nothing;
- a failed request reads and writes nothing (it is not billed);
- **provider-reported cached tokens** (``reported_cached_tokens``, from
  LangChain's ``usage_metadata["input_token_details"]["cache_read"]``; the
  OpenAI API's ``prompt_tokens_details.cached_tokens``) win over the model
  when present: ``billed_cached_tokens``. ``compare_reported`` says how far
  the model was from them. The model is not trusted over the provider.

**Pricing schemes** (``SCHEMES``), as multiples of the input price; the default
is ``anthropic``:

====================  ==========  ===========  ======================================================
scheme                read        write        whose
====================  ==========  ===========  ======================================================
``openai``            0.1x        1.0x (free)  OpenAI GPT-5 to GPT-5.5 (automatic caching, no surcharge)
``openai-2026``       0.1x        1.25x        OpenAI from GPT-5.6 (writes billed above input)
``anthropic``         0.1x        1.25x        Anthropic, 5-minute cache (the default here)
``gemini``            0.1x        1.0x (free)  Google Gemini 2.5+ implicit caching (90% off)
====================  ==========  ===========  ======================================================

``weighted_input_tokens(calls, scheme)`` is the input priced that way, in
input-token equivalents: ``uncached + read x cached + write x written``, where
``uncached`` is what was neither read nor written. ``cacheable_share`` is
cached / all input. Storage fees (Gemini's explicit caches) are not modelled.

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
from dataclasses import asdict, dataclass, field
from typing import Any, NamedTuple

from langchain_core.messages import AIMessage, BaseMessage, SystemMessage, ToolMessage

from flawedcode.tokens import REPLY_PRIMING_TOKENS, TokenCounter, message_cache_key

MIN_CACHED_PREFIX_TOKENS = 1_024
"""The shortest prefix a provider caches (OpenAI, Anthropic's larger models, Gemini Flash)."""
CACHE_STEP_TOKENS = 128
"""Cached prefixes grow in steps of this many tokens (OpenAI)."""
FIXED_ROLE = "fixed"
"""The role of the first block: leading system message(s) and tool schemas."""
DIGEST_CHARS = 16
"""Hex characters kept of each block's hash (64 bits: no two blocks of a session collide in practice)."""


class Block(NamedTuple):
    """One part of a request as a cache sees it: what it is (a digest), how many tokens, whose."""

    digest: str
    tokens: int
    role: str


@dataclass(frozen=True)
class PricingScheme:
    """How a provider bills cached input, as multiples of its input price."""

    name: str
    read: float
    """A token read from the cache costs this many input tokens."""
    write: float
    """A token written to the cache costs this many input tokens (1.0: writes are not surcharged)."""
    whose: str


SCHEMES: dict[str, PricingScheme] = {
    scheme.name: scheme
    for scheme in (
        PricingScheme("openai", 0.1, 1.0, "OpenAI GPT-5 to GPT-5.5: reads 0.1x, writes free"),
        PricingScheme("openai-2026", 0.1, 1.25, "OpenAI from GPT-5.6: reads 0.1x, writes 1.25x"),
        PricingScheme("anthropic", 0.1, 1.25, "Anthropic (5-minute cache): reads 0.1x, writes 1.25x"),
        PricingScheme("gemini", 0.1, 1.0, "Gemini 2.5+ implicit caching: reads 0.1x (90% off), writes free"),
    )
}
DEFAULT_SCHEME = "anthropic"


def scheme_named(name: str) -> PricingScheme:
    """The scheme called ``name``; ``ValueError`` names the known ones."""
    if name not in SCHEMES:
        raise ValueError(f"unknown pricing scheme {name!r}; choose from {', '.join(SCHEMES)}")
    return SCHEMES[name]


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
        return Block(digest, self.counter.count_message(message), message.type)

    def request_blocks(self, messages: Sequence[BaseMessage], tools: Sequence[Any] = ()) -> list[Block]:
        """The fixed block (leading system messages + tool schemas), then one block per message."""
        leading = 0
        while leading < len(messages) and isinstance(messages[leading], SystemMessage):
            leading += 1
        system = messages[:leading]
        fixed_tokens = sum(self.counter.count_message(message) for message in system) + self.counter.count_tools(tools)
        fixed = Block(_digest([[message.content for message in system], [_tool_payload(tool) for tool in tools]]),
                      fixed_tokens, FIXED_ROLE)
        return [fixed, *(self.message_block(message) for message in messages[leading:])]


def _tool_payload(tool: Any) -> Any:
    if isinstance(tool, Mapping):
        return tool
    from langchain_core.utils.function_calling import convert_to_openai_tool

    return convert_to_openai_tool(tool)


def request_blocks(counter: TokenCounter, messages: Sequence[BaseMessage], tools: Sequence[Any] = ()) -> list[Block]:
    """``BlockMaker(counter).request_blocks(messages, tools)``, for one request on its own."""
    return BlockMaker(counter).request_blocks(messages, tools)


# --- the cache, call by call -----------------------------------------------------------------

def servable(shared_tokens: int) -> int:
    """What a cache serves of a shared prefix: nothing under 1,024 tokens, else rounded down to 128."""
    if shared_tokens < MIN_CACHED_PREFIX_TOKENS:
        return 0
    return shared_tokens // CACHE_STEP_TOKENS * CACHE_STEP_TOKENS


@dataclass(frozen=True)
class CallCache:
    """One call, as a prompt cache and the physical limit see it."""

    input_tokens: int
    shared_messages: int = 0
    """Leading blocks (the fixed block counts as one) that an earlier request of the session began with."""
    shared_tokens: int = 0
    cached_tokens: int = 0
    """The model's cache read: ``servable(shared_tokens)``."""
    write_tokens: int = 0
    oracle_tokens: int = 0
    """The physical limit for this call (0 for summary and internal calls)."""
    reported_cached_tokens: int | None = None
    """What the provider said it read from its cache (None: it did not say)."""
    known: bool = True
    """False when the request's blocks were not captured (the call counts as uncached)."""

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


class PrefixIndex:
    """Every request of a session as a path of block digests (a trie): longest shared prefix in O(blocks)."""

    def __init__(self) -> None:
        self._root: dict[str, dict] = {}

    def match(self, blocks: Sequence[Block]) -> tuple[int, int]:
        """(whole blocks, their tokens) that some earlier request began with."""
        node, count, tokens = self._root, 0, 0
        for block in blocks:
            node = node.get(block.digest)
            if node is None:
                break
            count, tokens = count + 1, tokens + block.tokens
        return count, tokens

    def add(self, blocks: Sequence[Block]) -> None:
        node = self._root
        for block in blocks:
            node = node.setdefault(block.digest, {})


@dataclass
class SessionCache:
    """Feeds each call's blocks through the rules of the module docstring; one per session."""

    index: PrefixIndex = field(default_factory=PrefixIndex)
    goal: Block | None = None
    turn_message: dict[int, str] = field(default_factory=dict)
    """Per turn: the digest of the user message that opened it."""

    def observe(self, blocks: Sequence[Block] | None, input_tokens: int, *, purpose: str = "agent", turn: int = 0,
                failed: bool = False, reported_cached_tokens: int | None = None) -> CallCache:
        if blocks is None:  # not captured: counted at full price, and the limit is unknown (taken as the call)
            return CallCache(input_tokens, oracle_tokens=input_tokens if purpose == "agent" else 0,
                             reported_cached_tokens=reported_cached_tokens, known=False)
        oracle = self._oracle(blocks, purpose, turn)
        if failed:
            return CallCache(input_tokens, oracle_tokens=oracle, reported_cached_tokens=reported_cached_tokens)
        shared_messages, shared_tokens = self.index.match(blocks)
        self.index.add(blocks)
        prompt = sum(block.tokens for block in blocks)
        cached = servable(shared_tokens)
        written = prompt - cached if prompt >= MIN_CACHED_PREFIX_TOKENS else 0
        return CallCache(input_tokens, shared_messages, shared_tokens, cached, written, oracle, reported_cached_tokens)

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


def analyze(calls: Iterable[Any]) -> list[CallCache]:
    """Every call of one session (``CallRecord`` objects or their dicts, in order) through a fresh ``SessionCache``."""
    cache = SessionCache()
    results = []
    for call in calls:
        raw = _field(call, "prompt_blocks")
        blocks = [Block(*block) for block in raw] if raw is not None else None
        results.append(cache.observe(blocks, int(_field(call, "input_tokens", 0)), purpose=_field(call, "purpose", "agent"),
                                     turn=int(_field(call, "turn", 0)), failed=_field(call, "error") is not None,
                                     reported_cached_tokens=_field(call, "reported_cached_tokens")))
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


def cache_totals(caches: Iterable[CallCache]) -> dict[str, Any]:
    """The session's figures: cached / written / weighted input (each scheme), cacheable share, the limit."""
    caches = list(caches)
    return {
        "cached_input_tokens": sum(cache.billed_cached_tokens for cache in caches),
        "cache_write_tokens": sum(cache.write_tokens for cache in caches),
        "cache_weighted_input_tokens": weighted_input_tokens(caches, DEFAULT_SCHEME),
        "cache_weighted_by_scheme": {name: weighted_input_tokens(caches, name) for name in SCHEMES},
        "cacheable_share": cacheable_share(caches),
        "oracle_input_tokens": sum(cache.oracle_tokens for cache in caches),
        "cache_unknown_calls": sum(1 for cache in caches if not cache.known),
        "reported_cache": compare_reported(caches),
    }


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
