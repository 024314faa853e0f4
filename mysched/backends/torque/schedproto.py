"""Listen for pbs_server's scheduler contacts, for event-driven cycles.

With ``scheduling = True`` pbs_server connects to its scheduler's port (15004, or
$PBS_SCHEDULER_SERVICE_PORT) on the address its own host name resolves to, from a
reserved source port, writes the command as ONE 4-byte big-endian integer and closes the
connection at once. This is not DIS: ``contact_sched``/``put_4byte`` in TORQUE's
src/server/run_sched.c (every branch from 2.5 to 6.1), read by ``get_4byte`` in
src/scheduler.cc/pbs_sched.c. No reply is expected; reading the 4 bytes and closing is the
whole handshake.

Commands seen against TORQUE 6.1: ``first`` (10) on the first contact after the server
starts, ``command`` (5) when ``scheduling`` is set to True, ``new`` (1) when a job is queued,
``term`` (2) some seconds after a job ends (its obituary), ``time`` (3) every
``scheduler_iteration`` seconds (600 by default). This listener accepts those connections
and calls `on_event` with the command's name; the service then brings the next cycle
forward.
"""

from __future__ import annotations

import logging
import socket
import struct
import threading
from typing import Callable

log = logging.getLogger("mysched")

# src/include/sched_cmds.h (SCH_SCHEDULE_NULL .. SCH_SCHEDULE_FIRST; 6 is unused)
COMMANDS = {0: "null", 1: "new", 2: "term", 3: "time", 4: "recycle", 5: "command", 7: "configure",
            8: "quit", 9: "ruleset", 10: "first"}


def decode_command(data: bytes) -> str:
    """The command name for the 4 bytes pbs_server sends (network byte order, as htonl
    wrote them); ValueError if fewer arrived."""
    if len(data) < 4:
        raise ValueError(f"expected 4 bytes, got {len(data)}")
    (code,) = struct.unpack("!I", data[:4])
    return COMMANDS.get(code, f"unknown({code})")


class SchedulerListener:
    """A thread accepting pbs_server's scheduler contacts on `address`."""

    def __init__(self, address: tuple[str, int] = ("127.0.0.1", 15004),
                 on_event: Callable[[str], None] = lambda reason: None) -> None:
        self.address = address
        self.on_event = on_event
        self.sock = socket.socket(socket.AF_INET6 if ":" in address[0] else socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self.sock.bind(address)
        except OSError as exc:
            self.sock.close()
            raise OSError(f"cannot listen for pbs_server events on {address[0]}:{address[1]}: "
                          f"{exc.strerror}") from None
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.events = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="mysched-events", daemon=True)

    def start(self) -> "SchedulerListener":
        self._thread.start()
        log.info("listening for pbs_server scheduler events on %s:%d", self.address[0], self.port)
        return self

    def _serve(self) -> None:
        self.sock.settimeout(0.5)
        failing = ""
        while not self._stop.is_set():
            try:
                conn, peer = self.sock.accept()
            except socket.timeout:
                continue
            except OSError as exc:
                # Out of descriptors or memory (EMFILE, ENOBUFS): the thread used to end here,
                # and events stopped for the daemon's lifetime without a word. Closed: stop.
                if self._stop.is_set() or self.sock.fileno() < 0:
                    return
                if str(exc) != failing:
                    log.error("pbs_server events: cannot accept a contact (%s); trying again", exc)
                    failing = str(exc)
                self._stop.wait(1.0)
                continue
            failing = ""
            with conn:
                conn.settimeout(5.0)
                data = b""
                try:
                    while len(data) < 4:
                        chunk = conn.recv(4 - len(data))
                        if not chunk:
                            break
                        data += chunk
                    reason = decode_command(data)
                except (OSError, ValueError) as exc:
                    log.debug("scheduler contact from %s ignored: %s", peer, exc)
                    continue
            self.events += 1
            log.debug("pbs_server event %s from %s:%d", reason, peer[0], peer[1])
            try:
                self.on_event(reason)
            except Exception:  # noqa: BLE001 - a failing callback must not kill the listener
                log.exception("event callback failed")

    def close(self) -> None:
        self._stop.set()
        try:
            self.sock.close()
        finally:
            if self._thread.is_alive():
                self._thread.join(timeout=2)
