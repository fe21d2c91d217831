# The dashboard: read-only pages and a JSON API over projections of the run logs.
# Build from the repository root: docker build -f deploy/ui.Dockerfile .
# Carries: contreact-events, contreact-bus, contreact-analysis (pandas, scipy, matplotlib:
# the experiment report), contreact-ui (FastAPI, plotly.js). No PyTorch.
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
COPY services/ui/pyproject.toml /src/services/ui/
RUN pip-install deps libs/events libs/bus libs/analysis services/ui
COPY libs/events /src/libs/events
COPY libs/bus /src/libs/bus
COPY libs/analysis /src/libs/analysis
COPY services/ui /src/services/ui
RUN pip-install code libs/events libs/bus libs/analysis services/ui

FROM ${BASE_IMAGE}
RUN useradd --system --uid 10001 --user-group --create-home --home-dir /home/contreact contreact \
 && mkdir -p /data/ui && chown -R contreact:contreact /data
COPY --from=build /opt/venv /opt/venv
COPY --from=build /opt/app /opt/app
ENV PATH=/opt/app/bin:/opt/venv/bin:$PATH PYTHONPATH=/opt/app PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    CONTREACT_DATA_DIR=/data CONTREACT_UI_DB_PATH=/data/ui/ui.db CONTREACT_UI_HOST=0.0.0.0
USER contreact
WORKDIR /home/contreact
EXPOSE 8765
CMD ["contreact-ui"]
