"""Reader for Standard Workload Format traces (Parallel Workloads Archive, Alea's extension).

SWF: 18 whitespace-separated columns, ``;`` header comment lines, ``-1`` for a missing value;
plain, gzip, bzip2 or xz (told apart by magic bytes, not by the file name). Alea's extended
lines (wagap-2013) add column 19 (node list), 20 (queue name) and 21 (PBS nodespec) and carry
absolute submit times without a header.

What becomes of a line (the simulator replays *what ran*):

- Jobs cancelled before they started -- status 5 with no allocated processor or no run time
  (LPC-EGEE: user, group and requested time are -1 too) -- are skipped as ``cancelled``.
  Cancelled jobs that got a processor are kept, even those killed within the second (run 0):
  the real scheduler dispatched them, and they held their slots that long (as AccaSim counts).
  Failed jobs (status 0) are kept; so are jobs that ran for 0 s: they still had to be placed.
- Jobs without a submit time (``no_submit``) or run time (``no_runtime``) -- -1, negative,
  NaN or absurdly large -- cannot be replayed: each is reported as ``FILE:LINE: reason``
  (like malformed lines) and counted.
- A job number seen before (``duplicate_id``) is replayed under ``N.2``, ``N.3``, ... (the
  simulator needs one id per job), reported and counted in ``repaired``; so is a job with no
  processor count at all (allocated and requested both <= 0: ``assumed_1_core``).
- Lines that are not SWF (too few columns, a non-numeric value in a column we read) are
  ``malformed``: reported as ``FILE:LINE: reason`` and skipped; the rest loads. Only the
  columns the reader uses are checked.
- A file that is missing, unreadable or holds no SWF job line at all raises `InputError`; so
  does one that is no regular file (a named pipe, /dev/zero), has a line of over 1 MiB, far
  more blank or comment lines than job lines, or expands more than 50-fold from gzip, bzip2
  or xz (`open_text`): each said with its line, before its bytes fill the memory.

Names: user ``u<N>``; group ``g<N>`` (``nogroup`` where the trace has -1: SWF numbers groups
from 1, and traces without the field then form one group); queue: the name the header's
``; Queue: N name`` lines give (LPC-EGEE: test, short, long, day, infinite, batch), else
``q<N>``, ``default`` where the column is -1; Alea: column 20. `Job.vo` is set only from
`vo_map` -- otherwise the configuration maps groups to VOs.

Requested memory: SWF gives KB per processor; a header note ``'mem_req' column relates to:
quantity=per_job`` (LPC-EGEE) makes it KB per job; Alea's column 10 is bytes per job.
`Job.mem` is bytes per job.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Callable, Mapping

from mysched.errors import InputError, clip
from mysched.gcpause import gc_paused
from mysched.core.model.batch import Job, JobState, TraceJob
from mysched.sim.workloads.textfile import READ_ERRORS, open_text, read_failure

LPC_QUEUES: dict[int, str] = {1: "test", 2: "short", 3: "long", 4: "day", 5: "infinite", 6: "batch"}
"""LPC-EGEE-2004 queue names (SOURCES.md), for copies that lost the header's Queue lines."""

MAX_PROBLEMS = 20
"""Malformed lines kept as messages (all are counted in ``skipped["malformed"]``)."""

MAX_UNIX_START = 1e11
"""The latest header UnixStartTime taken (the year 5138; dates stay printable)."""

NOT_SWF_AFTER = 100
"""Malformed lines before the first good one after which the file is declared not SWF."""

_QUEUE_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_.+-]*")
_COLUMNS = ("job number", "submit time", "wait time", "run time", "allocated processors",
            "average CPU time", "used memory", "requested processors", "requested time",
            "requested memory", "status", "user", "group", "executable", "queue", "partition",
            "preceding job", "think time")
MAX_COMMENTS = 100_000
"""Blank and comment lines, beyond one per job line, after which a file is no SWF trace: a
header is a few dozen lines (74 in CEA-Curie); 3 GiB of comments read for minutes."""


