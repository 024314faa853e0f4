"""Issue 32, item 9: each optional part of mysched has an extra that installs it, and a
missing database driver names the extra to install -- in check-config (and a reload) as in
the history store -- instead of "database driver not installed (No module named ...)"."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from mysched.cli.main import main
from mysched.config.servers import DRIVER_EXTRAS, database_problem

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def no_psycopg2(monkeypatch):
    """A host where psycopg2 is not installed (None in sys.modules makes its import fail)."""
    monkeypatch.setitem(sys.modules, "psycopg2", None)
    monkeypatch.setitem(sys.modules, "psycopg2.extras", None)


def test_check_config_names_the_extra_of_a_missing_postgresql_driver(no_psycopg2):
    why = database_problem("postgresql+psycopg2://mysched:secret@dbhost/mysched")
    assert why == ("the psycopg2 driver of postgresql is not installed here (Python module psycopg2): "
                   "pip install 'mysched[postgresql]'")


def test_another_postgresql_driver_missing_points_at_the_one_the_extra_brings():
    """SQLAlchemy 2.1 reads a bare postgresql:// as psycopg (3), which no extra installs."""
    why = database_problem("postgresql+pg8000://u@h/db")
    if why is None:
        pytest.skip("pg8000 is installed here")
    assert why.endswith("install it, or use postgresql+psycopg2:// with pip install 'mysched[postgresql]'")


def test_the_history_store_names_the_extra_too(no_psycopg2, capsys):
    assert main(["usage", "--db", "postgresql+psycopg2://u:secret@127.0.0.1:1/x"]) == 1
    err = capsys.readouterr().err
    assert err == ("mysched: error: history database postgresql+psycopg2://u:***@127.0.0.1:1/x: the psycopg2 driver "
                   "of postgresql is not installed here (Python module psycopg2): pip install 'mysched[postgresql]'\n")


def _extras() -> dict[str, list[str]]:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    with open(ROOT / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["project"]["optional-dependencies"]


def test_every_extra_a_message_names_exists_and_brings_its_module():
    extras = _extras()
    named = set(DRIVER_EXTRAS.values())
    for path in (ROOT / "mysched").rglob("*.py"):  # pip install 'mysched[plot]' and the like
        named |= set(re.findall(r"mysched\[(\w+)\]", path.read_text()))
    assert named >= {"postgresql", "plot", "sweep"}
    assert named <= set(extras), named - set(extras)
    assert any(r.startswith("psycopg2-binary") for r in extras["postgresql"])
    assert any(r.startswith("matplotlib") for r in extras["plot"])
    assert any(r.startswith("distributed") for r in extras["sweep"])


def test_the_test_extra_takes_the_others_by_reference_and_install_md_explains_each():
    extras = _extras()
    assert "mysched[postgresql,plot,sweep]" in extras["test"]
    assert not any(r.startswith(("psycopg2", "matplotlib", "distributed")) for r in extras["test"])  # no copies
    doc = (ROOT / "docs" / "install.md").read_text()
    for name in extras:
        assert f"[{name}]" in doc, name  # mysched[plot], or .[test] in a checkout
