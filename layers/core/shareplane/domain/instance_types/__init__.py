"""SageMaker training instance types: the one catalog of their facts, and capacity per type.

Its modules, each one job (callers import from the module; importing the package loads
none of them, so a handler's cold start pays only for what it uses):

- ``capacity``: Capacity per instance type: how many instances of each type (Batch's capacity units)
  something holds.
- ``catalog``: The one catalog of SageMaker training instance types the control plane knows: GPUs, GPU
  memory, vCPUs and family. Every path reads it (GPU counts for metrics, idle detection, reclaim and the
  rebalancer; vCPUs for the emulator's CPU metric; families for the Batch service environments; the shares
  config's check); prices stay in the config.
"""

__all__ = [
    "capacity",
    "catalog",
]
