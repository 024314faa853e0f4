"""Reader for Standard Workload Format traces (Parallel Workloads Archive).

18 whitespace-separated columns, ``;`` header lines (``UnixStartTime``, ``MaxNodes``,
``MaxProcs``), ``-1`` for missing values; gzip or plain (detected by magic bytes). Alea's
extended format (wagap-2013: absolute submit times, queue name in column 20) is read too.
Jobs cancelled before they started (status 5 with no run time, allocation or user) are
skipped and counted — cancelled jobs that ran are kept, they used slots; malformed lines are
reported as ``FILE:LINE: reason`` and skipped — the rest loads.
"""

from __future__ import annotations

import gzip
import io
import os
from dataclasses import dataclass, field
from typing import Callable, Mapping

from ..errors import InputError
from ..model import Job, JobState, TraceJob

# Queue numbers of LPC-EGEE-2004 (see shared/traces/SOURCES.md).
LPC_QUEUES = {1: "test", 2: "short", 3: "long", 4: "day", 5: "infinite", 6: "batch"}
MAX_PROBLEMS = 20


@dataclass
class SwfTrace:
    """Jobs of a trace in submit order, with what was skipped and why."""

    path: str
    jobs: list[TraceJob] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    unix_start: float = 0.0
    max_nodes: int | None = None
    max_procs: int | None = None
    lines: int = 0

    @property
    def groups(self) -> set[str]:
        return {t.job.group for t in self.jobs}

    def skip(self, reason: str) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + 1


def open_text(path: str) -> io.TextIOBase:
    """Open a plain or gzip-compressed text file (by magic bytes), as text."""
    try:
        f = open(path, "rb")
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror}") from None
    magic = f.read(2)
    f.seek(0)
    raw = gzip.GzipFile(fileobj=f) if magic == b"\x1f\x8b" else f
    return io.TextIOWrapper(raw, encoding="utf-8", errors="replace", newline=None)


def _header_int(value: str) -> int | None:
    try:
        return int(float(value.split()[0]))
    except (ValueError, IndexError):
        return None


def read_swf(path: str, *, first: int | None = None, start_from: float | None = None,
             vo_map: Mapping[str, str] | None = None,
             on_problem: Callable[[str], None] | None = None) -> SwfTrace:
    """Read an SWF trace; `first` keeps the first N jobs replayed (after `start_from`, an
    absolute Unix time before which submissions are skipped)."""
    tr = SwfTrace(path)
    lpc = "LPC-EGEE" in os.path.basename(path)
    numeric_lines = 0

    def problem(lineno: int, msg: str) -> None:
        tr.skip("malformed")
        text = f"{path}:{lineno}: {msg}"
        if len(tr.problems) < MAX_PROBLEMS:
            tr.problems.append(text)

    jobs = tr.jobs
    vo_get = vo_map.get if vo_map else None
    queued = JobState.QUEUED
    try:
        with open_text(path) as f:
            for lineno, line in enumerate(f, 1):
                tr.lines = lineno
                if line.startswith(";"):
                    key, _, value = line[1:].partition(":")
                    key = key.strip()
                    if key == "UnixStartTime":
                        v = _header_int(value)
                        if v is not None:
                            tr.unix_start = float(v)
                    elif key == "MaxNodes":
                        tr.max_nodes = _header_int(value)
                    elif key == "MaxProcs":
                        tr.max_procs = _header_int(value)
                    elif "LPC" in value and key in ("Computer", "Installation"):
                        lpc = True
                    continue
                parts = line.split()
                if not parts:
                    continue
                if len(parts) < 18:
                    problem(lineno, f"expected 18 columns, found {len(parts)}")
                    continue
                try:
                    jid = int(parts[0])
                    submit = float(parts[1])
                    run = float(parts[3])
                    alloc = int(parts[4])
                    req_procs = int(parts[7])
                    req_time = float(parts[8])
                    req_mem = float(parts[9])
                    status = int(parts[10])
                    user = int(parts[11])
                    group = int(parts[12])
                    qnum = int(parts[14])
                except ValueError:
                    problem(lineno, "non-numeric value in the 18 SWF columns")
                    continue
                numeric_lines += 1
                if status == 5 and (run <= 0 or alloc <= 0 or user < 0):
                    tr.skip("cancelled")  # cancelled before it started: it used no slot
                    continue
                if run < 0 or (alloc <= 0 and req_procs <= 0):
                    tr.skip("never_started")
                    continue
                t = submit + tr.unix_start
                if start_from is not None and t < start_from:
                    tr.skip("before_from")
                    continue
                if first is not None and len(jobs) >= first:
                    break
                cores = alloc if alloc > 0 else (req_procs if req_procs > 0 else 1)
                extended = len(parts) >= 20
                if extended:
                    queue = parts[19]
                    mem = int(req_mem) if req_mem > 0 else None
                else:
                    queue = (LPC_QUEUES.get(qnum) if lpc else None) or (f"q{qnum}" if qnum >= 0 else "default")
                    mem = int(req_mem * 1024 * cores) if req_mem > 0 else None
                g = f"g{group}" if group >= 0 else "nogroup"
                jobs.append(TraceJob(
                    Job(str(jid), queue, f"u{user}" if user >= 0 else "unknown", g, cores, queued, t, None,
                        req_time if req_time > 0 else None, mem, (), vo_get(g) if vo_get else None),
                    run,
                ))
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise InputError(f"{path}: cannot read (line {tr.lines + 1}): {exc}") from None
    if numeric_lines == 0:
        raise InputError(f"{path}: not an SWF trace: no job line of 18 numeric columns"
                         + (f" (first problem: {tr.problems[0]})" if tr.problems else ""))
    # Reported once the file proved to be a trace: garbage gets one error, not 20 warnings.
    if on_problem is not None:
        for text in tr.problems:
            on_problem(text)
    jobs.sort(key=lambda tj: tj.job.submit_time)
    return tr


def parse_vo_map(text: str) -> dict[str, str]:
    """``g2=atlas,g6=cms`` or a file of ``GROUP VO`` / ``GROUP=VO`` lines (``#`` comments)."""
    if os.path.exists(text):
        try:
            with open(text, encoding="utf-8") as f:
                lines = [(i, ln) for i, ln in enumerate(f, 1)]
        except OSError as exc:
            raise InputError(f"{text}: cannot read: {exc.strerror}") from None
        where = lambda i: f"{text}:{i}"  # noqa: E731
    else:
        lines = [(i, item) for i, item in enumerate(text.split(","), 1)]
        where = lambda i: f"--vo-map item {i}"  # noqa: E731
    out: dict[str, str] = {}
    for i, raw in lines:
        item = raw.split("#", 1)[0].strip()
        if not item:
            continue
        parts = item.replace("=", " ").split()
        if len(parts) != 2:
            raise InputError(f"{where(i)}: expected GROUP=VO, got {raw.strip()!r}")
        group, vo = parts
        if group in out and out[group] != vo:
            raise InputError(f"{where(i)}: group {group} mapped twice ({out[group]} and {vo})")
        out[group] = vo
    if not out:
        raise InputError(f"{text}: empty VO mapping")
    return out
