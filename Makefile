# One command to try it, one to test it: `make demo`, `make test`.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PACKAGES := libs/events libs/bus services/orchestrator services/llm-worker services/memory \
  services/embedder cli
PYPROJECTS := $(addsuffix /pyproject.toml,$(PACKAGES))
export CMAKE_BUILD_PARALLEL_LEVEL ?= $(shell nproc 2>/dev/null || echo 2)

.PHONY: install redis demo test check lint schema bench up down clean

$(STAMP): $(PYPROJECTS) requirements-dev.txt
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	@# PyTorch first, pinned: sentence-transformers would otherwise pull the newest build.
	$(BIN)/python -m pip install --quiet torch==2.13.0
	@echo "installing the packages (the first time builds llama-cpp-python: several minutes)"
	$(BIN)/python -m pip install --quiet -r requirements-dev.txt \
	  -e libs/events -e libs/bus -e services/orchestrator -e 'services/llm-worker[embedded]' \
	  -e services/memory -e services/embedder -e cli
	@touch $(STAMP)

install: $(STAMP) redis

# A local Redis for `contreact up` and the tests, unless REDIS_URL points at one.
redis:
	@if [ -n "$$REDIS_URL" ] || command -v redis-server >/dev/null; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  echo "installing redis-server from Debian's packages"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server) >/dev/null; \
	else \
	  echo "redis-server is not installed. Install it (Debian/Ubuntu: sudo apt-get install redis-server;" \
	       "macOS: brew install redis) or set REDIS_URL to a running Redis, then run make again."; \
	  exit 1; \
	fi

demo: install
	$(BIN)/contreact up
	$(BIN)/contreact run configs/sample.yaml
	@echo "the services keep running: \`$(BIN)/contreact down\` stops them"

test: install
	$(BIN)/pytest

check: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy libs services cli tests bench

schema: install
	$(BIN)/python -m contreact_events.schema

bench: install
	$(BIN)/python -m pip install --quiet -r requirements-bench.txt
	$(BIN)/python -m bench.bus_overhead
	$(BIN)/python -m bench.fold_speed
	$(BIN)/python -m bench.log_growth
	$(BIN)/python -m bench.embedder_throughput
	$(BIN)/python -m bench.similarity_search
	$(BIN)/python -m bench.experiment_scaling
	$(BIN)/python -m bench.model_swaps

up: install
	$(BIN)/contreact up

down:
	$(BIN)/contreact down

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
