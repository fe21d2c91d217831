# The tests' Ollama: the project's stand-in (tests/support/fake_ollama.py, the standard library
# only), speaking Ollama's protocol on port 11434 and answering chat requests by itself.
ARG BASE_IMAGE=python:3.11-slim
FROM ${BASE_IMAGE}
RUN useradd --system --uid 10001 --user-group contreact
COPY tests/support/fake_ollama.py /app/fake_ollama.py
USER contreact
EXPOSE 11434
ENTRYPOINT ["python3", "/app/fake_ollama.py", "--bind", "0.0.0.0", "--port", "11434"]
