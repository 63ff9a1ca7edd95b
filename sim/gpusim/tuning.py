"""Choose the rebalancer's design and settings on one part of a trace and judge them on a part they never saw.

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

Everything runs on the layout that ships: the team x tier identifiers with the tier charge and
reclaim. The baseline is that layout with fixed weights (``fairshare+reclaim``); a candidate is the
same with the rebalancer moving the team weights (``fairshare+reclaim+rebalance``). ``candidate_grid``
draws a seeded sample of settings for each design (``GRIDS``: ``demand_targets``, the ledger-nudged
max-min targets; ``credits``, Karma's credits mapped onto weights; ``owed_credits``, the same weights
over credits earned only while a team waited), and ``choose_rebalance`` replays
each on the tuning half and on each of its two quarters (split by jobs again). In a window a
candidate *gains* the smaller of its relative improvement in the worst team's entitlement ratio and
in the disparity (largest team ratio over the smallest); its score is its smallest gain over the
three windows. A candidate is out if, in any window, it costs more than ``max_utilization_loss`` of
utilization or lets HIGHPRI slip (``WindowScore.highpri_kept``). Taking the worst window rather than
the whole half's figure prefers settings that help in every regime of the tuning data over ones that
fit its one long replay. Ties go to the earlier candidate in grid order (each design's grid runs from
the gentlest settings to the most aggressive).

``tune_rebalance`` does all of it, replays the baseline and each design's best candidate on both
halves and on the held-out half under more seeds, and says which mode the measurements support:
``apply`` only if the chosen candidate gained in every tuning window and is at least as fair as the
baseline on the held-out half on both measures, with utilization and HIGHPRI kept, under the tuning
seed and every report seed; else ``advisory``.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from shareplane.domain.config.shares import RebalanceConfig, RebalanceDesign, Tier
from shareplane.domain.errors import InvalidInputError

from .trace import TraceJob
from .whatif.config import Policy, RebalanceRun, WhatIfConfig
from .whatif.run import PolicyResult, run_policy
from .whatif.scenario import Scenario, build_scenario, with_rebalance

#: What a candidate is judged against, and what it runs: the shipped layout without and with weights moving.
BASELINE = Policy.RECLAIM
CANDIDATE_POLICY = Policy.RECLAIM_REBALANCE
# Credits only earn their place over horizons longer than fair share's own one-week decay.
_CREDIT_KNOBS: Mapping[str, tuple[float, ...]] = {
    "interval_minutes": (30.0, 10.0),
    "max_step": (0.25, 1.0),
    "deadband": (0.2, 0.05),
    "ledger_nudge": (0.5, 0.9),
    "ledger_half_life_seconds": (1209600, 2419200),
    "credit_scale_hours": (48.0, 12.0),
    "slo_boost_factor": (1.0, 1.5),
}
#: Each design's knobs, from gentlest to most aggressive; the rest stay as configured.
GRIDS: Mapping[RebalanceDesign, Mapping[str, tuple[float, ...]]] = {
    RebalanceDesign.DEMAND_TARGETS: {
        "interval_minutes": (30.0, 10.0),
        "max_step": (0.25, 1.0),
        "cooldown_seconds": (900, 0),
        "deadband": (0.2, 0.05),
        "ledger_nudge": (0.0, 0.5, 0.9),
        "ledger_half_life_seconds": (604800, 86400),
        "slo_boost_factor": (1.0, 1.5),
    },
    RebalanceDesign.CREDITS: _CREDIT_KNOBS,
    RebalanceDesign.OWED_CREDITS: _CREDIT_KNOBS,
}
DEFAULT_GRID_SIZE = 16
DEFAULT_MAX_UTILIZATION_LOSS = 0.01
#: How much of HIGHPRI's SLO attainment a candidate may give up where the baseline misses the SLO.
MAX_HIGHPRI_ATTAINMENT_LOSS = 0.01
#: The seeds the held-out half is replayed under besides the tuning seed.
DEFAULT_REPORT_SEEDS = (1, 2)


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


def _design_grid(base: RebalanceRun, design: RebalanceDesign, size: int, seed: int) -> list[RebalanceRun]:
    grid = GRIDS[design]
    names = list(grid)
    combos = [
        combo
        for combo in itertools.product(*grid.values())
        if can_step_down(combo[names.index("max_step")], combo[names.index("deadband")])
    ]
    picked = sorted(random.Random(seed).sample(range(len(combos)), min(size, len(combos))))
    out = []
    for index in picked:
        knobs: dict[str, Any] = dict(zip(names, combos[index], strict=True))
        interval = float(knobs.pop("interval_minutes"))
        rules = base.rules.model_validate({**base.rules.model_dump(), **knobs, "design": design})
        out.append(base.model_validate({**base.model_dump(), "interval_minutes": interval, "rules": rules}))
    return out


def candidate_grid(base: RebalanceRun, size: int = DEFAULT_GRID_SIZE, seed: int = 0) -> list[RebalanceRun]:
    """``size`` settings per design drawn (seeded, without repeats) from its grid's product, in grid order.

    Combinations that cannot step a weight down (``can_step_down``) are left out. Everything a grid
    does not vary (bounds, wait window, quota knobs) is kept from ``base``.
    """
    if size < 1:
        raise InvalidInputError("--grid", f"{size} is not >= 1", "ask for at least one candidate")
    return [run for design in GRIDS for run in _design_grid(base, design, size, seed)]


def describe(run: RebalanceRun) -> dict[str, Any]:
    """The design and knobs of a candidate, as config/whatif.yaml spells them."""
    rules = run.rules.model_dump()
    knobs = GRIDS[run.rules.design]
    return {
        "interval_minutes": run.interval_minutes,
        "design": run.rules.design.value,
        **{k: rules[k] for k in knobs if k in rules},
    }


@dataclass(frozen=True)
class Measures:
    """What the choice looks at in one replay."""

    worst: float
    #: None when a team with work received nothing (infinitely unfair).
    disparity: float | None
    utilization: float
    highpri_p95: float
    highpri_attainment: float | None

    @classmethod
    def of(cls, result: PolicyResult) -> Measures:
        """The measures of one policy's replay."""
        return cls(
            result.worst_team_entitlement_ratio,
            result.disparity,
            result.utilization,
            result.wait_seconds[Tier.HIGHPRI.value]["p95"],
            result.slo_attainment.get(Tier.HIGHPRI.value),
        )


