"""Benchmarks: ``python -m bench.bus_overhead``, ``bench.fold_speed``, ``bench.log.log_growth``.

Each starts what it needs (a private redis-server on a free port, the services as
subprocesses), stops it at the end, and prints ratios against a baseline measured in
the same run, then a PASS/FAIL line against its target. See docs/benchmarks.md.
"""
