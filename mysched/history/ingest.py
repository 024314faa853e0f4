"""Reading TORQUE and OpenPBS accounting files into the history store, incrementally and exactly once.

Each file's inode, byte offset, line number and first bytes are stored with the records
they cover, in one transaction (`Store.store_batch`), so a kill at any instant loses
nothing committed and re-reading never counts a job twice. Raises `InputError` for
unreadable files and `StoreError` for the database; malformed lines are reported, not
raised.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from mysched.errors import InputError
from mysched.history.accounting import LINE_BUGS, AccountingRecord, LineProblem, NotRun, to_finished_job, unexpected
from mysched.history.openpbs import charged_run
from mysched.history.logread import DAMAGED, Inside, LogError, compression, iter_file, starts_like_log
from mysched.history.evidence import AccountingBatch, Located
from mysched.history.store import Store

MAX_PROBLEMS = 20
"""Problems listed in an `IngestReport` (all are counted)."""
BATCH_LINES = 5000
"""Lines per transaction while ingesting: bounds what a kill makes us read again."""
HEAD_BYTES = 4096
PROGRESS_LINES = 1000
"""Lines between two calls of the progress callback."""
FINISHED_AFTER = 600.0
"""Seconds without a change after which a file is finished (`mysched history import`):
pbs_server writes the rest of a line within a second, so a last line still without its
newline ten minutes on will never get one (a copy, a hand edit, a disk that was full) and is
read as it is. Ten minutes also covers NFS attribute caches."""
_DAY_FILE = re.compile(r"^\d{8}$")
_OLD_DAY_FILE = re.compile(r"^\d{8}(\.gz|\.bz2|\.xz)?$")
"""A day's file as TORQUE names it, and compressed as admins keep old days."""
READABLE = ("gzip", "bzip2", "xz")

PathArg = str | os.PathLike[str]
Progress = Callable[[int, int, int], None]
"""``progress(bytes_read, bytes_to_read, lines_read)``: how far an ingestion is."""


@dataclass
class IngestReport:
    """What one accounting ingestion did; `problems` lists the first `MAX_PROBLEMS` as
    ``FILE:LINE: message``."""

    files: int = 0
    lines: int = 0
    records_added: int = 0
    duplicates: int = 0
    malformed: int = 0
    ignored: int = 0
    """Lines without wall-clock: other record types, blank lines, jobs that never ran."""
    unread_files: int = 0
    """Compressed files skipped whole (not asked for, or zstd), each reported."""
    repaired: int = 0
    """Records kept without a garbled field that only refines them (cput, exec_host, exit status)."""
    waiting: int = 0
    """Files whose last line has no newline yet, left for a later read (said only when the
    caller asked, with `finished_after`)."""
    suspicious: int = 0
    """`E` records charged to no one: no `S` record nor start of mysched's matches them
    (same job, owner and start), or a line inside another record's account= value."""
    promoted: int = 0
    """Records held back earlier as unmatched, charged now that their `S` record was read."""
    inside: int = 0
    """Lines inside another record's account= value (``qsub -A`` with a newline): never records."""
    problems: list[str] = field(default_factory=list)
    suspects: list[str] = field(default_factory=list)
    """The first `MAX_PROBLEMS` suspicious records, as ``FILE:LINE: ...``."""
    empty_dirs: list[str] = field(default_factory=list)
    """Directories given that hold no accounting file (YYYYMMDD)."""
    not_logs: list[str] = field(default_factory=list)
    """Files read from their start that hold lines but no record at all: not accounting logs."""


