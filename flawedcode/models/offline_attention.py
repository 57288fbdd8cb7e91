"""Attention decay: the offline model's optional, seeded context rot before the window fills.

With ``OfflineModel(attention_decay=AttentionDecay(seed=7))`` each earlier message of a request is used
with chance p(x, T) = A(T) * (1 - w(T) * (1 - U(x))): lower in a longer request (A, Chroma 2025) and in
its middle (U, Liu et al. 2024), a message not used being as if absent; the system prompt and the current
turn are never decayed, and each draw is a hash, so a request always attends the same messages. The rule,
its calibration points and what it leaves out: docs/offline-model.md, "Attention decay".
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, replace
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from flawedcode.tokens import TokenCounter

FOCUSED_TOKENS, FOCUSED_ACCURACY = 300, 0.873
"""Chroma, "Context Rot" (2025): GPT-4.1 on focused ~300-token LongMemEval prompts."""
FULL_TOKENS, FULL_ACCURACY = 113_000, 0.624
"""The same on the full ~113K-token prompts."""
LIU_TOKENS = 4_000
LIU_FIRST, LIU_MIDDLE, LIU_LAST = 0.76, 0.54, 0.63
"""Liu et al., "Lost in the Middle" (TACL 2024), 20 documents (~4K tokens), GPT-3.5-Turbo."""


def best_position_chance(context_tokens: int) -> float:
    """``A(T)``: the chance of using a fact at the best position, from the context's length."""
    tokens = min(max(context_tokens, FOCUSED_TOKENS), FULL_TOKENS)
    share = math.log(tokens / FOCUSED_TOKENS) / math.log(FULL_TOKENS / FOCUSED_TOKENS)
    return FOCUSED_ACCURACY - (FOCUSED_ACCURACY - FULL_ACCURACY) * share


def position_shape(position: float) -> float:
    """``U(x)``: the parabola through (0, 1), (0.5, 54/76), (1, 63/76)."""
    x = min(max(position, 0.0), 1.0)
    middle, last = LIU_MIDDLE / LIU_FIRST, LIU_LAST / LIU_FIRST
    a = 2 * last - 4 * middle + 2  # a x^2 + b x + 1 through the three points
    b = last - 1 - a
    return a * x * x + b * x + 1


def depth(context_tokens: int) -> float:
    """``w(T)``: 0 for a focused prompt, 1 from about 4,000 tokens."""
    return 0.0 if context_tokens <= FOCUSED_TOKENS else min(1.0, math.log(context_tokens / FOCUSED_TOKENS) / math.log(LIU_TOKENS / FOCUSED_TOKENS))


def attention_chance(position: float, context_tokens: int) -> float:
    """``p(x, T)`` of the module docstring."""
    return best_position_chance(context_tokens) * (1 - depth(context_tokens) * (1 - position_shape(position)))


@dataclass(frozen=True)
class AttentionDecay:
    """The seeded decay rule (module docstring); give it to ``OfflineModel(attention_decay=...)``."""

    seed: int = 0

    def draw(self, text: str, context_tokens: int) -> float:
        digest = hashlib.sha256(f"{self.seed}\x1f{context_tokens}\x1f{text}".encode("utf-8", "surrogatepass")).digest()
        return int.from_bytes(digest[:8], "big") / 2**64

    def attended(self, visible: list[BaseMessage], context_tokens: int, counter: TokenCounter) -> list[BaseMessage]:
        """The messages used: everything from the latest user request on, and earlier ones that win their draw."""
        latest = max((i for i, m in enumerate(visible) if isinstance(m, HumanMessage)), default=len(visible))
        earlier = visible[:latest]
        sizes = [counter.count_message(message) for message in earlier]
        total = max(1, sum(sizes))
        kept: list[BaseMessage] = []
        dropped_calls: set[str] = set()
        offset = 0
        for message, size in zip(earlier, sizes):
            position = (offset + size / 2) / total
            offset += size
            if isinstance(message, ToolMessage) and message.tool_call_id in dropped_calls:
                continue  # a result whose call was not attended says nothing
            if self.draw(message.text, context_tokens) < attention_chance(position, context_tokens):
                kept.append(message)
            elif isinstance(message, AIMessage):
                dropped_calls.update(call.get("id") or "" for call in message.tool_calls)
        return kept + list(visible[latest:])


def decay_window(decay: AttentionDecay | None, window: Any, counter: TokenCounter) -> Any:
    """The window (``offline.Window``) as the model attends it; unchanged when ``decay`` is None."""
    if decay is None or len(attended := decay.attended(list(window.visible), window.input_tokens, counter)) == len(window.visible):
        return window
    return replace(window, visible=attended, truncated=True)
