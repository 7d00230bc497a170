# One command sets up everything: a fresh clone needs nothing but python3.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: test lint typecheck pytest coverage demo bench fuzz fuzz-atheris clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# --no-compile: pip byte-compiles every installed file (about 10 CPU s); the few
# modules a run imports compile on first import instead (well under a second).
$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet --no-compile --disable-pip-version-check -e '.[dev]'
	touch $(STAMP)

lint: $(STAMP)
	$(BIN)/ruff check envscope tests fuzz benchmarks
	$(BIN)/ruff format --check envscope tests fuzz benchmarks

typecheck: $(STAMP)
	$(BIN)/mypy

# The tests run on every core (pytest-xdist; worksteal: an idle worker takes queued
# tests from a busy one, so a slow file at the end does not leave a core idle). Python
# may write its bytecode cache for the run (env -u PYTHONDONTWRITEBYTECODE): else every
# worker and every test subprocess compiles pytest, hypothesis, pydantic and the SDK again.
PYTEST := env -u PYTHONDONTWRITEBYTECODE $(BIN)/pytest -n auto --dist worksteal

pytest: $(STAMP)
	$(PYTEST)

# The same suite under coverage, with the 90% gate (pyproject.toml): about twice the
# CPU of `make pytest` on Python 3.11, so it is CI's second step (.ci/run), not part of
# `make test`. Coverage starts before pytest: the envscope.testing plugin (an entry
# point) imports the package while pytest starts, before a pytest plugin could measure
# it. Its subprocess patch measures each worker, and `combine` joins their data. The
# stress suites (Hypothesis, the soak, the races) run with coverage paused
# (tests/conftest.py).
coverage: $(STAMP)
	rm -f .coverage .coverage.*
	env -u PYTHONDONTWRITEBYTECODE $(BIN)/coverage run -m pytest -n auto --dist worksteal
	$(BIN)/coverage combine --quiet
	$(BIN)/coverage report

# mypy runs beside pytest (one core's work while the test workers wait on their
# subprocesses and files): about 7 s off a fresh clone's make test on 2 cores.
test: lint
	$(MAKE) --no-print-directory -j2 typecheck pytest

# The demo runs in a minimal, fixed parent env so its output is the same everywhere.
DEMO_ENV := env -i PATH="$(PATH)" HOME=/home/operator LANG=C.UTF-8 ENVSCOPE_FINGERPRINT_KEY=demo-key-for-the-docs
DEMO     := $(DEMO_ENV) $(BIN)/envscope --config fixtures/demo/envscope.yaml

# The demo needs envscope and its four runtime dependencies, not the dev toolchain.
DEMO_STAMP := $(VENV)/.installed-demo

$(DEMO_STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e .
	touch $(DEMO_STAMP)

demo: $(DEMO_STAMP)
	@$(DEMO) explain --home work --surface terminal
	@echo
	@$(DEMO) explain --home work --surface credentialed

# Timing goals live here, never in unit tests (docs/performance.md).
bench: $(STAMP)
	$(BIN)/python -m benchmarks.run

# The long fuzz runs: the property tests at 20,000 examples each (CI runs 100, and 60
# histories of each stateful machine) and the concurrency soak at 16 threads x 2,000 builds
# (CI runs 8 x 150).
fuzz: $(STAMP)
	HYPOTHESIS_PROFILE=fuzz $(BIN)/pytest -p no:cacheprovider -m property tests/property
	ENVSCOPE_SOAK_THREADS=16 ENVSCOPE_SOAK_BUILDS=2000 $(BIN)/pytest -p no:cacheprovider tests/test_soak.py

fuzz-atheris: $(STAMP)
	$(BIN)/python -m pip install --quiet atheris
	mkdir -p .fuzz/dotenv .fuzz/manifest
	$(BIN)/python fuzz/atheris_dotenv.py -timeout=1 -max_total_time=300 .fuzz/dotenv fixtures/dotenv
	$(BIN)/python fuzz/atheris_manifest.py -timeout=1 -max_total_time=300 .fuzz/manifest fixtures/manifests/good fixtures/manifests/bad

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .coverage build *.egg-info
