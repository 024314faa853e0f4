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
