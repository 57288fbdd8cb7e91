# README's two commands, and a few more. Everything installs into ./.venv from this
# project's own files (pyproject.toml); nothing here reaches beyond the package registry.
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin
PYTEST_ARGS ?=
# What flawedcode supports (pyproject.toml's requires-python), as a check any Python can run.
PYTHON_OK = import sys; sys.exit(sys.version_info < (3, 11))
REMAKE_HINT = make $(or $(MAKECMDGOALS),demo) PYTHON=python3.12

.PHONY: demo test check check-browser chromium update-snapshots lint install install-test venv bench bench-readme lab notebooks benchmarks clean

# .venv, made by a Python flawedcode supports. One made by an older Python is made again with $(PYTHON)
# when that one is new enough; otherwise one line says which Python to name.
venv:
	@if [ -e $(BIN)/python ] && ! $(BIN)/python -c '$(PYTHON_OK)' 2>/dev/null; then \
		if $(PYTHON) -c '$(PYTHON_OK)' 2>/dev/null; then \
			echo "$(VENV) was made by $$($(BIN)/python -V 2>&1 || echo 'a Python that no longer runs'); flawedcode needs 3.11+: making it again with $(PYTHON)"; \
			rm -rf $(VENV); \
		else \
			echo "error: $(VENV) was made by $$($(BIN)/python -V 2>&1 || echo 'a Python that no longer runs') and $(PYTHON) is $$($(PYTHON) -V 2>&1); flawedcode needs Python 3.11 or newer. Try: $(REMAKE_HINT)" >&2; \
			exit 1; \
		fi; \
	fi
	@if [ ! -e $(BIN)/python ]; then \
		$(PYTHON) -c '$(PYTHON_OK)' 2>/dev/null || { echo "error: flawedcode needs Python 3.11 or newer; $(PYTHON) is $$($(PYTHON) -V 2>&1). Try: make $(or $(MAKECMDGOALS),demo) PYTHON=python3.12" >&2; exit 1; }; \
		$(PYTHON) -m venv $(VENV) && $(BIN)/python -m pip install --quiet --upgrade pip > $(VENV)/install.log 2>&1 \
			|| { cat $(VENV)/install.log >&2; exit 1; }; \
	fi

# Each install runs again only when pyproject.toml or setup.py changed (a stamp file in .venv). pip's own
# output (and setuptools' notice about editable installs) goes to .venv/install.log, shown if the install fails.
INSTALL = @echo "installing flawedcode into $(VENV) (first run takes a few minutes; log: $(VENV)/install.log)"; \
	$(BIN)/python -m pip install --disable-pip-version-check -e
INSTALL_LOGGED = > $(VENV)/install.log 2>&1 || { tail -n 30 $(VENV)/install.log; echo "error: the install failed; full log: $(VENV)/install.log" >&2; exit 1; }

$(VENV)/.installed: pyproject.toml setup.py | venv
	$(INSTALL) . $(INSTALL_LOGGED)
	@touch $@

$(VENV)/.installed-test: pyproject.toml setup.py | venv
	$(INSTALL) '.[test,notebooks,peers]' $(INSTALL_LOGGED)
	@touch $@ $(VENV)/.installed

# A .venv that `venv` will make again holds stamps that no longer mean anything: install regardless.
ifneq ($(shell [ -e $(BIN)/python ] && ! $(BIN)/python -c '$(PYTHON_OK)' 2>/dev/null && echo stale),)
.PHONY: $(VENV)/.installed $(VENV)/.installed-test
endif

install: $(VENV)/.installed

install-test: $(VENV)/.installed-test

# 1. The main job, offline: the lesson's session through v1 and v2, a token table and a chart.
demo: install
	$(BIN)/flawedcode demo --out results/demo

# 2. Every test: unit, behaviour, end-to-end (the `slow` ones too), and the notebooks under nbval (after the linter).
# pytest-xdist runs them on every core; --dist loadfile keeps each file in one worker, so a notebook's cells run
# in order in one kernel (pytest 9 ignores xdist_group marks, so loadgroup cannot do it). TEST_WORKERS=0 runs serially.
TEST_WORKERS ?= auto
test: install-test
	$(BIN)/ruff check flawedcode tests data
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadfile $(PYTEST_ARGS) tests notebooks --nbval --nbval-current-env --nbval-sanitize-with tests/nbval_sanitize.cfg

# The quick tests, while you change code: the unit tests, on every core (TEST_WORKERS), without the notebooks,
# the end-to-end runs (README's commands, installs, benchmarks, real-model imitations, recordings, attacks, the
# REPL in a subprocess, server imitations, the sandbox's limits, every built-in task) and the tests marked slow.
# `make test` runs everything.
CHECK_SKIP = $(addprefix --ignore=tests/,test_notebooks.py test_readme.py test_install.py test_scale.py test_bench.py \
	test_bench_agents.py test_bench_peers.py test_bench_field_peers.py test_real_models.py test_recording.py test_replay.py \
	test_robustness.py test_attacks.py test_hardening.py test_cli.py test_models_offline_corpus.py test_models_offline_heldout.py test_context_properties.py \
	test_server_quirks.py test_budget_guard.py test_isolation.py test_v3.py test_bench_cost.py test_import_effects.py)
check: install-test
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) -m "not slow" $(CHECK_SKIP) $(PYTEST_ARGS) tests

