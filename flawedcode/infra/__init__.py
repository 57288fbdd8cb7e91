"""Infrastructure under everything else, out of the lesson's way.

- ``sandbox``: where ``run_python`` runs (what each platform enforces is in its docstring).
- ``safefs``: race-free file access below one folder (``openat2`` with ``RESOLVE_BENEATH``, or a checked walk).
- ``redact``: secrets replaced before anything is written (scratch/, archives/, transcripts).
- ``safe_text``: text that has no UTF-8 form (lone surrogates) made writable and printable.

These modules import nothing from the rest of flawedcode; everything above may import them.
"""
