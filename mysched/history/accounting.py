"""TORQUE and OpenPBS accounting logs (``server_priv/accounting/YYYYMMDD``): parsing and job records.

A line is ``MM/DD/YYYY HH:MM:SS;TYPE;JOBID;key=value key=value ...`` (TORQUE's
``account_record``). Only `E` (job end) records carry wall-clock use -- and OpenPBS's `R`
(requeue) records, for the run requeued; they become `FinishedJob` records. Real logs from
several TORQUE versions differ (CPU time as ``hh:mm:ss`` or seconds, cores from
``total_execution_slots`` or only from ``exec_host``), OpenPBS's in the ways
`mysched.history.openpbs` lists, read per record; concatenated logs may carry a ``YYYYMMDD:``
file-name prefix: all of that is accepted.
Malformed lines raise `ValueError` with a message; callers report them with file and line
and go on.

Time: the line's stamp is the server's local time without a zone. It is read in the local
zone of the machine running mysched (which is normally the server itself, or set ``TZ``);
where the record carries epoch seconds (``end=`` of `E`, ``start=`` of `S`) those are used
instead, as they are exact and zone-free.
"""

from __future__ import annotations

import logging
import math
import re
import time
from dataclasses import dataclass, field
from typing import Collection

from mysched.core.model.sizes import digits
from mysched.core.model.batch import FinishedJob
from mysched.backends.torque.values import parse_exec_host, parse_nodes
from mysched.core.model.durations import duration_or_none
from mysched.history.openpbs import array_whole, parse_exec_vnode, select_cores, unquote

RECORD_TYPES = frozenset("QSRCTEDA")
"""TORQUE's record types (``src/include/acct.h``): queued, started, rerun, checkpointed,
restarted, ended, deleted, aborted; OpenPBS's mean the same. Its other letters (``L`` licenses,
``a`` alter, ``s``, ``u``, ``e``, ``c`` phases, reservations' ...) are skipped."""

MAX_WALL = 366 * 86400.0
"""A job record claiming more wall-clock than this has a wrong start or end (e.g.
``end=99999999999``) and would swamp every VO's decayed usage."""

MAX_AHEAD = 86400.0
"""How far a job's end may lie after its line's own time stamp. TORQUE writes the `E` line
when the job ends, so the two agree to the second but for the zone the stamp is read in
(at most 14 h off): an end days or years ahead is a wrong value, and would make every
weight of the decayed usage astronomically large."""

MAX_CORES = 1_000_000
"""Cores one record may charge. The largest TORQUE farms have ~10^5 cores, so a job on
more is a garbled count (``total_execution_slots=99999999999``, ``exec_host=wn1/0-99999999``)
that would charge its VO more than the whole farm can deliver in years."""

MAX_NAME = 255
"""Longest job id, user, group or queue the history store's columns take (PostgreSQL
refuses a longer one, and with it every record of the same batch)."""

_INT32 = 2 ** 31
"""TORQUE's exit status is a C int: a value outside it is garbled (and larger than the
database's 64-bit INTEGER would refuse the whole batch)."""

log = logging.getLogger("mysched")

_STAMP = re.compile(r"(\d\d)/(\d\d)/(\d{4}) (\d\d):(\d\d):(\d\d)", re.ASCII)
_RECORD = re.compile(r"\d\d/\d\d/\d{4} \d\d:\d\d:\d\d;[A-Za-z];", re.ASCII)
"""Where a record begins: found inside a line, the line before it was cut short."""
_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*")
_hour_cache: dict[tuple[str, str, str, str], float] = {}
_hour_cache_zone: tuple = ()
_key_cache: dict[str, bool] = {}


@dataclass(frozen=True, slots=True)
class AccountingRecord:
    """One accounting line: type (Q, S, E, D, A, ...), time, job id and its attributes."""

    type: str
    time: float
    job_id: str
    attrs: dict[str, str]
    stamp: float | None = field(default=None, compare=False)
    """The line's own date stamp: `time` is the record's epoch field where it has one, and
    a value far after the stamp is a wrong one (`MAX_AHEAD`)."""


