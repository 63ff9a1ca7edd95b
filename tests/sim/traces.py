"""Traces the simulator tests replay: one seeded synthetic trace, and a writer to the Philly CSV format.

Every test scenario starts from a ``TraceJob`` list (the shipped Philly trace through ``load_trace``,
or ``synthetic_trace``) and goes through ``build_scenario``; crafted clusters go through
``scenario_of``, the constructor ``build_scenario`` ends in.
"""

from __future__ import annotations

import math
import random
from datetime import datetime, timedelta
from pathlib import Path

from gpusim.trace import TraceJob

#: The Philly backtest's raw predictions (``shareplane simulate --trace philly --config config/whatif.yaml
#: --policy fairshare --seed 0 --eta --eta-workers 2 --eta-predictions ...``; without ``--config`` the
#: built-in defaults replay another scenario): what the shipped calibration was chosen on.
#: ``make bench`` (tests/bench/test_eta_bench.py) checks that this code predicts exactly these.
PHILLY_PREDICTIONS = Path(__file__).parent / "data" / "eta_philly_fairshare_seed0.json"
#: The same backtest with seed 1 (the scenario's synthetic attributes, the sample and the draws):
#: a replication nothing was chosen on.
PHILLY_PREDICTIONS_SEED1 = Path(__file__).parent / "data" / "eta_philly_fairshare_seed1.json"


def synthetic_trace(seed: int = 7, count: int = 300) -> list[TraceJob]:
    """Poisson arrivals every ~2 minutes, lognormal run times, four teams of skewed size."""
    rng = random.Random(seed)
    teams, weights = ["alpha", "beta", "gamma", "delta"], [0.5, 0.25, 0.15, 0.1]
    t, jobs = 0.0, []
    for _ in range(count):
        t += rng.expovariate(1 / 120)
        jobs.append(
            TraceJob(
                submit=round(t),
                duration=round(max(60.0, rng.lognormvariate(math.log(1800), 1.2))),
                gpus=rng.choice([1, 1, 1, 2, 4, 8]),
                team=rng.choices(teams, weights)[0],
            )
        )
    return jobs


def write_csv(path: Path, jobs: list[TraceJob]) -> Path:
    """The trace in the Philly CSV format (submit seconds after 2017-09-04 00:00:00)."""
    start = datetime(2017, 9, 4)
    lines = ["timestamp,duration,num_gpus,gpu_time,cluster"]
    for j in jobs:
        when = (start + timedelta(seconds=j.submit)).strftime("%Y-%m-%d %H:%M:%S")
        lines.append(f"{when},{j.duration},{j.gpus},{j.duration * j.gpus},{j.team}")
    path.write_text("\n".join(lines) + "\n")
    return path
