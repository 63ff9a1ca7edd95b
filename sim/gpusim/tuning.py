"""Choose the rebalancer's settings on one part of a trace and judge them on a part they never saw.

Settings picked on the same replay they are judged on only prove they fit that replay. Here the
trace is split by job count (``split_trace``): the first half of the jobs by submit time is the
*tuning* half, the rest the *held-out* half. Splitting by jobs rather than by weeks matters on
Philly: its first weeks hold only a few dozen jobs, so a split by time would tune on almost nothing.

Each half is a scenario of its own, built by ``build_scenario`` with the same config, so the same
capacity rule sizes both: the config's ``capacity_gpus`` if it names one (``--capacity`` overrides
it for both halves), else ``ceil(offered GPUs of that half / target_load)``. Each half is then as
loaded as the whole trace is meant to be; sizing the held-out half with the tuning half's capacity
(or the whole trace's) would judge the settings at another load than the one they were chosen for.
Entitlements likewise follow each half's own demand.

``choose_rebalance`` replays a small seeded grid of rebalancer settings (``candidate_grid``) on the
tuning half and on each of its two quarters (split by jobs again). A candidate's score is its
*smallest* gain in the worst team's entitlement ratio over fixed weights across those three windows;
candidates costing more than ``max_utilization_loss`` of utilization in any window are out. Taking
the worst window rather than the whole half's figure prefers settings that help in every regime of
the tuning data over ones that happen to fit its one long replay. Ties go to the earlier candidate
in grid order (the grid is ordered from the gentlest settings to the most aggressive).
``tune_rebalance`` does all of it and replays fixed weights and the chosen settings on both halves.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from shareplane.domain.config.shares import RebalanceConfig
from shareplane.domain.errors import InvalidInputError

from .trace import TraceJob
from .whatif.config import Policy, RebalanceRun, WhatIfConfig
from .whatif.run import PolicyResult, run_policy
from .whatif.scenario import Scenario, build_scenario

#: The knobs the grid varies, each from gentlest to most aggressive; the rest stay as configured.
GRID: Mapping[str, tuple[float, ...]] = {
    "interval_minutes": (30.0, 10.0),
    "max_step": (0.25, 1.0),
    "cooldown_seconds": (900, 0),
    "deadband": (0.2, 0.05),
    "ledger_nudge": (0.0, 0.5, 0.9),
    "ledger_half_life_seconds": (604800, 86400),
    "slo_boost_factor": (1.0, 1.5),
}
DEFAULT_GRID_SIZE = 16
DEFAULT_MAX_UTILIZATION_LOSS = 0.01


@dataclass(frozen=True)
class TraceSplit:
    """A trace cut by job count: the tuning part and the held-out part, each starting at 0."""

    tuning: tuple[TraceJob, ...]
    held_out: tuple[TraceJob, ...]
    #: Seconds from the trace's first arrival to the held-out part's first arrival.
    split_at: float


def _rebased(jobs: Sequence[TraceJob]) -> tuple[TraceJob, ...]:
    # A scenario's metric window starts at 0, so each part starts there.
    start = jobs[0].submit
    return tuple(replace(j, submit=j.submit - start) for j in jobs)


def split_trace(trace: Sequence[TraceJob], fraction: float = 0.5) -> TraceSplit:
    """The first ``floor(fraction x jobs)`` jobs by submit time, and the rest; each rebased to 0.

    Jobs submitted at the same second keep their trace order (the sort is stable), so the split is
    deterministic for a given trace.
    """
    if not 0 < fraction < 1:
        raise InvalidInputError("--split", f"{fraction!r} is not a fraction in (0, 1)", "use e.g. 0.5")
    ordered = sorted(trace, key=lambda j: j.submit)
    cut = math.floor(len(ordered) * fraction)
    if cut < 1 or cut >= len(ordered):
        raise InvalidInputError(
            "trace", f"{len(ordered)} jobs cannot be split at {fraction:g}", "pass a trace with more jobs"
        )
    return TraceSplit(
        tuning=_rebased(ordered[:cut]),
        held_out=_rebased(ordered[cut:]),
        split_at=ordered[cut].submit - ordered[0].submit,
    )


def can_step_down(max_step: float, deadband: float) -> bool:
    """Whether a weight can step down under these knobs (``RebalanceConfig.can_step_down``).

    On the Philly tuning half, settings that cannot cut the worst team's ratio by about 0.6.
    """
    return RebalanceConfig(max_step=max_step, deadband=deadband).can_step_down


def candidate_grid(base: RebalanceRun, size: int = DEFAULT_GRID_SIZE, seed: int = 0) -> list[RebalanceRun]:
    """``size`` settings drawn (seeded, without repeats) from ``GRID``'s product, in grid order.

    Combinations that cannot step a weight down (``can_step_down``) are left out. Everything the
    grid does not vary (bounds, wait window, quota knobs) is kept from ``base``.
    """
    names = list(GRID)
    combos = [
        combo
        for combo in itertools.product(*GRID.values())
        if can_step_down(combo[names.index("max_step")], combo[names.index("deadband")])
    ]
    if size < 1:
        raise InvalidInputError("--grid", f"{size} is not >= 1", "ask for at least one candidate")
    picked = sorted(random.Random(seed).sample(range(len(combos)), min(size, len(combos))))
    out = []
    for index in picked:
        knobs = dict(zip(GRID, combos[index], strict=True))
        interval = float(knobs.pop("interval_minutes"))
        rules = base.rules.model_validate({**base.rules.model_dump(), **knobs})
        out.append(base.model_validate({**base.model_dump(), "interval_minutes": interval, "rules": rules}))
    return out


def describe(run: RebalanceRun) -> dict[str, Any]:
    """The knobs of a candidate, as config/whatif.yaml spells them."""
    rules = run.rules.model_dump()
    return {"interval_minutes": run.interval_minutes, **{k: rules[k] for k in GRID if k in rules}}


def with_rebalance(scenario: Scenario, run: RebalanceRun) -> Scenario:
    """The same scenario (jobs, capacity, entitlements) with other rebalancer settings."""
    return replace(scenario, config=scenario.config.model_copy(update={"rebalance": run}))


@dataclass(frozen=True)
class WindowScore:
    """One candidate on one tuning window, against fixed weights on the same window."""

    worst: float
    fixed_worst: float
    utilization: float
    fixed_utilization: float

    @property
    def gain(self) -> float:
        """How much the worst team's entitlement ratio rose over fixed weights (negative: fell)."""
        return self.worst - self.fixed_worst

    @property
    def utilization_loss(self) -> float:
        """Utilization given up for it (negative: gained)."""
        return self.fixed_utilization - self.utilization


