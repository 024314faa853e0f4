"""TORQUE's client library (IFL) from Python, on any Python >= 3.10.

The PyPI `pbs` module (pbs-python) only ships binaries for a few CPython versions, so this
module binds ``libtorque.so.2`` directly with ctypes, using pbs-python's call names, and
uses the `pbs` module instead where it imports. Both return plain Python values:
``[(name, {attribute or "attribute.resource": value})]`` for stat calls, and always free
the C structures they got.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import glob
import os
import threading
from typing import Protocol, Sequence

from ..errors import ServerUnavailable

StatResult = list[tuple[str, dict[str, str]]]

SEARCH = ("/usr/lib64/libtorque.so.2", "/usr/lib/libtorque.so.2", "/usr/local/lib/libtorque.so.2",
          "/opt/torque/lib/libtorque.so.2", "/usr/lib/x86_64-linux-gnu/libtorque.so.2")


class IFL(Protocol):
    """The IFL calls the backend uses."""

    def connect(self, server: str | None) -> int: ...
    def disconnect(self, conn: int) -> None: ...
    def statjob(self, conn: int, attrs: Sequence[str]) -> StatResult: ...
    def statjob_one(self, conn: int, job_id: str, attrs: Sequence[str]) -> StatResult: ...
    def statnode(self, conn: int, attrs: Sequence[str]) -> StatResult: ...
    def statque(self, conn: int, attrs: Sequence[str]) -> StatResult: ...
    def statserver(self, conn: int, attrs: Sequence[str]) -> StatResult: ...
    def runjob(self, conn: int, job_id: str, location: str | None) -> int: ...
    def errno(self) -> int: ...
    def errmsg(self, conn: int) -> str: ...


class _Attrl(ctypes.Structure):
    pass


_Attrl._fields_ = [("next", ctypes.POINTER(_Attrl)), ("name", ctypes.c_char_p), ("resource", ctypes.c_char_p),
                   ("value", ctypes.c_char_p), ("op", ctypes.c_int)]


class _BatchStatus(ctypes.Structure):
    pass


_BatchStatus._fields_ = [("next", ctypes.POINTER(_BatchStatus)), ("name", ctypes.c_char_p),
                         ("attribs", ctypes.POINTER(_Attrl)), ("text", ctypes.c_char_p)]


def find_libtorque(explicit: str | None = None) -> str:
    """Path of libtorque.so.2: the explicit path, $MYSCHED_LIBTORQUE, the linker's, or usual places."""
    if explicit:
        if os.path.isabs(explicit) and not os.path.exists(explicit):
            raise ServerUnavailable(f"TORQUE client library {explicit} (server.libtorque) does not exist")
        return explicit
    candidates = [os.environ.get("MYSCHED_LIBTORQUE")]
    found = ctypes.util.find_library("torque")
    if found:
        candidates.append(found)
    candidates += list(SEARCH) + sorted(glob.glob("/opt/torque*/lib/libtorque.so*"))
    for c in candidates:
        if not c:
            continue
        if os.path.isabs(c) and not os.path.exists(c):
            continue
        return c
    raise ServerUnavailable("TORQUE client library libtorque.so.2 not found; install TORQUE's client "
                            "package or set server.libtorque (or MYSCHED_LIBTORQUE) to its path")


