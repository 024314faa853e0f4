"""Finding pbs_server's home (and so its accounting logs) on a server not installed in
/var/spool/torque: from $PBS_HOME, the running pbs_server's -d, or TORQUE's service files."""

from __future__ import annotations

import os

import pytest

from mysched.backends.torque.home import DEFAULT_HOME, ServerHome, accounting_dir, find_server_home


@pytest.fixture
def proc(tmp_path):
    """An empty /proc to fill with processes."""
    p = tmp_path / "proc"
    p.mkdir()
    return p


def process(proc, pid: int, comm: str, *argv: str) -> None:
    d = proc / str(pid)
    d.mkdir()
    (d / "comm").write_text(comm + "\n")
    (d / "cmdline").write_bytes(b"\0".join(a.encode() for a in argv) + b"\0")


def find(proc, files=(), **env) -> ServerHome:
    return find_server_home(environ=env, proc=str(proc), service_files=[str(f) for f in files])


def test_nothing_said_anywhere_is_torques_default(proc, tmp_path):
    process(proc, 7, "bash", "/bin/bash", "-d", "/not/this")
    assert find(proc, [tmp_path / "missing"]) == ServerHome("/var/spool/torque", "TORQUE's default")
    assert DEFAULT_HOME == "/var/spool/torque"


def test_pbs_home_in_the_environment_comes_first(proc, tmp_path):
    process(proc, 7, "pbs_server", "/usr/sbin/pbs_server", "-d", "/srv/running")
    assert find(proc, PBS_HOME="/opt/torque") == ServerHome("/opt/torque", "$PBS_HOME")
    assert find(proc, PBS_HOME="relative/torque").path == "/srv/running"  # not a usable home


@pytest.mark.parametrize("argv", [("-F", "-d", "/srv/torque", "-t", "hot"), ("-d/srv/torque",)])
def test_the_running_pbs_server_says_with_its_d_option(proc, tmp_path, argv):
    process(proc, 12, "pbs_mom", "/usr/sbin/pbs_mom", "-d", "/var/spool/mom")
    process(proc, 345, "pbs_server", "/usr/sbin/pbs_server", *argv)
    (proc / "self").mkdir()  # not a process number
    sysconfig = tmp_path / "pbs_server"
    sysconfig.write_text("PBS_HOME=/from/sysconfig\n")
    assert find(proc, [sysconfig]) == ServerHome("/srv/torque", "pbs_server -d (pid 345)")


def test_service_environment_files_as_torques_units_read_them(proc, tmp_path):
    process(proc, 345, "pbs_server", "/usr/sbin/pbs_server")  # running without -d: compiled-in home
    sysconfig, default = tmp_path / "sysconfig", tmp_path / "default"
    sysconfig.write_text("# PBS_HOME=/commented/out\nPBS_ARGS=\"-t hot\"\nPBS_HOME=$SOMEWHERE/torque\n")
    default.write_text("export PBS_HOME=/first\n  export PBS_HOME='/srv/batch server'  # site layout\n")
    assert find(proc, [sysconfig, default]) == ServerHome("/srv/batch server", f"{default}:2")
    sysconfig.write_text("PBS_HOME=\"/srv/torque\"\n")
    assert find(proc, [sysconfig, default]) == ServerHome("/srv/torque", f"{sysconfig}:1")


def test_accounting_dir_follows_the_home_only_instead_of_the_built_in_guess(tmp_path, monkeypatch):
    home = tmp_path / "torque"
    (home / "server_priv" / "accounting").mkdir(parents=True)
    monkeypatch.setenv("PBS_HOME", str(home))
    default = "/var/spool/torque/server_priv/accounting"
    if os.path.isdir(default):
        pytest.skip(f"{default} exists on this host")
    assert accounting_dir(default, default) == (f"{home}/server_priv/accounting", "pbs_server's home, from $PBS_HOME")
    mine = str(tmp_path / "elsewhere")  # set by the admin: kept, even where it is missing
    assert accounting_dir(mine, default) == (mine, "history.accounting_dir")
