# unified-kg-rag — developer and user entry points.
#   make demo   index the bundled corpus offline and answer two questions
#   make test   lint, type-check, layer-check and run the test suite
#   make docs   build the documentation site (mkdocs-material)
#   make web    rebuild the web app's bundle (web/ -> src/unified_kg_rag/service/static; commit it)
#
# torch is installed first, pinned, so pip takes the CPU build: a bare `torch` requirement
# pulls a multi-GB CUDA build. On a machine without the CPU wheel on disk, point pip at the
# PyTorch CPU index:  make demo PIP_TORCH_ARGS="--index-url https://download.pytorch.org/whl/cpu"

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV ?= .venv
BIN := $(VENV)/bin
TORCH_SPEC ?= torch==2.13.0
PIP_TORCH_ARGS ?=
DEMO_DIR ?= .demo
DEMO_Q1 ?= What numbers did Ada Lovelace's Note G compute?
DEMO_Q2 ?= Who designed Colossus, and where was it used?

.PHONY: demo test lint docs docs-gen clean bench web web-test

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.torch: | $(BIN)/python
	$(BIN)/pip install --quiet $(PIP_TORCH_ARGS) "$(TORCH_SPEC)"
	@touch $@

$(VENV)/.default: pyproject.toml $(VENV)/.torch
	$(BIN)/pip install --quiet -e ".[default]"
	@touch $@

$(VENV)/.dev: pyproject.toml $(VENV)/.torch
	$(BIN)/pip install --quiet -e ".[dev]"
	@touch $@ $(VENV)/.default

demo: $(VENV)/.default
	rm -rf $(DEMO_DIR)
	$(BIN)/ukr index examples/computing-history --project $(DEMO_DIR)
	@echo
	@echo "Q: $(DEMO_Q1)"
	@$(BIN)/ukr query "$(DEMO_Q1)" --project $(DEMO_DIR)
	@echo
	@echo "Q: $(DEMO_Q2)"
	@$(BIN)/ukr query "$(DEMO_Q2)" --project $(DEMO_DIR)

lint: $(VENV)/.dev
	$(BIN)/ruff check src tests benchmarks scripts
	$(BIN)/mypy src
	$(BIN)/lint-imports

test: lint
	$(BIN)/pytest -q

web:
	cd web && npm ci && npm run build

web-test:
	cd web && npm ci && npm test

docs-gen: $(VENV)/.dev
	$(BIN)/python scripts/gen_docs.py

docs: $(VENV)/.dev
	$(BIN)/mkdocs build --strict

bench: $(VENV)/.default
	$(BIN)/python benchmarks/bench_index_query.py

clean:
	rm -rf $(DEMO_DIR) site .pytest_cache .mypy_cache .ruff_cache .hypothesis .import_linter_cache
