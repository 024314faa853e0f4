"""Load sources: external values (a storage element's load, a site probe) read in the
background, each on its own interval, so a slow or hanging source never delays a cycle.

Three kinds (`mysched.core.settings.LoadSource`):
- ``prometheus``: an instant query against the Prometheus HTTP API (``/api/v1/query``); its
  result must be one number (aggregate several series in the query, e.g. ``max(...)``);
- ``file``: a number, or a JSON document with the number at a dotted ``key``; the value is as
  old as the file (its mtime), so a probe that died goes stale;
- ``command``: a program whose standard output is a number; killed (with its process group)
  at its timeout.
A failed read keeps the last good value (it goes stale by age) and records the error, which
is logged once per change. The planner sees only `Reading` values (`mysched.core.rules.throttle`).
"""

from __future__ import annotations

import json
import logging
import math
import os
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Callable, Mapping

from mysched.core.settings import LoadSource
from mysched.core.rules.throttle import Reading
from mysched.files import open_regular, os_reason

log = logging.getLogger("mysched")

MAX_OUTPUT = 1 << 20
"""Bytes of a file, a command's output or a Prometheus reply read at most."""


class SourceError(Exception):
    """A read that gave no usable value (the message says why, naming the source)."""


def _number(text: str, what: str) -> float:
    try:
        v = float(text.strip())
    except ValueError:
        raise SourceError(f"{what}: not a number: {text.strip()[:60]!r}") from None
    if not math.isfinite(v):
        raise SourceError(f"{what}: not a finite number: {text.strip()[:60]!r}")
    return v


def read_prometheus(src: LoadSource) -> float:
    """The single value of an instant query."""
    url = src.url.rstrip("/") + "/api/v1/query?" + urllib.parse.urlencode({"query": src.query})
    try:
        with urllib.request.urlopen(url, timeout=src.timeout) as r:
            body = r.read(MAX_OUTPUT)
    except urllib.error.HTTPError as exc:
        detail = exc.read(2000).decode(errors="replace")
        try:
            detail = json.loads(detail).get("error", detail)
        except ValueError:
            pass
        raise SourceError(f"Prometheus {src.url}: HTTP {exc.code}: {str(detail)[:200]}") from None
    except (OSError, ValueError) as exc:
        raise SourceError(f"Prometheus {src.url}: {getattr(exc, 'reason', None) or exc}") from None
    try:
        doc = json.loads(body)
        data = doc["data"]
        kind, result = data["resultType"], data["result"]
    except (ValueError, KeyError, TypeError):
        raise SourceError(f"Prometheus {src.url}: not a query reply: {body[:100]!r}") from None
    if kind == "scalar":
        return _number(str(result[1]), f"Prometheus query {src.query!r}")
    if kind != "vector":
        raise SourceError(f"Prometheus query {src.query!r}: a {kind} result; an instant vector or scalar is needed")
    if len(result) != 1:
        raise SourceError(f"Prometheus query {src.query!r}: {len(result)} series" +
                          (" (no data)" if not result else "; aggregate them to one, e.g. max(...)"))
    return _number(str(result[0]["value"][1]), f"Prometheus query {src.query!r}")


def read_file(src: LoadSource) -> tuple[float, float]:
    """(value, the file's mtime)."""
    try:
        with open_regular(src.path) as f:  # a named pipe there would stall every cycle
            mtime = os.fstat(f.fileno()).st_mtime
            text = f.read(MAX_OUTPUT).decode("utf-8", errors="replace")
    except OSError as exc:
        raise SourceError(f"{src.path}: cannot read: {os_reason(exc)}") from None
    if not src.key:
        try:
            v = json.loads(text)
        except (ValueError, RecursionError):
            return _number(text, src.path), mtime
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise SourceError(f"{src.path}: expected a number (or set key to the number in the JSON document)")
        return _number(str(v), src.path), mtime
    try:
        v = json.loads(text)
    except RecursionError:
        raise SourceError(f"{src.path}: not a JSON document (nested too deeply)") from None
    except json.JSONDecodeError as exc:
        raise SourceError(f"{src.path}: not a JSON document (from line {exc.lineno}, column {exc.colno})") from None
    for part in src.key.split("."):
        if not isinstance(v, dict) or part not in v:
            raise SourceError(f"{src.path}: key {src.key!r} not found (at {part!r})")
        v = v[part]
    if isinstance(v, bool) or not isinstance(v, (int, float, str)):
        raise SourceError(f"{src.path}: key {src.key!r} holds {type(v).__name__}, not a number")
    return _number(str(v), f"{src.path}: key {src.key!r}"), mtime