@dataclass(frozen=True, slots=True)
class LineProblem:
    """A line that could not be used, located as ``FILE:LINE`` for the admin's editor;
    `record` is one found after the damage on the same line (see `Spliced`)."""

    path: str
    line: int
    message: str
    record: AccountingRecord | None = field(default=None, compare=False)
    headed: bool = field(default=False, compare=False)
    """The line begins as a record does (``MM/DD/YYYY HH:MM:SS;``): a damaged record, not junk."""

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


class NotRun(ValueError):
    """An `E` record that charges no wall-clock: of a job that never started (TORQUE writes
    ``start=0``), or of a job array as a whole (its subjobs have their own)."""


class Spliced(ValueError):
    """A line holding the start of a record cut short and then a whole one: pbs_server writes
    through a stdio buffer, so when it dies the file may end inside a line, and the next
    server appends its first record right after it. The cut record is lost (any of its values
    may be cut); `record` is the whole one (None if it is of a type not asked for)."""

    def __init__(self, message: str, record: AccountingRecord | None) -> None:
        super().__init__(message)
        self.record = record


LINE_BUGS = (ArithmeticError, LookupError, TypeError)
"""What a value in one line can provoke in the parsing code, besides the ValueError raised on
purpose: such a line is skipped as malformed. Anything else (an interrupt, a full memory, a
RuntimeError) stops the read as before, with what was committed kept."""


def unexpected(exc: Exception) -> str:
    """The message for a line that broke the reader itself: skipped like a malformed line, so
    one line never stops an import or a daemon, but said to be a bug (traceback at debug)."""
    log.debug("accounting line could not be read", exc_info=exc)
    return f"skipped: unexpected {type(exc).__name__}: {exc} (a mysched bug: please report this line)"


def parse_stamp(text: str) -> float:
    """``MM/DD/YYYY HH:MM:SS`` in the local time zone -> Unix time; ValueError if malformed.

    Hand-parsed with one `mktime` per hour (not `strptime` per line): ingestion reads
    millions of these. In the repeated hour when DST ends, `mktime` picks one of the two.
    """
    m = _STAMP.fullmatch(text.strip())
    if m is None:
        raise ValueError(f"bad time stamp {text.strip()!r} (expected MM/DD/YYYY HH:MM:SS)")
    mon, day, year, hour, minute, sec = m.groups()
    if not ("01" <= mon <= "12" and "01" <= day <= "31" and hour <= "23" and minute <= "59" and sec <= "60"):
        raise ValueError(f"bad time stamp {text.strip()!r} (field out of range)")
    global _hour_cache_zone
    zone = (time.tzname, time.timezone, time.altzone)  # changes only with TZ + time.tzset()
    if _hour_cache_zone != zone or len(_hour_cache) > 10_000:
        _hour_cache.clear()
        _hour_cache_zone = zone
    key = (year, mon, day, hour)
    base = _hour_cache.get(key)
    if base is None:
        base = _hour_cache[key] = time.mktime((int(year), int(mon), int(day), int(hour), 0, 0, 0, 0, -1))
    return base + int(minute) * 60 + int(sec)


def _is_key(k: str) -> bool:
    ok = _key_cache.get(k)
    if ok is None:
        if len(_key_cache) > 10_000:
            _key_cache.clear()
        ok = _key_cache[k] = _KEY.fullmatch(k) is not None
    return ok


def parse_attrs(text: str) -> dict[str, str]:
    """``a=1 b=two words c=3`` -> dict. A value runs until the next `` key=`` token, so values
    with blanks (a job name, ``Resource_Request_2.0``) survive; runs of blanks become one. A
    value OpenPBS quoted for its blanks (``project="ATLAS prod"``) is given without its quotes."""
    out: dict[str, str] = {}
    key = None
    for tok in text.split():
        k, eq, v = tok.partition("=")
        if eq and _is_key(k):
            if k in _WRITTEN_FIRST and k in out:
                key = "\0repeated"  # a forged one: its words go nowhere
                out.setdefault(key, "")
                continue
            key = k
            out[k] = v
        elif key is not None:
            out[key] += " " + tok
    out.pop("\0repeated", None)
    if '"' in text or "'" in text:  # OpenPBS quotes a value with blanks (project="ATLAS prod")
        for k, v in out.items():
            out[k] = unquote(v)
    return out


_WRITTEN_FIRST = frozenset({"user", "group"})
"""Keys pbs_server writes before the account string (``qsub -A``, written as the user typed
it, blanks included): a second one comes from that string, and the first is pbs_server's.
The keys after it are pbs_server's where they come last; a repeated one of those, forged
before them, is overwritten by the real one."""


