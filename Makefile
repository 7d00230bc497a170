# One command sets up everything: a fresh clone needs nothing but python3.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: test lint typecheck pytest demo bench fuzz clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

lint: $(STAMP)
	$(BIN)/ruff check envscope tests
	$(BIN)/ruff format --check envscope tests

typecheck: $(STAMP)
	$(BIN)/mypy

pytest: $(STAMP)
	$(BIN)/pytest --cov=envscope --cov-branch --cov-report=term

test: lint typecheck pytest

# The demo runs in a minimal, fixed parent env so its output is the same everywhere.
DEMO_ENV := env -i PATH="$(PATH)" HOME=/home/operator LANG=C.UTF-8 ENVSCOPE_FINGERPRINT_KEY=demo-key
DEMO     := $(DEMO_ENV) $(BIN)/envscope --config fixtures/demo/envscope.yaml

demo: $(STAMP)
	@$(DEMO) explain --home work --surface terminal
	@echo
	@$(DEMO) explain --home work --surface credentialed

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .coverage build *.egg-info
