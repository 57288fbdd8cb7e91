"""Tidy executed notebooks before they are committed (run by ``make notebooks``).

- drop per-cell execution timestamps (they change on every run);
- drop stored widget views and widget state: a saved widget cannot come back to life
  without its kernel (JupyterLab would show "model not found"), so a saved notebook shows
  each widget's static fallback instead (the context lab's picture and text), and running
  the cell shows the live widget again.

    python notebooks/tidy_outputs.py notebooks/*.ipynb notebooks/solutions/*.ipynb
"""

from __future__ import annotations

import sys

import nbformat

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def tidy(path: str) -> None:
    notebook = nbformat.read(path, as_version=4)
    notebook.metadata.pop("widgets", None)
    for cell in notebook.cells:
        cell.metadata.pop("execution", None)
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if WIDGET_VIEW in data and len(data) > 1:
                del data[WIDGET_VIEW]
    nbformat.write(notebook, path)


if __name__ == "__main__":
    for notebook_path in sys.argv[1:]:
        tidy(notebook_path)
