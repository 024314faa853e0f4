"""Workloads for the simulator: SWF traces, TORQUE accounting logs, the synthetic default."""

from __future__ import annotations

import re
from typing import Callable, Mapping

from mysched.errors import InputError
from mysched.core.model.batch import TraceJob
from mysched.sim.workloads.swf import MAX_COMMENTS, read_swf
from mysched.sim.workloads.textfile import READ_ERRORS, open_text, read_failure

_ACCOUNTING = re.compile(r"^(\d{8}:)?\d\d/\d\d/\d{4} \d\d:\d\d:\d\d;[A-Z];")


def detect_format(path: str) -> str:
    """"swf" or "accounting", from the first line that is not blank."""
    with open_text(path) as f:
        lineno = 0
        try:
            for lineno, line in enumerate(f, 1):
                s = line.strip()
                if not s:
                    if lineno > MAX_COMMENTS:
                        break  # the SWF reader says what is wrong with it, and where
                    continue
                return "accounting" if _ACCOUNTING.match(s) else "swf"
        except READ_ERRORS as exc:
            raise InputError(f"{path}:{lineno + 1}: cannot read: {read_failure(exc)}") from None
    if lineno > MAX_COMMENTS:
        return "swf"
    raise InputError(f"{path}: empty file")


def load_trace(path: str, *, fmt: str = "auto", first: int | None = None, start_from: float | None = None,
               vo_map: Mapping[str, str] | None = None,
               warn: Callable[[str], None] | None = None) -> tuple[list[TraceJob], dict]:
    """Jobs of a trace in submit order, plus what is known of its farm (``nodes``, ``slots_per_node``)."""
    if fmt == "auto":
        fmt = detect_format(path)
    if fmt == "accounting":
        from mysched.sim.workloads.acctrace import read_accounting_trace

        return read_accounting_trace(path, first=first, start_from=start_from, vo_map=vo_map, warn=warn)
    tr = read_swf(path, first=first, start_from=start_from, vo_map=vo_map, on_problem=warn)
    if warn is not None:
        if tr.reported > len(tr.problems):
            warn(f"{path}: {tr.reported} lines with problems in all (first {len(tr.problems)} shown)")
        lost = {k: v for k, v in tr.skipped.items() if k not in ("cancelled", "before_start_from")}
        if lost or tr.repaired:
            warn(f"{path}: " + "; ".join(
                part for part in (("not replayed: " + ", ".join(f"{v} {k}" for k, v in sorted(lost.items())))
                                  if lost else "",
                                  ("replayed after a repair: " + ", ".join(f"{v} {k}" for k, v in
                                                                           sorted(tr.repaired.items())))
                                  if tr.repaired else "") if part))
    info: dict = {"skipped": tr.skipped, "repaired": tr.repaired}
    if tr.max_nodes and tr.max_procs and tr.max_procs % tr.max_nodes == 0:
        info["nodes"] = tr.max_nodes
        info["slots_per_node"] = tr.max_procs // tr.max_nodes
    return tr.jobs, info


def split_multicore(workload: list[TraceJob]) -> list[TraceJob]:
    """Each job of N > 1 cores replayed as N single-core jobs with its submit time, run time,
    owner and walltime, and 1/N of its memory: the same work without the shape (all cores on
    one node, or a multi-node request), so that a run beside the unsplit one shows what the
    shape alone costs. (A synthetic workload generated with another `--mcore-fraction` is
    another draw, whose core-hours differ: docs/design/simulator.md.)"""
    out: list[TraceJob] = []
    for tj in workload:
        job = tj.job
        if job.cores <= 1:
            out.append(tj)
            continue
        mem = job.mem // job.cores if job.mem else job.mem
        for k in range(1, job.cores + 1):
            out.append(TraceJob(job._replace(id=f"{job.id}:{k}", cores=1, mem=mem, request=None), tj.runtime,
                                (job.id, job.cores)))
    return out