def ingest_accounting(store: Store, dir_or_files: PathArg | Iterable[PathArg], *, now: float | None = None,
                      on_problem: Callable[[str], None] | None = None, progress: Progress | None = None,
                      finished_after: float | None = None, compressed: bool = False,
                      trust_all: bool = False) -> IngestReport:
    """Read new `E` records from accounting files into `store`; a directory means its
    ``YYYYMMDD`` files in name order (so after midnight yesterday's file is finished first),
    with `compressed` also ``YYYYMMDD.gz``, ``.bz2`` and ``.xz`` (which a daemon, needing
    only recent days, leaves alone: a year of them would stall its first cycle).

    Incremental and idempotent: each file's inode, byte offset and line are remembered
    with the records they cover, in the same transaction; an unchanged file costs one
    stat; a file that shrank or was replaced is read again from the start (the unique
    key drops what is already stored); a partial last line waits for its newline (the
    file is being written). With `finished_after` (seconds), a file unchanged that long is
    finished and its last line is read without a newline; one still changing is reported to
    `on_problem` and counted in `waiting`. Malformed lines are counted, reported to
    `on_problem` and skipped. `now` stamps the positions (default: the clock). `progress`
    hears every `PROGRESS_LINES` lines and at the end how many of the bytes still unread at
    the start have been read (a long backfill should not be silent).

    An `E` record is charged only if it matches a job the farm ran: an `S` record or a start
    mysched recorded, with the same job id, owner and start (`Store.store_accounting`); the
    others, and lines inside another record's account= value (``qsub -A`` with a newline),
    are counted in `suspicious` and reported, never charged. `trust_all` charges every
    `E` record (logs from before mysched ran; lines inside an account= value still are not).
    """
    paths = [dir_or_files] if isinstance(dir_or_files, (str, os.PathLike)) else list(dir_or_files)
    files, rep = accounting_files([os.fspath(p) for p in paths], compressed)
    known = store.read_positions()
    meter = _Meter(progress, sum(_unread(f, known.get(f)) for f in files)) if progress else None
    for path in files:
        _ingest_file(store, path, known.get(path), rep, time.time() if now is None else now, on_problem, meter,
                     finished_after, compressed, trust_all)
    if meter is not None:
        meter.finish(rep.lines)
    return rep


class _Meter:
    """Bytes read over all files, for the progress callback."""

    def __init__(self, progress: Progress, total: int) -> None:
        self.progress, self.total, self.done = progress, total, 0

    def at(self, file_bytes: int, lines: int) -> None:
        self.progress(min(self.done + file_bytes, self.total), self.total, lines)

    def file_done(self, file_bytes: int) -> None:
        self.done += file_bytes

    def finish(self, lines: int) -> None:
        self.progress(self.total, self.total, lines)


def _unread(path: str, row: Any) -> int:
    """Bytes of `path` an ingestion will read (as far as a stat tells; for progress only)."""
    try:
        st = os.stat(path)
    except OSError:
        return 0
    if row is not None and row.inode == st.st_ino and (row.size == st.st_size or row.offset <= st.st_size):
        return 0 if row.size == st.st_size else st.st_size - row.offset
    return st.st_size