def read_command(src: LoadSource) -> float:
    """The number a command prints; it is killed, with its children, at the timeout."""
    what = " ".join(src.command)
    try:
        p = subprocess.Popen(list(src.command), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             stdin=subprocess.DEVNULL, start_new_session=True)
    except OSError as exc:
        raise SourceError(f"command {what}: cannot run: {exc.strerror}") from None
    try:
        out, err = p.communicate(timeout=src.timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except OSError:
            pass
        try:
            p.communicate(timeout=1.0)
        except subprocess.TimeoutExpired:
            pass
        raise SourceError(f"command {what}: no answer within {src.timeout:g} s (killed)") from None
    if p.returncode != 0:
        msg = err.decode(errors="replace").strip().splitlines()
        raise SourceError(f"command {what}: exit status {p.returncode}" + (f": {msg[-1][:200]}" if msg else ""))
    text = out[:MAX_OUTPUT].decode(errors="replace").strip()
    return _number(text.splitlines()[0] if text else "", f"command {what}: output")


def read_source(src: LoadSource, now: float) -> tuple[float, float]:
    """(value, time it was true) of one read; SourceError if none."""
    if src.kind == "prometheus":
        return read_prometheus(src), now
    if src.kind == "file":
        return read_file(src)
    if src.kind == "command":
        return read_command(src), now
    raise SourceError(f"unknown load source type {src.kind!r}")


class LoadSources:
    """The configured sources, each read by a thread of its own on its interval."""

    def __init__(self, sources: Mapping[str, LoadSource], *, clock: Callable[[], float] = time.time) -> None:
        self.clock = clock
        self._lock = threading.Lock()
        self._readings: dict[str, Reading] = {}
        self._sources: dict[str, LoadSource] = {}
        self._stops: dict[str, threading.Event] = {}
        self.update(sources)

    def update(self, sources: Mapping[str, LoadSource]) -> None:
        """Follow a reloaded configuration: changed sources restart, gone ones stop (their
        last reading is kept only while the source is unchanged)."""
        for name in list(self._sources):
            if sources.get(name) != self._sources[name]:
                self._stops.pop(name).set()
                del self._sources[name]
                with self._lock:
                    self._readings.pop(name, None)
        for name, src in sources.items():
            if name not in self._sources:
                self._sources[name] = src
                self._stops[name] = stop = threading.Event()
                threading.Thread(target=self._loop, args=(src, stop), name=f"mysched-load-{name}",
                                 daemon=True).start()

    def _loop(self, src: LoadSource, stop: threading.Event) -> None:
        while not stop.is_set():
            t0 = time.monotonic()
            self.refresh(src, stop)
            stop.wait(max(0.0, src.interval - (time.monotonic() - t0)))

    def refresh(self, src: LoadSource, stop: threading.Event | None = None) -> Reading:
        """Read one source now and keep the result."""
        now = self.clock()
        with self._lock:
            old = self._readings.get(src.name) or Reading(src.name)
        try:
            value, at = read_source(src, now)
            new = Reading(src.name, value, at)
            if old.error:
                log.info("load source %s: reading again (%g)", src.name, value)
        except SourceError as exc:
            new = Reading(src.name, old.value, old.at, str(exc))
            if str(exc) != old.error:
                log.warning("load source %s: %s (last good value kept until it is %g s old)", src.name, exc,
                            src.max_age)
        except Exception as exc:  # noqa: BLE001 - a bug in a reader must not end its thread
            new = Reading(src.name, old.value, old.at, f"internal error: {type(exc).__name__}: {exc}")
            log.error("load source %s: internal error", src.name, exc_info=True)
        if stop is None or not stop.is_set():
            with self._lock:
                self._readings[src.name] = new
        return new

    def wait_first(self, limit: float) -> None:
        """Wait (at most `limit` seconds) until every source has been read once, so the first
        cycle does not see them all stale."""
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            with self._lock:
                if all(n in self._readings for n in self._sources):
                    return
            time.sleep(0.05)

    def readings(self) -> dict[str, Reading]:
        with self._lock:
            return dict(self._readings)

    def close(self) -> None:
        for stop in self._stops.values():
            stop.set()
