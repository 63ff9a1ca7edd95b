"""What-if runs: replay a job trace under several share policies and measure each one the same way.

A trace (``load_trace``: the Philly CSV, or JSON lines of exported job records) becomes a
``Scenario`` through ``config/whatif.yaml``: the top-K teams by GPU-time get a share each, the rest
fold into one "other" share, and every share is entitled to capacity in proportion to its long-run
demand (or to fractions the config names). Each job gets a seeded priority tier and, with the
configured probabilities, one injected SageMaker failure on its first dispatch (the trace has
neither). The same scenario then runs through ``gpusim`` once per policy:

- ``static``: hard partitions. Quota shares with strategy RESERVE: a share uses at most its
  entitlement and its idle capacity is not lent (the world before soft quotas). ``shareplane demo``
  replays its script under this policy for its hard-partition baseline.
- ``fairshare``: one fair-share queue, fixed ``weightFactor = max(entitlement) / entitlement``.
- ``quota``: quota shares with LEND_AND_BORROW (unlimited borrowLimit) and cross-share preemption
  to reclaim lent capacity; a preempted job restarts from zero (no checkpoints).
- ``fairshare+rebalance``: fair-share whose weights ``shareplane.domain.shares.rebalance.plan_rebalance``
  (the production rebalancer) rewrites every ``rebalance.interval_minutes`` of virtual time, from a
  ``ShareSnapshot`` built from the model's state by ``snapshot_from_observation``, the function the
  Lambda uses (so each tier's wait p90 counts recent waits and every job still waiting, as in
  production).
- ``fairshare+tiers``, ``fairshare+reclaim``: the team x tier layout (``config.Policy``), without and
  with the production reclaim planner.
- ``fairshare+reclaim+rebalance``: the shipped layout with the rebalancer applying its plans:
  ``fairshare+reclaim`` whose team weights the production rebalancer moves as in ``fairshare+rebalance``
  (each own-tier identifier gets the team's weight x its multiplier, the plain one the tier charge).
  The shipped rebalancer is advisory, which replays as ``fairshare+reclaim``.

Capacity units: by default one unit is one GPU (``gpus_per_unit: 1``). 93% of Philly jobs use one
GPU; rounding each up to a whole 8-GPU instance would multiply the offered load by about six and
replay a different workload. With ``gpus_per_unit: 8`` jobs take ``ceil(gpus / 8)`` p4d-like
instances instead. Capacity and every reported quantity are in GPUs either way.

Metrics, all over one window shared by every policy, ``[0, W]`` with ``W`` the trace span (the
last arrival; the drain after it is excluded so a slower policy is not judged on a longer window):

- ``utilization``: GPU-seconds held (SCHEDULED through the end of the attempt, including SageMaker
  start-up) / (capacity x W).
- ``work_conserving_bound``: the integral of ``min(capacity, demand(t))`` / (capacity x W), where
  demand is the GPUs of every job submitted and not finished (waiting or running), in that run.
  ``utilization <= work_conserving_bound <= 1`` always.
- ``wait_seconds``: per tier, p50 and p95 (nearest rank) of first-dispatch time minus submit time.
- ``team_entitlement_ratio``: per share ``R_i = integral of held_i(t) / integral of min(E_i,
  demand_i(t))``, both over the instants in the window where share ``i`` has demand. The
  denominator is what the share was entitled to, capped by what it asked for; 1.0 means it got
  exactly its entitlement whenever it wanted it, above 1 it borrowed idle capacity, below 1 it was
  short. Since ``held_i <= min(capacity, demand_i)``, ``0 <= R_i <= capacity / E_i``. A share with
  no demand in the window gets 1.0 (it was owed nothing). Shares are teams: under the team x tier
  layout a team's tier identifiers count together.
- ``worst_team_entitlement_ratio``: ``min_i R_i``; ``jain_index``: ``(sum R)^2 / (n sum R^2)``
  over the ratios as reported (a team far above 1 lowers it too).
- ``disparity``: ``max_i R_i / min_i R_i`` over the teams with demand in the window (None when one
  of them received nothing).
- ``lent_gpu_hours``, ``paid_back_share``: per team, the GPU-hours it lent (entitlement it left idle
  while others held more than theirs) and what share of them it was paid back (held beyond its
  entitlement while others held less than theirs), as defined in
  ``shareplane.domain.shares.lending.loans``; ``ledger``: the same per team over time, cumulative
  at every few report buckets' ends (``lending.ledger_json``).
- ``preemption_gpu_hours_lost``: GPU-hours of attempts ended by preemption (their work is lost).
- ``jobs``: jobs replayed.
- ``idle``: with ``--idle-fraction F`` (``seed_idle``), a seeded fraction F of the jobs hold their GPUs
  idle, and every policy runs the detect-idle Lambda's decision on its schedule (``idle_replay.py``):
  ``idle_gpu_hours`` the seeded jobs would hold idle without detection, ``reclaimed_gpu_hours``
  given back by stopping them, ``busy_jobs_stopped``.

Modules (this file imports none of them): ``config`` (the config file and the policies), ``scenario``
(a trace made a scenario: ``build_scenario``, ``scenario_of``, ``seed_idle``), ``meter`` (what a run
measures), ``lending`` (the lend/payback rule and its ledger over time, the demo's too), ``run``
(``PolicyRun.replay``, the one replay; ``run_policy``, ``run_whatif``), ``reclaim`` (the
fairshare+reclaim policy's planner).
"""
