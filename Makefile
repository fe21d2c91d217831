# One command to try it, one to test it: `make demo`, `make test`.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PACKAGES := libs/events libs/bus libs/analysis services/orchestrator services/llm-worker services/memory \
  services/embedder services/ui services/assessor cli
PYPROJECTS := $(addsuffix /pyproject.toml,$(PACKAGES))
export CMAKE_BUILD_PARALLEL_LEVEL ?= $(shell nproc 2>/dev/null || echo 2)

.PHONY: install redis chromium otel-receiver demo test check lint schema bench up down clean lock images-early \
  docker-engine docker-images docker-test bench-docker bench-smoke docs

$(STAMP): $(PYPROJECTS) requirements-dev.txt constraints.txt deploy/llama-wheel.sh
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	@# PyTorch first, pinned: sentence-transformers would otherwise pull the newest build.
	$(BIN)/python -m pip install --quiet -c constraints.txt torch==2.13.0
	@# llama.cpp for the embedded model: a portable build, made once per machine (see the script).
	$(BIN)/python -m pip install --quiet -c constraints.txt --no-deps --no-index --force-reinstall \
	  --find-links "$$(bash deploy/llama-wheel.sh $(BIN)/python)" llama-cpp-python
	@echo "installing the packages"
	$(BIN)/python -m pip install --quiet -c constraints.txt -r requirements-dev.txt \
	  -e libs/events -e 'libs/bus[otel]' -e libs/analysis -e services/orchestrator -e 'services/llm-worker[embedded]' \
	  -e services/memory -e services/embedder -e services/ui -e services/assessor -e 'cli[inspect]'
	@# The embedder's onnx runtime: export the model now (offline), not at its first start.
	$(BIN)/contreact-embedder --prepare
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

# Debian's Chromium for the browser tests (Playwright drives it; its own browser
# download cannot work without the internet). CHROMIUM overrides the path.
CHROMIUM ?= /usr/bin/chromium
chromium:
	@if [ -x "$(CHROMIUM)" ]; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  echo "installing chromium from Debian's packages (for the browser tests)"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) >/dev/null; \
	else \
	  echo "chromium is not installed. Install it (Debian/Ubuntu: sudo apt-get install chromium)" \
	       "or set CHROMIUM to a Chromium binary, then run make again."; \
	  exit 1; \
	fi

# Phoenix (`phoenix serve`), the OTLP receiver the trace tests read back, in a venv of
# its own: build/otel-receiver-venv (docs/how-to/traces.md).
otel-receiver:
	@bash deploy/otel-receiver.sh $(PYTHON)

demo: install
	$(BIN)/contreact up
	$(BIN)/contreact run configs/sample.yaml
	@echo "the services keep running: \`$(BIN)/contreact down\` stops them"

# What CI runs (.ci/run): the static checks, then the whole test suite.
# The suite in parallel, one test file per worker at a time (files that share a stack
# keep their order); TEST_WORKERS=0 runs it in one process. The files in the order the
# suite's conftest gives them (the ones that take minutes first), not xdist's own
# (most tests first: the few-test e2e files came last and ran alone at the end).
# Two workers per core: much of an e2e file is waiting (a 150-second LLM call, services
# starting, Docker), and with two workers a core the machine was busy 92% of the suite
# (docs/explanation/test-suite.md).
TEST_WORKERS ?= $(shell echo $$(( 2 * $$(nproc 2>/dev/null || echo 2) )))
test: images-early check chromium otel-receiver
	CONTREACT_CHROMIUM=$(CHROMIUM) $(BIN)/pytest -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder

# The docker test's images, built cold, take one core for about ten minutes: started at
# once in the background (a Python 3.11 and the standard library suffice), they build
# beside the install and the first tests, and the docker test's fixture waits for them
# (a lock) instead of starting its own build then. Their log: build/images-early.log.
images-early:
	@mkdir -p build; \
	if python3 -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' 2>/dev/null; then \
	  echo "building the docker test's images in the background (build/images-early.log)"; \
	  nohup python3 -m tests.support.compose_stack >build/images-early.log 2>&1 & \
	fi

check: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy libs services cli tests bench

# Pin what is installed now (after the tests passed with it) for every later install.
lock: install
	@{ sed -n '1,/^# own packages/p' constraints.txt; \
	   $(BIN)/python -m pip freeze --exclude-editable | grep -v '^#' \
	   | sed 's/^torch==2.13.0+cpu$$/torch==2.13.0/' | sort -f; } > constraints.txt.new
	mv constraints.txt.new constraints.txt

# The documentation site (mkdocs.yml): the generated pages rewritten from the code, then
# the site built into site/, a broken link or anchor failing it (--strict).
docs: install
	$(BIN)/python -m tools.docs_gen
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

schema: install
	$(BIN)/python -m contreact_events.wire.schema
	$(BIN)/python -m contreact_ui.schema

# BENCH_ARGS=--record appends every figure to bench/results.jsonl (docs/benchmarks.md is
# generated from it: `make docs`).
BENCH_ARGS ?=
bench: install
	$(BIN)/python -m pip install --quiet -c constraints.txt -r requirements-bench.txt
	$(BIN)/python -m bench.bus_overhead $(BENCH_ARGS)
	$(BIN)/python -m bench.fold_speed $(BENCH_ARGS)
	$(BIN)/python -m bench.log.replay_speed $(BENCH_ARGS)
	$(BIN)/python -m bench.log.what_if_speed $(BENCH_ARGS)
	$(BIN)/python -m bench.log.log_growth $(BENCH_ARGS)
	$(BIN)/python -m bench.services.embedder_throughput $(BENCH_ARGS)
	$(BIN)/python -m bench.services.similarity_search $(BENCH_ARGS)
	$(BIN)/python -m bench.services.orchestrator_scaleout $(BENCH_ARGS)
	$(BIN)/python -m bench.services.recovery $(BENCH_ARGS)
	$(BIN)/python -m bench.services.redis_memory $(BENCH_ARGS)
	$(BIN)/python -m bench.research.ui_speed $(BENCH_ARGS)
	$(BIN)/python -m bench.services.experiment_scaling $(BENCH_ARGS)
	$(BIN)/python -m bench.services.model_swaps $(BENCH_ARGS)
	$(BIN)/python -m bench.research.analysis_speed $(BENCH_ARGS)
	$(BIN)/python -m bench.services.trace_overhead $(BENCH_ARGS)

up: install
	$(BIN)/contreact up

# The docker e2e tests' needs (`make test` runs them too; see the README): an engine
# and Compose (installed from Debian's packages and started as root when missing; it
# prints the DOCKER_HOST to use), and the images built offline, cached by content.
docker-engine:
	@deploy/engine.sh

docker-images: install
	$(BIN)/python -c 'import os; from tests.support.compose_stack import *; \
	  env = {**os.environ, "DOCKER_HOST": ensure_engine()}; print(prepare_images(env))'

docker-test: install
	$(BIN)/pytest -m docker

bench-docker: install
	$(BIN)/python -m bench.services.compose_stack

# Every benchmark at its tiny smoke size (what `make test` runs too): do they still run?
bench-smoke: install
	$(BIN)/pytest tests/integration/test_bench_smoke.py

down:
	$(BIN)/contreact down

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