@dataclass
class SwfTrace:
    """The jobs of a trace in submit order, what was skipped and why, and the header facts."""

    path: str
    jobs: list[TraceJob] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=dict)
    """Lines not replayed, by reason: cancelled, no_submit, no_runtime, malformed,
    before_start_from. Lines after `first` was reached are not read, so not counted."""
    problems: list[str] = field(default_factory=list)
    """The first `MAX_PROBLEMS` lines with a problem (malformed, not replayable, repaired) as
    ``FILE:LINE: reason``; `reported` counts them all."""
    reported: int = 0
    repaired: dict[str, int] = field(default_factory=dict)
    """Lines replayed after a repair, by kind: duplicate_id, assumed_1_core."""
    unix_start: float | None = None
    """Header ``UnixStartTime``; None if absent (submit times are then taken as absolute)."""
    timezone: str | None = None
    """Header ``TimeZoneString`` (e.g. ``Europe/Paris``), else ``UTC+HH:MM`` from ``TimeZone``."""
    max_nodes: int | None = None
    max_procs: int | None = None
    queue_names: dict[int, str] = field(default_factory=dict)
    """Queue number -> name, from the header."""
    extended: bool = False
    """Alea's extended format (queue names from column 20)."""
    cancelled_ran: int = 0
    """Status-5 jobs kept because they ran (counted before the `first` cut of a file that is
    not in submit order)."""
    truncated: bool = False
    """Reading stopped once `first` jobs were found (in submit order up to there)."""
    lines: int = 0
    """Lines read."""
    groups: dict[str, int] = field(default_factory=dict)
    """Jobs per group, for the groups of `jobs` (sorted by name)."""
    queues: dict[str, int] = field(default_factory=dict)
    """Jobs per queue (sorted by name)."""

    def skip(self, reason: str, n: int = 1) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + n


def _first_int(text: str) -> int | None:
    """``"70  (dual)"`` -> 70."""
    try:
        return int(float(text.split()[0]))
    except (ValueError, IndexError, OverflowError):
        return None


class _Reader:
    """One pass over one file; a class so the per-line loop keeps its state in locals."""

    def __init__(self, path: str, vo_map: Mapping[str, str] | None) -> None:
        self.tr = SwfTrace(path)
        self.vo_map = vo_map
        self.mem_per_job = False
        self.lpc = "LPC-EGEE" in os.path.basename(path)
        self.name_count: dict[str, int] = {}
        self.strings: dict[str, str] = {}

    def problem(self, lineno: int, message: str, reason: str = "malformed") -> None:
        """A line not replayed (counted under `reason`), reported with its place."""
        self.tr.skip(reason)
        self.report(lineno, message)

    def report(self, lineno: int, message: str) -> None:
        tr = self.tr
        tr.reported += 1
        if len(tr.problems) < MAX_PROBLEMS:
            tr.problems.append(f"{tr.path}:{lineno}: {message}")

    def repaired(self, lineno: int, kind: str, message: str) -> None:
        r = self.tr.repaired
        r[kind] = r.get(kind, 0) + 1
        self.report(lineno, message)

    def header(self, line: str, lineno: int) -> bool:
        """Take what we use from a ``;`` line; True if it changes how job lines are read.

        A start time or farm size no farm could have is reported and ignored: a start of 1e20
        would round every submit time to the same second, a negative size build no node."""
        key, sep, value = line.lstrip()[1:].partition(":")
        if not sep:
            return False
        key = key.strip()
        tr = self.tr
        if key == "UnixStartTime":
            v = _first_int(value)
            if v is not None and 0 <= v <= MAX_UNIX_START:
                tr.unix_start = float(v)
                return True
            self.report(lineno, f"UnixStartTime {clip(value.strip())!r} is not a Unix time from 0 to {MAX_UNIX_START:.0e}: "
                        "ignored (submit times taken as absolute)")
        elif key == "TimeZoneString":
            tr.timezone = value.split("#")[0].strip() or tr.timezone
        elif key == "TimeZone" and tr.timezone is None:
            v = _first_int(value)
            if v is not None:
                sign = "-" if v < 0 else "+"
                tr.timezone = f"UTC{sign}{abs(v) // 3600:02d}:{abs(v) % 3600 // 60:02d}"
        elif key in ("MaxNodes", "MaxProcs"):
            v = _first_int(value)
            if v is not None and v >= 1:
                setattr(tr, "max_nodes" if key == "MaxNodes" else "max_procs", v)
            else:
                self.report(lineno, f"{key} {clip(value.strip())!r} is not a positive count: ignored")
        elif key == "Queue":
            words = value.split()
            try:
                num = int(words[0])
            except (ValueError, IndexError):
                return False
            if len(words) > 1 and _QUEUE_NAME.fullmatch(words[1]):
                tr.queue_names[num] = words[1]
                self.name_count[words[1]] = self.name_count.get(words[1], 0) + 1
                return True
        elif key == "Note" and "mem_req" in value and "per_job" in value:
            self.mem_per_job = True
            return True
        elif key in ("Installation", "Computer") and "LPC" in value:
            self.lpc = True
            return True
        return False

    def queue_name(self, num: int) -> str:
        name = self.tr.queue_names.get(num)
        if name is not None and self.name_count.get(name) == 1:
            return name
        if self.lpc and not self.tr.queue_names and num in LPC_QUEUES:
            return LPC_QUEUES[num]
        return f"q{num}" if num >= 0 else "default"

    def attrs(self, parts: list[str]) -> tuple:
        """(queue, user, group, cores, walltime, mem, vo, status, alloc) of a line.

        Cached by the caller per distinct text of these columns: most lines repeat a few
        users, groups, queues and requests, so the conversions run once per combination."""
        values = []
        for col in (4, 7, 8, 9, 10, 11, 12):
            text = parts[col]
            try:
                values.append(int(text) if col != 8 and col != 9 else float(text))
            except ValueError:
                raise ValueError(f"non-numeric {_COLUMNS[col]} (column {col + 1}): {clip(text)!r}") from None
        alloc, req_procs, req_time, req_mem, status, user, group = values
        if not (req_time == req_time and req_mem == req_mem):
            raise ValueError("NaN in requested time or memory")
        if len(parts) >= 20:
            queue = parts[19]
            self.tr.extended = True
        else:
            try:
                queue = self.queue_name(int(parts[14]))
            except ValueError:
                raise ValueError(f"non-numeric {_COLUMNS[14]} (column 15): {clip(parts[14])!r}") from None
        cores = alloc if alloc > 0 else (req_procs if req_procs > 0 else 0)  # 0: none given (the caller says so)
        mem = None
        if 0 < req_mem < 1e18:
            if len(parts) >= 20:
                mem = int(req_mem)  # Alea: bytes per job
            elif self.mem_per_job:
                mem = int(req_mem * 1024)
            else:
                mem = int(req_mem * 1024) * max(1, cores)
        intern = self.strings.setdefault
        u = intern(f"u{user}", f"u{user}") if user >= 0 else "nouser"
        g = intern(f"g{group}", f"g{group}") if group >= 0 else "nogroup"
        q = intern(queue, queue)
        vo = self.vo_map.get(g) if self.vo_map else None
        walltime = req_time if 0 < req_time < 1e15 else None
        return (q, u, g, cores, walltime, mem, vo, status, alloc)


