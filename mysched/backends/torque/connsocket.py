"""The socket behind an IFL connection, so that a connection given up can be cut.

pbs_disconnect sends pbs_server a disconnect request and then reads until the server closes
the connection. Its only bound is ``alarm(5)``, and the kernel hands that SIGALRM to a thread
that does not block it, in practice the main one: in the daemon the call runs in a worker
thread, so nothing ended the read. A
pbs_server that keeps its connections open but answers nothing (seen on TORQUE 6.1-dev,
deadlocked on a job's mutex) timed the cycle's call out after `server.timeout` and then held
the daemon in pbs_disconnect -- no cycle, no log line -- until pbs_server was killed.

The one socket a connect leaves open (new in ``/proc/self/fd`` after it) is remembered.
A connection given up (broken or timed out) is shut down before pbs_disconnect, so its read
ends at once; an orderly disconnect gets `GRACE` seconds, as libtorque meant. The socket is
reached through a duplicate of its descriptor taken before pbs_disconnect closes it, and
only if it is still the same socket (device and inode), so a descriptor number the process
reused for something else is never touched. Where /proc is missing, or a connect opened
more than one socket (another thread opened one meanwhile), nothing is remembered and
pbs_disconnect runs as before.
"""

from __future__ import annotations

import contextlib
import os
import socket
import stat
import threading
from typing import Callable, Iterator

GRACE = 5.0
"""Seconds an orderly pbs_disconnect may wait for pbs_server (libtorque's own alarm)."""

FD_DIR = "/proc/self/fd"

Ident = tuple[int, int, int]
"""(descriptor, device, inode) of an open socket."""


def open_sockets() -> dict[int, tuple[int, int]] | None:
    """Descriptor -> (device, inode) of every open socket; None where it cannot be told."""
    try:
        names = os.listdir(FD_DIR)
    except OSError:
        return None
    out = {}
    for name in names:
        try:
            fd = int(name)
            st = os.fstat(fd)
        except (ValueError, OSError):  # the listing's own descriptor, or one closed meanwhile
            continue
        if stat.S_ISSOCK(st.st_mode):
            out[fd] = (st.st_dev, st.st_ino)
    return out


def new_socket(before: dict[int, tuple[int, int]] | None) -> Ident | None:
    """The one socket open now that was not in `before` (None: none, several, or unknown)."""
    if before is None:
        return None
    now = open_sockets()
    if now is None:
        return None
    fresh = [(fd, *ino) for fd, ino in now.items() if before.get(fd) != ino]
    return fresh[0] if len(fresh) == 1 else None


def _hold(ident: Ident | None) -> int | None:
    """A duplicate descriptor of the socket `ident` names, if it is still that socket."""
    if ident is None:
        return None
    fd, dev, ino = ident
    try:
        dup = os.dup(fd)
    except OSError:
        return None
    try:
        st = os.fstat(dup)
    except OSError:
        st = None
    if st is None or (st.st_dev, st.st_ino) != (dev, ino):
        os.close(dup)
        return None
    return dup


def _shut(fd: int) -> None:
    """Shut the socket down both ways: a read blocked on it returns at once."""
    s = socket.socket(fileno=os.dup(fd))
    try:
        s.shutdown(socket.SHUT_RDWR)
    except OSError:  # already closed by the peer, or never connected
        pass
    finally:
        s.close()


def disconnect(ident: Ident | None, call: Callable[[], object], *, lost: bool, grace: float | None = None) -> None:
    """Run `call` (pbs_disconnect) on the connection whose socket is `ident`: cut first when
    the connection is `lost`, else cut only if the call still waits after `grace` seconds."""
    held = _hold(ident)
    if held is None:
        call()
        return
    timer = None
    try:
        if lost:
            _shut(held)
        else:
            timer = threading.Timer(GRACE if grace is None else grace, _shut, (held,))
            timer.daemon = True
            timer.start()
        call()
    finally:
        if timer is not None:
            timer.cancel()
            timer.join()
        os.close(held)


@contextlib.contextmanager
def deadline(ident: Ident | None, seconds: float | None) -> Iterator[None]:
    """Cut the connection whose socket is `ident` if the call inside has not returned within
    `seconds`: for a client library that waits for a reply longer than the caller may (libpbs
    reads every reply with a time-out of at least 600 s). The call then fails as on a broken
    connection, after `seconds`; without a known socket or a time nothing is bounded."""
    held = _hold(ident) if seconds else None
    if held is None:
        yield
        return
    timer = threading.Timer(seconds, _shut, (held,))
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
        timer.join()
        os.close(held)