def parse_line(line: str, types: Collection[str] | None = None) -> AccountingRecord | None:
    """Parse one line: None for a blank line, a record type TORQUE does not write, or one
    not in `types` (its attributes are then not parsed at all); ValueError if malformed,
    `Spliced` if a record cut short runs into the next one."""
    line = line.strip()
    if not line:
        return None
    if line[8:9] == ":" and digits(line[:8]):
        line = line[9:]  # "20150327:" file-name prefix of concatenated logs
    # a sound line has its three ';' after the stamp (and seldom one more in a value)
    if line[19:20] != ";" or line.count(";") > 3:
        at = [m.start() for m in _RECORD.finditer(line, 1)]
        if at:
            cut, rest = line[:at[-1]], line[at[-1]:]
            what = (f"{len(cut)} NUL bytes (a damaged stretch of the file)" if not cut.strip("\x00") else
                    f"a record cut short ({cut[:60]!r}{'...' if len(cut) > 60 else ''})")
            try:
                rec = _parse(rest, types)
            except ValueError as exc:
                raise ValueError(f"{what}, then a record that is malformed too: {exc}") from None
            raise Spliced(f"{what} before the record on this line (pbs_server stopped while writing?): "
                          "skipped; the record after it is read", rec)
    return _parse(line, types)


def _parse(line: str, types: Collection[str] | None) -> AccountingRecord | None:
    parts = line.split(";", 3)
    if len(parts) < 3:
        raise ValueError("expected 'MM/DD/YYYY HH:MM:SS;TYPE;JOBID;attributes'")
    stamp, rtype, job_id = parts[0], parts[1].strip(), parts[2].strip()
    t = parse_stamp(stamp)
    if len(rtype) != 1 or not rtype.isalpha():
        raise ValueError(f"bad record type {rtype!r}")
    if not job_id or " " in job_id:
        raise ValueError(f"bad job id {job_id!r}")
    if rtype not in RECORD_TYPES or (types is not None and rtype not in types):
        return None
    if "\x00" in line:  # PostgreSQL takes no NUL in a string: it would refuse the whole batch
        raise ValueError("NUL bytes inside the record (a damaged stretch of the file)")
    attrs = parse_attrs(parts[3]) if len(parts) > 3 else {}
    stamp = t
    epoch = attrs.get("end" if rtype in ("E", "R") else "start" if rtype == "S" else "")
    if epoch and digits(epoch) and int(epoch) > 0:
        t = float(epoch)
    return AccountingRecord(rtype, t, job_id, attrs, stamp)


def _cores(a: dict[str, str], placement: tuple[tuple[str, int], ...], vnodes: tuple[tuple[str, int], ...]) -> int:
    """The first that says: total_execution_slots (TORQUE), the cores counted in exec_host
    (OpenPBS's ``host/0*4`` too), in exec_vnode (OpenPBS), resources_used.ncpus,
    Resource_List.ncpus, the nodes request, the select request (OpenPBS); else 1. pbs_server
    writes each after the account string, so where it writes one, one forged in there is
    overwritten.
    ValueError if the one taken exceeds `MAX_CORES`."""
    cores, source = 0, ""
    slots = a.get("total_execution_slots", "")
    if digits(slots) and int(slots) > 0:
        cores, source = int(slots), f"total_execution_slots={slots[:40]}"
    for key, found in (("exec_host", placement), ("exec_vnode", vnodes)):
        if not cores and found:
            cores, source = sum(c for _, c in found), f"{key}={a[key][:40]}"
    for key in ("resources_used.ncpus", "Resource_List.ncpus"):
        if not cores and digits(a.get(key, "")):
            cores, source = int(a[key]), f"{key}={a[key][:40]}"
    for key, parse in (("Resource_List.nodes", parse_nodes), ("Resource_List.select", select_cores)):
        if not cores and a.get(key):
            try:
                cores, source = parse(a[key]), f"{key}={a[key][:40]}"
            except ValueError:
                pass
    cores = max(1, cores)
    if cores > MAX_CORES:
        raise ValueError(f"{source} makes {cores:.3g} cores, more than {MAX_CORES:,}: a garbled count")
    return cores


