"""Diversity and search, pure: seed 000's similarity monitor, seed 001's paragraph
repetition check and its corpus, seed 004's memory projection, and the exact vector index
they share."""
