"""Numbers and names with one home: import them, never write the literal again.

- ``DEFAULT_BUDGET_TOKENS``: the context budget the course teaches on (8K tokens). It is the default
  ``budget_tokens`` of every agent version, the offline teaching model's window, the lessons' and the
  demo's budget and the benchmark's window.
- ``ENCODING_NAME``: the tiktoken encoding tokens are counted with unless a model needs another
  (``tokens.encoding_name_for_model``: ``cl100k_base`` for gpt-4 and gpt-3.5).

``tests/test_one_home.py`` fails on a stray copy of either literal in the package and checks every
number the README and the docstrings quote for them.
"""

DEFAULT_BUDGET_TOKENS = 8192
"""The context budget in tokens (the course's small window, where context rot shows within a lesson)."""

ENCODING_NAME = "o200k_base"
"""The tiktoken encoding of the offline model, gpt-4o, gpt-4.1, gpt-5, o1/o3/o4 and unknown models."""
