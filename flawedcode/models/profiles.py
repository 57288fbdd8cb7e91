"""Model profiles: each model's context window and prices, and the managed budget.

A profile answers two questions about a model:

- how many input tokens it accepts (``max_input_tokens``, its window for the prompt);
- what a million input / output tokens cost in US dollars (for cost estimates),
  or ``None`` when nobody knows: **a cost is never guessed**;
- what a million input tokens cost when read from the provider's prompt cache
  (``cached_input_per_million``; None: the model has no cache discount, so
  cached input costs the input price) and when written to it
  (``cache_write_per_million``; None: writes cost the input price, as at
  OpenAI before GPT-5.6), with ``cache_scheme`` naming the scheme of
  ``flawedcode.prompt_cache`` whose rules apply.

``KNOWN_PROFILES`` holds OpenAI's current families (gpt-4o, gpt-4.1, the
o-series, gpt-5) at their published list prices, and common local models
(Ollama names such as ``llama3.1`` or ``qwen2.5:7b``) at no per-token price.
``PRICES_CHECKED`` says when the numbers were taken; prices change, so check
them before trusting a cost estimate.

A local server's window is what it *serves*, not what the model was trained
for: Ollama serves ``num_ctx`` tokens (``OLLAMA_DEFAULT_CONTEXT_TOKENS`` unless
set). Such a window holds the prompt *and* the reply, so the prompt gets
``input_window(total)``: the total less ``reply_reserve_tokens`` (an eighth,
at least 256 tokens). A server that publishes its window, a ``--window``
option, or an overflow error that names the limit overrides the profile
(see ``factory.py``); ``window_of(model)`` reads the result back.

The course teaches on a *budget*: the context wrappers manage the conversation
to, say, 8,192 tokens even when the model's window is 128,000, so that context
rot shows up after a handful of turns. ``budget_for`` returns that budget: an
explicit ``budget_tokens`` if one was given, else the model's window, and
**never more than the window**: a budget larger than the window is lowered to
fit, with one warning line::

    warning: the budget of 8,192 tokens is larger than the model's window (3,584 input tokens: ...); lowered it to 3,584 tokens

Unknown model names get a 128,000-token window, no prices, and one warning
line (``notices.warn_once``), so a typo does not go unnoticed and its cost
shows as unknown.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from flawedcode.constants import DEFAULT_BUDGET_TOKENS, ENCODING_NAME
from flawedcode.notices import warn_once
from flawedcode.prompt_cache import price_figure
from flawedcode.tokens import encoding_name_for_model

OFFLINE_WINDOW_TOKENS = DEFAULT_BUDGET_TOKENS
"""The offline teaching model's default window (the course's small budget)."""

UNKNOWN_WINDOW_TOKENS = 128_000
"""The window assumed for a model nobody knows (set ``--window`` when it is smaller)."""

OLLAMA_DEFAULT_CONTEXT_TOKENS = 4_096
"""Ollama's default ``num_ctx``: what a local model is served with unless configured otherwise."""

MIN_REPLY_TOKENS = 256
"""A window that holds prompt and reply keeps at least this many tokens for the reply."""

PRICES_CHECKED = "2025-08"
"""When the windows and list prices below were taken from OpenAI's model pages."""

CACHED_PRICES_CHECKED = "2026-12-01"
"""When the cached-input prices below were checked against OpenAI's pricing page (standard tier)."""

BUDGET_METADATA_KEY = "flawedcode_budget_tokens"
"""Where ``get_model(..., budget_tokens=N)`` records the budget on a chat model's ``metadata``."""

WINDOW_SOURCE_KEY = "flawedcode_window_source"
"""Where a chat model's ``metadata`` says where its window came from (a server, --window, an error)."""

PRICES_KEY = "flawedcode_prices"
"""Where a chat model's ``metadata`` holds prices a server published: ``(input, output)`` per million tokens."""


