"""The embedded S3's dates on the cluster's clock.

moto dates objects (LastModified) by the wall clock, while the emulator runs the cluster on its own
virtual clock, faster than the wall. The control plane dates a dropped spec's jobs by the drop's
LastModified, as S3 dates it on AWS, and their dispatch by Batch's events: with S3 on the wall clock,
a job looked to wait for as long as the emulator had run ahead (at 100x, 99 virtual seconds for every
wall second since the stack started). Here S3 dates everything by the clock it is given, the stack's.

moto keeps one S3 store per process, so one clock serves it: the last stack started in the process.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

#: Where the S3 models module keeps moto's own ``utcnow`` while a clock is installed.
_ORIGINAL = "_shareplane_utcnow"


def install(clock: Callable[[], float]) -> None:
    """Date the embedded S3's objects by ``clock`` (epoch seconds) in this process."""
    from moto.s3 import models

    namespace = vars(models)
    namespace.setdefault(_ORIGINAL, namespace["utcnow"])
    # moto's utcnow is naive UTC.
    namespace["utcnow"] = lambda: datetime.fromtimestamp(clock(), UTC).replace(tzinfo=None)


def uninstall() -> None:
    """Give the embedded S3 moto's own clock back."""
    from moto.s3 import models

    namespace = vars(models)
    if _ORIGINAL in namespace:
        namespace["utcnow"] = namespace.pop(_ORIGINAL)