def to_finished_job(rec: AccountingRecord, dropped: list[str] | None = None) -> FinishedJob:
    """The wall-clock record of an `E` line (or of an OpenPBS `R` line: the run it requeued).

    `NotRun` if the job never started, or is a job array as a whole; ValueError if its start
    or end is unusable. Fields that only refine the record (exec_host, exec_vnode, cput, exit
    status) are dropped when garbled rather than losing the job's wall-clock; each one dropped
    is said in `dropped`.
    """
    said = dropped if dropped is not None else []
    a = rec.attrs
    kind = rec.type
    if array_whole(rec.job_id):
        raise NotRun(f"{kind} record of job array {rec.job_id[:60]} as a whole: its subjobs are charged, each "
                     "by its own record")
    try:
        start = float(a["start"])
        if not math.isfinite(start):
            raise ValueError
    except (KeyError, ValueError):
        raise ValueError(f"{kind} record without a valid start=") from None
    if start == 0:
        raise NotRun(f"{kind} record of a job that never started (start=0)")
    if start < 0:  # not TORQUE's "never started": a garbled value, said rather than ignored
        raise ValueError(f"start={a['start'][:40]!r} is before 1970: a wrong time stamp")
    end_text = a.get("end", "")
    # No end (end=0: completion time unset): start + resources_used.walltime, TORQUE's own end
    # with USESAVEDRESOURCES, before the line's local stamp -- in the hour repeated when DST ends
    # that stamp is ambiguous, and a 90-min job came out 30 min (or refused as ending first).
    used = None if end_text and end_text != "0" else duration_or_none(a.get("resources_used.walltime"))
    try:
        end = float(end_text) if end_text and end_text != "0" else (
            start + used if used is not None and math.isfinite(used) else rec.time)
        if not math.isfinite(end):
            raise ValueError
    except ValueError:
        raise ValueError(f"bad end={end_text!r}") from None
    if end < start:
        raise ValueError(f"end ({end:.0f}) before start ({start:.0f})")
    if end - start > MAX_WALL:
        raise ValueError(f"ran {(end - start) / 86400:.0f} days (start={start:.0f}, end={end:.0f}): a wrong time stamp")
    if rec.stamp is not None and end > rec.stamp + MAX_AHEAD:
        raise ValueError(f"end={end:.0f} is {(end - rec.stamp) / 86400:,.0f} days after the line's time stamp: "
                         "a wrong time stamp")
    # Whose wall-clock it was decides fair share: a record that does not say is damaged, and
    # is reported rather than charged to a made-up "unknown".
    user = a.get("user") or a.get("owner", "").split("@")[0]
    if not user:
        raise ValueError(f"{kind} record without user= (or owner=): whose job it was is unknown")
    group = a.get("group")
    if not group:
        raise ValueError(f"{kind} record without group=: its VO is unknown")
    queue = a.get("queue") or "unknown"
    for what, name in (("job id", rec.job_id), ("user", user), ("group", group), ("queue", queue)):
        if len(name) > MAX_NAME:
            raise ValueError(f"{what} {name[:40]!r}... longer than {MAX_NAME} characters")
    try:
        placement = parse_exec_host(a["exec_host"]) if a.get("exec_host") else ()
    except ValueError:
        placement = ()
        said.append(f"exec_host={a['exec_host'][:40]!r}")
    try:
        vnodes = parse_exec_vnode(a["exec_vnode"]) if a.get("exec_vnode") else ()
    except ValueError:
        vnodes = ()
        said.append(f"exec_vnode={a['exec_vnode'][:40]!r}")
    cput = duration_or_none(a.get("resources_used.cput"))
    if a.get("resources_used.cput") and (cput is None or cput < 0):
        cput = None
        said.append(f"resources_used.cput={a['resources_used.cput'][:40]!r}")
    status_text = a.get("Exit_status", "")
    status = int(status_text) if digits(status_text.lstrip("-")) else None
    if status is not None and not -_INT32 <= status < _INT32:
        status = None
    if status_text and status is None:
        said.append(f"Exit_status={status_text[:40]!r}")
    # OpenPBS's nodes are its vnodes; its exec_host names their hosts
    return FinishedJob(rec.job_id, user, group, queue, start, end, _cores(a, placement, vnodes), None, cput, status,
                       tuple(n for n, _ in vnodes or placement))
