"""An experiment file's ``fork`` section as forks to request. Pure.

Each replica of a ``from`` model is forked, once it has ended cycle ``at_cycle``, to
each ``to`` model: the fork runs under the configuration the target model's replica
of the same letter has (its model, options and seed), with the section's
``cycle_count``. That configuration is sent as ``--set`` assignments over the parent's
(the one option syntax of fork, what-if and the composer), and checked here to come
out equal, and honest (``fork_refusal``), before anything runs.
"""

from __future__ import annotations

from dataclasses import dataclass

from contreact_events.config import RunConfig
from contreact_events.config.experiment import ExperimentConfig, PlannedRun, config_sha256
from contreact_events.config.overrides import Assignment, changed_settings, parse_assignments
from contreact_events.exceptions import ConfigError
from contreact_events.history.fork import fork_config, fork_refusal

NOT_SET = frozenset({"run_id", "model_name"})
"""Differences a fork request carries otherwise (its run id, ``--model``)."""


@dataclass(frozen=True)
class PlannedFork:
    """One fork of one replica to one other model."""

    replica: str
    """``{parent replica}-to-{label}``: its name in the experiment's record."""
    parent: PlannedRun
    label: str
    """The target model's label."""
    at_cycle: int
    settings: tuple[str, ...]
    """``key=value`` texts that turn the parent's configuration into the fork's."""
    config: RunConfig
    """The fork's configuration (its run id: of the parent's first attempt)."""

    @property
    def model_name(self) -> str:
        return self.config.model_name

    @property
    def config_sha256(self) -> str:
        return config_sha256(self.config)

    def run_id(self, parent_run_id: str) -> str:
        """The fork's id, from its parent's current attempt's."""
        return f"{parent_run_id}-to-{self.label}"


def planned_forks(
    experiment: ExperimentConfig, planned: list[PlannedRun], *, source: str = "experiment"
) -> list[PlannedFork]:
    """Every fork the section calls for (none without one); ``ConfigError`` names a
    fork that cannot be made or cannot be honest."""
    section = experiment.fork
    if section is None:
        return []
    labels = list(dict.fromkeys(run.label for run in planned))
    for name in (*(section.from_labels or ()), *(section.to or ())):
        if name not in labels:
            raise ConfigError(
                f"{source}: fork names model '{name}', which is not a label of this "
                f"experiment ({', '.join(labels)})"
            )
    by_replica = {(run.label, run.letter): run for run in planned}
    forks = []
    for parent in planned:
        if section.from_labels is not None and parent.label not in section.from_labels:
            continue
        for label in section.to or labels:
            target = by_replica.get((label, parent.letter))
            if label == parent.label or target is None:
                continue
            forks.append(_fork(parent, target, section.at_cycle, section.cycle_count, source))
    return forks


def _fork(
    parent: PlannedRun, target: PlannedRun, at_cycle: int, cycle_count: int, source: str
) -> PlannedFork:
    where = f"{source}: fork of {parent.replica} to {target.label}"
    child_id = f"{parent.config.run_id}-to-{target.label}"
    wanted = target.config.model_copy(update={"run_id": child_id, "cycle_count": cycle_count})
    changes = changed_settings(parent.config, wanted)
    settings = tuple(
        str(Assignment(key, after))
        for key, (_before, after) in changes.items()
        if key not in NOT_SET
    )
    try:
        config = fork_config(
            parent.config, child_id, wanted.model_name, parse_assignments(settings)
        )
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    if config != wanted:
        raise ConfigError(f"{where}: its settings do not carry over as key=value ({settings})")
    refusal = fork_refusal(parent.config, config, at_cycle)
    if refusal is None and parent.config.cycle_count < at_cycle:
        refusal = f"its parent runs {parent.config.cycle_count} cycle(s), fewer than {at_cycle}"
    if refusal is not None:
        raise ConfigError(f"{where}: {refusal}")
    replica = f"{parent.replica}-to-{target.label}"
    return PlannedFork(replica, parent, target.label, at_cycle, settings, config)
