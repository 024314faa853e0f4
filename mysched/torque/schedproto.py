"""Listen for pbs_server's scheduler contacts, for event-driven cycles.

With ``scheduling = True`` pbs_server connects to its scheduler's port (15004 by default)
whenever a job is queued or ends, writes the command as one 4-byte big-endian integer and
closes the connection (TORQUE's src/server/run_sched.c, ``contact_sched``/``put_4byte``).
This listener accepts those connections and calls `on_event` with the command's name; the
service then brings the next cycle forward. Only loopback or configured addresses are bound.
"""

from __future__ import annotations

import logging
import socket
import struct
import threading
from typing import Callable

log = logging.getLogger("mysched")

# src/include/sched_cmds.h
COMMANDS = {0: "null", 1: "new", 2: "term", 3: "time", 4: "recycle", 5: "command", 7: "configure",
            8: "quit", 9: "ruleset", 10: "first"}


def decode_command(data: bytes) -> str:
    """The command name for the 4 bytes pbs_server sends; ValueError if incomplete."""
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
        while not self._stop.is_set():
            try:
                conn, peer = self.sock.accept()
            except socket.timeout:
                continue
            except OSError:
                return
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
            log.debug("pbs_server event %s from %s", reason, peer[0])
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
