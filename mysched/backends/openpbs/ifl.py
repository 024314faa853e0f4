"""OpenPBS's client library (``libpbs.so``) through the same ctypes binding as TORQUE's.

The calls, the ``attrl``/``batch_status`` structs and the stat replies are TORQUE's (both
come from the same PBS source), so `CtypesIFL` serves both; what differs is bound here:
``pbs_errno`` is per thread, reached through ``__pbs_errno_location()``; error texts come
from ``pbse_to_txt``; vnodes are listed by ``pbs_statvnode`` (``pbs_statnode`` sums them per
host on the client side); finished jobs are listed only when asked for (extend ``x``), and
array sub-jobs only with ``t``. libpbs reads every reply with a time-out of at least 600 s
whatever ``pbs_tcp_timeout`` says, so the backend bounds its calls itself
(`mysched.backends.torque.connsocket.deadline`).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
from typing import Sequence

from mysched.backends.torque.ifl import CtypesIFL, PackedRows, StatResult, _BatchStatus, _Attrl, find_client_library
from mysched.errors import ServerUnavailable

SEARCH = ("/opt/pbs/lib/libpbs.so", "/usr/pbs/lib/libpbs.so", "/usr/lib64/libpbs.so", "/usr/lib/libpbs.so",
          "/usr/local/lib/libpbs.so")
ENV = "MYSCHED_LIBPBS"
CONF = "/etc/pbs.conf"


def _pbs_exec(conf: str | None = None) -> str | None:
    """PBS_EXEC (where OpenPBS is installed): the environment's, else /etc/pbs.conf's."""
    if os.environ.get("PBS_EXEC"):
        return os.environ["PBS_EXEC"]
    try:
        with open(conf or CONF, encoding="utf-8", errors="replace") as fh:
            for line in fh.read(65536).splitlines():
                key, eq, value = line.partition("=")
                if eq and key.strip() == "PBS_EXEC" and value.strip():
                    return value.strip()
    except OSError:
        pass
    return None


def find_libpbs(explicit: str | None = None) -> str:
    """Path of libpbs.so: the explicit path, $MYSCHED_LIBPBS, PBS_EXEC's, the linker's, or usual places."""
    def candidates() -> list[str]:
        home = _pbs_exec()
        found = ctypes.util.find_library("pbs")
        return ([os.path.join(home, "lib", "libpbs.so")] if home else []) + list(SEARCH) + ([found] if found else [])

    return find_client_library("OpenPBS", "libpbs.so", "server.libpbs", ENV, explicit, candidates)


class _ThreadErrno:
    """OpenPBS's pbs_errno: a macro for ``*__pbs_errno_location()``, one per thread, read
    and set through the function each time (the daemon calls from a worker thread)."""

    def __init__(self, locate) -> None:  # noqa: ANN001 - a ctypes function
        self._locate = locate

    @property
    def value(self) -> int:
        return self._locate().contents.value

    @value.setter
    def value(self, v: int) -> None:
        self._locate().contents.value = v


class OpenPBSIFL(CtypesIFL):
    """libpbs through ctypes: `CtypesIFL` with OpenPBS's errno, error texts and vnodes."""

    PRODUCT = "OpenPBS"

    @staticmethod
    def _find(path: str | None) -> str:
        return find_libpbs(path)

    def _errno_cell(self, lib: ctypes.CDLL):  # noqa: ANN205
        try:
            locate = lib["__pbs_errno_location"]
        except AttributeError:
            raise ServerUnavailable(f"{self.path} does not export __pbs_errno_location; not an OpenPBS client "
                                    "library") from None
        locate.argtypes = []
        locate.restype = ctypes.POINTER(ctypes.c_int)
        return _ThreadErrno(locate)

    @staticmethod
    def _timeout_cell(lib: ctypes.CDLL):  # noqa: ANN205
        return None  # per thread, and raised to 600 s for every reply anyway: see the module's doc

    def _bind(self, lib: ctypes.CDLL) -> None:
        super()._bind(lib)
        lib.pbs_statvnode.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.POINTER(_Attrl), ctypes.c_char_p]
        lib.pbs_statvnode.restype = ctypes.POINTER(_BatchStatus)
        txt = getattr(lib, "pbse_to_txt", None)
        if txt is not None:
            txt.argtypes = [ctypes.c_int]
            txt.restype = ctypes.c_char_p  # a static table
        self._strerror = txt

    def statvnode(self, conn: int, attrs: Sequence[str]) -> StatResult:
        """Every vnode (``pbsnodes -av``), not the per-host sums `statnode` gives."""
        return self._stat(self.lib.pbs_statvnode, conn, "", attrs)

    def statjob_one(self, conn: int, job_id: str, attrs: Sequence[str]) -> StatResult:
        """One job, finished ones too (state F, with job_history_enable)."""
        return self._stat(self.lib.pbs_statjob, conn, job_id, attrs, extend="x")

    def statjob_packed(self, conn: int, attrs: Sequence[str], queue: str = "", extend: str | None = "t") -> PackedRows:
        """Jobs as packed rows, array sub-jobs listed one by one (extend ``t``: they are what runs)."""
        return super().statjob_packed(conn, attrs, queue, extend)
