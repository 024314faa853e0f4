"""A TORQUE accounting log as a workload: each `E` record becomes a job to replay.

Submit time is the record's ``qtime`` (else ``ctime``, else its start); a record whose
time is no number or more than a year before its start is reported and skipped. Runtime is
``end - start``; cores, walltime and the shape of a request of several nodes come from the
record.
"""

from __future__ import annotations

import math
import os
from typing import Callable, Mapping

from mysched.backends.torque.values import parse_node_parts
from mysched.history.accounting import NotRun, Spliced, parse_line, to_finished_job
from mysched.core.model.durations import duration_or_none
from mysched.errors import InputError, clip
from mysched.core.model.batch import Job, JobState, NodePart, Request, TraceJob
from mysched.sim.workloads.textfile import READ_ERRORS, open_text, read_failure

MAX_PROBLEMS = 20
MAX_WAIT = 366 * 86400.0
"""The longest wait taken from a record: an older qtime (-99999999999 was 1,178,186 days of
simulated farm) or one that is no number is reported and the record not replayed."""


def _time_or_nan(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return math.nan


def _shape(a: dict[str, str], cores: int) -> Request | None:
    """A request of several nodes keeps its shape, ``nodes=2:ppn=4`` as 2 nodes of 4 cores (not
    8 cores on one node); host names and properties are left out, as the simulated farm's
    nodes have neither. None (`cores` on one node) for one node or a spec that does not add
    up to the cores the record charged."""
    text = a.get("Resource_List.nodes")
    if not text or "+" not in text and not text.split(":", 1)[0].strip().isdigit():
        return None
    try:
        parts = tuple(NodePart(p.count, p.ppn) for p in parse_node_parts(text))
    except ValueError:
        return None
    if sum(p.count for p in parts) < 2 or sum(p.count * p.ppn for p in parts) != cores:
        return None
    return Request(parts=parts)


def read_accounting_trace(path: str, *, first: int | None = None, start_from: float | None = None,
                          vo_map: Mapping[str, str] | None = None,
                          warn: Callable[[str], None] | None = None) -> tuple[list[TraceJob], dict]:
    """Jobs of an accounting log (or a directory of them), in submit order."""
    files = [path]
    if os.path.isdir(path):
        files = sorted(os.path.join(path, n) for n in os.listdir(path) if n[:1].isdigit())
        if not files:
            raise InputError(f"{path}: a directory with no accounting log in it (TORQUE names them YYYYMMDD); "
                             "give an SWF trace as a file")
    jobs: list[TraceJob] = []
    seen: set[tuple[str, float]] = set()
    malformed = 0
    for fname in files:
        lineno = 0
        with open_text(fname, "a TORQUE accounting log") as f:
            try:
                for lineno, line in enumerate(f, 1):
                    try:
                        try:
                            rec = parse_line(line)
                        except Spliced as exc:  # a record cut short by a crash: said; the whole one after it replayed
                            malformed += 1
                            if warn is not None and malformed <= MAX_PROBLEMS:
                                warn(f"{fname}:{lineno}: {exc}")
                            rec = exc.record
                        if rec is None or rec.type != "E":
                            continue
                        fj = to_finished_job(rec)
                    except NotRun:
                        continue  # deleted before it started: nothing to replay
                    except ValueError as exc:
                        malformed += 1
                        if warn is not None and malformed <= MAX_PROBLEMS:
                            warn(f"{fname}:{lineno}: {exc}")
                        continue
                    if (fj.id, fj.start) in seen:
                        continue
                    seen.add((fj.id, fj.start))
                    a = rec.attrs
                    # qtime, else (missing or garbled) ctime, else the start
                    keys = [k for k in ("qtime", "ctime") if k in a]
                    key = next((k for k in keys if _time_or_nan(a[k]) == _time_or_nan(a[k])), keys[0] if keys else None)
                    submit = fj.start if key is None else _time_or_nan(a[key])
                    if not fj.start - MAX_WAIT <= submit:  # also NaN and -inf
                        malformed += 1
                        if warn is not None and malformed <= MAX_PROBLEMS:
                            warn(f"{fname}:{lineno}: job {clip(fj.id)}: {key}={clip(a[key])} is not a time within a year before "
                                 "its start: not replayed")
                        continue
                    submit = min(submit, fj.start)
                    if start_from is not None and submit < start_from:
                        continue
                    walltime = duration_or_none(a.get("Resource_List.walltime"))
                    vo = vo_map.get(fj.group) if vo_map else None
                    jobs.append(TraceJob(Job(fj.id, fj.queue, fj.user, fj.group, fj.cores, JobState.QUEUED, submit,
                                             None, walltime, None, (), vo, request=_shape(a, fj.cores)),
                                         fj.end - fj.start))
            except READ_ERRORS as exc:
                raise InputError(f"{fname}:{lineno + 1}: cannot read: {read_failure(exc)}") from None
    if warn is not None and malformed > MAX_PROBLEMS:
        warn(f"{path}: {malformed} records not replayed in all (first {MAX_PROBLEMS} shown)")
    if not jobs and malformed:
        raise InputError(f"{path}: no usable E record ({malformed} malformed lines)")
    jobs.sort(key=lambda t: (t.job.submit_time, t.job.id))
    if first is not None:
        jobs = jobs[:first]
    return jobs, {"malformed": malformed}
