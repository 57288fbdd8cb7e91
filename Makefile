# README's two commands, and a few more. Everything installs into ./.venv from this
# project's own files (pyproject.toml); nothing here reaches beyond the package registry.
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin
PYTEST_ARGS ?=

.PHONY: demo test update-snapshots lint install install-test bench bench-readme lab notebooks benchmarks clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

install: $(BIN)/python
	$(BIN)/pip install --quiet -e .

install-test: $(BIN)/python
	$(BIN)/pip install --quiet -e '.[test,notebooks,peers]'

# 1. The main job, offline: the lesson's session through v1 and v2, a token table and a chart.
demo: install
	$(BIN)/flawedcode demo --out results/demo

# 2. Every test: unit, behaviour, end-to-end, and the notebooks under nbval (after the linter).
test: install-test
	$(BIN)/ruff check flawedcode tests data
	$(BIN)/python -m pytest $(PYTEST_ARGS) tests notebooks --nbval --nbval-current-env --nbval-sanitize-with tests/nbval_sanitize.cfg

# Store what each agent version sends besides the conversation (system prompt, tool schemas) as the golden
# snapshots tests/test_v2_equivalence.py compares against: run it after a change you mean, and commit tests/snapshots/.
update-snapshots: install-test
	UPDATE_SNAPSHOTS=1 $(BIN)/python -m pytest -q tests/test_v2_equivalence.py -k snapshot

# The linter (settings in pyproject.toml): pyflakes, pycodestyle, import order, pyupgrade, bugbear.
lint: install-test
	$(BIN)/ruff check flawedcode tests data

BENCH_AGENTS ?= v1,v2,lc-summarization,lc-summarization-tuned,lc-context-editing,lc-context-editing-tuned,deepagents

# The benchmark, offline (deepagents needs the peers extra: `make install-test`; without it, a note says it was skipped).
bench: install
	$(BIN)/flawedcode bench --agents $(BENCH_AGENTS) --runs 3 --out results/bench

# The same, then README's benchmark table replaced by its headline table (one command).
bench-readme: install-test
	$(BIN)/flawedcode bench --agents $(BENCH_AGENTS) --runs 3 --out results/bench
	$(BIN)/python -m flawedcode.bench.readme results/bench README.md

# Re-run the lessons and their solutions and store their outputs (nbval compares them); tidy_outputs.py
# drops per-cell timestamps and stored widget views (a saved notebook shows the lab's picture instead).
NOTEBOOKS = notebooks/*.ipynb notebooks/solutions/*.ipynb notebooks/instructors/*.ipynb
notebooks: install-test
	for notebook in $(NOTEBOOKS); do env -u FLAWEDCODE_MODEL $(BIN)/jupyter nbconvert --to notebook --execute --inplace \
		--ExecutePreprocessor.store_widget_state=False "$$notebook" || exit 1; done
	$(BIN)/python notebooks/tidy_outputs.py $(NOTEBOOKS)

# Performance figures (printed, not asserted: machines here are shared and noisy).
benchmarks: install-test
	$(BIN)/python tests/benchmarks/bench_tokens.py
	$(BIN)/python tests/benchmarks/bench_context.py
	$(BIN)/python tests/benchmarks/bench_workload_b.py
	$(BIN)/python tests/benchmarks/bench_real_models.py
	$(BIN)/python tests/benchmarks/bench_scale.py

# JupyterLab on the lessons. As root (CI, many containers) Jupyter needs --allow-root; LAB_ARGS adds more
# (e.g. LAB_ARGS="--ip=0.0.0.0 --no-browser" inside a container).
LAB_ARGS ?=
lab: install-test
	$(BIN)/jupyter lab $(if $(filter 0,$(shell id -u)),--allow-root) $(LAB_ARGS) notebooks/

clean:
	rm -rf scratch/*.txt archives/*/ results/ .pytest_cache
