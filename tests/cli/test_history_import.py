"""`mysched history import`: a long backfill shows how far it is on a terminal, and stays
quiet (one summary line) in scripts and logs."""

from __future__ import annotations

import io
import os
import sqlite3
import sys
import time

import pytest

from mysched.cli.main import main

from tests.history.helpers import lines


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def logs(tmp_path):
    d = tmp_path / "accounting"
    d.mkdir()
    (d / "20261122").write_text(lines(3000))
    (d / "20261123").write_text(lines(2000, first=5000, day="11/23/2026"))
    return d


def summary(out: str) -> str:
    assert out.count("\n") == 1, out
    return out.strip()


def test_progress_on_a_terminal(logs, tmp_path, capsys, monkeypatch):
    term = Terminal()
    monkeypatch.setattr(sys, "stderr", term)
    assert main(["history", "import", "--trust-all", str(logs), "--db", f"sqlite:///{tmp_path}/h.db"]) == 0
    bar = term.getvalue()
    assert bar.startswith("\rimporting [") and bar.endswith("\n")
    last = bar.rstrip("\n").split("\r")[-1]
    assert "[" + "#" * 30 + "] 100.0%" in last and " MB, " in last and last.split()[-1].startswith("lines/s")
    assert summary(capsys.readouterr().out).startswith("2 file(s), 5000 new line(s): 5000 job record(s) added")


def test_no_progress_when_stderr_is_not_a_terminal(logs, tmp_path, capsys):
    assert main(["history", "import", "--trust-all", str(logs), "--db", f"sqlite:///{tmp_path}/h.db"]) == 0
    out, err = capsys.readouterr()
    assert err == "" and summary(out).startswith("2 file(s), 5000 new line(s)")


def test_progress_always_into_a_log_keeps_warnings_on_their_own_lines(logs, tmp_path, capsys):
    with open(logs / "20261123", "a") as f:
        f.write("garbage\n" + lines(1500, first=9000, day="11/23/2026"))
    assert main(["history", "import", "--trust-all", str(logs), "--db", f"sqlite:///{tmp_path}/h.db", "--progress", "always"]) == 0
    err = capsys.readouterr().err
    assert "\033" not in err  # no terminal control codes in a file
    warnings = [ln for ln in err.split("\n") if "warning" in ln]
    assert warnings == [f"mysched: warning: {logs}/20261123:2001: expected 'MM/DD/YYYY HH:MM:SS;TYPE;JOBID;attributes'"]
    assert "100.0%" in err.split("\n")[-2]


def test_nothing_new_draws_no_bar(logs, tmp_path, capsys, monkeypatch):
    db = f"sqlite:///{tmp_path}/h.db"
    assert main(["history", "import", "--trust-all", str(logs), "--db", db, "--progress", "never"]) == 0
    capsys.readouterr()
    assert main(["history", "import", "--trust-all", str(logs), "--db", db, "--progress", "always"]) == 0
    out, err = capsys.readouterr()
    assert err == "" and "0 new line(s)" in out


# -- what an admin gives it ---------------------------------------------------------------------

def test_a_last_line_without_newline_is_said_and_read_once_the_file_is_finished(tmp_path, capsys):
    f = tmp_path / "acct"
    f.write_text(lines(2)[:-1])  # the newline of the last line missing
    db = f"sqlite:///{tmp_path}/h.db"
    assert main(["history", "import", "--trust-all", str(f), "--db", db]) == 0
    out, err = capsys.readouterr()
    assert err == (f"mysched: warning: {f}:2: the last line has no newline yet (pbs_server may be writing it): "
                   "left for the next import; once the file has not changed for 10 minutes it is read as it is\n")
    assert "1 job record(s) added" in out and "1 last line(s) left for their newline" in out
    assert main(["history", "import", "--trust-all", str(f), "--db", db]) == 0  # still waiting: said again
    assert f"{f}:2: the last line" in capsys.readouterr().err
    old = time.time() - 11 * 60
    os.utime(f, (old, old))
    assert main(["history", "import", "--trust-all", str(f), "--db", db]) == 0
    out, err = capsys.readouterr()
    assert err == "" and "1 job record(s) added" in out and out.rstrip().endswith("2 jobs in " + db)
    with pytest.raises(SystemExit):
        main(["history", "import", "--help"])
    assert "unless the file has not changed for ten minutes" in " ".join(capsys.readouterr().out.split())


