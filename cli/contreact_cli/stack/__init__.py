"""The local stack: the processes `contreact up` starts and supervises, waiting for the
services a command needs, and the models an Ollama host holds."""
