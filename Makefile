# One command sets up everything: a fresh clone needs nothing but python3.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: test lint typecheck pytest demo clean

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

demo: $(STAMP)
	$(BIN)/python -m envscope plan --clean-env --launch-home fixtures/demo/launch --managed fixtures/demo/managed.env --bundled fixtures/demo/bundled --home fixtures/demo/profiles/work --surface terminal
	$(BIN)/python -m envscope plan --clean-env --launch-home fixtures/demo/launch --managed fixtures/demo/managed.env --bundled fixtures/demo/bundled --home fixtures/demo/profiles/work --surface credentialed

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .coverage build *.egg-info