@pytest.mark.parametrize("url", ["sqlite://", "sqlite:///", "sqlite:///:memory:"])
def test_an_in_memory_database_is_refused(tmp_path, capsys, url):
    f = tmp_path / "20261122"
    f.write_text(lines(2))
    assert main(["history", "import", "--trust-all", str(f), "--db", url]) != 0
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and f"{url} is an in-memory database, which keeps nothing" in err


def test_sqlite_query_arguments_without_uri_get_a_clear_error(tmp_path, capsys):
    f = tmp_path / "20261122"
    f.write_text(lines(2))
    assert main(["history", "import", "--trust-all", str(f), "--db", f"sqlite:///{tmp_path}/h.db"]) == 0
    capsys.readouterr()
    for argv in (["usage"], ["history", "import", "--trust-all", str(f)]):
        assert main([*argv, "--db", f"sqlite:///{tmp_path}/h.db?mode=ro"]) != 0
        err = capsys.readouterr().err
        assert "SAWarning" not in err and err.count("\n") == 1
        assert "SQLite takes query arguments (mode) only in a URI URL" in err
    assert main(["usage", "--db", f"sqlite:///file:{tmp_path}/h.db?mode=ro&uri=true", "--noheader"]) == 0
    assert capsys.readouterr().out.startswith("atlas")


def test_absurd_values_are_skipped_with_their_line_and_the_good_ones_stored(tmp_path, capsys):
    f = tmp_path / "20261122"
    first, last = lines(2).splitlines(True)
    bad = [ln.replace("Exit_status=0", extra) for ln, extra in zip(lines(3, first=10).splitlines(True), (
        "total_execution_slots=999999999999999999999999", "Exit_status=99999999999999999999",
        "total_execution_slots=99999999999"))]
    f.write_text(first + "".join(bad) + last)
    db = f"sqlite:///{tmp_path}/h.db"
    assert main(["history", "import", "--trust-all", str(f), "--db", db]) == 0
    out, err = capsys.readouterr()
    assert "internal error" not in out + err
    assert [ln.split(": ")[2] for ln in err.splitlines()] == [f"{f}:2", f"{f}:3", f"{f}:4"]
    assert "3 job record(s) added" in out and "2 malformed line(s) skipped" in out


def test_a_damaged_database_is_a_one_line_error(tmp_path, capsys):
    f = tmp_path / "20261122"
    f.write_text(lines(2))
    db = tmp_path / "h.db"
    assert main(["history", "import", "--trust-all", str(f), "--db", f"sqlite:///{db}"]) == 0
    c = sqlite3.connect(db)
    c.execute("UPDATE finished_jobs SET start = 'xyz' WHERE job_id = '1.srv'")
    c.commit()
    capsys.readouterr()
    assert main(["usage", "--db", f"sqlite:///{db}"]) == 1
    assert capsys.readouterr().err == (f"mysched: error: history database sqlite:///{db}: finished_jobs row 2 "
                                       "(job 1.srv): start='xyz' is not a number (mend or delete that row)\n")
    c.execute("UPDATE schema_version SET version = 'abc'")
    c.commit()
    for argv in (["usage"], ["history", "import", "--trust-all", str(f)]):
        assert main([*argv, "--db", f"sqlite:///{db}"]) == 1
        assert capsys.readouterr().err == (f"mysched: error: history database sqlite:///{db}: schema_version holds "
                                           "'abc', not a version number: the database is damaged or not mysched's\n")