@dataclass(frozen=True)
class WindowScore:
    """One candidate on one window, against the baseline on the same window."""

    candidate: Measures
    baseline: Measures
    highpri_slo_seconds: float

    @property
    def worst_gain(self) -> float:
        """Relative rise of the worst team's entitlement ratio (negative: fell)."""
        base = self.baseline.worst
        return self.candidate.worst / base - 1 if base > 0 else 0.0

    @property
    def disparity_gain(self) -> float:
        """Relative fall of the disparity (negative: rose); a team left with nothing is a full loss."""
        mine, base = self.candidate.disparity, self.baseline.disparity
        if mine is None:
            return 0.0 if base is None else -1.0
        return 1.0 if base is None else base / mine - 1

    @property
    def gain(self) -> float:
        """The smaller of the two gains: better on one measure and worse on the other is no gain."""
        return min(self.worst_gain, self.disparity_gain)

    @property
    def utilization_loss(self) -> float:
        """Utilization given up for it (negative: gained)."""
        return self.baseline.utilization - self.candidate.utilization

    @property
    def highpri_kept(self) -> bool:
        """HIGHPRI p95 within the SLO where the baseline is; elsewhere at most a point of attainment lost."""
        slo = self.highpri_slo_seconds
        if self.baseline.highpri_p95 <= slo:
            return self.candidate.highpri_p95 <= slo
        mine, base = self.candidate.highpri_attainment, self.baseline.highpri_attainment
        return base is None or (mine is not None and mine >= base - MAX_HIGHPRI_ATTAINMENT_LOSS)


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
        """Whether every window keeps utilization within ``max_utilization_loss`` and HIGHPRI's SLO."""
        return all(w.utilization_loss <= max_utilization_loss and w.highpri_kept for w in self.windows)


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

    def best_of(self, design: RebalanceDesign) -> CandidateScore | None:
        """The design's own choice by the same rule; without an eligible one, its best score anyway."""
        mine = [c for c in self.candidates if c.run.rules.design is design]
        eligible = select(mine, self.max_utilization_loss)
        return eligible or max(mine, key=lambda c: c.score, default=None)


