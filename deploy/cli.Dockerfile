# The contreact command, for `docker compose run --rm cli ...` on the stack's network.
# Build from the repository root: docker build -f deploy/cli.Dockerfile .
# Carries: contreact-events, contreact-bus (with rq, for assess), contreact-memory
# (memory-rebuild), contreact-analysis (analyze, report: pandas, pyarrow,
# scipy, matplotlib), the CLI and the ollama client (models pull). No PyTorch, no model,
# none of the services.
ARG BASE_IMAGE=python:3.11-slim
ARG WHEELS_IMAGE=no-wheels

# Wheels to install from (the tests' offline wheelhouse); by default none: PyPI.
FROM ${BASE_IMAGE} AS no-wheels
RUN mkdir /wheels
FROM ${WHEELS_IMAGE} AS wheels

FROM ${BASE_IMAGE} AS build
ARG PIP_INSTALL_ARGS=""
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_INSTALL_ARGS=${PIP_INSTALL_ARGS}
COPY --from=wheels /wheels /wheels
COPY deploy/pip-install.sh /usr/local/bin/pip-install
RUN python3 -m venv /opt/venv
COPY libs/events/pyproject.toml /src/libs/events/
COPY libs/bus/pyproject.toml /src/libs/bus/
COPY libs/analysis/pyproject.toml /src/libs/analysis/
COPY services/memory/pyproject.toml /src/services/memory/
COPY cli/pyproject.toml /src/cli/
RUN pip-install deps libs/events libs/bus[rq] libs/analysis services/memory cli
COPY libs/events /src/libs/events
COPY libs/bus /src/libs/bus
COPY libs/analysis /src/libs/analysis
COPY services/memory /src/services/memory
COPY cli /src/cli
RUN pip-install code libs/events libs/bus libs/analysis services/memory cli

FROM ${BASE_IMAGE}
RUN useradd --system --uid 10001 --user-group --create-home --home-dir /home/contreact contreact \
 && mkdir -p /data/runs /data/memory && chown -R contreact:contreact /data
COPY --from=build /opt/venv /opt/venv
COPY --from=build /opt/app /opt/app
ENV PATH=/opt/app/bin:/opt/venv/bin:$PATH PYTHONPATH=/opt/app PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    CONTREACT_DATA_DIR=/data CONTREACT_MEMORY_DB_PATH=/data/memory/memory.db
USER contreact
WORKDIR /home/contreact
ENTRYPOINT ["contreact"]
CMD ["--help"]