def _ingest_file(store: Store, path: str, row: Any, rep: IngestReport, now: float,
                 on_problem: Callable[[str], None] | None, meter: _Meter | None = None,
                 finished_after: float | None = None, compressed: bool = False, trust_all: bool = False) -> None:
    try:
        st = os.stat(path)
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {_strerror(exc)}") from None
    size = st.st_size
    if row is not None and row.inode == st.st_ino and row.size == size and (
            finished_after is None or row.offset >= size):
        return  # unchanged since last read (and no last line waiting for its newline to be said)
    try:
        kind = compression(path)
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {_strerror(exc)}") from None
    if kind is not None and (not compressed or kind not in READABLE):
        rep.unread_files += 1
        how = "read it with 'mysched history import'" if kind in READABLE else "decompress it first"
        _problem(rep, f"{path}: {kind}-compressed; {how}", on_problem, malformed=False)
        return
    # A compressed file is finished (rotated): it is read to its end, last line included, and
    # its offsets count decompressed bytes, so only its inode, size and first bytes compare.
    if kind is not None and row is not None and row.inode == st.st_ino and row.size == size:
        return
    finished = kind is not None or finished_after is not None and now - st.st_mtime >= finished_after
    offset = line = 0
    try:
        # Same inode, not shorter, same first bytes: the same file grown. Anything else
        # (rotated, truncated, replaced — inodes get reused) is read from the start.
        if row is not None and row.inode == st.st_ino and (kind is not None or row.offset <= size) and (
                not row.head or row.head == _head(path, HEAD_BYTES if kind else row.offset)):
            offset = row.offset
            line = row.line if row.line is not None else _count_lines(path, offset)
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {_strerror(exc)}") from None
    rep.files += 1
    batch = AccountingBatch(trust_all=trust_all)
    pos, n, done_n, flushed = offset, 0, 0, 0
    records, stopped = 0, False
    head = _head(path, HEAD_BYTES) if kind else ""

    def flush(done: bool) -> None:
        # `size` = "read to the end of a file this big": set only once at the end, so a
        # kill between batches leaves a position that does not look complete.
        res = store.store_accounting(batch, {
            "path": path, "inode": st.st_ino, "offset": pos, "size": (size if kind else max(size, pos)) if done
            else (None if kind else pos), "line": line + done_n, "head": head or _head(path, pos), "updated": now})
        rep.records_added += res.added + res.promoted
        rep.duplicates += res.duplicates
        rep.promoted += res.promoted
        for s in res.suspects:
            rep.suspicious += 1
            why = ("inside another record's account= value (qsub -A with a newline)" if s["reason"] == "inside" else
                   "no S record nor start of mysched's with this job id, owner and start")
            _suspect(rep, f"{s['path']}:{s['line']}: suspicious E record of job {s['job_id'][:60]} "
                     f"({s['user'][:40]}/{s['grp'][:40]}, {(s['end'] - s['start']) * s['cores'] / 3600:,.1f} "
                     f"core-hours): {why}; not charged", on_problem)
        batch.clear()

    try:
        for item, at in iter_file(path, offset, first_line=line + 1, partial=finished, kind=kind):
            n += 1
            rep.lines += 1
            if isinstance(item, Inside):
                records += 1
                rep.inside += 1
                if item.forged is not None and charged_run(item.forged.type, item.forged.attrs):
                    _take(item.forged, path, line + n, batch.inside, rep, None, quiet=True)
                else:
                    _problem(rep, str(item), on_problem, malformed=False)
            elif isinstance(item, LineProblem):
                _problem(rep, str(item), on_problem)
                records += item.headed and item.record is None
                if item.record is not None:
                    records += 1
                    _record(item.record, path, line + n, batch, rep, on_problem)
            elif item is None:
                rep.ignored += 1
            else:
                records += 1
                _record(item, path, line + n, batch, rep, on_problem)
            if at is None:
                continue  # inside a record that spans lines: no place to resume from
            pos, done_n = at, n
            if n - flushed >= BATCH_LINES:
                flush(False)
                flushed = n
            if meter is not None and n % PROGRESS_LINES == 0 and not kind:
                meter.at(pos - offset, rep.lines)
    except LogError as exc:
        stopped = True
        _problem(rep, str(exc), on_problem, always=True)
    except OSError as exc:
        if kind is None or exc.errno is not None:  # bz2 says "Invalid data stream" without an errno
            raise InputError(f"{path}: cannot read: {_strerror(exc)}") from None
        _damaged(rep, path, line + n, exc, on_problem)
    except DAMAGED as exc:
        _damaged(rep, path, line + n, exc, on_problem)
    flush(True)
    if offset == 0 and not records and size and (n or stopped or not starts_like_log(path, kind)):
        rep.not_logs.append(path)
        _problem(rep, f"{path}: not one accounting record in it (MM/DD/YYYY HH:MM:SS;TYPE;JOBID;...): not a TORQUE "
                 "or OpenPBS accounting log", on_problem, malformed=False, always=True)
        return
    if finished_after is not None and not kind and pos < size:
        rep.waiting += 1
        _problem(rep, str(LineProblem(path, line + done_n + 1, "the last line has no newline yet (pbs_server may "
                                      "be writing it): left for the next import; once the file has not changed for "
                                      f"{finished_after / 60:.0f} minutes it is read as it is")),
                 on_problem, malformed=False)
    if meter is not None:
        meter.file_done(size if kind else pos - offset)


def _record(rec: AccountingRecord, path: str, lineno: int, batch: AccountingBatch, rep: IngestReport,
            on_problem: Callable[[str], None] | None) -> None:
    """An `S` (or `T`) record as evidence of a start, an `E` record (or OpenPBS's `R` with the
    usage of the run it requeued) into the batch; others ignored."""
    if rec.type in ("S", "T"):  # started, or restarted from a checkpoint (its start= may be the new one)
        user = rec.attrs.get("user") or rec.attrs.get("owner", "").split("@")[0]
        start = rec.attrs.get("start", "")
        if user and len(user) <= 255 and len(rec.job_id) <= 255:
            batch.starts.append((rec.job_id, user, float(start) if start.isascii() and start.isdigit() else rec.time))
        rep.ignored += 1
    elif charged_run(rec.type, rec.attrs):
        _take(rec, path, lineno, batch.jobs, rep, on_problem)
    else:
        rep.ignored += 1