def read_swf(path: str | os.PathLike[str], *, first: int | None = None, start_from: float | None = None,
             vo_map: Mapping[str, str] | None = None,
             on_problem: Callable[[str], None] | None = None) -> SwfTrace:
    """Read an SWF trace into jobs to replay, sorted by submit time (absolute Unix seconds).

    `start_from` (absolute Unix time) skips jobs submitted before it; `first` then keeps only
    the first N jobs replayed, in submit order (reading stops at the N-th when the file is in
    submit order up to it, as archive files are). Malformed lines go to `on_problem` (the first
    `MAX_PROBLEMS`, once the file has proved to be SWF: junk gets one error, not a page)."""
    if first is not None and first < 0:
        raise ValueError("first must be >= 0")
    path = os.fspath(path)
    rd = _Reader(path, vo_map)
    tr = rd.tr
    jobs: list[TraceJob] = []
    append = jobs.append
    cache: dict[tuple, tuple] = {}
    get = cache.get
    queued = JobState.QUEUED
    base = 0.0
    good = 0  # lines with all columns we read numeric
    last_submit = -1.0
    in_order = True
    limit = first if first is not None else -1
    lineno = 0
    early = cancelled_ran = 0
    cancelled = 0
    idle = 0  # blank and comment lines
    seen_ids: dict[str, int] = {}
    # Hundreds of thousands of new objects and no cycles among them: the cyclic collector
    # would only rescan the growing job list (a fifth of the load time on LPC-EGEE).
    with open_text(path) as f, gc_paused():
        try:
            for lineno, line in enumerate(f, 1):
                parts = line.split()
                n = len(parts)
                if n == 0 or parts[0][0] == ";":
                    idle += 1
                    if idle > MAX_COMMENTS + good:
                        raise InputError(f"{path}:{lineno}: {idle:,} blank or comment lines against {good:,} job "
                                         "lines: not an SWF trace (its header is a few dozen lines)")
                    if n and rd.header(line, lineno):
                        cache.clear()
                        base = tr.unix_start or 0.0
                    continue
                if n < 18:
                    rd.problem(lineno, f"expected 18 columns, found {n}")
                    if not good and tr.skipped["malformed"] >= NOT_SWF_AFTER:
                        break
                    continue
                key = (parts[4], parts[7], parts[8], parts[9], parts[10], parts[11], parts[12], parts[14],
                       parts[19] if n >= 20 else None)
                a = get(key)
                try:
                    if a is None:
                        a = cache[key] = rd.attrs(parts)
                    jid = parts[0]
                    if not jid.isdecimal():
                        raise ValueError(f"non-numeric {_COLUMNS[0]} (column 1): {clip(jid)!r}")
                    submit = float(parts[1])
                    run = float(parts[3])
                except ValueError as exc:
                    msg = str(exc)
                    if msg.startswith("could not convert"):
                        col = 1 if not _is_number(parts[1]) else 3
                        msg = f"non-numeric {_COLUMNS[col]} (column {col + 1}): {clip(parts[col])!r}"
                    rd.problem(lineno, msg)
                    if not good and tr.skipped["malformed"] >= NOT_SWF_AFTER:
                        break
                    continue
                good += 1
                queue, user, group, cores, walltime, mem, vo, status, alloc = a
                if status == 5 and (alloc <= 0 or run < 0):
                    cancelled += 1
                    continue
                if not 0 <= submit < 1e12:  # also NaN
                    rd.problem(lineno, f"job {clip(jid)}: no usable submit time ({clip(parts[1])}): not replayed", "no_submit")
                    continue
                if not 0 <= run < 1e12:
                    rd.problem(lineno, f"job {clip(jid)}: no usable run time ({clip(parts[3])}): not replayed", "no_runtime")
                    continue
                first_at = seen_ids.setdefault(jid, lineno)
                if first_at != lineno:
                    n = 2
                    while f"{jid}.{n}" in seen_ids:
                        n += 1
                    seen_ids[f"{jid}.{n}"] = lineno
                    rd.repaired(lineno, "duplicate_id", f"job number {clip(jid)} already on line {first_at}: "
                                f"replayed as {clip(jid)}.{n}")
                    jid = f"{jid}.{n}"
                if cores == 0:
                    rd.repaired(lineno, "assumed_1_core", f"job {clip(jid)}: no processor count (allocated and "
                                "requested <= 0): replayed on 1 core")
                    cores = 1
                t = base + submit
                if start_from is not None and t < start_from:
                    early += 1
                    continue
                if t < last_submit:
                    in_order = False
                last_submit = t
                if limit == 0:
                    tr.truncated = True
                    break
                append(TraceJob(Job(jid, queue, user, group, cores, queued, t, None, walltime, mem, (), vo), run))
                if status == 5:
                    cancelled_ran += 1
                if len(jobs) == limit:
                    if in_order:  # stop here, not at the next job line: 3 GiB of comments may come first
                        tr.truncated = True
                        break
                    limit = -1  # out of order: read it all, sort, then cut
        except READ_ERRORS as exc:
            raise InputError(f"{path}:{lineno + 1}: cannot read: {read_failure(exc)}") from None
    tr.lines = lineno
    if not good:
        if tr.problems:
            raise InputError(f"{path}: not an SWF trace: no job line of 18 numeric columns "
                             f"(first problem: {tr.problems[0]})")
        raise InputError(f"{path}: not an SWF trace: no job lines")
    for reason, count in (("cancelled", cancelled), ("before_start_from", early)):
        if count:
            tr.skip(reason, count)
    if not in_order:
        jobs.sort(key=_submit_key)
        if first is not None and len(jobs) > first:
            del jobs[first:]
            tr.truncated = True
    tr.cancelled_ran = cancelled_ran
    tr.jobs = jobs
    tr.groups = dict(sorted(Counter(map(_group_of, jobs)).items()))
    tr.queues = dict(sorted(Counter(map(_queue_of, jobs)).items()))
    # Reported once the file proved to be a trace: junk gets one error, not 20 warnings.
    if on_problem is not None:
        for text in tr.problems:
            on_problem(text)
    return tr


_submit_key = attrgetter("job.submit_time")
_group_of = attrgetter("job.group")
_queue_of = attrgetter("job.queue")


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
