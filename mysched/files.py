"""Reading and writing files so that bad input cannot hang, flood or crash mysched, and a full
disk cannot cost an earlier good file. Every layer but the pure core reads or writes files,
so this sits beside `mysched.errors`, below the layers.

Reads: what is not a regular file -- a named pipe, a device such as /dev/zero, a directory --
is refused before a byte is read, without blocking (opened with O_NONBLOCK, then fstat: a
status.json that was a named pipe hung `mysched jobs` for ever, one linked to /dev/zero ended
in MemoryError). Whole-file reads have a size cap; line-by-line reads (traces, logs, series)
cap the length of a line and, for compressed input, the bytes it may expand to.

Writes: a temporary file beside the target, fsync, rename -- or nothing: on any failure the
temporary file is removed and the earlier file stays as it was (`simulate --json F` on a full
disk had replaced a good F with a broken one).
"""

from __future__ import annotations

import errno
import io
import os
import secrets
import stat
from typing import IO, BinaryIO, Callable

from mysched.errors import InputError, MyschedError

MAX_LINE = 1 << 20
"""The longest line a line-by-line reader takes (1 MiB): SWF lines are about 100 bytes, an
accounting record's a few hundred (a few KB for a job on many nodes); 4 GiB of NULs is one
line with no end."""

_CHUNK = 1 << 16

_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


class Unsuitable(OSError):
    """A file refused before it is read: not a regular file, or larger than its reader takes.
    An `OSError`, so the callers' handling of unreadable files (and their messages, which show
    its `strerror`) applies as it stands; `kind` (what a non-regular file is) and `size` (of
    one too large) for a caller that words it its own way."""

    kind: str | None = None
    size: int | None = None


def kind_of(mode: int) -> str:
    """What a file that is not a regular file is, in words ("a named pipe (FIFO)", ...)."""
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def size_text(n: float) -> str:
    """A byte count in words: 1 MiB, 3.5 GiB, 812 bytes."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n:.0f} bytes"


def os_reason(exc: OSError) -> str:
    """An `OSError` in words, without Python's ``[Errno N]`` or a repeat of the file name."""
    return exc.strerror or "cannot be read"


