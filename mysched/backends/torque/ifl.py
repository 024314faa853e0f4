"""TORQUE's client library (IFL) from Python, on any Python >= 3.10.

The PyPI `pbs` module (pbs-python) only ships binaries for a few CPython versions, so this
module binds ``libtorque.so.2`` directly with ctypes, using pbs-python's call names, and
uses the `pbs` module instead where it imports. Both return plain Python values:
``[(name, {attribute or "attribute.resource": value})]`` for stat calls, and always free
the C structures they got (pbs_statfree).

Error reporting follows libtorque 6.1 as read in its source: stat calls return NULL and
set the global ``pbs_errno``; ``pbs_runjob`` returns the error code (on a broken connection
it returns 15033 while ``pbs_errno`` may hold -1); ``pbs_connect`` returns a negative code
(``-15010`` unknown host, ``-111`` ECONNREFUSED) and leaves ``pbs_errno`` alone.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import glob
import os
import threading
from typing import Callable, Protocol, Sequence

from mysched.errors import ServerUnavailable

StatResult = list[tuple[str, dict[str, str]]]
PackedRows = list[tuple[bytes, bytes]]
"""Stat rows as libtorque's bytes: (object name, its attributes packed by `pack`)."""
RESOURCED = frozenset({b"Resource_List", b"resources_used"})
"""Attributes whose entries carry a resource name (``Resource_List.nodes``)."""
SKIPPED = frozenset({b"Walltime"})
"""Attributes the server adds unasked and that change every second (``Walltime.Remaining``
of running jobs): left out of packed rows, so an unchanged job packs the same each cycle."""

SEARCH = ("/usr/lib64/libtorque.so.2", "/usr/lib/libtorque.so.2", "/usr/local/lib/libtorque.so.2",
          "/opt/torque/lib/libtorque.so.2", "/usr/lib/x86_64-linux-gnu/libtorque.so.2")
ENV = "MYSCHED_LIBTORQUE"


class IFL(Protocol):
    """The IFL calls the backend uses. Stat calls return [] on error (see `errno`)."""

    def connect(self, server: str | None) -> int: ...
    def disconnect(self, conn: int) -> None: ...
    def statjob(self, conn: int, attrs: Sequence[str], extend: str | None = None) -> StatResult: ...
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


def find_client_library(product: str, library: str, key: str, env: str, explicit: str | None,
                        candidates: Callable[[], list[str]]) -> str:
    """Path of a product's client library: the explicit path (setting `key`), $`env`, else the
    first of `candidates()` that exists (a bare name is left to the loader)."""
    for given, origin in ((explicit, key), (os.environ.get(env), f"${env}")):
        if given:
            if os.path.isabs(given) and not os.path.exists(given):
                raise ServerUnavailable(f"{product} client library {given} ({origin}) does not exist")
            return given
    for c in candidates():
        if os.path.isabs(c) and not os.path.exists(c):
            continue
        return c
    raise ServerUnavailable(f"{product} client library {library} not found; install {product}'s client "
                            f"package or set {key} (or ${env}) to its path")


def find_libtorque(explicit: str | None = None) -> str:
    """Path of libtorque.so.2: the explicit path, $MYSCHED_LIBTORQUE, the linker's, or usual places."""
    def candidates() -> list[str]:
        found = ctypes.util.find_library("torque")
        return ([found] if found else []) + list(SEARCH) + sorted(glob.glob("/opt/torque*/lib/libtorque.so*"))

    return find_client_library("TORQUE", "libtorque.so.2", "server.libtorque", ENV, explicit, candidates)


def convert_status(head, names: dict | None = None) -> StatResult:
    """A C ``batch_status`` list as plain Python; does not free it. `names` caches the
    decoded ``(name, resource)`` keys across calls. Plain ctypes field access measured
    fastest (docs/design/torque-ifl.md)."""
    out: StatResult = []
    cache = {} if names is None else names
    node = head
    while node:
        bs = node[0]
        attrs: dict[str, str] = {}
        a = bs.attribs
        while a:
            at = a[0]
            key = (at.name, at.resource)
            k = cache.get(key)
            if k is None:
                name, res = key
                k = (name or b"").decode(errors="replace")
                if res:
                    k = f"{k}.{res.decode(errors='replace')}"
                cache[key] = k
            v = at.value
            attrs[k] = v.decode(errors="replace") if v else ""
            a = at.next
        n = bs.name
        out.append((n.decode(errors="replace") if n else "", attrs))
        node = bs.next
    return out