@dataclass(frozen=True)
class CandidateScore:
    """A candidate's scores on every tuning window; ``score`` is its smallest gain."""

    run: RebalanceRun
    windows: tuple[WindowScore, ...]

    @property
    def score(self) -> float:
        """The smallest gain over the windows: the candidate's worst case."""
        return min(w.gain for w in self.windows)

    def eligible(self, max_utilization_loss: float) -> bool:
        """Whether no window gives up more than ``max_utilization_loss`` of utilization."""
        return all(w.utilization_loss <= max_utilization_loss for w in self.windows)


def select(scores: Sequence[CandidateScore], max_utilization_loss: float) -> CandidateScore | None:
    """The eligible candidate with the largest worst-window gain; on a tie the earlier one; pure."""
    best: CandidateScore | None = None
    for candidate in scores:
        # Strictly greater: on a tie the earlier (gentler) candidate stays.
        if candidate.eligible(max_utilization_loss) and (best is None or candidate.score > best.score):
            best = candidate
    return best


@dataclass(frozen=True)
class Choice:
    """The candidate chosen and how every candidate scored (in grid order)."""

    chosen: CandidateScore | None
    candidates: tuple[CandidateScore, ...]
    max_utilization_loss: float = DEFAULT_MAX_UTILIZATION_LOSS


Progress = Callable[[str], None]


def tuning_windows(tuning: Sequence[TraceJob]) -> list[Sequence[TraceJob]]:
    """The whole tuning part and its two halves by job count (too few jobs: the whole part only)."""
    if len(tuning) < 4:
        return [tuning]
    quarters = split_trace(tuning, 0.5)
    return [tuning, quarters.tuning, quarters.held_out]