# The context lab in a real browser (tests/test_lab_browser.py, one to three minutes): JupyterLab in headless Chromium,
# driven by playwright (the browser extra: PyPI's playwright, whose driver ships in its wheel; no browser is downloaded),
# clicks, types and checks that every input was acted on. Chromium comes from the system: FLAWEDCODE_CHROMIUM=/path, else
# `chromium` on PATH, else, as root on Debian or Ubuntu, `apt-get install -y chromium` here (elsewhere a line says what
# to install). FLAWEDCODE_BROWSER_SHOTS=DIR keeps its screenshots of the lab (1280 px with the file browser open; the
# queue of inputs waiting under the buttons).
$(VENV)/.installed-browser: pyproject.toml setup.py | venv
	$(INSTALL) '.[test,notebooks,peers,browser]' $(INSTALL_LOGGED)
	@touch $@ $(VENV)/.installed-test $(VENV)/.installed

chromium:
	@if [ -n "$${FLAWEDCODE_CHROMIUM:-}" ]; then \
		[ -x "$$FLAWEDCODE_CHROMIUM" ] || { echo "error: FLAWEDCODE_CHROMIUM=$$FLAWEDCODE_CHROMIUM is not a program" >&2; exit 1; }; \
	elif ! command -v chromium >/dev/null; then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
			echo "installing Chromium (Debian's chromium package; log: $(VENV)/chromium.log)"; \
			{ apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium; } > $(VENV)/chromium.log 2>&1 \
				|| { tail -n 20 $(VENV)/chromium.log; echo "error: apt-get could not install chromium" >&2; exit 1; }; \
		else \
			echo "error: no Chromium: install it (Debian/Ubuntu: sudo apt-get install -y chromium) or set FLAWEDCODE_CHROMIUM=/path/to/chromium" >&2; \
			exit 1; \
		fi; \
	fi

check-browser: $(VENV)/.installed-browser chromium
	FLAWEDCODE_BROWSER_TEST=1 $(BIN)/python -m pytest -q -n 0 -p no:cacheprovider tests/test_lab_browser.py

# Store what each agent version sends besides the conversation (system prompt, tool schemas) as the golden
# snapshots tests/test_v2_equivalence.py compares against: run it after a change you mean, and commit tests/snapshots/.
update-snapshots: install-test
	UPDATE_SNAPSHOTS=1 $(BIN)/python -m pytest -q tests/test_v2_equivalence.py -k snapshot

# The linter (settings in pyproject.toml): pyflakes, pycodestyle, import order, pyupgrade, bugbear.
lint: install-test
	$(BIN)/ruff check flawedcode tests data

BENCH_AGENTS ?= v1,v2,v3,lc-summarization,lc-summarization-tuned,lc-context-editing,lc-context-editing-tuned,deepagents,swe-agent-last-5,swe-agent-last-5-polling-5,anthropic-clear-tool-uses,openhands-condenser,codex-compaction,jetbrains-hybrid,anthropic-context-awareness,codex-context-windows

# The benchmark, offline (deepagents needs the peers extra: `make install-test`; without it, a note says it was skipped).
bench: install
	$(BIN)/flawedcode bench --agents $(BENCH_AGENTS) --runs 3 --out results/bench

# The same, then the benchmark table of docs/benchmark.md (README links to it) replaced by its headline table.
bench-readme: install-test
	$(BIN)/flawedcode bench --agents $(BENCH_AGENTS) --runs 3 --out results/bench
	$(BIN)/python -m flawedcode.bench.readme results/bench docs/benchmark.md

# Re-run the lessons and their solutions and store their outputs (nbval compares them); tidy_outputs.py
# drops per-cell timestamps and stored widget views (a saved notebook shows the lab's picture instead).
NOTEBOOKS = notebooks/*.ipynb notebooks/solutions/*.ipynb notebooks/instructors/*.ipynb
notebooks: install-test
	for notebook in $(NOTEBOOKS); do env -u FLAWEDCODE_MODEL $(BIN)/jupyter nbconvert --to notebook --execute --inplace \
		--ExecutePreprocessor.store_widget_state=False "$$notebook" || exit 1; done
	$(BIN)/python notebooks/tidy_outputs.py $(NOTEBOOKS)

# Performance figures (printed, not asserted: machines here are shared and noisy).
benchmarks: install-test
	$(BIN)/python tests/benchmarks/bench_import.py
	$(BIN)/python tests/benchmarks/bench_tokens.py
	$(BIN)/python tests/benchmarks/bench_context.py
	$(BIN)/python tests/benchmarks/bench_workload_b.py
	$(BIN)/python tests/benchmarks/bench_caching.py --budgets 8192 --workloads workload_b
	$(BIN)/python tests/benchmarks/bench_charts.py
	$(BIN)/python tests/benchmarks/bench_real_models.py
	$(BIN)/python tests/benchmarks/bench_scale.py

# JupyterLab on the lessons. As root (CI, many containers) Jupyter needs --allow-root; LAB_ARGS adds more
# (e.g. LAB_ARGS="--ip=0.0.0.0 --no-browser" inside a container).
LAB_ARGS ?=
lab: install-test
	$(BIN)/jupyter lab $(if $(filter 0,$(shell id -u)),--allow-root) $(LAB_ARGS) notebooks/

clean:
	rm -rf scratch/*.txt archives/*/ results/ .pytest_cache
