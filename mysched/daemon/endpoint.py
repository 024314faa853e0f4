"""The /metrics endpoint's socket: bound at start, or later when its address is in use.

`mysched run` refused to start when `daemon.metrics_address` was taken: a standby on the
leader's host with the same configuration never ran (systemd restarted it every 10 s), and
neither did a daemon restarted while a stray process held the port. Monitoring must not stop
scheduling: the daemon now schedules on and tries the address every `retry` seconds (the
standby takes it over when the leader it stands in for dies). Other failures -- an address
not on this host, a privileged port -- are configuration errors and stay fatal.
"""

from __future__ import annotations

import errno
import logging
import math
import threading
import time

from prometheus_client import CollectorRegistry, start_http_server

from mysched.config.values import parse_address as _parse_address
from mysched.errors import UsageError

log = logging.getLogger("mysched")


def serve(registry: CollectorRegistry, host: str, port: int, retry: float) -> int:
    """The bound port, or 0 when the address is in use (then bound in the background, every
    `retry` seconds; never for an infinite `retry`)."""
    try:
        bound = _bind(registry, host, port)
        log.info("metrics on http://%s:%d/metrics", f"[{host}]" if ":" in host else host, bound)
        return bound
    except OSError as exc:
        if exc.errno != errno.EADDRINUSE:
            raise UsageError(f"cannot serve metrics on {host}:{port}: {exc.strerror or exc}") from None
        if not math.isfinite(retry):  # a run that ends after one cycle has nothing to try it for
            log.warning("metrics not served: %s:%d: %s (this run ends after its cycle)", host, port, exc.strerror)
            return 0
        log.error("cannot serve metrics on %s:%d: %s (another mysched on this host? give each its own "
                  "daemon.metrics_address); scheduling goes on, the address is tried every %g s", host, port,
                  exc.strerror, retry)
    threading.Thread(target=_bind_later, args=(registry, host, port, retry), name="mysched-metrics-bind",
                     daemon=True).start()
    return 0


def _bind(registry: CollectorRegistry, host: str, port: int) -> int:
    server, _thread = start_http_server(port, addr=host, registry=registry)
    return server.server_port


def _bind_later(registry: CollectorRegistry, host: str, port: int, retry: float) -> None:
    while True:
        time.sleep(retry)
        try:
            _bind(registry, host, port)
        except OSError:
            continue
        log.warning("metrics on http://%s:%d/metrics: the address is free now", f"[{host}]" if ":" in host else host,
                    port)
        return


def parse_address(text: str) -> tuple[str, int]:
    """``HOST:PORT`` or ``[::1]:PORT`` -> (host, port); UsageError otherwise (the config's rule)."""
    try:
        got = _parse_address(text)
    except ValueError as exc:
        raise UsageError(f"metrics address: {exc}") from None
    if got is None:
        raise UsageError(f"metrics address must be HOST:PORT, got {text!r}")
    return got


def serve_metrics(registry: CollectorRegistry, address: str = "127.0.0.1:9720",
                  retry: float = 30.0) -> tuple[str, int]:
    """Serve /metrics of `registry` on a background thread; returns the bound (host, port),
    port 0 while an address in use waits to be free (`serve`)."""
    host, port = parse_address(address)
    return host, serve(registry, host, port, retry)
