"""Which history database `mysched usage` and friends read: the one the user named, else the
daemon's, and never another run's without saying so."""

from __future__ import annotations

import pytest

from mysched.errors import ConfigError
from mysched.history.dbchoice import DatabaseChoice, database_url

DEFAULT = "sqlite:////var/lib/mysched/history.db"


@pytest.fixture
def cfg(tmp_path):
    """Write a configuration file; returns its path."""
    def write(text: str) -> str:
        p = tmp_path / "mysched.cfg"
        p.write_text(text)
        return str(p)
    return write


@pytest.fixture
def state(tmp_path):
    """A state directory where a daemon ran with its database beside status.json."""
    d = tmp_path / "state"
    d.mkdir()
    (d / "history.db").write_bytes(b"")
    return d


def test_db_option_wins_over_everything(cfg, state):
    f = cfg('history = { database = "sqlite:////srv/cfg.db"; };\n')
    assert database_url("sqlite:////srv/cli.db", f, str(state)) == DatabaseChoice("sqlite:////srv/cli.db", "--db", True)


def test_database_written_in_the_config_file_names_its_line(cfg, state):
    f = cfg('# site\nhistory = {\n  window = "2d";\n  database = "postgresql+psycopg2://mysched:s3cret@db/mysched";\n};\n')
    got = database_url(None, f, str(state))
    assert got.url == "postgresql+psycopg2://mysched:s3cret@db/mysched" and got.explicit
    assert got.note() == f"history database postgresql+psycopg2://mysched:***@db/mysched (history.database at {f}:4)"


def test_history_db_in_the_state_directory_given_when_the_config_does_not_say(cfg, state):
    f = cfg('history = { window = "1d"; };\n')
    for config_file in (f, None):
        got = database_url(None, config_file, str(state))
        assert got == DatabaseChoice(f"sqlite:///{state}/history.db", f"history.db in the state directory {state}",
                                     False)


def test_the_default_is_announced_with_why(tmp_path):
    assert database_url(None) == DatabaseChoice(DEFAULT, "the default", False)
    empty = tmp_path / "other-run"
    empty.mkdir()
    got = database_url(None, None, str(empty))
    assert got.url == DEFAULT and not got.explicit
    assert got.note() == f"history database {DEFAULT} (the default: no history.db in the state directory {empty})"


def test_a_relative_state_directory_gives_an_absolute_database(state, monkeypatch):
    monkeypatch.chdir(state.parent)
    assert database_url(None, None, "state").url == f"sqlite:///{state}/history.db"


def test_bad_config_file_is_a_located_error(cfg, tmp_path):
    with pytest.raises(ConfigError, match=r"mysched.cfg:2: history.database"):
        database_url(None, cfg('history = {\n  database = 5;\n};\n'))
    with pytest.raises(ConfigError, match="no such file"):
        database_url(None, str(tmp_path / "missing.cfg"))


def test_history_import_writes_where_the_config_file_says(cfg, tmp_path, capsys):
    from mysched.cli.main import main

    from tests.history.helpers import lines, with_starts

    (tmp_path / "20261122").write_text(with_starts(lines(3)))
    f = cfg(f'history = {{ database = "sqlite:///{tmp_path}/site.db"; }};\n')
    assert main(["history", "import", str(tmp_path / "20261122"), "-c", f, "--progress", "never"]) == 0
    assert capsys.readouterr().out.strip().endswith(f"3 jobs in sqlite:///{tmp_path}/site.db")
