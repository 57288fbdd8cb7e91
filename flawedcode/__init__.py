"""flawedcode: a teaching toolkit for how LLM agents manage their context.

Versioned agents (v0: no memory, v1: unbounded memory, v2: offload +
summarize-with-archive + recovery) around ChartBook-style financial-data tools
and a small coding workspace, with exact token counts, live charts and a
benchmark. Everything runs offline on a deterministic teaching model; set
``FLAWEDCODE_MODEL=openai:gpt-4o-mini`` (and ``OPENAI_API_KEY``) for a real one.
"""

__version__ = "0.1.0"
