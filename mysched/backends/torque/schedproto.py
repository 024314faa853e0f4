"""Listen for pbs_server's scheduler contacts, for event-driven cycles.

With ``scheduling = True`` pbs_server connects to its scheduler's port (15004, or
$PBS_SCHEDULER_SERVICE_PORT) on the address its own host name resolves to, from a
reserved source port, writes the command as ONE 4-byte big-endian integer and closes the
connection at once. This is not DIS: ``contact_sched``/``put_4byte`` in TORQUE's
src/server/run_sched.c (every branch from 2.5 to 6.1; 2.5 leaves the closing to the
scheduler), read by ``get_4byte`` in src/scheduler.cc/pbs_sched.c. No reply is expected;
reading the 4 bytes and closing is the whole handshake.

Commands seen against TORQUE 6.1: ``first`` (10) on the first contact after the server
starts, ``command`` (5) when ``scheduling`` is set to True, ``new`` (1) when a job is queued,
``term`` (2) some seconds after a job ends (its obituary), ``time`` (3) every
``scheduler_iteration`` seconds (600 by default). ``recycle`` (4) is the only other one the
server sends.

Anyone on a host that reaches the port can connect too, so a contact counts only if it
looks like pbs_server's, as pbs_sched checks (``server_command``):

* it comes from an address of pbs_server's host (`ContactRule.networks`; pbs_sched:
  localhost, its own host and ``$clienthost`` lines);
* from a port below 1024 when pbs_server runs as root: its ``client_to_svr`` binds one with
  bindresvport before every contact, and gives the contact up if it cannot (only a TORQUE
  configured with --disable-privports does not) -- so requiring one loses no event from a
  standard build, while no user can send from such a port;
* it is exactly one of those command codes, in 4 bytes.

Anything else is refused at once and counted by reason (`REFUSALS`). One thread serves every
connection without blocking (selectors): a contact that sends nothing is closed after
`deadline` seconds, and at most `max_open` contacts are open at once (the oldest is dropped
for a new one), so idle connections cannot stall pbs_server's events.
"""

from __future__ import annotations

import collections
import functools
import ipaddress
import logging
import selectors
import socket
import struct
import threading
import time
from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

from mysched.config.values import host_or_network

log = logging.getLogger("mysched")

# src/include/sched_cmds.h (SCH_SCHEDULE_NULL .. SCH_SCHEDULE_FIRST; 6 is unused)
COMMANDS = {0: "null", 1: "new", 2: "term", 3: "time", 4: "recycle", 5: "command", 7: "configure",
            8: "quit", 9: "ruleset", 10: "first"}
SERVER_COMMANDS = frozenset({1, 2, 3, 4, 5, 10})
"""The codes pbs_server sends (``svr_do_schedule``'s values and SCH_SCHEDULE_FIRST in
pbsd_main.c, svr_jobfunc.c, req_jobobit.c, svr_func.c, run_sched.c of 6.1)."""
REFUSALS = ("address", "port", "malformed", "timeout", "dropped")
"""Why a contact was refused: not from an allowed address (daemon.event_allow); not from a
reserved port; not a pbs_server command; nothing within the deadline; too many open."""
RESERVED_PORTS = 1024
"""IPPORT_RESERVED: only root binds a port below it."""
Network = ipaddress.IPv4Network | ipaddress.IPv6Network
LOOPBACK: tuple[Network, ...] = (ipaddress.ip_network("127.0.0.0/8"), ipaddress.ip_network("::1/128"))


def decode_command(data: bytes) -> str:
    """The command name for the 4 bytes pbs_server sends (network byte order, as htonl
    wrote them); ValueError if fewer arrived."""
    if len(data) < 4:
        raise ValueError(f"expected 4 bytes, got {len(data)}")
    (code,) = struct.unpack("!I", data[:4])
    return COMMANDS.get(code, f"unknown({code})")


def server_command(data: bytes) -> str | None:
    """The command's name if `data` is one pbs_server sends -- 4 bytes, a known code --
    else None."""
    if len(data) != 4:
        return None
    (code,) = struct.unpack("!I", data)
    return COMMANDS[code] if code in SERVER_COMMANDS else None


