"""The context budget a v2 agent manages to: one object, passed to every wrapper that needs it.

- ``tokens``: the budget (what the model may receive: system prompt, tool schemas and messages).
  It starts as the agent's ``budget_tokens`` and only ever goes down, when the model's window turns
  out smaller (a server's overflow error names it, or a server truncates; see ``resilience.py``).
- ``trigger_tokens``: the summary trigger in tokens (the lowest token trigger of the summarization
  config); None when summaries are off or only a message count triggers them.
- ``fixed_tokens``: what every call sends besides the messages (system prompt and tool schemas).
- ``calibration``: what the server's own token counts revealed (``telemetry.ServerCalibration``, made by
  the agent for its log): ``token_factor``, the server's steady count per flawedcode token when above 1
  (the triggers compare the count times it), and ``truncated_window_tokens``, the most a truncating
  server took (the budget is lowered to fit it). A budget made without one knows nothing of the server
  (factor 1, no window).
- ``summaries_paused``: True while a summarizer that failed waits before its next attempt (the back-off
  guard of ``resilience.py`` sets ``summaries_resume_at_call``; the lesson's summary step reads it and waits).

The wrappers read all of this from here. The ``SessionLog`` only records it (``budget_tokens`` and
``trigger_tokens`` for the charts, a ``budget_lowered`` event when it goes down, the calibration's
``calibrate`` and ``truncated`` events); nothing reads it back from the log.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from flawedcode.config import SummarizationConfig
from flawedcode.telemetry import EventKind, ServerCalibration, SessionLog


@dataclass
class ContextBudget:
    """How many tokens the context may hold, and where summaries start."""

    tokens: int
    fixed_tokens: int
    summarization: SummarizationConfig
    log: SessionLog | None = None  # where a change is recorded (never read back)
    calibration: ServerCalibration = field(default_factory=lambda: ServerCalibration(SessionLog()))
    """What the server's counts revealed; the agent passes the one watching its log."""
    summaries_resume_at_call: int = 0
    """No summary is tried before this agent call (``resilience.SummaryBackoffGuard`` moves it after a failure)."""

    def __post_init__(self) -> None:
        self.record()

    @property
    def trigger_tokens(self) -> int | None:
        """The summary trigger in tokens (None when summaries are off or only a message count triggers them)."""
        return self.summarization.trigger_tokens(self.tokens) if self.summarization.enabled else None

    @property
    def summaries_paused(self) -> bool:
        """True while a summarizer that failed waits before its next attempt (the lesson's summary step waits)."""
        return self.log is not None and self.log.agent_call_count < self.summaries_resume_at_call

    @property
    def room_tokens(self) -> int:
        """What a read-back page must fit under: the trigger, else the budget."""
        return self.trigger_tokens or self.tokens

    def lower(self, tokens: int, source: str) -> bool:
        """Manage to ``tokens`` from now on if that is lower; True when the budget changed."""
        if tokens >= self.tokens:
            return False
        if self.log is not None:
            self.log.record_event(EventKind.BUDGET_LOWERED, self.tokens, tokens, source=source)
        self.tokens = tokens
        self.record()
        return True

    def record(self) -> None:
        """Write the budget and the trigger into the log, for the charts and the benchmark."""
        if self.log is not None:
            self.log.budget_tokens = self.tokens
            if self.summarization.enabled:
                self.log.trigger_tokens = self.trigger_tokens