class _AttrlAt(ctypes.Structure):
    """``struct attrl`` read in place (`from_address`), its links as plain addresses: faster
    to walk than through POINTER fields (docs/design/torque-ifl.md)."""

    _fields_ = [("next", ctypes.c_void_p), ("name", ctypes.c_char_p), ("resource", ctypes.c_char_p),
                ("value", ctypes.c_char_p), ("op", ctypes.c_int)]


class _BatchStatusAt(ctypes.Structure):
    _fields_ = [("next", ctypes.c_void_p), ("name", ctypes.c_char_p), ("attribs", ctypes.c_void_p),
                ("text", ctypes.c_char_p)]


def _c_walk():  # noqa: ANN202 - the compiled module's convert, or None
    """The C walk (`_packed.c`, built at install where a compiler is), None where it was not
    built or $MYSCHED_PYTHON_WALK is set (to compare the two, or rule the C one out)."""
    if os.environ.get("MYSCHED_PYTHON_WALK"):
        return None
    try:
        from mysched.backends.torque import _packed  # type: ignore[attr-defined]
    except ImportError:
        return None
    return _packed.convert


_C_WALK = _c_walk()
_RESOURCED_T, _SKIPPED_T = tuple(RESOURCED), tuple(SKIPPED)


def convert_packed(head) -> PackedRows:
    """A C ``batch_status`` list as packed rows, in one pass: per object its name and one
    bytes value, NUL-joined ``name, value`` (``Resource_List.res, value`` for resources) in
    the server's order, nothing decoded. A job that did not change packs to the same bytes
    as last cycle, so the backend can keep its `Job` without reading it again.

    Walked in C where the optional extension was built (a tenth of the Python walk's time:
    at 20,000 OpenPBS jobs the Python walk alone took most of what the server's reply
    took), else in Python (`convert_packed_py`); both give the same rows."""
    if _C_WALK is not None:
        return _C_WALK(ctypes.cast(head, ctypes.c_void_p).value or 0, _RESOURCED_T, _SKIPPED_T)
    return convert_packed_py(head)


def convert_packed_py(head) -> PackedRows:
    """`convert_packed` in Python. Reads only the fields it needs (``resource`` only of
    `RESOURCED` attributes): ctypes field access is the cost here -- reading each entry's
    words at once (struct over the address) or its strings with ``string_at`` measured
    slower than the fields of `_AttrlAt` (docs/design/torque-ifl.md, openpbs-read.md)."""
    out: PackedRows = []
    p = ctypes.cast(head, ctypes.c_void_p).value
    attrl_at, status_at = _AttrlAt.from_address, _BatchStatusAt.from_address
    resourced, skipped = RESOURCED, SKIPPED
    while p:
        bs = status_at(p)
        vals: list[bytes] = []
        a = bs.attribs
        while a:
            at = attrl_at(a)
            n = at.name or b""
            if n in resourced:
                n = n + b"." + (at.resource or b"")
            elif n in skipped:
                a = at.next
                continue
            vals.append(n)
            vals.append(at.value or b"")
            a = at.next
        out.append((bs.name or b"", b"\0".join(vals)))
        p = bs.next
    return out


def pack(attrs: dict[str, str]) -> bytes:
    """Attributes as `convert_packed` packs them (for IFLs that hand back dicts)."""
    vals: list[str] = []
    for k, v in attrs.items():
        if k.partition(".")[0].encode() in SKIPPED:
            continue
        vals.append(k)
        vals.append(v)
    return "\0".join(vals).encode(errors="replace")