def open_regular(path: str | os.PathLike[str]) -> BinaryIO:
    """Open a regular file for reading in binary; `Unsuitable` (an `OSError`) for anything else.

    Checked on the open descriptor (fstat), so the file read is the file checked; opened
    non-blocking, so a named pipe without a writer does not wait for one."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)  # a tty never becomes ours
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            exc = Unsuitable(errno.EINVAL, f"{kind_of(mode)}, not a regular file", os.fspath(path))
            exc.kind = kind_of(mode)
            raise exc
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_capped(path: str | os.PathLike[str], limit: int, what: str = "file") -> bytes:
    """The bytes of a regular file of at most `limit` bytes; `Unsuitable` for a larger one
    (also one that grows past it while read, or says it is empty and is not, as /proc does)."""
    with open_regular(path) as f:
        size = os.fstat(f.fileno()).st_size
        data = f.read(limit + 1) if size <= limit else b""
    if size > limit or len(data) > limit:
        exc = Unsuitable(errno.EFBIG, f"{size_text(max(size, len(data)))}: larger than a {what} may be "
                         f"({size_text(limit)})", os.fspath(path))
        exc.size = max(size, len(data))
        raise exc
    return data


class LineCapped(io.BufferedIOBase):
    """A binary stream whose lines may be at most `max_line` bytes and whose whole at most
    `max_bytes`: what breaks either raises `error` "PATH:LINE: ...", as soon as the bytes come,
    before a reader holds them as one string. Checked per chunk, not per line (a line-by-line
    check cost a tenth of a trace's load time)."""

    def __init__(self, inner: IO[bytes], path: str, what: str, *, max_line: int = MAX_LINE,
                 max_bytes: int | None = None, why_max: str = "",
                 error: type[MyschedError] = InputError) -> None:
        super().__init__()
        self.inner, self.path, self.what, self.error = inner, path, what, error
        self.max_line, self.max_bytes, self.why_max = max_line, max_bytes, why_max
        self.total = 0
        self.lines = 0  # line breaks before the current chunk
        self.run = 0  # bytes since the last line break

    def readable(self) -> bool:
        return True

    def read1(self, size: int | None = -1) -> bytes:
        data = self.inner.read1(_CHUNK if size is None or size < 0 or size > _CHUNK else size)
        self._check(data)
        return data

    def read(self, size: int | None = -1) -> bytes:
        if size is not None and size >= 0:
            return self.read1(size)
        out = []
        while chunk := self.read1(_CHUNK):
            out.append(chunk)
        return b"".join(out)

    def _check(self, data: bytes) -> None:
        n = len(data)
        self.total += n
        last = max(data.rfind(b"\n"), data.rfind(b"\r"))
        if last < 0:
            self.run += n
            if self.run > self.max_line:
                self._refuse(self.lines + 1, f"a line of over {size_text(self.max_line)}")
        else:
            firsts = [i for i in (data.find(b"\n"), data.find(b"\r")) if i >= 0]
            if self.run + min(firsts) > self.max_line:
                self._refuse(self.lines + 1, f"a line of over {size_text(self.max_line)}")
            self.run = n - 1 - last
            self.lines += data.count(b"\n")
        if self.max_bytes is not None and self.total > self.max_bytes:
            self._refuse(self.lines + 1, f"expands to over {size_text(self.max_bytes)}{self.why_max}")

    def _refuse(self, line: int, why: str) -> None:
        raise self.error(f"{self.path}:{line}: {why}: not {self.what}")

    def close(self) -> None:
        try:
            self.inner.close()
        finally:
            super().close()


def text_lines(stream: IO[bytes], path: str, what: str, *, max_bytes: int | None = None,
               why_max: str = "", error: type[MyschedError] = InputError) -> io.TextIOWrapper:
    """`stream` as lines of text, capped as `LineCapped` caps them. Undecodable bytes become
    U+FFFD, so binary junk shows as malformed lines, not as an exception halfway through."""
    capped = LineCapped(stream, path, what, max_bytes=max_bytes, why_max=why_max, error=error)
    return io.TextIOWrapper(capped, encoding="utf-8", errors="replace", newline=None)


def write_atomic(path: str | os.PathLike[str], data: bytes | Callable[[BinaryIO], object], *,
                 mode: int | None = None, follow: bool = True) -> str:
    """Write `path` whole or not at all: `data`'s bytes (or what `data(f)` writes to the open
    file) go to a temporary file beside it, which is flushed to disk and renamed over `path`.
    On failure the `OSError` is raised with the earlier file intact and no temporary file left.

    `mode`: the new file's permissions; by default the earlier file's, else 0666 less the
    umask (as `open` gives). With `follow` (a file the user named), a symbolic link is
    followed -- the file it names is replaced, the link kept -- and a device or named pipe
    (/dev/null, /dev/stdout) is written in place: there is no earlier file there to keep.
    Without (the daemon's files in its state directory), whatever is at `path` is replaced: a
    link planted there must not send a root daemon's writes elsewhere, nor a pipe block it."""
    target = os.path.realpath(path) if follow else os.path.abspath(path)
    try:
        st: os.stat_result | None = os.stat(target) if follow else os.lstat(target)
    except FileNotFoundError:
        st = None
    write: Callable[[BinaryIO], object] = data if callable(data) else (lambda f: f.write(data))
    if st is not None and not stat.S_ISREG(st.st_mode) and follow:
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(errno.EISDIR, "is a directory", os.fspath(path))
        with open(target, "wb") as f:
            write(f)
        return os.fspath(path)
    directory, base = os.path.split(target)
    fd, tmp = _create_temp(directory, base)
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        if mode is not None or (st is not None and stat.S_ISREG(st.st_mode)):
            os.chmod(tmp, mode if mode is not None else stat.S_IMODE(st.st_mode))  # type: ignore[union-attr]
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    _fsync_dir(directory)
    return os.fspath(path)


def temp_prefix(name: str) -> str:
    """How the temporary files of `write_atomic` for a file called `name` begin (they end in
    ``.tmp``): for sweeping up after a writer killed between writing and renaming."""
    return f".{name}."


def _create_temp(directory: str, base: str) -> tuple[int, str]:
    """A new file beside the target, created with 0666 less the umask, as `open` creates one."""
    for _ in range(100):
        tmp = os.path.join(directory, f"{temp_prefix(base)}{secrets.token_hex(4)}.tmp")
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666), tmp
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free temporary file name", directory)


def _fsync_dir(directory: str) -> None:
    """The rename itself on disk too (best effort: not every filesystem opens a directory)."""
    try:
        fd = os.open(directory or ".", os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_output(path: str, data: bytes | Callable[[BinaryIO], object], what: str) -> str:
    """`write_atomic` for a file the user named (``--json F``, ``--plot F``): a failure is an
    `InputError` "PATH: cannot write WHAT: why", the earlier file kept."""
    try:
        return write_atomic(path, data)
    except OSError as exc:
        raise InputError(f"{path}: cannot write {what}: {os_reason(exc)}") from None
