"""A tiny sd_notify(3): tell systemd we are ready, alive, reloading or stopping.

No dependency; a no-op when ``NOTIFY_SOCKET`` is unset (not under systemd). Sending never
raises: a lost notification must not stop the scheduler.
"""

from __future__ import annotations

import logging
import os
import socket
import time

log = logging.getLogger("mysched")


def notify(state: str) -> bool:
    """Send one notification; True if it was sent."""
    addr = os.environ.get("NOTIFY_SOCKET")
    if not addr:
        return False
    if addr.startswith("@"):
        addr = "\0" + addr[1:]
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as s:
            s.connect(addr)
            # Never block the scheduler on a slow or stuck receiver.
            s.send(state.encode("utf-8"), socket.MSG_DONTWAIT)
        return True
    except OSError as exc:
        log.debug("sd_notify(%r) failed: %s", state, exc)
        return False


def ready(status: str = "") -> bool:
    return notify("READY=1" + (f"\nSTATUS={status}" if status else ""))


def status(text: str) -> bool:
    return notify(f"STATUS={text}")


def watchdog() -> bool:
    return notify("WATCHDOG=1")


def reloading() -> bool:
    # MONOTONIC_USEC lets Type=notify-reload (systemd >= 253) match the reload; older ignore it.
    return notify(f"RELOADING=1\nMONOTONIC_USEC={int(time.monotonic() * 1_000_000)}")


def stopping() -> bool:
    return notify("STOPPING=1")


def watchdog_interval() -> float | None:
    """Seconds within which systemd expects a WATCHDOG=1 (None if no watchdog is set for us)."""
    usec = os.environ.get("WATCHDOG_USEC")
    pid = os.environ.get("WATCHDOG_PID")
    if not usec or (pid and pid != str(os.getpid())):
        return None
    try:
        return int(usec) / 1_000_000
    except ValueError:
        return None