def unpack(packed: bytes) -> dict[str, str]:
    """The attributes of a packed row (decoded; undecodable bytes replaced)."""
    if not packed:
        return {}
    tokens = packed.decode(errors="replace").split("\0")
    return dict(zip(tokens[0::2], tokens[1::2]))


def _api_timeout(timeout: float | None) -> None:
    """Bound pbs_connect's waits: it reads $PBSAPITIMEOUT on every call (300 s without it),
    also for the trqauthd exchange, where a stopped pbs_server otherwise hangs it for minutes.
    Set once, before the daemon's other threads start; an administrator's value is kept."""
    if timeout:
        os.environ.setdefault("PBSAPITIMEOUT", str(max(1, int(timeout))))


class CtypesIFL:
    """libtorque through ctypes. Calls are serialised: IFL keeps global state (pbs_errno).

    `timeout` (seconds) bounds every wait for the server: each call's (libtorque's global
    ``pbs_tcp_timeout``, set after each connect) and pbs_connect's ($PBSAPITIMEOUT). A call
    that times out fails like a broken connection (pbs_errno 15033), after `timeout` seconds.
    """

    PRODUCT = "TORQUE"
    """Whose client library this binds (named in errors); a subclass binds another product's
    IFL where only how the library is found and how pbs_errno is reached differ."""

    def __init__(self, path: str | None = None, timeout: float | None = None) -> None:
        self.path = self._find(path)
        try:
            lib = ctypes.CDLL(self.path)
        except OSError as exc:
            raise ServerUnavailable(f"cannot load {self.PRODUCT} client library {self.path}: {exc}") from None
        self.lib = lib
        self.timeout = timeout
        _api_timeout(timeout)
        self.lock = threading.Lock()
        self._names: dict = {}
        try:
            self._bind(lib)
        except AttributeError as exc:
            raise ServerUnavailable(f"{self.path} is not a usable {self.PRODUCT} client library: {exc}") from None
        self._errno = self._errno_cell(lib)
        self._tcp_timeout = self._timeout_cell(lib)
        libc = ctypes.CDLL(None)
        self._free = libc.free
        self._free.argtypes = [ctypes.c_void_p]
        self._free.restype = None

    @staticmethod
    def _find(path: str | None) -> str:
        return find_libtorque(path)

    def _errno_cell(self, lib: ctypes.CDLL):  # noqa: ANN205 - anything with an int `value`
        """pbs_errno: libtorque's global int."""
        try:
            return ctypes.c_int.in_dll(lib, "pbs_errno")
        except ValueError:
            raise ServerUnavailable(f"{self.path} does not export pbs_errno; not a TORQUE client library") from None

    @staticmethod
    def _timeout_cell(lib: ctypes.CDLL):  # noqa: ANN205
        """libtorque's global ``pbs_tcp_timeout`` (time_t), None where it has none."""
        try:
            return ctypes.c_long.in_dll(lib, "pbs_tcp_timeout")
        except ValueError:
            return None

    def _bind(self, lib: ctypes.CDLL) -> None:
        stat_args = [ctypes.c_int, ctypes.c_char_p, ctypes.POINTER(_Attrl), ctypes.c_char_p]
        for fn in ("pbs_statjob", "pbs_statnode", "pbs_statque"):
            f = getattr(lib, fn)
            f.argtypes = stat_args
            f.restype = ctypes.POINTER(_BatchStatus)
        lib.pbs_statserver.argtypes = [ctypes.c_int, ctypes.POINTER(_Attrl), ctypes.c_char_p]
        lib.pbs_statserver.restype = ctypes.POINTER(_BatchStatus)
        lib.pbs_statfree.argtypes = [ctypes.POINTER(_BatchStatus)]
        lib.pbs_statfree.restype = None
        lib.pbs_connect.argtypes = [ctypes.c_char_p]
        lib.pbs_connect.restype = ctypes.c_int
        self._connect_ext = getattr(lib, "pbs_connect_ext", None)  # 6.x: can keep stderr quiet
        if self._connect_ext is not None:
            self._connect_ext.argtypes = [ctypes.c_char_p, ctypes.c_bool]
            self._connect_ext.restype = ctypes.c_int
        lib.pbs_disconnect.argtypes = [ctypes.c_int]
        lib.pbs_disconnect.restype = ctypes.c_int
        lib.pbs_default.argtypes = []
        lib.pbs_default.restype = ctypes.c_char_p  # a static buffer
        lib.pbs_runjob.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p]
        lib.pbs_runjob.restype = ctypes.c_int
        lib.pbs_geterrmsg.argtypes = [ctypes.c_int]
        lib.pbs_geterrmsg.restype = ctypes.c_void_p  # maybe strdup'ed: see errmsg
        self._strerror = getattr(lib, "pbs_strerror", None)
        if self._strerror is not None:
            self._strerror.argtypes = [ctypes.c_int]
            self._strerror.restype = ctypes.c_char_p  # static table

    @staticmethod
    def _select(attrs: Sequence[str]) -> list[_Attrl]:
        """A linked attrl list naming the attributes to return (kept alive by the caller)."""
        items = [_Attrl() for _ in attrs]
        for i, (a, name) in enumerate(zip(items, attrs)):
            a.name = name.encode()
            if i + 1 < len(items):
                a.next = ctypes.pointer(items[i + 1])
        return items

    def _stat(self, fn, conn: int, ident: str | None, attrs: Sequence[str], packed: bool = False,  # noqa: ANN001
              extend: str | None = None):
        sel = self._select(attrs)
        first, ext = ctypes.pointer(sel[0]) if sel else None, extend.encode() if extend else None
        with self.lock:
            self._errno.value = 0
            head = fn(conn, ident.encode(), first, ext) if ident is not None else fn(conn, first, ext)
            if not head:
                return []
            try:
                return convert_packed(head) if packed else convert_status(head, self._names)
            finally:
                self.lib.pbs_statfree(head)

    def statjob_packed(self, conn: int, attrs: Sequence[str], queue: str = "", extend: str | None = None) -> PackedRows:
        """`statjob` as packed rows (see `convert_packed`): the daemon's read path. With a
        `queue`, only that queue's jobs (libtorque then holds one queue's reply at a time)."""
        return self._stat(self.lib.pbs_statjob, conn, queue, attrs, packed=True, extend=extend)

    def default(self) -> str:
        """The default server name (the client's server_name file), as pbs_default gives it."""
        with self.lock:
            return (self.lib.pbs_default() or b"").decode(errors="replace")

    def connect(self, server: str | None) -> int:
        """A connection handle (>= 0), or a negative error code (-PBSE_* or -errno)."""
        name = server.encode() if server else None
        with self.lock:
            c = self._connect_ext(name, True) if self._connect_ext is not None else self.lib.pbs_connect(name)
            if c >= 0 and self.timeout and self._tcp_timeout is not None:
                self._tcp_timeout.value = max(1, int(self.timeout))
            return c

    def disconnect(self, conn: int) -> None:
        with self.lock:
            self.lib.pbs_disconnect(conn)

    def statjob(self, conn: int, attrs: Sequence[str], extend: str | None = None) -> StatResult:
        """All jobs; with `extend` ``"summarize_arrays"`` arrays' parents (``2007[].vm``, in no
        other listing) and plain jobs, no sub-job, as ``qstat`` without ``-t`` (req_stat.c)."""
        return self._stat(self.lib.pbs_statjob, conn, "", attrs, extend=extend)

    def statjob_one(self, conn: int, job_id: str, attrs: Sequence[str]) -> StatResult:
        return self._stat(self.lib.pbs_statjob, conn, job_id, attrs)

    def statnode(self, conn: int, attrs: Sequence[str]) -> StatResult:
        return self._stat(self.lib.pbs_statnode, conn, "", attrs)

    def statque(self, conn: int, attrs: Sequence[str]) -> StatResult:
        return self._stat(self.lib.pbs_statque, conn, "", attrs)

    def statserver(self, conn: int, attrs: Sequence[str]) -> StatResult:
        return self._stat(self.lib.pbs_statserver, conn, None, attrs)

    def runjob(self, conn: int, job_id: str, location: str | None) -> int:
        """0, or the error code pbs_runjob returned (see also `errno`)."""
        with self.lock:
            self._errno.value = 0
            return self.lib.pbs_runjob(conn, job_id.encode(), location.encode() if location else None, None)

    def errno(self) -> int:
        return self._errno.value

    def errmsg(self, conn: int) -> str:
        """The server's text for the last error on `conn`, else libtorque's text for pbs_errno."""
        with self.lock:
            text = b""
            if conn >= 0:
                # Since TORQUE 4.2.5 pbs_geterrmsg returns a strdup'ed copy (ours to free),
                # before it the connection's own buffer: two calls tell which.
                p = self.lib.pbs_geterrmsg(conn)
                if p:
                    text = ctypes.string_at(p)
                    q = self.lib.pbs_geterrmsg(conn)
                    if q and q != p:
                        self._free(p)
                        self._free(q)
            if not text and self._errno.value > 0 and self._strerror is not None:
                text = self._strerror(self._errno.value) or b""
        return text.decode(errors="replace").strip()

    def strerror(self, code: int) -> str:
        """libtorque's text for a PBSE_* code ('' if it has none)."""
        if code <= 0 or self._strerror is None:
            return ""
        with self.lock:
            return (self._strerror(code) or b"").decode(errors="replace").strip()


