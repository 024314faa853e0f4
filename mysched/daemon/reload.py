"""What a reload (SIGHUP, `systemctl reload`) accepts, and what it cannot apply."""

from __future__ import annotations

import logging

from mysched.config import build_config
from mysched.config.parse import parse_file
from mysched.core.config import Config
from mysched.errors import ConfigError

log = logging.getLogger("mysched")

RESTART_ONLY = (("server.url", "server"), ("server.libtorque", "libtorque"), ("server.timeout", "server_timeout"),
                ("history.database", "database"), ("history.accounting_dir", "accounting_dir"),
                ("daemon.state_dir", "state_dir"), ("daemon.metrics_address", "metrics_address"),
                ("daemon.event_address", "event_address"), ("daemon.event_allow", "event_allow"),
                ("daemon.event_reserved_port", "event_reserved_port"), ("daemon.leader_timeout", "leader_timeout"))
"""(key, `Config` attribute) of the settings `mysched run` reads once, at start: a reload that
changes them says so instead of appearing to apply them."""


def reread(path: str, running: Config) -> Config:
    """The file's configuration (`ConfigError` if it is bad). A file that sets nothing is
    refused: on a running daemon that is a file cut short while being written far more often
    than a wish to drop every VO. `running`: the configuration the daemon started with, so a
    restart-only setting is reported while it differs from what runs -- not when it is put
    back, and again at every reload until a restart."""
    parsed = parse_file(path)
    if not parsed.data:
        raise ConfigError(f"{path}: the file sets nothing (empty, or only comments): "
                          "taken for one cut short while being written")
    new = build_config(parsed)
    for key, attr in RESTART_ONLY:
        if getattr(new, attr) != getattr(running, attr):
            log.warning("configuration reload: %s is %r in the file but %r runs: it takes effect only when "
                        "the daemon restarts", key, getattr(new, attr), getattr(running, attr))
    return new
