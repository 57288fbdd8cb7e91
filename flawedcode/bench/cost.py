"""Before spending money: a cost preview, and a spending limit.

- ``CostPreview``: the calls and tokens the same suite took on the offline model,
  priced with the real model's profile (``flawedcode.models.profile_for``). The
  text says where the prices come from: the list prices in
  ``flawedcode/models/profiles.py`` (or those its server publishes); a model
  without known prices gets no estimate (a cost is never guessed). Cached input is priced at the
  model's cached price, with the prompt-cache model's figures for the offline run
  (``flawedcode.prompt_cache``). A real model makes different calls than
  the offline one (it may answer in fewer steps, or more), so this is an estimate.
- ``break_even_by_scheme``: when compaction pays. Per scheme, the first turn from which an agent's
  cumulative cache-weighted cost (``cache_weighted_by_turn``, summed over its runs of a task) stays at or
  below v1's, which keeps everything and caches it (``prompt_cache.break_even_turn``); ``None``: still
  above at the last turn. ``results.md`` shows it per task.
- ``CostGuard``: ``--max-cost USD``. Before each turn, the estimated cost so far
  (finished runs of this invocation, plus the run in progress) is compared with
  the limit; when it has reached it, ``CostLimitReached`` stops the benchmark.
  The run in progress is not recorded (a rerun with the same command resumes
  there); finished runs stay in runs.jsonl. One turn can overshoot the limit.
  A spend that is not a number (NaN, negative) stops it too; every cost figure
  is checked where it enters (``prompt_cache.token_figure`` / ``price_figure``).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from flawedcode.models import ModelProfile, profile_for
from flawedcode.prompt_cache import break_even_turn

PROFILES_FILE = "flawedcode/models/profiles.py"


@dataclass(frozen=True)
class Pricing:
    """A model's prices and where they come from."""

    profile: ModelProfile
    source: str


def pricing_of(model_spec: str) -> Pricing:
    """The prices ``bench`` uses for a model spec, and a phrase saying where they come from."""
    profile = profile_for(model_spec)
    if not profile.priced:
        return Pricing(profile, f"no known prices: {profile.name} is not listed in {PROFILES_FILE}")
    prices = f"${profile.input_per_million:g} / ${profile.output_per_million:g} per million input / output tokens"
    if profile.cached_input_per_million is not None:
        prices += f", ${profile.cached_input_per_million:g} per million cached input tokens"
    return Pricing(profile, f"the list prices for {profile.name} in {PROFILES_FILE} ({prices})")


@dataclass(frozen=True)
class CostPreview:
    """What the suite took on the offline model, priced for the real one."""

    model_spec: str
    runs: int
    calls: int
    input_tokens: int
    output_tokens: int
    pricing: Pricing
    cached_input_tokens: int = 0
    cache_write_tokens: int = 0

    @property
    def cost_usd(self) -> float | None:
        return self.pricing.profile.cost(self.input_tokens, self.output_tokens, self.cached_input_tokens,
                                         self.cache_write_tokens)

    def text(self) -> str:
        cached = f" ({self.cached_input_tokens:,} of them cacheable)" if self.cached_input_tokens else ""
        took = (f"Cost preview for {self.model_spec}: on the offline model the same suite took {self.runs:,} runs, "
                f"{self.calls:,} model calls, {self.input_tokens:,} input{cached} and {self.output_tokens:,} output tokens.\n")
        if self.cost_usd is None:
            return took + (f"There are {self.pricing.source}, so the cost cannot be estimated: check the provider's "
                           "prices before you go ahead.")
        return (took + f"At {self.pricing.source}, that is about ${self.cost_usd:,.4f}. "
                "A real model makes its own calls, so treat this as an estimate.")


class CostLimitReached(Exception):
    """``--max-cost`` was reached; finished runs are kept and the same command resumes."""

    def __init__(self, spent_usd: float, limit_usd: float) -> None:
        super().__init__(f"stopped: the estimated cost so far (${spent_usd:,.4f}) reached --max-cost ${limit_usd:,.4f}; "
                         "finished runs are kept in runs.jsonl, and the same command resumes where this stopped")
        self.spent_usd = spent_usd
        self.limit_usd = limit_usd
        self.table = ""


class CostGuard:
    """Tracks the estimated spend of one benchmark invocation against ``limit_usd`` (thread-safe)."""

    def __init__(self, limit_usd: float) -> None:
        if not (math.isfinite(limit_usd) and limit_usd > 0):
            raise ValueError(f"--max-cost must be an amount above 0 in US dollars; got {limit_usd!r}")
        self.limit_usd = limit_usd
        self.finished_usd = 0.0
        self._lock = threading.Lock()

    def add_finished(self, cost_usd: float) -> None:
        with self._lock:
            self.finished_usd += cost_usd

    def check(self, running_usd: float = 0.0) -> None:
        """Raise ``CostLimitReached`` when finished runs plus the run in progress have reached the limit."""
        with self._lock:
            spent = self.finished_usd + running_usd
        if not spent >= 0 or spent >= self.limit_usd:  # a spend that is not a number stops (never a free pass)
            raise CostLimitReached(spent, self.limit_usd)


def _summed_turns(records: Sequence[Any], scheme: str) -> list[int]:
    """The runs' cumulative cost by turn under ``scheme``, added turn by turn (runs of one task)."""
    summed: list[int] = []
    for record in records:
        turns = ((record.totals or {}).get("cache_weighted_by_turn") or {}).get(scheme) or []
        summed = [a + b for a, b in zip(summed, turns, strict=False)] if summed else list(turns)
    return summed


def break_even_by_scheme(runs_of: Mapping[str, Sequence[Any]], reference: str = "v1") -> dict[str, dict[str, int | None]]:
    """Per scheme, per agent (not the reference): the turn from which its cumulative cost stays at or below the
    reference's on this task; ``{}`` when the reference did not run or the runs recorded no turn figures."""
    reference_runs = runs_of.get(reference) or []
    schemes = [scheme for scheme in ((reference_runs[0].totals or {}).get("cache_weighted_by_turn") or {})] \
        if reference_runs else []
    found: dict[str, dict[str, int | None]] = {}
    for scheme in schemes:
        base = _summed_turns(reference_runs, scheme)
        found[scheme] = {agent: break_even_turn(_summed_turns(runs, scheme), base)
                         for agent, runs in runs_of.items() if agent != reference and _summed_turns(runs, scheme)}
    return found
