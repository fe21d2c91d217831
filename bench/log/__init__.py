"""Benchmarks of the run log read whole: replay, what-if, forks, its growth, the task codec."""