def _address(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    """A peer's address; an IPv4 one mapped into IPv6 (a dual-stack socket) as IPv4."""
    addr = ipaddress.ip_address(host.split("%", 1)[0])
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        return addr.ipv4_mapped
    return addr


@dataclass(frozen=True)
class ContactRule:
    """Who may contact the event port: from one of `networks`, and from a reserved port if
    `reserved_port`. `note` says where the rule came from, for the log."""

    networks: tuple[Network, ...] = LOOPBACK
    reserved_port: bool = False
    note: str = ""

    def refusal(self, host: str, port: int) -> str | None:
        """Why a contact from (host, port) is refused ("address", "port"), or None."""
        if not _allowed(self.networks, host):
            return "address"
        if self.reserved_port and port >= RESERVED_PORTS:
            return "port"
        return None

    def describe(self) -> str:
        nets = ", ".join(str(n.network_address) if n.num_addresses == 1 else str(n) for n in self.networks)
        port = "from ports below 1024" if self.reserved_port else "from any port"
        return f"contacts accepted from {nets}, {port}" + (f" ({self.note})" if self.note else "")


@functools.lru_cache(maxsize=4096)
def _allowed(networks: tuple[Network, ...], host: str) -> bool:
    """Is `host` in one of `networks`? Cached: a flood comes from few addresses, and parsing
    one costs more than the rest of a refusal."""
    try:
        addr = _address(host)
    except ValueError:
        return False
    return any(addr.version == n.version and addr in n for n in networks)


Resolver = Callable[[str], Sequence[str]]


def resolve(host: str) -> list[str]:
    """Every address `host` resolves to (OSError if none)."""
    infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    return sorted({str(_address(info[4][0])) for info in infos})


def _networks(addresses: Iterable[str]) -> list[Network]:
    return [ipaddress.ip_network(a) for a in addresses]


def contact_rule(server_host: str, allow: Sequence[str] = (), reserved_port: bool | None = None, *,
                 resolver: Resolver = resolve, local_names: Callable[[], Sequence[str]] | None = None,
                 server_uid: Callable[[], int | None] | None = None,
                 port_start: Callable[[], int | None] | None = None) -> ContactRule:
    """The rule for a daemon of pbs_server `server_host` (server.url's host; "" the default
    server, on this host), `allow` (daemon.event_allow) and `reserved_port`
    (daemon.event_reserved_port). OSError if no allowed address is left.

    Without `allow`: the addresses `server_host` resolves to; when the server is this host,
    loopback and the addresses of this host's name too (pbs_server contacts the address its
    host name resolves to, from that address). `reserved_port` None (auto): required, unless
    pbs_server is seen running here as another user than root -- a standard build can contact
    from nothing else (see the module docstring)."""
    if local_names is None:
        local_names = lambda: (socket.gethostname(), socket.getfqdn())  # noqa: E731
    if server_uid is None:
        from mysched.backends.torque.home import running_server_uid
        server_uid = running_server_uid
    host = server_host or "localhost"
    try:
        server_addrs = set(resolver(host))
    except OSError as exc:
        if not allow:
            raise OSError(f"pbs_server's host {host[:200]} does not resolve ({exc.strerror or exc}): "
                          "name the addresses to accept contacts from in daemon.event_allow") from None
        server_addrs = set()
    here: set[str] = set()
    for name in local_names():
        try:
            here.update(resolver(name))
        except OSError:
            pass
    local = host == "localhost" or bool(server_addrs & here) or any(_address(a).is_loopback for a in server_addrs)
    notes = []
    nets: list[Network] = []
    if allow:
        for entry in allow:
            parsed = host_or_network(entry)
            if isinstance(parsed, str):
                try:
                    nets += _networks(resolver(parsed))
                except OSError as exc:
                    log.error("daemon.event_allow: host %s does not resolve (%s): no contact is accepted from it",
                              parsed[:200], exc.strerror or exc)
            else:
                nets.append(parsed)
        if not nets:
            raise OSError("no address of daemon.event_allow resolves: every contact would be refused")
        notes.append("daemon.event_allow")
    else:
        addrs = server_addrs | (here if local else set())
        nets = _networks(sorted(addrs, key=lambda a: (_address(a).version, _address(a))))
        if local:
            nets = list(LOOPBACK) + [n for n in nets if not n.network_address.is_loopback]
            notes.append(f"pbs_server's host {host}, and loopback: it runs here")
        else:
            notes.append(f"pbs_server's host {host}")
    if reserved_port is None:
        uid = server_uid() if local else None
        reserved_port = uid is None or uid == 0
        notes.append("pbs_server runs here as root" if uid == 0 else
                     f"pbs_server runs here as uid {uid}: a build without privileged ports" if uid is not None else
                     "pbs_server not running here yet: it sends from them as root" if local else
                     "as pbs_server sends them as root")
    start = (port_start or unprivileged_port_start)() if reserved_port and local else None
    if start is not None and start < RESERVED_PORTS:
        log.warning("net.ipv4.ip_unprivileged_port_start is %d on this host: any user may send from a port "
                    "from %d up, so a port below 1024 proves less than pbs_server's contact (set it back to 1024)",
                    start, start)
    return ContactRule(tuple(nets), reserved_port, "; ".join(notes))


def unprivileged_port_start(path: str = "/proc/sys/net/ipv4/ip_unprivileged_port_start") -> int | None:
    """The lowest port any user may bind on this host (Linux 4.11+; 1024 by default); None
    where it cannot be read."""
    try:
        with open(path, encoding="ascii") as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


class _Contact:
    """One open connection: what it sent so far, and until when it may send the rest."""

    __slots__ = ("sock", "peer", "data", "deadline")

    def __init__(self, sock: socket.socket, peer: tuple[str, int], deadline: float) -> None:
        self.sock, self.peer, self.data, self.deadline = sock, peer, b"", deadline


class SchedulerListener:
    """A thread accepting pbs_server's scheduler contacts on `address`.

    `on_event(name)` is called for each contact `rule` allows that is a pbs_server command;
    `on_contact(result)` for every contact: "accepted" or a reason of `REFUSALS` (the
    metrics). Both run on the listener's thread and must be quick."""

    def __init__(self, address: tuple[str, int] = ("127.0.0.1", 15004),
                 on_event: Callable[[str], None] = lambda reason: None, *, rule: ContactRule | None = None,
                 on_contact: Callable[[str], None] = lambda result: None, deadline: float = 2.0,
                 max_open: int = 64, clock: Callable[[], float] = time.monotonic) -> None:
        self.address = address
        self.on_event = on_event
        self.on_contact = on_contact
        self.rule = rule if rule is not None else ContactRule()
        self.deadline = deadline
        self.max_open = max_open
        self.clock = clock
        self.sock = socket.socket(socket.AF_INET6 if ":" in address[0] else socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self.sock.bind(address)
        except OSError as exc:
            self.sock.close()
            raise OSError(f"cannot listen for pbs_server events on {address[0]}:{address[1]}: "
                          f"{exc.strerror}") from None
        self.sock.listen(socket.SOMAXCONN)  # a burst queues in the kernel, not as refused connects
        self.port = self.sock.getsockname()[1]
        self.events = 0
        self.counts: collections.Counter[str] = collections.Counter()
        """Contacts by result ("accepted" and `REFUSALS`), for tests and the log."""
        self._open: dict[socket.socket, _Contact] = {}
        """Open contacts, oldest first."""
        self._said: set[tuple[str, str]] = set()
        self._stop = threading.Event()
        self._wake_r, self._wake_w = socket.socketpair()
        self._thread = threading.Thread(target=self._serve, name="mysched-events", daemon=True)

    def start(self) -> "SchedulerListener":
        self._thread.start()
        log.info("listening for pbs_server scheduler events on %s:%d: %s", self.address[0], self.port,
                 self.rule.describe())
        return self

    # -- the loop ------------------------------------------------------------------------------
    def _serve(self) -> None:
        sel = selectors.DefaultSelector()
        self.sock.setblocking(False)
        sel.register(self.sock, selectors.EVENT_READ, "listen")
        sel.register(self._wake_r, selectors.EVENT_READ, "wake")
        paused_until: float | None = None
        failing = ""
        try:
            while not self._stop.is_set():
                now = self.clock()
                if paused_until is not None and now >= paused_until:
                    sel.register(self.sock, selectors.EVENT_READ, "listen")
                    paused_until = None
                due = [c.deadline for c in self._open.values()] + ([paused_until] if paused_until else [])
                timeout = max(0.0, min(due) - now) if due else None
                for key, _ in sel.select(timeout):
                    if key.data == "listen":
                        error = self._accept_some(sel)
                        if error is not None:
                            # Out of descriptors or memory (EMFILE, ENOBUFS): the listening socket
                            # stays readable, so it rests a second; said once per kind of failure.
                            if self._stop.is_set() or self.sock.fileno() < 0:
                                return
                            if error != failing:
                                log.error("pbs_server events: cannot accept a contact (%s); trying again", error)
                                failing = error
                            sel.unregister(self.sock)
                            paused_until = self.clock() + 1.0
                        else:
                            failing = ""
                    elif key.data == "wake":
                        return
                    else:
                        self._read(sel, key.data)
                self._expire(sel, self.clock())
        finally:
            for contact in list(self._open.values()):
                self._close(sel, contact)
            sel.close()

    def _accept_some(self, sel: selectors.BaseSelector) -> str | None:
        """Take the contacts waiting (a bounded batch: reads go on during a flood); the
        accept error's text if one failed."""
        for _ in range(256):
            try:
                conn, peer = self.sock.accept()
            except (BlockingIOError, InterruptedError):
                return None
            except OSError as exc:
                return str(exc)
            refused = self.rule.refusal(peer[0], peer[1])
            if refused is not None:
                conn.close()
                self._refused(refused, peer)
                continue
            contact = _Contact(conn, (peer[0], peer[1]), self.clock() + self.deadline)
            if self._read(sel, contact, registered=False):
                continue  # pbs_server's 4 bytes were there already
            conn.setblocking(False)
            if len(self._open) >= self.max_open:
                oldest = next(iter(self._open.values()))
                self._close(sel, oldest)
                self._refused("dropped", oldest.peer)
            self._open[conn] = contact
            sel.register(conn, selectors.EVENT_READ, contact)
        return None

    def _read(self, sel: selectors.BaseSelector, contact: _Contact, registered: bool = True) -> bool:
        """Read what `contact` sent; True once it is settled (accepted or refused, closed)."""
        try:
            chunk = contact.sock.recv(8, socket.MSG_DONTWAIT)
        except (BlockingIOError, InterruptedError):
            return False
        except OSError:
            chunk = b""  # reset by the peer: it sent no command
        contact.data += chunk
        if chunk and len(contact.data) < 4:
            return False  # a command cut in two segments: the rest follows
        name = server_command(contact.data)
        self._close(sel, contact, registered)
        if name is None:
            self._refused("malformed", contact.peer, contact.data)
            return True
        self._accepted(name, contact.peer)
        return True

    def _expire(self, sel: selectors.BaseSelector, now: float) -> None:
        for contact in [c for c in self._open.values() if c.deadline <= now]:
            self._close(sel, contact)
            self._refused("timeout", contact.peer, contact.data)

    def _close(self, sel: selectors.BaseSelector, contact: _Contact, registered: bool = True) -> None:
        if self._open.pop(contact.sock, None) is not None and registered:
            try:
                sel.unregister(contact.sock)
            except (KeyError, ValueError):
                pass
        contact.sock.close()

    # -- outcomes -----------------------------------------------------------------------------
    def _accepted(self, name: str, peer: tuple[str, int]) -> None:
        self.events += 1
        self._count("accepted")
        log.debug("pbs_server event %s from %s:%d", name, peer[0], peer[1])
        try:
            self.on_event(name)
        except Exception:  # noqa: BLE001 - a failing callback must not kill the listener
            log.exception("event callback failed")

    def _refused(self, reason: str, peer: tuple[str, int], data: bytes = b"") -> None:
        """Count a refusal; say the first of each reason from each address (a flood is a
        count, not a log), the rest at debug level."""
        self._count(reason)
        first = (reason, peer[0]) not in self._said and len(self._said) < 1024
        if first:
            self._said.add((reason, peer[0]))
        elif not log.isEnabledFor(logging.DEBUG):
            return
        why = {
            "address": "not an address pbs_server contacts from (daemon.event_allow)",
            "port": f"from port {peer[1]}, not a port below 1024 as pbs_server sends from as root "
                    "(daemon.event_reserved_port = false for a TORQUE built with --disable-privports)",
            "malformed": f"not a pbs_server scheduler command ({len(data)} byte(s): {data[:8].hex() or 'none'})",
            "timeout": f"sent no command within {self.deadline:g} s",
            "dropped": f"{self.max_open} contacts open at once: the oldest is closed for a new one",
        }[reason]
        log.log(logging.WARNING if first else logging.DEBUG,
                "scheduler contact from %s:%d refused: %s%s", peer[0], peer[1], why,
                "; more from this address are counted (mysched_event_contacts_refused_total)" if first else "")

    def _count(self, result: str) -> None:
        self.counts[result] += 1
        try:
            self.on_contact(result)
        except Exception:  # noqa: BLE001 - counting must not kill the listener
            log.exception("event contact count failed")

    def close(self) -> None:
        self._stop.set()
        try:
            self._wake_w.send(b"x")
        except OSError:
            pass
        try:
            if self._thread.is_alive():
                self._thread.join(timeout=2)
        finally:
            self.sock.close()
            self._wake_r.close()
            self._wake_w.close()