@dataclass(frozen=True)
class ModelProfile:
    """What flawedcode needs to know about one model."""

    name: str
    """The model name as the API knows it (``gpt-4o-mini``) or ``offline``."""
    max_input_tokens: int
    """The context window for the prompt: the most input tokens one request may hold."""
    input_per_million: float | None
    """US dollars per million input tokens; None when unknown."""
    output_per_million: float | None
    """US dollars per million output tokens (reasoning tokens included); None when unknown."""
    encoding: str = ENCODING_NAME
    """The tiktoken encoding used to count this model's tokens."""
    source: str = field(default="", compare=False)
    """Where the numbers come from, and when they were taken."""
    cached_input_per_million: float | None = None
    """US dollars per million input tokens read from the prompt cache; None: no discount (the input price)."""
    cache_write_per_million: float | None = None
    """US dollars per million input tokens written to the cache; None: writes cost the input price."""
    cache_scheme: str = "openai"
    """The ``flawedcode.prompt_cache`` scheme whose rules this provider follows."""

    def __post_init__(self) -> None:
        for name in ("input_per_million", "output_per_million", "cached_input_per_million", "cache_write_per_million"):
            price_figure(getattr(self, name), f"{self.name} {name}")  # BadFigure: never a NaN, negative or absurd price

    @property
    def priced(self) -> bool:
        """True when both prices are known."""
        return self.input_per_million is not None and self.output_per_million is not None

    def cost(self, input_tokens: int, output_tokens: int, cached_input_tokens: int = 0,
             cache_write_tokens: int = 0) -> float | None:
        """Estimated US dollars; ``cached_input_tokens`` / ``cache_write_tokens`` (of ``input_tokens``) at their
        prices. None when the prices are unknown."""
        if not self.priced:
            return None
        cached = min(cached_input_tokens, input_tokens)
        written = min(cache_write_tokens, input_tokens - cached) if self.cache_write_per_million is not None else 0
        read_price = self.input_per_million if self.cached_input_per_million is None else self.cached_input_per_million
        return ((input_tokens - cached - written) * self.input_per_million + cached * read_price
                + written * (self.cache_write_per_million or 0.0) + output_tokens * self.output_per_million) / 1_000_000


