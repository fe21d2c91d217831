# The assessor: rq workers that have evaluator models rate finished runs (through the
# LLM worker: this image calls no model itself).
# Build from the repository root: docker build -f deploy/assessor.Dockerfile .
# Carries: contreact-events, contreact-bus, contreact-assessor (and rq). No PyTorch, no model.
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
COPY services/assessor/pyproject.toml /src/services/assessor/
RUN pip-install deps libs/events libs/bus services/assessor
COPY libs/events /src/libs/events
COPY libs/bus /src/libs/bus
COPY services/assessor /src/services/assessor
RUN pip-install code libs/events libs/bus services/assessor

FROM ${BASE_IMAGE}
RUN useradd --system --uid 10001 --user-group --create-home --home-dir /home/contreact contreact \
 && mkdir -p /data/runs && chown -R contreact:contreact /data
COPY --from=build /opt/venv /opt/venv
COPY --from=build /opt/app /opt/app
ENV PATH=/opt/app/bin:/opt/venv/bin:$PATH PYTHONPATH=/opt/app PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    CONTREACT_DATA_DIR=/data
USER contreact
WORKDIR /home/contreact
CMD ["contreact-assessor"]
