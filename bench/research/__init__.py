"""Benchmarks of what researchers read: the analysis frames, the answer parser, the
assessment matrix, the dashboard's pages."""