Progress = Callable[[str], None]


def tuning_windows(tuning: Sequence[TraceJob]) -> list[Sequence[TraceJob]]:
    """The whole tuning part and its two halves by job count (too few jobs: the whole part only)."""
    if len(tuning) < 4:
        return [tuning]
    quarters = split_trace(tuning, 0.5)
    return [tuning, quarters.tuning, quarters.held_out]


def _highpri_slo(scenario: Scenario) -> float:
    return float(scenario.config.tiers[Tier.HIGHPRI].wait_slo_seconds)


def choose_rebalance(
    scenarios: Sequence[Scenario],
    candidates: Sequence[RebalanceRun],
    seed: int = 0,
    max_utilization_loss: float = DEFAULT_MAX_UTILIZATION_LOSS,
    progress: Progress | None = None,
) -> Choice:
    """The eligible candidate with the largest worst-window gain over the baseline; pure replay."""
    baselines = [Measures.of(run_policy(sc, BASELINE, seed)) for sc in scenarios]
    scored = []
    for n, candidate in enumerate(candidates, start=1):
        windows = tuple(
            WindowScore(
                Measures.of(run_policy(with_rebalance(sc, candidate), CANDIDATE_POLICY, seed)),
                base,
                _highpri_slo(sc),
            )
            for sc, base in zip(scenarios, baselines, strict=True)
        )
        scored.append(CandidateScore(candidate, windows))
        if progress is not None:
            progress(
                f"candidate {n}/{len(candidates)} ({candidate.rules.design.value}): "
                f"worst-window gain {scored[-1].score:+.4f}"
            )
    return Choice(select(scored, max_utilization_loss), tuple(scored), max_utilization_loss)


@dataclass(frozen=True)
class HalfResult:
    """The baseline and each design's choice replayed on one part of the trace under one seed."""

    scenario: Scenario
    seed: int
    baseline: PolicyResult
    designs: Mapping[RebalanceDesign, PolicyResult]

    def beaten_by(self, design: RebalanceDesign, max_utilization_loss: float) -> bool:
        """Whether the design is at least as fair as the baseline on both measures, keeping
        utilization within ``max_utilization_loss`` and HIGHPRI's SLO."""
        window = WindowScore(
            Measures.of(self.designs[design]), Measures.of(self.baseline), _highpri_slo(self.scenario)
        )
        return (
            window.worst_gain >= 0
            and window.disparity_gain >= 0
            and window.utilization_loss <= max_utilization_loss
            and window.highpri_kept
        )


def _measures_json(result: PolicyResult) -> dict[str, Any]:
    return {
        "utilization": round(result.utilization, 6),
        "worst_team_entitlement_ratio": round(result.worst_team_entitlement_ratio, 6),
        "disparity": None if result.disparity is None else round(result.disparity, 6),
        "worst_paid_back_share": (
            None if result.worst_paid_back_share is None else round(result.worst_paid_back_share, 6)
        ),
        "wait_p95_seconds": {tier: round(w["p95"], 1) for tier, w in result.wait_seconds.items()},
        "slo_attainment": {k: round(v, 6) for k, v in result.slo_attainment.items()},
        "plans_applied": result.applied_plans,
    }


