"""Which history database a command uses, and where that choice came from.

The daemon writes to ``--db``, else the ``history.database`` of its configuration file,
else the built-in ``sqlite:////var/lib/mysched/history.db``. A reading command must find
the same database, or say plainly which one it reads: summing another run's history
without a word is worse than an error. Readers therefore also look in the state directory
the user pointed them at (``--state-dir`` or ``$MYSCHED_STATE_DIR``, as for status.json):
a ``history.db`` there belongs to the daemon that publishes there. In order:

1. ``--db URL``;
2. ``history.database`` written in the ``-c FILE`` given;
3. ``history.db`` in the state directory the user gave, if that file exists;
4. the built-in default.

1 and 2 are what the user asked for; 3 and 4 are guesses a command should announce
(`DatabaseChoice.explicit` is False, `note()` says which and why).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from mysched.config.parse import parse_file
from mysched.config.validate import build_config
from mysched.core.settings import Config
from mysched.history.store import mask_url

STATE_DB = "history.db"
"""The file name a reader looks for in the state directory."""


@dataclass(frozen=True)
class DatabaseChoice:
    """A history database URL, where it came from, and whether the user named it."""

    url: str
    source: str
    explicit: bool

    @property
    def masked(self) -> str:
        """The URL fit to print (no password)."""
        return mask_url(self.url)

    def note(self) -> str:
        """``history database URL (why)``: one line for stderr when the choice was a guess."""
        return f"history database {self.masked} ({self.source})"


def database_url(cli_db: str | None, config_file: str | None = None, state_dir: str | None = None
                 ) -> DatabaseChoice:
    """The history database by the rules of the module docstring.

    `cli_db` is ``--db``, `config_file` the ``-c FILE`` given (None: none given), and
    `state_dir` the state directory the *user* gave (``--state-dir``, else
    ``$MYSCHED_STATE_DIR``), not a default; the daemon, which writes, passes None. A bad
    configuration file raises `ConfigError` naming its file and line.
    """
    if cli_db:
        return DatabaseChoice(cli_db, "--db", True)
    if config_file:
        parsed = parse_file(config_file)
        config = build_config(parsed)  # a value that is not a string is a located error
        history = parsed.data.get("history")
        if isinstance(history, dict) and "database" in history:
            return DatabaseChoice(config.database, f"history.database at {parsed.where(('history', 'database'))}",
                                  True)
    default = Config.database
    if state_dir:
        path = os.path.join(os.path.abspath(state_dir), STATE_DB)
        if os.path.isfile(path):
            return DatabaseChoice(f"sqlite:///{path}", f"{STATE_DB} in the state directory {state_dir}", False)
        return DatabaseChoice(default, f"the default: no {STATE_DB} in the state directory {state_dir}", False)
    return DatabaseChoice(default, "the default", False)