class PbsModuleIFL:
    """The same calls through pbs-python's `pbs` module (where its binary imports).

    Its stat calls hand back Python lists of C ``batch_status`` pointers, freed here with
    ``pbs.pbs_statfree`` after conversion. Its `pbs.error()` texts use pre-TORQUE-2.4 error
    numbers, so messages come from ``pbs_geterrmsg`` only.
    """

    def __init__(self, pbs, timeout: float | None = None) -> None:  # noqa: ANN001 - the imported module
        self.pbs = pbs
        self.timeout = timeout
        _api_timeout(timeout)  # pbs_connect also sets pbs_tcp_timeout from it
        self.lock = threading.Lock()

    def _attrl(self, attrs: Sequence[str]):
        lst = self.pbs.new_attrl(len(attrs))
        for i, name in enumerate(attrs):
            lst[i].name = name
        return lst

    def _convert(self, result) -> StatResult:
        out: StatResult = []
        if not result:
            return out
        try:
            for bs in result:
                attrs = {}
                for a in bs.attribs:
                    name = f"{a.name}.{a.resource}" if a.resource else a.name
                    attrs[name] = a.value or ""
                out.append((bs.name, attrs))
        finally:
            self.pbs.pbs_statfree(result)
        return out

    def default(self) -> str:
        with self.lock:
            return self.pbs.pbs_default() or ""

    def connect(self, server: str | None) -> int:
        with self.lock:
            return self.pbs.pbs_connect(server or self.pbs.pbs_default())

    def disconnect(self, conn: int) -> None:
        with self.lock:
            self.pbs.pbs_disconnect(conn)

    def statjob(self, conn: int, attrs: Sequence[str], extend: str | None = None) -> StatResult:
        with self.lock:
            return self._convert(self.pbs.pbs_statjob(conn, "", self._attrl(attrs), extend))

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
            return self.pbs.pbs_runjob(conn, job_id, location or "", None)

    def errno(self) -> int:
        return int(self.pbs.get_error())

    def errmsg(self, conn: int) -> str:
        if conn < 0:
            return ""
        with self.lock:
            return str(self.pbs.pbs_geterrmsg(conn) or "").strip()


def load_ifl(libtorque: str | None = None, timeout: float | None = None) -> IFL:
    """The `pbs` module where it imports (and no library path was asked for), else ctypes."""
    if not libtorque and not os.environ.get(ENV):
        try:
            import pbs  # type: ignore[import-not-found]

            if hasattr(pbs, "pbs_statfree") and hasattr(pbs, "get_error"):
                return PbsModuleIFL(pbs, timeout)
        except Exception:  # noqa: BLE001 - ImportError or a broken binary: fall back to ctypes
            pass
    return CtypesIFL(libtorque, timeout)