def _take(rec: AccountingRecord, path: str, lineno: int, into: list[Located], rep: IngestReport,
          on_problem: Callable[[str], None] | None, quiet: bool = False) -> None:
    """An `E` record into the batch, or its problem reported (`quiet`: not even that, for a
    line that is no record: it is said as suspicious, or with its own problem)."""
    dropped: list[str] = []
    try:
        into.append(Located(to_finished_job(rec, dropped), path, lineno))
        if dropped and not quiet:
            rep.repaired += 1
            _problem(rep, str(LineProblem(path, lineno, f"garbled {', '.join(dropped)} ignored; the "
                                          "wall-clock record is kept")), on_problem, malformed=False)
    except NotRun:
        rep.ignored += not quiet
    except ValueError as exc:
        if quiet:
            rep.suspicious += 1
            _suspect(rep, f"{path}:{lineno}: suspicious line inside another record's account= value (qsub -A with "
                     f"a newline), unusable as well ({exc}); not charged", on_problem)
        else:
            _problem(rep, str(LineProblem(path, lineno, str(exc))), on_problem)
    except LINE_BUGS as exc:  # one line never stops an import or a daemon
        _problem(rep, str(LineProblem(path, lineno, unexpected(exc))), on_problem)


def _suspect(rep: IngestReport, msg: str, on_problem: Callable[[str], None] | None) -> None:
    if len(rep.suspects) < MAX_PROBLEMS:
        rep.suspects.append(msg)
        if on_problem is not None:
            on_problem(msg)


def _strerror(exc: OSError) -> str:
    """An OSError's reason, a permission error named as such."""
    if isinstance(exc, PermissionError):
        return "permission denied"
    return exc.strerror or str(exc)


def _damaged(rep: IngestReport, path: str, lines: int, exc: Exception,
             on_problem: Callable[[str], None] | None) -> None:
    """A compressed file that ends early or is damaged: what came before it is kept."""
    _problem(rep, f"{path}: compressed data damaged or cut short after line {lines} ({exc}): the lines before "
             "are read, the rest is lost (being compressed right now? it is read on when it changes)",
             on_problem)


def _problem(rep: IngestReport, msg: str, on_problem: Callable[[str], None] | None, *,
             malformed: bool = True, always: bool = False) -> None:
    """Count a problem; say the first `MAX_PROBLEMS` (and, `always`, one that stops a file)."""
    rep.malformed += malformed
    if len(rep.problems) < MAX_PROBLEMS or always:
        rep.problems.append(msg)
        if on_problem is not None:
            on_problem(msg)


def accounting_files(paths: list[str], compressed: bool) -> tuple[list[str], IngestReport]:
    """Files to read, each once, by real path: directories give their ``YYYYMMDD`` files in
    name order (anything else in there is not TORQUE's); a new report naming the directories
    that hold none (a wrong path should not pass for 'nothing new')."""
    out: list[str] = []
    rep = IngestReport()
    day_file = _OLD_DAY_FILE if compressed else _DAY_FILE
    for p in paths:
        kind = path_kind(p)
        if kind == "dir":
            try:
                names = sorted(os.listdir(p))
            except OSError as exc:
                raise InputError(f"{p}: cannot list accounting directory: {_strerror(exc)}") from None
            found = [os.path.join(p, n) for n in names if day_file.match(n) and os.path.isfile(os.path.join(p, n))]
            if not found:
                rep.empty_dirs.append(p)
            out += found
        elif kind == "file":
            out.append(p)
        else:
            raise InputError(f"{p}: {kind}")
    return list(dict.fromkeys(os.path.realpath(f) for f in out)), rep


def path_kind(path: str) -> str:
    """"dir", "file", or what else `path` is, as an admin reads it: "permission denied" (a
    directory on the way unreadable), "no such accounting file or directory", "not a file
    or directory" (a FIFO or a device: it could block a read)."""
    try:
        st = os.stat(path)
    except PermissionError:
        return "permission denied (a directory on the way, or the path itself, is not readable by this user)"
    except FileNotFoundError:
        return "no such accounting file or directory"
    except OSError as exc:
        return f"cannot read: {_strerror(exc)}"
    if stat.S_ISDIR(st.st_mode):
        return "dir"
    if stat.S_ISREG(st.st_mode):
        return "file"
    return "not a file or directory (a pipe or a device: refused, it could block)"


def _head(path: str, limit: int) -> str:
    """SHA-1 of a file's first min(limit, HEAD_BYTES) bytes: tells a grown file from a new one."""
    try:
        with open(path, "rb") as f:
            return hashlib.sha1(f.read(min(HEAD_BYTES, limit))).hexdigest()
    except OSError:
        return ""


def _count_lines(path: str, offset: int) -> int:
    """Newlines before `offset` (positions stored before line numbers were)."""
    n = 0
    with open(path, "rb") as f:
        while offset > 0:
            chunk = f.read(min(offset, 1 << 20))
            if not chunk:
                break
            n += chunk.count(b"\n")
            offset -= len(chunk)
    return n


