"""ContReAct LLM worker: answers ``tasks:llm`` with chat completions and model checks."""
