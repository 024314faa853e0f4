"""TORQUE accounting logs (``server_priv/accounting/YYYYMMDD``): parsing and job records.

A line is ``MM/DD/YYYY HH:MM:SS;TYPE;JOBID;key=value key=value ...``. Only `E` (job end)
records carry wall-clock use; they become `FinishedJob` records. Real logs from several
TORQUE versions differ (CPU time as ``hh:mm:ss`` or seconds, cores from
``total_execution_slots`` or only from ``exec_host``), and concatenated logs may carry a
``YYYYMMDD:`` file-name prefix: all of that is accepted. Malformed lines raise `ValueError`
with a message; callers report them with file and line and go on.
"""

from __future__ import annotations

import calendar
import re
import time
from dataclasses import dataclass
from typing import Iterator

from .model import FinishedJob
from .pbsvalues import parse_duration, parse_exec_host, parse_nodes

_PREFIX = re.compile(r"^\d{8}:(?=\d\d/)")


@dataclass(frozen=True)
class AccountingRecord:
    """One accounting line: type (Q, S, E, D, A, ...), time, job id and its attributes."""

    type: str
    time: float
    job_id: str
    attrs: dict[str, str]


def parse_stamp(text: str) -> float:
    """``MM/DD/YYYY HH:MM:SS`` in the server's local time zone -> Unix time."""
    t = time.strptime(text.strip(), "%m/%d/%Y %H:%M:%S")
    return time.mktime(t)


def parse_attrs(text: str) -> dict[str, str]:
    """``a=1 b=two words c=3`` -> dict; a value runs until the next `` key=``."""
    out: dict[str, str] = {}
    key = None
    for tok in text.split(" "):
        k, eq, v = tok.partition("=")
        if eq and k and not k[0].isdigit() and k.replace(".", "").replace("_", "").isalnum():
            key = k
            out[k] = v
        elif key is not None and tok:
            out[key] += " " + tok
    for k in out:
        out[k] = out[k].strip()
    return out


def parse_line(line: str) -> AccountingRecord | None:
    """Parse one line; None for a blank line; ValueError for a malformed one."""
    line = line.strip()
    if not line:
        return None
    line = _PREFIX.sub("", line)
    parts = line.split(";", 3)
    if len(parts) < 3:
        raise ValueError("expected 'DATE TIME;TYPE;JOBID;attributes'")
    stamp, rtype, job_id = parts[0], parts[1].strip(), parts[2].strip()
    try:
        t = parse_stamp(stamp)
    except ValueError:
        raise ValueError(f"bad time stamp {stamp!r} (expected MM/DD/YYYY HH:MM:SS)") from None
    if len(rtype) != 1 or not rtype.isalpha():
        raise ValueError(f"bad record type {rtype!r}")
    if not job_id:
        raise ValueError("empty job id")
    return AccountingRecord(rtype, t, job_id, parse_attrs(parts[3]) if len(parts) > 3 else {})


def to_finished_job(rec: AccountingRecord) -> FinishedJob:
    """The wall-clock record of an `E` line; ValueError if start or end cannot be known."""
    a = rec.attrs
    user = a.get("user") or (a.get("owner", "").split("@")[0]) or "unknown"
    group = a.get("group") or "unknown"
    queue = a.get("queue") or "unknown"
    try:
        start = float(a["start"])
    except (KeyError, ValueError):
        raise ValueError("E record without a valid start=") from None
    try:
        end = float(a["end"]) if "end" in a else rec.time
    except ValueError:
        raise ValueError(f"bad end={a['end']!r}") from None
    if end < start:
        raise ValueError(f"end ({end:.0f}) before start ({start:.0f})")
    placement = parse_exec_host(a["exec_host"]) if a.get("exec_host") else ()
    cores = None
    if a.get("total_execution_slots", "").isdigit():
        cores = int(a["total_execution_slots"])
    elif placement:
        cores = sum(c for _, c in placement)
    else:
        try:
            cores = parse_nodes(a["Resource_List.nodes"]) if a.get("Resource_List.nodes") else None
        except ValueError:
            cores = None
    cput = None
    if a.get("resources_used.cput"):
        try:
            cput = parse_duration(a["resources_used.cput"])
        except ValueError:
            cput = None
    status = None
    if a.get("Exit_status", "").lstrip("-").isdigit():
        status = int(a["Exit_status"])
    return FinishedJob(rec.job_id, user, group, queue, start, end, max(1, cores or 1), None, cput, status,
                       tuple(n for n, _ in placement))


def iter_lines(path: str, start_offset: int = 0) -> Iterator[tuple[int, int, str]]:
    """(line number or 0 if unknown, byte offset after the line, text) for each complete line.

    A last line without its newline is being written: it is not returned, so a later
    ingestion picks it up whole.
    """
    with open(path, "rb") as f:
        f.seek(start_offset)
        lineno = 0 if start_offset else 1
        offset = start_offset
        for raw in f:
            if not raw.endswith(b"\n"):
                return
            offset += len(raw)
            yield lineno, offset, raw.decode("utf-8", errors="replace")
            if lineno:
                lineno += 1


def utc_stamp_to_epoch(text: str) -> float:
    """Parse a stamp as UTC (for tests and logs written by UTC servers)."""
    return float(calendar.timegm(time.strptime(text.strip(), "%m/%d/%Y %H:%M:%S")))
