"""A one-line progress bar on stderr for long commands, so an admin sees they are alive.

Drawn only where someone watches (`--progress auto`: stderr is a terminal), so logs and
pipes stay clean; redrawn at most five times a second, and always at 100 %.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import TextIO

CHOICES = ("auto", "always", "never")
CLEAR_EOL = "\033[K"


def add_progress_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--progress", choices=CHOICES, default="auto",
                   help="progress bar on stderr (auto: when stderr is a terminal)")


def wanted(choice: str, stream: TextIO | None = None) -> bool:
    """Whether `--progress CHOICE` draws on `stream` (default: stderr)."""
    stream = stream if stream is not None else sys.stderr
    if choice == "auto":
        isatty = getattr(stream, "isatty", None)
        return bool(isatty and isatty())
    return choice == "always"


class ProgressBar:
    """``label [#####.....]  45.2%  detail`` redrawn in place; nothing at all when disabled."""

    WIDTH = 30

    def __init__(self, label: str, enabled: bool, stream: TextIO | None = None) -> None:
        self.label = label
        self.enabled = enabled
        self.stream = stream if stream is not None else sys.stderr
        self.t0 = time.monotonic()
        self._tty = wanted("auto", self.stream)
        self._last = -1.0
        self._drawn = False
        self._ended = False

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.t0

    def update(self, frac: float, detail: str = "") -> None:
        if not self.enabled or self._ended:
            return
        frac = min(1.0, max(0.0, frac))
        now = time.monotonic()
        if frac < 1.0 and self._last >= 0 and now - self._last < 0.2:
            return
        self._last = now
        done = int(frac * self.WIDTH)
        self.stream.write(f"\r{self.label} [{'#' * done}{'.' * (self.WIDTH - done)}] {frac:6.1%}"
                          f"{'  ' + detail if detail else ''}{CLEAR_EOL if self._tty else ''}")
        self._drawn = True
        if frac >= 1.0:
            self.stream.write("\n")
            self._ended = True
        self.stream.flush()

    def interrupt(self) -> None:
        """Make room for a message on stderr: the bar is redrawn below it at the next update."""
        if self.enabled and self._drawn and not self._ended:
            self.stream.write(f"\r{CLEAR_EOL}" if self._tty else "\n")
            self.stream.flush()
            self._drawn = False
