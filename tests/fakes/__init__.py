"""In-memory fakes of the ports in layers/core/shareplane/service/ports.py, one module per port.

Each fake keeps the semantics of its real adapter (conditional writes, idempotency, what a listing
returns); tests/integration/contracts runs a fake and its moto-backed adapter through the same cases,
so the two cannot drift apart unnoticed. The worlds (``failure_world``, ``reclaim_world``,
``rebalance_world``) wire the fakes into one use case's ports, with the sample data its tests build on.
"""