@dataclass(frozen=True)
class TuningReport:
    """What ``tune_rebalance`` chose on the tuning half and what it measured elsewhere."""

    split: TraceSplit
    choice: Choice
    tuning: HalfResult
    held_out: HalfResult
    #: The held-out half under the other report seeds.
    other_seeds: tuple[HalfResult, ...] = field(default_factory=tuple)

    @property
    def target_met(self) -> bool:
        """The condition for ``apply``: the choice gained in every tuning window (a rebalancer that
        changes nothing has earned nothing), and it is at least as fair as the baseline on the held-out
        half under every seed replayed (a gain one seed shows and another reverses is not evidence)."""
        chosen = self.choice.chosen
        return (
            chosen is not None
            and chosen.score > 0
            and all(
                half.beaten_by(chosen.run.rules.design, self.choice.max_utilization_loss)
                for half in (self.held_out, *self.other_seeds)
            )
        )

    @property
    def default_mode(self) -> str:
        """The rebalancer mode these measurements support: ``apply`` only when the target is met."""
        return "apply" if self.target_met else "advisory"

    def to_json(self) -> dict[str, Any]:
        """Every half side by side, the choice and every candidate's score."""

        def half(h: HalfResult) -> dict[str, Any]:
            return {
                "seed": h.seed,
                "jobs": len(h.scenario.jobs),
                "capacity_gpus": h.scenario.capacity_gpus,
                "offered_load": round(h.scenario.offered_load, 4),
                "window_days": round(h.scenario.window / 86400, 2),
                BASELINE.value: _measures_json(h.baseline),
                **{
                    f"{CANDIDATE_POLICY.value} ({design.value})": _measures_json(result)
                    for design, result in h.designs.items()
                },
                "beaten_by": [d.value for d in h.designs if h.beaten_by(d, self.choice.max_utilization_loss)],
            }

        chosen = self.choice.chosen
        return {
            "chosen": None if chosen is None else describe(chosen.run),
            "per_design": {
                design.value: None if best is None else describe(best.run)
                for design in GRIDS
                for best in [self.choice.best_of(design)]
            },
            "target_met": self.target_met,
            "default_mode": self.default_mode,
            "tuning": half(self.tuning),
            "held_out": half(self.held_out),
            "held_out_other_seeds": [half(h) for h in self.other_seeds],
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


def _replay_half(
    part: Sequence[TraceJob],
    config: WhatIfConfig,
    capacity: int | None,
    seed: int,
    picks: Mapping[RebalanceDesign, RebalanceRun],
) -> HalfResult:
    sc = build_scenario(part, config, capacity, seed)
    designs = {
        design: run_policy(with_rebalance(sc, run), CANDIDATE_POLICY, seed) for design, run in picks.items()
    }
    return HalfResult(sc, seed, run_policy(sc, BASELINE, seed), designs)


def tune_rebalance(
    trace: Sequence[TraceJob],
    config: WhatIfConfig,
    *,
    fraction: float = 0.5,
    grid_size: int = DEFAULT_GRID_SIZE,
    seed: int = 0,
    capacity_gpus: int | None = None,
    max_utilization_loss: float = DEFAULT_MAX_UTILIZATION_LOSS,
    report_seeds: Sequence[int] = DEFAULT_REPORT_SEEDS,
    progress: Progress | None = None,
) -> TuningReport:
    """Split, choose on the tuning half, replay the baseline and each design's choice on both halves,
    and the held-out half again under ``report_seeds``."""
    split = split_trace(trace, fraction)
    windows = [build_scenario(w, config, capacity_gpus, seed) for w in tuning_windows(split.tuning)]
    choice = choose_rebalance(
        windows, candidate_grid(config.rebalance, grid_size, seed), seed, max_utilization_loss, progress
    )
    picks = {design: best.run for design in GRIDS for best in [choice.best_of(design)] if best is not None}
    tuning, held_out = (
        _replay_half(part, config, capacity_gpus, seed, picks) for part in (split.tuning, split.held_out)
    )
    others = tuple(
        _replay_half(split.held_out, config, capacity_gpus, other, picks)
        for other in report_seeds
        if other != seed
    )
    return TuningReport(split, choice, tuning, held_out, others)
