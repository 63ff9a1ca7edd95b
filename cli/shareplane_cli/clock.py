"""What "now" is for every command: the cluster's clock, read in one place.

On AWS the cluster's clock is this machine's (the wall clock). The local stack's cluster runs on the
emulator's virtual clock, faster than the wall: jobs are dated on it, so a command that dated "now" by
the wall would see every job submitted in the future and every running job cost nothing so far. A
running stack exports ``SHAREPLANE_CLOCK_URL`` (``shareplane up --env``), where its emulator answers
its time; with it set, every command reads "now" there, in whatever process the stack runs.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping

from .errors import CliError, ExitCode

#: Where the cluster's clock answers ``{"epochMillis": ...}`` to a GET (unset: this machine's clock).
CLOCK_URL_VARIABLE = "SHAREPLANE_CLOCK_URL"
#: Seconds a clock read may take: the emulator answers on loopback in milliseconds.
CLOCK_TIMEOUT_SECONDS = 5.0

Clock = Callable[[], float]


def cluster_clock(environ: Mapping[str, str]) -> Clock:
    """The clock the environment names: the one at ``SHAREPLANE_CLOCK_URL``, else ``time.time``."""
    url = (environ.get(CLOCK_URL_VARIABLE) or "").strip()
    if not url:
        return time.time
    return lambda: read_clock(url)


def read_clock(url: str, timeout: float = CLOCK_TIMEOUT_SECONDS) -> float:
    """Epoch seconds as the clock at ``url`` answers them; CliError naming the variable when it cannot."""
    fix = f"start the local stack (`shareplane up`), or unset {CLOCK_URL_VARIABLE} for this machine's clock"
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:  # noqa: S310 - a URL the user exported
            answer = json.loads(response.read())
        return float(answer["epochMillis"]) / 1000
    except (urllib.error.URLError, OSError) as exc:
        problem = f"{CLOCK_URL_VARIABLE} {url!r} did not answer ({exc})"
        raise CliError(problem, fix, ExitCode.UNREACHABLE) from exc
    except (ValueError, KeyError, TypeError) as exc:
        problem = f"{CLOCK_URL_VARIABLE} {url!r} answered no epochMillis ({exc!r})"
        raise CliError(problem, fix, ExitCode.UNREACHABLE) from exc
