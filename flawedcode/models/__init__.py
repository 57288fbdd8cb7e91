"""Models: one entry point from a spec string to a LangChain chat model, plus model profiles.

- ``get_model(spec=None, *, base_url=None, budget_tokens=None, **kwargs)``:
  ``offline`` (default), ``offline:<window>`` or ``openai:<name>``; the spec
  comes from the argument, else ``FLAWEDCODE_MODEL``, else ``offline``.
- ``profile_for(name)`` / ``ModelProfile``: window and prices per model.
- ``budget_for(model, budget_tokens=None)``: the managed context budget.
- ``OfflineModel``: the deterministic offline teaching model (read offline.py's docstring).
- ``ModelConfigError`` and ``explain_model_error(exc)``: one-line errors.
"""

from flawedcode.models.errors import ModelConfigError, explain_model_error
from flawedcode.models.factory import ACCEPTED_SPECS, check_reachable, get_model
from flawedcode.models.offline import OfflineModel
from flawedcode.models.profiles import FALLBACK_PROFILE, KNOWN_PROFILES, ModelProfile, budget_for, profile_for

__all__ = [
    "ACCEPTED_SPECS",
    "FALLBACK_PROFILE",
    "KNOWN_PROFILES",
    "ModelConfigError",
    "ModelProfile",
    "OfflineModel",
    "budget_for",
    "check_reachable",
    "explain_model_error",
    "get_model",
    "profile_for",
]
