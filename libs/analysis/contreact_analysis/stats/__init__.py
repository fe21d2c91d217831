"""Statistics across replicas: Table 1 per model with intervals (``table1``), paired
differences between two models with a permutation test (``paired``), per-cycle
trajectories (``trajectories``). The intervals and tests themselves are
``contreact_analysis.intervals`` (scipy: t intervals of means, permutation tests)."""

from contreact_analysis.stats.paired import paired_differences
from contreact_analysis.stats.table1 import finished, table1
from contreact_analysis.stats.trajectories import TRAJECTORY_METRICS, trajectories

__all__ = ["TRAJECTORY_METRICS", "finished", "paired_differences", "table1", "trajectories"]