class CtypesIFL:
    """libtorque through ctypes. Calls are serialised: IFL keeps global state."""

    def __init__(self, path: str | None = None) -> None:
        self.path = find_libtorque(path)
        try:
            lib = ctypes.CDLL(self.path)
        except OSError as exc:
            raise ServerUnavailable(f"cannot load TORQUE client library {self.path}: {exc}") from None
        self.lib = lib
        self.lock = threading.Lock()
        lib.pbs_connect.argtypes = [ctypes.c_char_p]
        lib.pbs_connect.restype = ctypes.c_int
        lib.pbs_disconnect.argtypes = [ctypes.c_int]
        lib.pbs_disconnect.restype = ctypes.c_int
        for fn in ("pbs_statjob", "pbs_statnode", "pbs_statque"):
            f = getattr(lib, fn)
            f.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.POINTER(_Attrl), ctypes.c_char_p]
            f.restype = ctypes.POINTER(_BatchStatus)
        lib.pbs_statserver.argtypes = [ctypes.c_int, ctypes.POINTER(_Attrl), ctypes.c_char_p]
        lib.pbs_statserver.restype = ctypes.POINTER(_BatchStatus)
        lib.pbs_statfree.argtypes = [ctypes.POINTER(_BatchStatus)]
        lib.pbs_statfree.restype = None
        lib.pbs_runjob.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p]
        lib.pbs_runjob.restype = ctypes.c_int
        lib.pbs_geterrmsg.argtypes = [ctypes.c_int]
        lib.pbs_geterrmsg.restype = ctypes.c_char_p
        try:
            lib.pbs_strerror.argtypes = [ctypes.c_int]
            lib.pbs_strerror.restype = ctypes.c_char_p
        except AttributeError:
            pass
        try:
            self._errno = ctypes.c_int.in_dll(lib, "pbs_errno")
        except ValueError:
            self._errno = None

    @staticmethod
    def _select(attrs: Sequence[str]):
        """A linked attrl list naming the attributes to return (kept alive by the caller)."""
        items = [_Attrl() for _ in attrs]
        for i, (a, name) in enumerate(zip(items, attrs)):
            a.name = name.encode()
            if i + 1 < len(items):
                a.next = ctypes.pointer(items[i + 1])
        return items

    def _convert(self, head) -> StatResult:
        out: StatResult = []
        node = head
        while node:
            bs = node.contents
            attrs: dict[str, str] = {}
            a = bs.attribs
            while a:
                at = a.contents
                name = (at.name or b"").decode(errors="replace")
                if at.resource:
                    name = f"{name}.{at.resource.decode(errors='replace')}"
                attrs[name] = (at.value or b"").decode(errors="replace")
                a = at.next
            out.append(((bs.name or b"").decode(errors="replace"), attrs))
            node = bs.next
        return out

    def _stat(self, fn, conn: int, ident: str, attrs: Sequence[str]) -> StatResult:
        sel = self._select(attrs)
        with self.lock:
            if self._errno is not None:
                self._errno.value = 0
            head = fn(conn, ident.encode(), ctypes.pointer(sel[0]) if sel else None, None)
            try:
                return self._convert(head)
            finally:
                if head:
                    self.lib.pbs_statfree(head)

    def connect(self, server: str | None) -> int:
        with self.lock:
            return self.lib.pbs_connect(server.encode() if server else None)

    def disconnect(self, conn: int) -> None:
        with self.lock:
            self.lib.pbs_disconnect(conn)

    def statjob(self, conn: int, attrs: Sequence[str]) -> StatResult:
        return self._stat(self.lib.pbs_statjob, conn, "", attrs)

    def statjob_one(self, conn: int, job_id: str, attrs: Sequence[str]) -> StatResult:
        return self._stat(self.lib.pbs_statjob, conn, job_id, attrs)

    def statnode(self, conn: int, attrs: Sequence[str]) -> StatResult:
        return self._stat(self.lib.pbs_statnode, conn, "", attrs)

    def statque(self, conn: int, attrs: Sequence[str]) -> StatResult:
        return self._stat(self.lib.pbs_statque, conn, "", attrs)

    def statserver(self, conn: int, attrs: Sequence[str]) -> StatResult:
        sel = self._select(attrs)
        with self.lock:
            head = self.lib.pbs_statserver(conn, ctypes.pointer(sel[0]) if sel else None, None)
            try:
                return self._convert(head)
            finally:
                if head:
                    self.lib.pbs_statfree(head)

    def runjob(self, conn: int, job_id: str, location: str | None) -> int:
        with self.lock:
            if self._errno is not None:
                self._errno.value = 0
            return self.lib.pbs_runjob(conn, job_id.encode(), location.encode() if location else None, None)

    def errno(self) -> int:
        return self._errno.value if self._errno is not None else 0

    def errmsg(self, conn: int) -> str:
        with self.lock:
            msg = self.lib.pbs_geterrmsg(conn)
            if not msg and self.errno():
                try:
                    msg = self.lib.pbs_strerror(self.errno())
                except AttributeError:
                    msg = None
        return (msg or b"").decode(errors="replace").strip()


class PbsModuleIFL:
    """The same calls through pbs-python's `pbs` module (where its binary imports)."""

    def __init__(self, pbs) -> None:  # noqa: ANN001 - the imported module
        self.pbs = pbs
        self.lock = threading.Lock()

    def _attrl(self, attrs: Sequence[str]):
        lst = self.pbs.new_attrl(len(attrs))
        for i, name in enumerate(attrs):
            lst[i].name = name
        return lst

    def _convert(self, result) -> StatResult:
        out: StatResult = []
        for bs in result or []:
            attrs = {}
            for a in bs.attribs:
                name = f"{a.name}.{a.resource}" if a.resource else a.name
                attrs[name] = a.value
            out.append((bs.name, attrs))
        return out

    def connect(self, server: str | None) -> int:
        with self.lock:
            return self.pbs.pbs_connect(server or self.pbs.pbs_default())

    def disconnect(self, conn: int) -> None:
        with self.lock:
            self.pbs.pbs_disconnect(conn)

    def statjob(self, conn: int, attrs: Sequence[str]) -> StatResult:
        with self.lock:
            return self._convert(self.pbs.pbs_statjob(conn, "", self._attrl(attrs), None))

    def statjob_one(self, conn: int, job_id: str, attrs: Sequence[str]) -> StatResult:
        with self.lock:
            return self._convert(self.pbs.pbs_statjob(conn, job_id, self._attrl(attrs), None))

    def statnode(self, conn: int, attrs: Sequence[str]) -> StatResult:
        with self.lock:
            return self._convert(self.pbs.pbs_statnode(conn, "", self._attrl(attrs), None))

    def statque(self, conn: int, attrs: Sequence[str]) -> StatResult:
        with self.lock:
            return self._convert(self.pbs.pbs_statque(conn, "", self._attrl(attrs), None))

    def statserver(self, conn: int, attrs: Sequence[str]) -> StatResult:
        with self.lock:
            return self._convert(self.pbs.pbs_statserver(conn, self._attrl(attrs), None))

    def runjob(self, conn: int, job_id: str, location: str | None) -> int:
        with self.lock:
            return self.pbs.pbs_runjob(conn, job_id, location, None)

    def errno(self) -> int:
        return int(getattr(self.pbs, "error", lambda: (0, ""))()[0])

    def errmsg(self, conn: int) -> str:
        try:
            return str(self.pbs.pbs_geterrmsg(conn) or self.pbs.error()[1])
        except Exception:  # noqa: BLE001
            return ""


def load_ifl(libtorque: str | None = None) -> IFL:
    """The `pbs` module where it imports (and no explicit library was asked for), else ctypes."""
    if not libtorque:
        try:
            import pbs  # type: ignore[import-not-found]

            return PbsModuleIFL(pbs)
        except Exception:  # noqa: BLE001 - ImportError or a broken binary: fall back to ctypes
            pass
    return CtypesIFL(libtorque)
