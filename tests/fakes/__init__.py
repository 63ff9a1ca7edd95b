"""In-memory fakes of the ports in layers/core/shareplane/service/ports.py, one module per port.

Each fake keeps the semantics of its real adapter (conditional writes, idempotency, what a listing
returns); tests/integration/contracts runs a fake and its adapter through the same cases (on moto; on
gpusim for Batch service jobs, which moto lacks; EMF documents read back for metrics), so the two cannot
drift apart unnoticed; SharesBatch's (adapters/batch_policy.py, on gpusim) covers the fair-share
policy and the capacity, not yet quota shares or the queue snapshot. The worlds
(``failure_world``, ``reclaim_world``, ``rebalance_world``) wire the fakes into one use case's ports,
with the sample data its tests build on.
"""
