"""What a reload (SIGHUP, `systemctl reload`) accepts, and what it cannot apply."""

from __future__ import annotations

import logging

from mysched.config import build_config
from mysched.config.guarantees import overpromised
from mysched.config.parse import parse_file
from mysched.errors import ConfigError
from mysched.core.settings import Config

log = logging.getLogger("mysched")

RESTART_ONLY = (("server.url", "server"), ("server.libtorque", "libtorque"), ("server.libpbs", "libpbs"),
                ("server.timeout", "server_timeout"),
                ("history.database", "database"), ("history.accounting_dir", "accounting_dir"),
                ("daemon.state_dir", "state_dir"), ("daemon.metrics_address", "metrics_address"),
                ("daemon.event_address", "event_address"), ("daemon.event_allow", "event_allow"),
                ("daemon.event_reserved_port", "event_reserved_port"), ("daemon.leader_timeout", "leader_timeout"))
"""(key, `Config` attribute) of the settings `mysched run` reads once, at start: a reload that
changes them says so instead of appearing to apply them."""


def reread(path: str, running: Config, slots: int | None = None) -> Config:
    """The file's configuration (`ConfigError` if it is bad, by the rules check-config and
    run apply: a file that sets nothing is refused by all three, and so are guarantees over
    the farm's `slots`, those the daemon last read). `running`: the configuration the daemon
    started with, so a restart-only setting is reported while it differs from what runs --
    not when it is put back, and again at every reload until a restart."""
    parsed = parse_file(path)
    new = build_config(parsed)
    if slots and (why := overpromised(new, slots, parsed.where)):
        raise ConfigError(why)
    for key, attr in RESTART_ONLY:
        if getattr(new, attr) != getattr(running, attr):
            log.warning("configuration reload: %s is %r in the file but %r runs: it takes effect only when "
                        "the daemon restarts", key, getattr(new, attr), getattr(running, attr))
    return new
