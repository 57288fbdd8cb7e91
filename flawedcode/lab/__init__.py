"""The context lab: an ipywidgets app to watch an agent's context fill, turn by turn.

- ``window.py``: what the model receives at one call, one segment per message,
  and whether the goal is still in its window (no widgets; the charts use it too);
- ``bar.py``: the context-window bar, drawn with matplotlib;
- ``inputs.py``: the request box and the buttons (an anywidget: each input one numbered
  message, so none is merged or taken out of order, and the page lists those still waiting);
- ``app.py``: ``ContextLab``, the widgets, and the same state as a picture and
  text where no widget front end is available.

``from flawedcode.lab import ContextLab`` (ipywidgets is imported then, not before).
"""

from __future__ import annotations

from typing import Any

__all__ = ["ContextLab", "LabSettings"]


def __getattr__(name: str) -> Any:
    if name in __all__:  # the widgets are imported on first use
        from flawedcode.lab import app

        return getattr(app, name)
    raise AttributeError(f"module 'flawedcode.lab' has no attribute {name!r}")
