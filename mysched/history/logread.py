"""Reading TORQUE and OpenPBS accounting files line by line, bounded: decompression, lines of at most
`MAX_LINE` bytes, files that are no log given up early, and records a newline in a job's
account string (``qsub -A``, written unescaped by pbs_server) split over several lines.

The lines themselves are parsed by `mysched.history.accounting`.
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import os
import re
import zlib
from dataclasses import dataclass, field, replace
from typing import IO, BinaryIO, Callable, Collection, Iterator

from mysched.files import open_regular
from mysched.history.openpbs import charged_run
from mysched.history.accounting import (LINE_BUGS, AccountingRecord, LineProblem, Spliced, parse_line,
                                        unexpected)

COMPRESSED = {b"\x1f\x8b": "gzip", b"BZh": "bzip2", b"\xfd7zXZ\x00": "xz", b"\x28\xb5\x2f\xfd": "zstd"}
"""Magic bytes of the compressions admins give old accounting files; all but zstd are read."""


OPENERS: dict[str, Callable[[IO[bytes]], IO[bytes]]] = {
    "gzip": lambda f: gzip.GzipFile(fileobj=f), "bzip2": bz2.BZ2File, "xz": lzma.LZMAFile}
"""How each compression of `COMPRESSED` that the standard library reads is opened (for
accounting logs and workload traces alike)."""


def compression(path: str) -> str | None:
    """The compression of a file by its first bytes (not its name), None if plain; a named
    pipe or device is refused (`files.Unsuitable`) without blocking."""
    with open_regular(path) as f:
        head = f.read(6)
    return next((name for magic, name in COMPRESSED.items() if head.startswith(magic)), None)


def open_log(path: str, kind: str | None) -> BinaryIO:
    """The file's bytes, decompressed if `kind` (from `compression`) says so; ValueError for a
    compression the standard library cannot read. Only a regular file is opened."""
    if kind is not None and kind not in OPENERS:
        raise ValueError(f"{kind}-compressed: decompress it first")
    f = open_regular(path)
    return f if kind is None else decompressing(kind, f)


def decompressing(kind: str, f: BinaryIO) -> BinaryIO:
    """`f` read through the decompressor of `kind` (one of `OPENERS`); closing it closes `f`
    too (a decompressor given a file object leaves that file open)."""
    d = OPENERS[kind](f)
    close_d = d.close

    def close() -> None:
        try:
            close_d()
        finally:
            f.close()

    d.close = close  # type: ignore[method-assign]
    return d  # type: ignore[return-value]


DAMAGED = (EOFError, zlib.error, lzma.LZMAError, gzip.BadGzipFile)
"""What reading a compressed file that ends early (still being compressed) or is damaged
raises; bz2 says OSError("Invalid data stream"), seen apart from a disk error by its errno."""


MAX_LINE = 1 << 20
"""Longest line read (bytes). TORQUE's longest records (thousands of exec_host slots, a long
Resource_List) are tens of KB; a longer line is not a record (a file of NULs, a binary) and
is skipped without ever being held in memory whole."""
MAX_SKIP = 64 << 20
"""Bytes of one over-long line skipped before the file is given up: past this it is not an
accounting log (a gzip of GiBs of NULs would otherwise be decompressed to its end)."""
MAX_JUNK = 10_000
"""Lines in a row without a record (no ``MM/DD/YYYY HH:MM:SS;`` header) after which the rest
of a file is not read: a log damaged that badly is not a log, and a gzip expanding to GiBs
of comment lines would keep an import (or a daemon's cycle) reading for ever."""
MAX_EXPANSION = 200
"""Times its own size a compressed file may expand to (plus `MAX_LINE`): accounting text
compresses 10-30 times; a compression bomb a thousand times and more."""
JOIN_WINDOW = 64
"""Lines looked at after a record whose ``account=`` value a newline cut (`_Carrier`): its
tail is the last line without a header among them."""

_BOMB = (f"the compressed data expands more than {MAX_EXPANSION} times: not an accounting log (a compression "
         "bomb?); the rest of the file is not read")
_HEADER = re.compile(r"\s*(?:\d{8}:)?\d\d/\d\d/\d{4} \d\d:\d\d:\d\d;", re.ASCII)
"""A line that begins a record (after the ``YYYYMMDD:`` prefix of concatenated logs)."""
_JOBNAME = re.compile(r"(?:^|\s)jobname=")
"""TORQUE writes ``jobname=`` right after ``account=`` (``acct_job``): where a cut record's tail begins."""


@dataclass(frozen=True, slots=True)
class Inside(LineProblem):
    """A line that is part of another record's ``account=`` value (``qsub -A`` with a newline,
    written unescaped by pbs_server), however much it looks like a record of its own: never a
    record, never evidence of a start. `forged` is what it would have said (None if nothing)."""

    forged: AccountingRecord | None = field(default=None, compare=False)


class LogError(ValueError):
    """The rest of a file cannot be read as an accounting log (over-long line, too much junk,
    a compression bomb); located, the file's earlier lines are kept."""

    def __init__(self, path: str, line: int, message: str) -> None:
        super().__init__(f"{path}:{line}: {message}")


def starts_like_log(path: str, kind: str | None = None) -> bool:
    """Whether a file begins as an accounting log does (its first line a record's header,
    perhaps still being written); False for one that cannot be read."""
    try:
        with open_log(path, kind) as f:
            head = f.read(64)
    except (OSError, ValueError, *DAMAGED):
        return False
    return _HEADER.match(_decode(head)) is not None or (len(head) < 20 and head.strip(b"0123456789/ :") == b"")


def _open_account(rec: AccountingRecord | None) -> bool:
    """An S or E record (or OpenPBS's R) whose last value is ``account=``: TORQUE and OpenPBS
    write ``jobname=`` and the rest after it, so the line ended inside the account string (a
    newline in ``qsub -A``)."""
    return (rec is not None and rec.type in "SER" and "account" in rec.attrs and "jobname" not in rec.attrs
            and next(reversed(rec.attrs)) == "account")


def _raw_lines(f: BinaryIO, path: str, lineno: int, budget: int | None
               ) -> Iterator[tuple[bytes | None, int, bool]]:
    """(line, bytes it took, whether it ended with a newline) for each line of `f`; a line
    longer than `MAX_LINE` comes as None (skipped, never held whole). `LogError` past
    `MAX_SKIP` bytes of one line, or past `budget` bytes in all (a compressed file)."""
    total = 0
    while True:
        raw = f.readline(MAX_LINE + 1)
        if not raw:
            return
        n = len(raw)
        line: bytes | None = raw
        if n > MAX_LINE and not raw.endswith(b"\n"):
            line, raw = None, b""
            while not raw.endswith(b"\n"):
                raw = f.readline(1 << 20)
                if not raw:
                    break
                n += len(raw)
                if budget is not None and total + n > budget:
                    raise LogError(path, lineno, _BOMB)
                if n > MAX_SKIP:
                    raise LogError(path, lineno, f"a line of more than {MAX_SKIP >> 20} MiB: not an accounting "
                                   "log; the rest of the file is not read")
        total += n
        if budget is not None and total > budget:
            raise LogError(path, lineno, _BOMB)
        yield line, n, raw.endswith(b"\n")
        lineno += 1


def _decode(raw: bytes) -> str:
    # a byte that is not UTF-8 (a name from a Latin-1 terminal) is kept as \xNN:
    # two such names stay two, where U+FFFD would make them one
    return raw.decode("utf-8", errors="backslashreplace")


def _item(path: str, lineno: int, text: str | None, types: Collection[str] | None
          ) -> AccountingRecord | LineProblem | None:
    """One line as `iter_file` gives it (`text` None: a line over `MAX_LINE`)."""
    if text is None:
        return LineProblem(path, lineno, f"a line longer than {MAX_LINE // 1024:,} KiB: skipped (not a record)")
    try:
        return parse_line(text, types)
    except Spliced as exc:
        return LineProblem(path, lineno, str(exc), exc.record)
    except ValueError as exc:
        return LineProblem(path, lineno, str(exc))
    except LINE_BUGS as exc:  # one line never stops a read; said as a bug
        return LineProblem(path, lineno, unexpected(exc))


def _record_or_none(text: str) -> AccountingRecord | None:
    try:
        return parse_line(text, ("S", "E", "R"))
    except (ValueError, *LINE_BUGS):
        return None


def _wanted(types: Collection[str] | None) -> Collection[str] | None:
    """The types to parse: S, E and R as well, whose ``account=`` may be cut by a newline."""
    return None if types is None else set(types) | {"S", "E", "R"}


def iter_file(path: str, start_offset: int = 0, *, first_line: int = 1, types: Collection[str] | None = None,
              partial: bool = False, kind: str | None = None
              ) -> Iterator[tuple[AccountingRecord | LineProblem | None, int | None]]:
    """``(item, byte offset after the line)`` for each complete line from `start_offset` on.

    The item is an `AccountingRecord`, a `LineProblem` (malformed line, numbered from
    `first_line`; it may carry a record found after the damage; an `Inside` is a line of
    another record's ``account=`` value) or None (blank line, type skipped, the rest of a
    record a newline cut): exactly one per line, so callers can count lines. The offset is
    None inside a record that spans lines (resume only where it is given). Offsets of a
    compressed file (`kind`) count its decompressed bytes.

    A last line without its newline is still being written: it is not returned, so a later
    read picks it up whole -- unless `partial` (the caller knows the file is finished); an `E`
    record there without its Exit_status is a problem (cut short), not a record.
    Lines are read `MAX_LINE` bytes at most; OSError, `DAMAGED` and `LogError` (a file that is
    not a log, `MAX_JUNK`, `MAX_SKIP`, `MAX_EXPANSION`) propagate.
    """
    budget = None
    if kind is not None:
        budget = MAX_EXPANSION * os.path.getsize(path) + MAX_LINE
    parse_types = _wanted(types)
    with open_log(path, kind) as f:
        f.seek(start_offset)
        lines = _Lines(f, path, start_offset, first_line, budget, partial)
        junk = 0
        for text, lineno, offset in lines:
            if text is None or not _HEADER.match(text):
                junk += 1
                if junk > MAX_JUNK:
                    raise LogError(path, lineno, f"{MAX_JUNK:,} lines in a row without an accounting record: "
                                   "not an accounting log? the rest of the file is not read")
            else:
                junk = 0
            if text is not None and not text.strip():
                yield None, offset
                continue
            item = _item(path, lineno, text, parse_types)
            if isinstance(item, AccountingRecord) and _open_account(item):
                carrier = _Carrier(path, item, lineno, offset, text or "", lines, partial)
                yield from carrier.resolve(types)
                if carrier.wait:
                    return  # the rest of the record is not written yet: read from it next time
                continue
            if isinstance(item, AccountingRecord) and types is not None and item.type not in types:
                item = None
            if isinstance(item, LineProblem) and not junk:
                item = replace(item, headed=True)
            if (not lines.complete and isinstance(item, AccountingRecord) and charged_run(item.type, item.attrs)
                    and "Exit_status" not in item.attrs):
                # TORQUE writes Exit_status right after end=, after every value that is charged:
                # without it, the end of a finished file is a record cut short (group=atl...)
                item = LineProblem(path, lineno, "the last line, without its newline, stops before Exit_status=: "
                                   "a record cut short (pbs_server stopped while writing it?): skipped")
            yield item, offset


class _Lines:
    """The decoded lines of an open log with their numbers and end offsets, with a push-back
    (a carrier's look-ahead gives back what is not its own). A last line without its newline
    ends the lines unless `partial`; `complete` says whether the last one given had one."""

    def __init__(self, f: BinaryIO, path: str, offset: int, lineno: int, budget: int | None,
                 partial: bool) -> None:
        self._raw = _raw_lines(f, path, lineno, budget)
        self.offset, self.lineno, self.partial = offset, lineno, partial
        self.complete = True
        self._back: list[tuple[str | None, int, int, bool]] = []

    def __iter__(self) -> "_Lines":
        return self

    def __next__(self) -> tuple[str | None, int, int]:
        if self._back:
            text, lineno, offset, self.complete = self._back.pop()
            return text, lineno, offset
        raw, n, newline = next(self._raw)
        if not newline and not self.partial:
            raise StopIteration  # being written: read whole next time
        self.offset += n
        lineno, self.lineno = self.lineno, self.lineno + 1
        self.complete = newline
        return (None if raw is None else _decode(raw)), lineno, self.offset

    def push_back(self, items: list[tuple[str | None, int, int, bool]]) -> None:
        self._back.extend(reversed(items))


class _Carrier:
    """An S or E record whose ``account=`` value a newline cut (`_open_account`): TORQUE
    writes ``qsub -A`` unescaped, so the account string's lines follow it -- any of which may
    look like a whole record (the forgery the issue describes) -- and the record's own tail
    (``jobname=`` ...) comes after them, on a line without a header, or at the end of the last
    line the string left open.

    Of the `JOIN_WINDOW` lines after it (up to the same job's next record cut the same way,
    its `E` after its `S`, once a tail was seen), the last line without a header ends the
    record; if none has one, the first line holding a ``jobname=`` does (the string's last
    line ran into the tail). Every line before that end is part of the account string: said as `Inside`,
    never a record, never a start. The record itself is read with its tail, so its own job is
    charged. With no end found the record is refused and the lines after it read as usual."""

    def __init__(self, path: str, rec: AccountingRecord, lineno: int, offset: int, text: str, lines: _Lines,
                 partial: bool) -> None:
        self.path, self.rec, self.lineno, self.text, self.lines = path, rec, lineno, text, lines
        self.offset = offset
        """Where the record's first line ends: where to resume when it is refused alone."""
        self.partial = partial
        self.wait = False
        """Set when the file ends before the record's tail (and may still grow)."""

    def resolve(self, types: Collection[str] | None
                ) -> Iterator[tuple[AccountingRecord | LineProblem | None, int | None]]:
        ahead: list[tuple[str | None, int, int, bool]] = []
        last_plain = -1
        at_eof = True
        named = False
        """A line so far holds a ``jobname=``: the tail may be there."""
        for text, lineno, offset in self.lines:
            line = (text, lineno, offset, self.lines.complete)
            if (last_plain >= 0 or named) and text is not None and _HEADER.match(text) and " account=" in text:
                nxt = _record_or_none(text)
                if _open_account(nxt) and nxt is not None and nxt.job_id == self.rec.job_id:
                    # the same job's E after its S, cut the same way (a short job on a quiet
                    # farm); before a tail was seen such a line is part of the account string
                    self.lines.push_back([line])
                    at_eof = False
                    break
            named = named or (text is not None and _JOBNAME.search(text) is not None)
            ahead.append(line)
            if text is not None and text.strip() and not _HEADER.match(text):
                last_plain = len(ahead) - 1
            if len(ahead) - last_plain > JOIN_WINDOW:
                at_eof = False
                break
        end, tail = -1, ""
        if last_plain >= 0:
            end, tail = last_plain, (ahead[last_plain][0] or "").strip()
        else:
            for k, (text, _, _, _) in enumerate(ahead):
                hits = list(_JOBNAME.finditer(text or ""))
                if hits:
                    end, tail = k, (text or "")[hits[-1].start():].strip()
                    break
        if end < 0 and not self.partial and at_eof:
            self.wait = True  # the file ends inside the record: it is being written
            return
        self.lines.push_back(ahead[end + 1:])
        who = f"{self.rec.job_id}'s account= value (line {self.lineno}; qsub -A with a newline)"
        if end < 0:
            yield LineProblem(self.path, self.lineno, "the account= value ends the line (qsub -A with a newline?) "
                              "and the rest of the record was not found: skipped"), self.offset
            return
        try:
            joined: AccountingRecord | LineProblem | None = parse_line(f"{self.text.rstrip()} {tail}", types)
        except ValueError as exc:
            joined = LineProblem(self.path, self.lineno, f"{exc} (its account= value ran over {end + 1} line(s))")
        yield joined, None
        for k, (text, lineno, offset, _) in enumerate(ahead[:end + 1]):
            at = offset if k == end else None
            if text is None or not _HEADER.match(text):
                yield None, at  # blank, or the tail just read with its record
                continue
            forged = _item(self.path, lineno, text, None)
            yield Inside(self.path, lineno, f"inside job {who}: not a record, never charged",
                         forged=forged if isinstance(forged, AccountingRecord) else None), at
