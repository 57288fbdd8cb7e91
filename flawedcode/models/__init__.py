"""Models: one entry point from a spec string to a LangChain chat model, plus model profiles.

- ``get_model(spec=None, *, base_url=None, budget_tokens=None, timeout_seconds=None, window_tokens=None,
  record=None, **kwargs)``: ``offline`` (default), ``offline:<window>``, ``openai:<name>`` or
  ``replay:<file>``; the spec comes from the argument, else ``FLAWEDCODE_MODEL``, else ``offline``.
- ``ModelOptions``: the CLI's ``--model/--timeout/--record/--window``, one way for every command.
- ``profile_for(name)`` / ``ModelProfile``: window and prices per model (None when unknown).
- ``budget_for(model, budget_tokens=None)``: the managed context budget, never above the window.
- ``OfflineModel``: the deterministic offline teaching model (read offline.py's docstring).
- ``ReplayChatModel``, ``Recording``: record a session, replay it offline (read replay.py's docstring).
- ``replies.py``: real servers' malformed replies made whole (tool-call ids, arguments, ``<tool_call>`` text,
  reasoning), and ``reply_notes`` / ``folded_reasoning`` for what a user should know about a reply.
- ``ModelConfigError``, ``explain_model_error(exc)``: one-line errors;
  ``context_overflow_from(exc)``: every provider's "prompt too long", as ``ContextOverflowError``.
"""

from flawedcode.models.errors import (
    ModelConfigError,
    ProviderContextOverflowError,
    context_overflow_from,
    explain_model_error,
)
from flawedcode.models.factory import (
    ACCEPTED_SPECS,
    DEFAULT_TIMEOUT_SECONDS,
    ModelOptions,
    check_reachable,
    get_model,
    learn_window,
    server_info,
    set_window,
)
from flawedcode.models.offline import OfflineModel
from flawedcode.models.profiles import (
    FALLBACK_PROFILE,
    KNOWN_PROFILES,
    ModelProfile,
    budget_for,
    input_window,
    profile_for,
    window_of,
)
from flawedcode.models.replay import Recording, ReplayChatModel, ReplayMismatchError

__all__ = [
    "ACCEPTED_SPECS",
    "DEFAULT_TIMEOUT_SECONDS",
    "FALLBACK_PROFILE",
    "KNOWN_PROFILES",
    "ModelConfigError",
    "ModelOptions",
    "ModelProfile",
    "OfflineModel",
    "ProviderContextOverflowError",
    "Recording",
    "ReplayChatModel",
    "ReplayMismatchError",
    "budget_for",
    "check_reachable",
    "context_overflow_from",
    "explain_model_error",
    "get_model",
    "input_window",
    "learn_window",
    "profile_for",
    "server_info",
    "set_window",
    "window_of",
]
