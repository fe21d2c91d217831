# The orchestrator: the only writer of run logs (inbox -> decide -> append -> send).
# Build from the repository root: docker build -f deploy/orchestrator.Dockerfile .
# Carries: contreact-events, contreact-bus, contreact-orchestrator. No PyTorch, no model.
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
COPY services/orchestrator/pyproject.toml /src/services/orchestrator/
RUN pip-install deps libs/events libs/bus services/orchestrator
COPY libs/events /src/libs/events
COPY libs/bus /src/libs/bus
COPY services/orchestrator /src/services/orchestrator
RUN pip-install code libs/events libs/bus services/orchestrator

FROM ${BASE_IMAGE}
RUN useradd --system --uid 10001 --user-group --create-home --home-dir /home/contreact contreact \
 && mkdir -p /data/runs && chown -R contreact:contreact /data
COPY --from=build /opt/venv /opt/venv
COPY --from=build /opt/app /opt/app
ENV PATH=/opt/app/bin:/opt/venv/bin:$PATH PYTHONPATH=/opt/app PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 CONTREACT_DATA_DIR=/data
USER contreact
WORKDIR /home/contreact
# The consumer name is the container's host name: unique per replica (--scale), and the
# same after a restart of the container, which then takes its unacked inbox entries back.
# Each replica names itself {hostname}-{pid} (the health check finds its heartbeat by it).
CMD ["contreact-orchestrator"]
