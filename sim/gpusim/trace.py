"""Job histories the simulator replays: the Philly CSV (plain or gzipped), exported job records, and
the traces shipped with it (``NAMED_TRACES``). ``load_trace`` is the one loader: ``shareplane
simulate`` and ``tune-rebalance``, the benchmarks and the tests all read traces through it, and
``whatif.scenario.build_scenario`` turns what it returns into the scenario every replay runs.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import IO, Any

from shareplane.domain.errors import InvalidInputError

PHILLY_COLUMNS = frozenset({"timestamp", "duration", "num_gpus", "cluster"})


@dataclass(frozen=True)
class TraceJob:
    """One job of a recorded history: arrival (seconds from the first), run time, GPUs, team."""

    submit: float
    duration: float
    gpus: int
    team: str
    priority: int | None = None  # schedulingPriority when the trace has one


#: Traces shipped with the simulator, by name (``--trace philly``); their origin and licence are in
#: ``traces/README.md`` beside this module.
TRACES_DIR = Path(__file__).resolve().parent / "traces"
NAMED_TRACES = {"philly": TRACES_DIR / "philly-2017-09-04_10-29.csv.gz"}


#: The most bytes of trace (after gunzip) a load reads: the shipped Philly trace is 2.2 MB for 51,998
#: jobs, so this holds millions of jobs; it stops an endless stream or a gzip bomb before memory runs out.
MAX_TRACE_BYTES = 512 * 1024 * 1024


class _Capped(io.RawIOBase):
    """A binary stream that refuses to read past ``limit`` bytes (the trace's named error, exit 2)."""

    def __init__(self, raw: io.BufferedIOBase, limit: int, name: str) -> None:
        self._raw, self._limit, self._name, self._read = raw, limit, name, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer)[: self._limit + 1 - self._read]
        count = self._raw.readinto(view) or 0
        self._read += count
        if self._read > self._limit:
            raise InvalidInputError(
                "trace",
                f"{self._name} is larger than {self._limit} bytes (or an endless stream)",
                f"pass a trace of at most {self._limit} bytes (uncompressed), or a window of it",
            )
        return count

    def close(self) -> None:
        self._raw.close()
        super().close()


def _open_text(path: Path) -> IO[str]:
    """A trace file as text, gunzipped when it ends in .gz, read at most ``MAX_TRACE_BYTES``."""
    raw: io.BufferedIOBase = gzip.open(path, "rb") if path.suffix == ".gz" else path.open("rb")
    capped = _Capped(raw, MAX_TRACE_BYTES, path.name)
    return io.TextIOWrapper(io.BufferedReader(capped), encoding="utf-8", newline="")


def load_philly_csv(path: Path) -> list[TraceJob]:
    """The Philly trace CSV (timestamp,duration,num_gpus,gpu_time,cluster); ``cluster`` is the team."""
    jobs: list[TraceJob] = []
    start: datetime | None = None
    with _open_text(path) as fh:
        reader = csv.DictReader(fh)
        try:
            missing = PHILLY_COLUMNS - set(reader.fieldnames or ())
            if missing:
                raise InvalidInputError(
                    "trace", f"{path.name} lacks columns {sorted(missing)}", "pass a Philly-format CSV"
                )
            for line, row in enumerate(reader, start=2):
                try:
                    when = datetime.strptime(row["timestamp"], "%Y-%m-%d %H:%M:%S")
                    duration, gpus = float(row["duration"]), int(row["num_gpus"])
                except (TypeError, ValueError) as exc:
                    raise InvalidInputError(
                        f"trace line {line}", f"cannot be read ({exc})", "fix the row"
                    ) from exc
                start = start or when
                jobs.append(
                    TraceJob((when - start).total_seconds(), max(duration, 1.0), max(gpus, 1), row["cluster"])
                )
        except csv.Error as exc:
            # Python's csv reader refuses a field longer than csv.field_size_limit() (131072 by default);
            # it raises before counting the line it was reading.
            raise InvalidInputError(
                f"trace line {reader.line_num + 1}",
                f"cannot be read as CSV ({exc})",
                f"keep each field under {csv.field_size_limit()} characters; pass a Philly-format CSV",
            ) from exc
    return jobs


logger = logging.getLogger(__name__)
_COUNT_KEYS = ("instanceCount", "InstanceCount", "instance_count")


