"""Model profiles: each model's context window and prices, and the managed budget.

A profile answers two questions about a model:

- how many input tokens it accepts (``max_input_tokens``, its context window);
- what a million input / output tokens cost in US dollars (for cost estimates).

The course teaches on a *budget*: the context wrappers manage the conversation
to, say, 8,192 tokens even when the model's window is 128,000, so that context
rot shows up after a handful of turns. ``budget_for`` returns that budget:
an explicit ``budget_tokens`` if one was given, else the model's window.

Unknown model names get ``FALLBACK_PROFILE`` (128,000 tokens, gpt-4o-mini
prices) and a ``warnings.warn`` so that a typo does not go unnoticed.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, replace
from typing import Any

from flawedcode.tokens import encoding_name_for_model

OFFLINE_WINDOW_TOKENS = 8_192
"""The offline teaching model's default window (the course's small budget)."""

BUDGET_METADATA_KEY = "flawedcode_budget_tokens"
"""Where ``get_model(..., budget_tokens=N)`` records the budget on a chat model's ``metadata``."""


@dataclass(frozen=True)
class ModelProfile:
    """What flawedcode needs to know about one model."""

    name: str
    """The model name as the API knows it (``gpt-4o-mini``) or ``offline``."""
    max_input_tokens: int
    """The context window: the most input tokens one request may hold."""
    input_per_million: float
    """US dollars per million input tokens."""
    output_per_million: float
    """US dollars per million output tokens."""
    encoding: str = "o200k_base"
    """The tiktoken encoding used to count this model's tokens."""

    def cost(self, input_tokens: int, output_tokens: int) -> float:
        """Estimated US dollars for this many input and output tokens."""
        return (input_tokens * self.input_per_million + output_tokens * self.output_per_million) / 1_000_000


# Public list prices per million tokens (standard tier, no caching or batch
# discounts) and input windows, as published by OpenAI; checked 2025-08.
KNOWN_PROFILES: dict[str, ModelProfile] = {
    profile.name: profile
    for profile in (
        ModelProfile("offline", OFFLINE_WINDOW_TOKENS, 0.0, 0.0),
        ModelProfile("gpt-4o-mini", 128_000, 0.15, 0.60),
        ModelProfile("gpt-4o", 128_000, 2.50, 10.00),
        ModelProfile("gpt-4.1", 1_047_576, 2.00, 8.00),
        ModelProfile("gpt-4.1-mini", 1_047_576, 0.40, 1.60),
        ModelProfile("gpt-4.1-nano", 1_047_576, 0.10, 0.40),
        ModelProfile("gpt-5", 272_000, 1.25, 10.00),
        ModelProfile("gpt-5-mini", 272_000, 0.25, 2.00),
        ModelProfile("gpt-5-nano", 272_000, 0.05, 0.40),
    )
}

FALLBACK_PROFILE = replace(KNOWN_PROFILES["gpt-4o-mini"], name="unknown")
"""Used for names not in KNOWN_PROFILES: a 128,000-token window at gpt-4o-mini prices."""


def _bare_name(name: str) -> str:
    """``openai:gpt-4o-mini`` -> ``gpt-4o-mini``; ``offline:4096`` -> ``offline``."""
    provider, _, rest = name.partition(":")
    if provider == "offline":
        return "offline"
    return rest if provider == "openai" and rest else name


def profile_for(name: str) -> ModelProfile:
    """The profile of a model name (``gpt-4o``, ``openai:gpt-4o``, ``offline``, ``offline:4096``).

    ``offline:<window>`` gets the offline profile with that window. A dated
    snapshot (``gpt-4o-mini-2024-07-18``) gets its family's profile. Anything
    else gets FALLBACK_PROFILE and a warning.
    """
    if name.startswith("offline:"):
        window = int(name.partition(":")[2])
        return replace(KNOWN_PROFILES["offline"], max_input_tokens=window)
    bare = _bare_name(name)
    if bare in KNOWN_PROFILES:
        return KNOWN_PROFILES[bare]
    family = _longest_known_prefix(bare)
    if family is not None:
        return replace(KNOWN_PROFILES[family], name=bare)
    warnings.warn(
        f"Unknown model {bare!r}: assuming a {FALLBACK_PROFILE.max_input_tokens:,}-token window "
        f"and gpt-4o-mini prices (known: {', '.join(KNOWN_PROFILES)}).",
        stacklevel=2,
    )
    return replace(FALLBACK_PROFILE, name=bare, encoding=encoding_name_for_model(bare))


def _longest_known_prefix(bare: str) -> str | None:
    """``gpt-4o-mini-2024-07-18`` -> ``gpt-4o-mini`` (a dated snapshot of a known model)."""
    candidates = [known for known in KNOWN_PROFILES if known != "offline" and bare.startswith(known + "-")]
    # Prefer the longest match, but never let a dated gpt-4o snapshot match a longer family wrongly.
    candidates = [known for known in candidates if bare[len(known) + 1 :][:1].isdigit()]
    return max(candidates, key=len) if candidates else None


def budget_for(model_or_profile: Any, budget_tokens: int | None = None) -> int:
    """The managed context budget in tokens.

    An explicit ``budget_tokens`` wins; else a budget recorded by
    ``get_model(..., budget_tokens=N)``; else the model's window (from a
    ModelProfile, a chat model's ``profile["max_input_tokens"]``, or a model
    name looked up with ``profile_for``).
    """
    if budget_tokens is not None:
        return int(budget_tokens)
    if isinstance(model_or_profile, ModelProfile):
        return model_or_profile.max_input_tokens
    if isinstance(model_or_profile, str):
        return profile_for(model_or_profile).max_input_tokens
    metadata = getattr(model_or_profile, "metadata", None) or {}
    if metadata.get(BUDGET_METADATA_KEY):
        return int(metadata[BUDGET_METADATA_KEY])
    chat_profile = getattr(model_or_profile, "profile", None) or {}
    if chat_profile.get("max_input_tokens"):
        return int(chat_profile["max_input_tokens"])
    model_name = getattr(model_or_profile, "model_name", None)
    if model_name:
        return profile_for(str(model_name)).max_input_tokens
    raise TypeError(f"budget_for: cannot tell the window of {type(model_or_profile).__name__}")
