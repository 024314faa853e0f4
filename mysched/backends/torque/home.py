"""Where pbs_server keeps its files (``server_priv/accounting`` among them), found as TORQUE does.

pbs_server reads no environment variable and no /etc file for its home: it is the ``-d DIR``
option, else the path compiled in (``configure --with-server-home``, default
/var/spool/torque); ``torque.cfg`` lives *in* that home. TORQUE's own service files start it
as ``pbs_server -d $PBS_HOME``, with ``PBS_HOME`` set in the unit and overridable in
/etc/sysconfig/pbs_server (RPM) or /etc/default/pbs_server (Debian). So, in this order:

1. ``$PBS_HOME`` in our own environment (the admin says so, e.g. in mysched.service);
2. the ``-d`` option of the pbs_server running on this host;
3. ``PBS_HOME=`` in /etc/sysconfig/pbs_server or /etc/default/pbs_server;
4. /var/spool/torque.

OpenPBS's pbs_server takes its home from ``PBS_HOME`` in the environment, else in /etc/pbs.conf
(or the file ``$PBS_CONF_FILE`` names), else /var/spool/pbs (``openpbs=True``).

Nothing here raises: an unreadable file or process is skipped.
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass
from typing import Iterable, Iterator, Mapping

DEFAULT_HOME = "/var/spool/torque"
SERVICE_FILES = ("/etc/sysconfig/pbs_server", "/etc/default/pbs_server")
OPENPBS_HOME = "/var/spool/pbs"
OPENPBS_CONF = "/etc/pbs.conf"
_ASSIGN = re.compile(r"^\s*(?:export\s+)?PBS_HOME=(.*)$")


@dataclass(frozen=True)
class ServerHome:
    """pbs_server's home directory and how it was found (for logs and skip messages)."""

    path: str
    source: str

    @property
    def accounting_dir(self) -> str:
        return os.path.join(self.path, "server_priv", "accounting")


def find_server_home(environ: Mapping[str, str] | None = None, proc: str = "/proc",
                     service_files: Iterable[str] = SERVICE_FILES, openpbs: bool = False) -> ServerHome:
    """pbs_server's home by the rules of the module docstring (OpenPBS's with `openpbs`)."""
    env = os.environ if environ is None else environ
    if os.path.isabs(env.get("PBS_HOME", "")):
        return ServerHome(env["PBS_HOME"], "$PBS_HOME")
    found = None if openpbs else _running_server_home(proc)
    if found is not None:
        return found
    for path in [env.get("PBS_CONF_FILE") or OPENPBS_CONF] if openpbs else service_files:
        found = _service_file_home(path)
        if found is not None:
            return found
    return ServerHome(OPENPBS_HOME, "OpenPBS's default") if openpbs else ServerHome(DEFAULT_HOME, "TORQUE's default")


def server_home() -> str:
    """pbs_server's home directory on this host (see `find_server_home`)."""
    return find_server_home().path


def accounting_dir(configured: str, default: str, openpbs: bool = False) -> tuple[str, str]:
    """The accounting directory to read, and why. A configured directory is kept as it is;
    the built-in `default` (/var/spool/torque/...) is only a guess at TORQUE's home, so when
    it does not exist the one under the home found here is taken, if that one does. For an
    OpenPBS server (`openpbs`) the default means OpenPBS's home, even where TORQUE's directory
    is still there (a site that moved: its old logs are no longer written)."""
    if configured != default or not openpbs and os.path.isdir(configured):
        return configured, "history.accounting_dir"
    home = find_server_home(openpbs=openpbs)
    if os.path.isdir(home.accounting_dir):
        return home.accounting_dir, f"pbs_server's home, from {home.source}"
    return configured, "history.accounting_dir"


def server_pids(proc: str = "/proc") -> Iterator[str]:
    """The process ids of the pbs_server processes running on this host (none where /proc
    is missing or hides other users' processes)."""
    try:
        pids = [p for p in os.listdir(proc) if p.isdigit()]
    except OSError:
        return
    for pid in pids:
        try:
            with open(os.path.join(proc, pid, "comm"), encoding="utf-8", errors="replace") as f:
                if f.read().strip() == "pbs_server":
                    yield pid
        except OSError:
            continue


def running_server_uid(proc: str = "/proc") -> int | None:
    """The effective uid of the pbs_server running on this host; None if none is seen. It
    tells whether its scheduler contacts come from a reserved port (they do as root)."""
    for pid in server_pids(proc):
        try:
            with open(os.path.join(proc, pid, "status"), encoding="utf-8", errors="replace") as f:
                for line in f:
                    if line.startswith("Uid:"):
                        return int(line.split()[2])  # real, effective, saved, filesystem
        except (OSError, ValueError, IndexError):
            continue
    return None


def _running_server_home(proc: str) -> ServerHome | None:
    """The ``-d DIR`` of a pbs_server process (None if none runs, or it has no -d)."""
    for pid in server_pids(proc):
        try:
            with open(os.path.join(proc, pid, "cmdline"), "rb") as f:
                argv = f.read().decode("utf-8", errors="replace").split("\0")
        except OSError:
            continue
        home = _option_d(argv[1:])
        if home is not None:
            return ServerHome(home, f"pbs_server -d (pid {pid})")
    return None


def _option_d(args: list[str]) -> str | None:
    """The value of ``-d`` in pbs_server's arguments (``-d DIR`` or ``-dDIR``), if absolute."""
    for i, a in enumerate(args):
        if a == "-d" and i + 1 < len(args):
            value = args[i + 1]
        elif a.startswith("-d") and len(a) > 2:
            value = a[2:]
        else:
            continue
        return value if os.path.isabs(value) else None
    return None


def _service_file_home(path: str) -> ServerHome | None:
    """The last plain ``PBS_HOME=/dir`` of a shell environment file (values that need the
    shell to expand them are skipped)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError:
        return None
    found = None
    for lineno, line in enumerate(text.splitlines(), 1):
        m = _ASSIGN.match(line)
        if m is None:
            continue
        try:
            words = shlex.split(m.group(1), comments=True)
        except ValueError:
            continue
        if len(words) == 1 and os.path.isabs(words[0]) and not any(c in m.group(1) for c in "$`"):
            found = ServerHome(words[0], f"{path}:{lineno}")
    return found
