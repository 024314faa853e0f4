"""Opening a workload file -- a trace, an accounting log, plain or compressed -- as lines of
text that cannot flood the memory or block: a regular file only, lines of at most 1 MiB, and
compressed input expanding no more than a real trace does (`mysched.files` holds the caps)."""

from __future__ import annotations

import io
import os

from mysched.errors import InputError
from mysched.files import open_regular, os_reason, size_text, text_lines
from mysched.history.logread import COMPRESSED, DAMAGED, OPENERS, decompressing

READ_ERRORS = (OSError, *DAMAGED)
"""What reading a damaged (e.g. truncated) compressed file may raise."""
MAX_EXPANSION = 50
"""How many times its size a compressed trace may expand to: the archive's gzip files expand 4
to 8 times, accounting logs about 10 to 20; a 3 MB gzip of 3 GiB of comments, 1,000."""
MIN_EXPANDED = 32 << 20
"""What any compressed trace may expand to, however small (a trace of identical lines packs
tighter than 50 to 1)."""


def open_text(path: str | os.PathLike[str], what: str = "a workload trace") -> io.TextIOWrapper:
    """Open a plain or compressed (gzip, bzip2, xz: by magic bytes; zstd is refused) regular
    file as lines of text, each at most `MAX_LINE` bytes, a compressed one expanding to at most
    `MAX_EXPANSION` times its size (at least `MIN_EXPANDED`); what breaks a cap is an
    `InputError` naming `what` the file is not, with its line, as soon as the bytes come (a
    gzip of 4 GiB of NULs was a MemoryError). A named pipe or device is refused without
    blocking (`--trace /dev/zero` read for ever).

    Undecodable bytes become U+FFFD, so binary junk shows as malformed lines, not as an
    exception halfway through."""
    try:
        f = open_regular(path)
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {os_reason(exc)}") from None
    try:
        magic = f.peek(6)[:6]
        size = os.fstat(f.fileno()).st_size
    except OSError as exc:
        f.close()
        raise InputError(f"{path}: cannot read: {os_reason(exc)}") from None
    kind = next((name for prefix, name in COMPRESSED.items() if magic.startswith(prefix)), None)
    if kind is None:
        return text_lines(f, os.fspath(path), what)
    if kind not in OPENERS:
        f.close()
        raise InputError(f"{path}: {kind}-compressed: decompress it first")
    return text_lines(decompressing(kind, f), os.fspath(path), what, max_bytes=max(MIN_EXPANDED, MAX_EXPANSION * size),
                      why_max=f" from {size_text(size)} compressed (real traces expand 4 to 20 times)")


def read_failure(exc: BaseException) -> str:
    """What went wrong reading a (compressed) file, in words: not Python's or zlib's."""
    if isinstance(exc, EOFError):
        return "compressed data cut short (a copy not finished?)"
    if isinstance(exc, DAMAGED) or (
            isinstance(exc, OSError) and exc.errno is None):  # bz2: OSError("Invalid data stream")
        return "compressed data damaged"
    return os_reason(exc) if isinstance(exc, OSError) else "unreadable"