def choose_rebalance(
    scenarios: Sequence[Scenario],
    candidates: Sequence[RebalanceRun],
    seed: int = 0,
    max_utilization_loss: float = DEFAULT_MAX_UTILIZATION_LOSS,
    progress: Progress | None = None,
) -> Choice:
    """The eligible candidate with the largest worst-window gain over fixed weights; pure replay."""
    fixed = [run_policy(sc, Policy.FAIRSHARE, seed) for sc in scenarios]
    scored = []
    for n, candidate in enumerate(candidates, start=1):
        windows = []
        for sc, base in zip(scenarios, fixed, strict=True):
            r = run_policy(with_rebalance(sc, candidate), Policy.REBALANCE, seed)
            windows.append(
                WindowScore(
                    r.worst_team_entitlement_ratio,
                    base.worst_team_entitlement_ratio,
                    r.utilization,
                    base.utilization,
                )
            )
        scored.append(CandidateScore(candidate, tuple(windows)))
        if progress is not None:
            progress(f"candidate {n}/{len(candidates)}: worst-window gain {scored[-1].score:+.4f}")
    return Choice(select(scored, max_utilization_loss), tuple(scored), max_utilization_loss)


@dataclass(frozen=True)
class HalfResult:
    """Fixed weights and the chosen rebalancer on one half of the trace."""

    scenario: Scenario
    fixed: PolicyResult
    rebalanced: PolicyResult


@dataclass(frozen=True)
class TuningReport:
    """What ``tune_rebalance`` chose on the tuning half and what it measured on both halves."""

    split: TraceSplit
    choice: Choice
    tuning: HalfResult
    held_out: HalfResult

    @property
    def target_met(self) -> bool:
        """Whether rebalancing kept the held-out half's worst team at least as well off as fixed weights."""
        return (
            self.held_out.rebalanced.worst_team_entitlement_ratio
            >= self.held_out.fixed.worst_team_entitlement_ratio
        )

    def to_json(self) -> dict[str, Any]:
        """Both halves side by side, the chosen settings and every candidate's score."""

        def half(h: HalfResult) -> dict[str, Any]:
            return {
                "jobs": len(h.scenario.jobs),
                "capacity_gpus": h.scenario.capacity_gpus,
                "offered_load": round(h.scenario.offered_load, 4),
                "window_days": round(h.scenario.window / 86400, 2),
                "fairshare": h.fixed.summary(),
                "fairshare+rebalance": h.rebalanced.summary(),
            }

        chosen = self.choice.chosen
        return {
            "chosen": None if chosen is None else describe(chosen.run),
            "target_met": self.target_met,
            "tuning": half(self.tuning),
            "held_out": half(self.held_out),
            "candidates": [
                {
                    **describe(c.run),
                    "score": round(c.score, 6),
                    "eligible": c.eligible(self.choice.max_utilization_loss),
                    "gains": [round(w.gain, 6) for w in c.windows],
                }
                for c in self.choice.candidates
            ],
        }


def _half(trace: Sequence[TraceJob], config: WhatIfConfig, capacity: int | None, seed: int) -> Scenario:
    return build_scenario(trace, config, capacity, seed)


def tune_rebalance(
    trace: Sequence[TraceJob],
    config: WhatIfConfig,
    *,
    fraction: float = 0.5,
    grid_size: int = DEFAULT_GRID_SIZE,
    seed: int = 0,
    capacity_gpus: int | None = None,
    max_utilization_loss: float = DEFAULT_MAX_UTILIZATION_LOSS,
    progress: Progress | None = None,
) -> TuningReport:
    """Split, choose settings on the tuning half, replay fixed weights and the choice on both halves.

    Without an eligible candidate the held-out half replays the config's own settings (reported as
    no choice), so the report still shows what they measure.
    """
    split = split_trace(trace, fraction)
    windows = [_half(w, config, capacity_gpus, seed) for w in tuning_windows(split.tuning)]
    choice = choose_rebalance(
        windows, candidate_grid(config.rebalance, grid_size, seed), seed, max_utilization_loss, progress
    )
    chosen = config.rebalance if choice.chosen is None else choice.chosen.run
    halves = []
    for part in (split.tuning, split.held_out):
        sc = _half(part, config, capacity_gpus, seed)
        halves.append(
            HalfResult(
                sc,
                run_policy(sc, Policy.FAIRSHARE, seed),
                run_policy(with_rebalance(sc, chosen), Policy.REBALANCE, seed),
            )
        )
    return TuningReport(split, choice, halves[0], halves[1])