def load_jobs_jsonl(path: Path, gpus_per_instance: int = 8) -> list[TraceJob]:
    """JSON lines of `shareplane jobs --output json` records; times are epoch milliseconds.

    Each record needs ``createdAt`` and a share (``shareIdentifier``, else ``quotaShareName``); the
    run time is ``stoppedAt - startedAt``. A job that never started replays as a one-second job so
    its arrival still counts; a job still running (``startedAt`` without ``stoppedAt``) is an error.
    The instance count may be absent (one instance); GPUs are instances x ``gpus_per_instance``.
    """
    raw: list[tuple[int, dict[str, Any]]] = []
    with _open_text(path) as fh:
        for line, text in enumerate(fh, start=1):
            if not text.strip():
                continue
            try:
                record = json.loads(text)
            except json.JSONDecodeError as exc:
                raise InvalidInputError(
                    f"trace line {line}", f"is not JSON ({exc})", "one record per line"
                ) from exc
            if not isinstance(record, dict):
                raise InvalidInputError(f"trace line {line}", "is not a JSON object", "one record per line")
            raw.append((line, record))
    if not raw:
        raise InvalidInputError("trace", f"{path.name} holds no records", "export some jobs first")
    parsed = []
    unshared = []
    for line, r in raw:
        team = r.get("shareIdentifier") or r.get("quotaShareName")
        created = r.get("createdAt")
        if not team:
            # A job on a FIFO queue (CPU work, say) belongs to no share: nothing for a share policy to do.
            unshared.append(line)
            continue
        if not isinstance(created, int | float):
            raise InvalidInputError(
                f"trace line {line}: createdAt", "is missing", "export records with createdAt and a share"
            )
        started, stopped = r.get("startedAt"), r.get("stoppedAt")
        if started is not None and stopped is None:
            raise InvalidInputError(
                f"trace line {line}: stoppedAt",
                "is missing (the job was still running)",
                "export finished jobs",
            )
        duration = (stopped - started) / 1000.0 if started is not None else 0.0
        count = next((r[k] for k in _COUNT_KEYS if r.get(k) is not None), 1)
        priority = r.get("schedulingPriority")
        parsed.append(
            (float(created), max(duration, 1.0), int(count) * gpus_per_instance, str(team), priority)
        )
    if unshared:
        logger.warning("%s: %d jobs without a share left out (lines %s)", path.name, len(unshared), unshared)
    if not parsed:
        raise InvalidInputError("trace", f"{path.name} has no job with a share", "export a shared queue")
    # A total order, so the same records in any order give the same trace.
    parsed.sort(key=lambda p: (p[0], p[3], p[1], p[2], -1 if p[4] is None else p[4]))
    start = parsed[0][0]
    return [TraceJob((c - start) / 1000.0, d, g, t, p) for c, d, g, t, p in parsed]


TRACE_FORMATS: dict[str, Callable[[Path], list[TraceJob]]] = {
    "philly-csv": load_philly_csv,
    "jobs-jsonl": load_jobs_jsonl,
}


def detect_format(path: Path) -> str:
    """``jobs-jsonl`` for .jsonl/.ndjson/.json files or files starting with ``{``, else ``philly-csv``."""
    suffixes = [s.lower() for s in path.suffixes if s.lower() != ".gz"]
    if suffixes and suffixes[-1] in (".jsonl", ".ndjson", ".json"):
        return "jobs-jsonl"
    with _open_text(path) as fh:
        head = fh.read(64).lstrip()
    return "jobs-jsonl" if head.startswith("{") else "philly-csv"


def load_trace(path: Path | str, fmt: str | None = None) -> list[TraceJob]:
    """Read a job history in any known format (detected unless ``fmt`` names one), sorted by arrival.

    ``path`` may also name a shipped trace (``philly``).
    """
    path = NAMED_TRACES.get(str(path), Path(path))
    if not path.is_file():
        raise InvalidInputError(
            "trace",
            f"{path} does not exist",
            f"pass --trace with a trace file or one of {', '.join(sorted(NAMED_TRACES))}",
        )
    fmt = fmt or detect_format(path)
    if fmt not in TRACE_FORMATS:
        raise InvalidInputError("trace format", f"{fmt!r} is unknown", f"use one of {sorted(TRACE_FORMATS)}")
    try:
        jobs = TRACE_FORMATS[fmt](path)
    except UnicodeDecodeError as exc:
        raise InvalidInputError(
            "trace", f"{path.name} is not UTF-8 text ({exc.reason} at byte {exc.start})", "save it as UTF-8"
        ) from exc
    if not jobs:
        raise InvalidInputError("trace", f"{path.name} holds no jobs", "pass a trace with jobs")
    return sorted(jobs, key=lambda j: j.submit)
