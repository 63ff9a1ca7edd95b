"""When a waiting job will start: the queue run forward, arrival counts, stored predictions.

Its modules, each one job (callers import from the module; importing the package loads
none of them, so a handler's cold start pays only for what it uses):

- ``arrivals``: Arrival counts: how many jobs each queue received per hour, by share, instances and
  priority.
- ``prediction``: A waiting job's stored start prediction: what a watch tick forecast, and when it forecast
  it (pure).
- ``start_forecast``: When will a waiting job start: the queue run forward from its live state, many times
  over.
"""

__all__ = [
    "arrivals",
    "prediction",
    "start_forecast",
]