def reply_reserve_tokens(total_window: int) -> int:
    """What a window that holds both prompt and reply keeps for the reply: an eighth, at least 256 tokens."""
    return max(MIN_REPLY_TOKENS, total_window // 8)


def input_window(total_window: int) -> int:
    """The prompt's share of a window that holds both prompt and reply (4,096 -> 3,584)."""
    return max(total_window - reply_reserve_tokens(total_window), total_window // 2)


_OPENAI = f"OpenAI list price (standard tier) and window, checked {PRICES_CHECKED}"
_LOCAL = (f"local model: no per-token price; window = Ollama's default num_ctx ({OLLAMA_DEFAULT_CONTEXT_TOKENS:,}) "
          f"less the reply's share, checked {PRICES_CHECKED}")
_LOCAL_MODELS = ("llama3.1", "llama3.2", "llama3.3", "qwen2.5", "qwen2.5-coder", "qwen3", "mistral", "mistral-nemo",
                 "gemma3", "phi4", "deepseek-r1", "gpt-oss")

# Public list prices per million tokens (standard tier, no batch discount) and input windows. The last number
# of an OpenAI row is its cached-input price (checked 2026-12-01, CACHED_PRICES_CHECKED): GPT-5 reads at 0.1x,
# GPT-4.1 and o3 / o4-mini at 0.25x, GPT-4o and o1 at 0.5x; o1-pro, o3-pro and the GPT-4 / 3.5 models have no
# cache discount (None). OpenAI does not surcharge writes before GPT-5.6 (cache_write_per_million None).
def _openai(name: str, window: int, input_price: float, output_price: float, cached_price: float | None,
            encoding: str = ENCODING_NAME) -> ModelProfile:
    return ModelProfile(name, window, input_price, output_price, encoding, source=_OPENAI,
                        cached_input_per_million=cached_price, cache_scheme="openai")


KNOWN_PROFILES: dict[str, ModelProfile] = {
    profile.name: profile
    for profile in (
        ModelProfile("offline", OFFLINE_WINDOW_TOKENS, 0.0, 0.0, source="the offline teaching model: free"),
        _openai("gpt-4o-mini", 128_000, 0.15, 0.60, 0.075),
        _openai("gpt-4o", 128_000, 2.50, 10.00, 1.25),
        _openai("gpt-4.1", 1_047_576, 2.00, 8.00, 0.50),
        _openai("gpt-4.1-mini", 1_047_576, 0.40, 1.60, 0.10),
        _openai("gpt-4.1-nano", 1_047_576, 0.10, 0.40, 0.025),
        _openai("o1", 200_000, 15.00, 60.00, 7.50),
        _openai("o1-mini", 128_000, 1.10, 4.40, 0.55),
        _openai("o1-pro", 200_000, 150.00, 600.00, None),
        _openai("o3", 200_000, 2.00, 8.00, 0.50),
        _openai("o3-mini", 200_000, 1.10, 4.40, 0.55),
        _openai("o3-pro", 200_000, 20.00, 80.00, None),
        _openai("o4-mini", 200_000, 1.10, 4.40, 0.275),
        _openai("gpt-5", 272_000, 1.25, 10.00, 0.125),
        _openai("gpt-5-mini", 272_000, 0.25, 2.00, 0.025),
        _openai("gpt-5-nano", 272_000, 0.05, 0.40, 0.005),
        _openai("gpt-5-chat-latest", 128_000, 1.25, 10.00, 0.125),
        _openai("gpt-4-turbo", 128_000, 10.00, 30.00, None, "cl100k_base"),
        _openai("gpt-4", 8_192, 30.00, 60.00, None, "cl100k_base"),
        _openai("gpt-3.5-turbo", 16_385, 0.50, 1.50, None, "cl100k_base"),
        *(ModelProfile(name, input_window(OLLAMA_DEFAULT_CONTEXT_TOKENS), 0.0, 0.0, source=_LOCAL)
          for name in _LOCAL_MODELS),
    )
}

FALLBACK_PROFILE = ModelProfile("unknown", UNKNOWN_WINDOW_TOKENS, None, None, source="unknown model: no prices")
"""Used for names not in KNOWN_PROFILES: a 128,000-token window and unknown prices."""


def bare_name(name: str) -> str:
    """``openai:gpt-4o-mini`` -> ``gpt-4o-mini``; ``offline:4096`` -> ``offline``; ``openai/gpt-4o`` -> ``gpt-4o``;
    ``llama3.1:8b`` -> ``llama3.1`` (an Ollama tag)."""
    provider, _, rest = name.strip().partition(":")
    if provider == "offline":
        return "offline"
    if provider == "openai" and rest:
        name = rest
    name = name.strip()
    name = name.removeprefix("openai/")  # OpenRouter names OpenAI's models "openai/<name>"
    return name.split(":", 1)[0] if ":" in name else name


def profile_for(model_or_name: Any) -> ModelProfile:
    """The profile of a model name (``gpt-4o``, ``openai:gpt-4o``, ``offline``, ``offline:4096``) or chat model.

    ``offline:<window>`` gets the offline profile with that window. A dated
    snapshot (``gpt-4o-mini-2024-07-18``) gets its family's profile. Anything
    else gets FALLBACK_PROFILE (no prices) and one warning line. A chat model
    built by ``get_model`` brings what it learned: its window (from a server,
    ``--window`` or an error) and prices its server published.
    """
    if not isinstance(model_or_name, str):
        return _profile_of_model(model_or_name)
    name = model_or_name
    if name.startswith("offline:"):
        window = int(name.partition(":")[2].replace("_", "").replace(",", ""))
        return replace(KNOWN_PROFILES["offline"], max_input_tokens=window)
    profile = known_profile(name)
    if profile is not None:
        return profile
    bare = bare_name(name)
    warn_once(f"unknown-model:{bare}", unknown_model_text(bare))
    return replace(FALLBACK_PROFILE, name=bare, encoding=encoding_name_for_model(bare))


def known_profile(name: str) -> ModelProfile | None:
    """The profile of a known name or of a dated snapshot of one; None for an unknown name (no warning)."""
    bare = bare_name(name)
    if bare in KNOWN_PROFILES:
        return KNOWN_PROFILES[bare]
    family = _longest_known_prefix(bare)
    return replace(KNOWN_PROFILES[family], name=bare) if family is not None else None


def unknown_model_text(bare: str, window_note: str | None = None) -> str:
    """The one warning line for a model without a profile."""
    window = window_note or (f"its window is assumed to be {UNKNOWN_WINDOW_TOKENS:,} tokens "
                             "(give --window if it is smaller)")
    return f"unknown model {bare!r}: no prices known, so its cost shows as unknown; {window}."


def _profile_of_model(model: Any) -> ModelProfile:
    name = next((value for attribute in ("model_name", "model") if isinstance(value := getattr(model, attribute, None), str)
                 and value), "offline")
    metadata = getattr(model, "metadata", None) or {}
    profile = profile_for(name)
    window = (getattr(model, "profile", None) or {}).get("max_input_tokens")
    if window:
        profile = replace(profile, max_input_tokens=int(window))
    prices = metadata.get(PRICES_KEY)
    if prices and not profile.priced:
        profile = replace(profile, input_per_million=prices[0], output_per_million=prices[1],
                          source="prices published by the model server")
    return profile


def _longest_known_prefix(bare: str) -> str | None:
    """``gpt-4o-mini-2024-07-18`` -> ``gpt-4o-mini`` (a dated snapshot of a known model)."""
    candidates = [known for known in KNOWN_PROFILES if known != "offline" and bare.startswith(known + "-")]
    # Prefer the longest match, but never let a dated gpt-4o snapshot match a longer family wrongly.
    candidates = [known for known in candidates if bare[len(known) + 1 :][:1].isdigit()]
    return max(candidates, key=len) if candidates else None


def window_of(model_or_profile: Any) -> int | None:
    """The model's input window in tokens (a ModelProfile, a chat model's profile, or a name); None if unknown."""
    if isinstance(model_or_profile, ModelProfile):
        return model_or_profile.max_input_tokens
    if isinstance(model_or_profile, str):
        return profile_for(model_or_profile).max_input_tokens
    chat_profile = getattr(model_or_profile, "profile", None) or {}
    if chat_profile.get("max_input_tokens"):
        return int(chat_profile["max_input_tokens"])
    model_name = getattr(model_or_profile, "model_name", None)
    return profile_for(str(model_name)).max_input_tokens if model_name else None


def budget_for(model_or_profile: Any, budget_tokens: int | None = None) -> int:
    """The managed context budget in tokens: never more than the model's window.

    An explicit ``budget_tokens`` wins; else a budget recorded by
    ``get_model(..., budget_tokens=N)``; else the model's window (from a
    ModelProfile, a chat model's ``profile["max_input_tokens"]``, or a model
    name looked up with ``profile_for``). A budget larger than the window is
    lowered to the window, with one warning line.
    """
    metadata = getattr(model_or_profile, "metadata", None) or {}
    window = window_of(model_or_profile)
    if budget_tokens is None and metadata.get(BUDGET_METADATA_KEY):
        budget_tokens = int(metadata[BUDGET_METADATA_KEY])
    if budget_tokens is None:
        if window is None:
            raise TypeError(f"budget_for: cannot tell the window of {type(model_or_profile).__name__}")
        return window
    budget_tokens = int(budget_tokens)
    if window is not None and budget_tokens > window:
        source = metadata.get(WINDOW_SOURCE_KEY) or "from its profile"
        warn_once(f"budget-lowered:{budget_tokens}:{window}:{source}",
                  f"the budget of {budget_tokens:,} tokens is larger than the model's window "
                  f"({window:,} input tokens, {source}); lowered it to {window:,} tokens")
        return window
    return budget_tokens
