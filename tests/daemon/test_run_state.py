"""`mysched run` and its state directory: created when missing, refused when unusable, and
never overwritten by a dry run while a daemon leads there."""

from __future__ import annotations

import json

from mysched.cli.main import main
from mysched.history.leader import FileLeadership

SIM = "sim://?nodes=2"


def _run(state_dir, *extra):
    return main(["run", "--once", "--no-db", "--metrics-address", "off", "--state-dir", str(state_dir),
                 "--server", SIM, *extra])


def test_a_missing_state_directory_is_created_and_the_daemon_leads(tmp_path):
    state = tmp_path / "new" / "state"
    assert _run(state) == 0
    doc = json.loads((state / "status.json").read_text())
    assert doc["role"]["role"] == "leader" and not doc["dry_run"]


def test_a_state_directory_that_is_a_file_is_refused_naming_it(tmp_path, capsys):
    path = tmp_path / "afile"
    path.write_text("")
    assert _run(path) == 1
    err = capsys.readouterr().err
    assert f"state directory {path}: not a directory" in err and "Traceback" not in err


def test_a_dry_run_leaves_the_leading_daemons_status_alone(tmp_path, caplog):
    state = tmp_path / "s"
    assert _run(state) == 0
    before = (state / "status.json").read_bytes()
    lead = FileLeadership(str(state / "leader.lock"), 4.0)
    assert lead.acquire()  # a daemon leads from this state directory
    try:
        assert _run(state, "--dry-run") == 0
    finally:
        lead.release()
    assert (state / "status.json").read_bytes() == before
    assert "this dry run writes no status file" in caplog.text
    assert _run(state, "--dry-run") == 0  # nobody leads: the dry run publishes its plan
    assert json.loads((state / "status.json").read_text())["dry_run"]


def test_a_dry_run_given_a_state_directory_of_its_own_publishes_there_beside_a_leading_daemon(tmp_path, caplog):
    # (live walk-through) a daemon leads on the history store and publishes in live/; a dry run
    # on the same store with --state-dir own/ wrote nothing there, while its warning advised
    # exactly that --state-dir
    def run(state_dir, *extra):
        return main(["run", "--once", "--db", f"sqlite:///{tmp_path}/h.db", "--metrics-address", "off",
                     "--state-dir", str(state_dir), "--server", SIM, *extra])

    live, own = tmp_path / "live", tmp_path / "own"
    assert run(live) == 0  # the daemon's status: it names this process as leader
    before = (live / "status.json").read_bytes()
    lead = FileLeadership(f"{tmp_path}/h.db.leader", 4.0)
    assert lead.acquire()  # ... which leads on the store
    try:
        assert run(own, "--dry-run") == 0
        assert json.loads((own / "status.json").read_text())["dry_run"]
        assert run(live, "--dry-run") == 0  # its own directory: left alone
    finally:
        lead.release()
    assert (live / "status.json").read_bytes() == before
    assert caplog.text.count("this dry run writes no status file") == 1


def test_without_a_configuration_it_starts_nothing_on_a_real_server(tmp_path, capsys):
    # An admin's second daemon without -c, on its own store: it led by the embedded DESY
    # example's shares and started a job on a node the site's daemon had reserved.
    argv = ["run", "--once", "--no-db", "--metrics-address", "off", "--state-dir", str(tmp_path),
            "--server", "torque://192.0.2.1"]
    assert main(argv) == 2
    assert "name the site's configuration with -c FILE" in capsys.readouterr().err
    assert not (tmp_path / "status.json").exists()
