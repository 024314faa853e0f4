"""`mysched import-maui FILE` as an admin runs it: the configuration on stdout passes
`mysched check-config`, the notes go to stderr, bad input is one located line."""

from __future__ import annotations

import pytest

from mysched.cli.main import main
from tests.config.test_import_maui import MAUI_CFG


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["import-maui", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_the_output_passes_check_config(tmp_path, capsys):
    (tmp_path / "maui.cfg").write_text(MAUI_CFG)
    code, out, err = _run(capsys, str(tmp_path / "maui.cfg"))
    assert code == 0
    (tmp_path / "mysched.cfg").write_text(out)
    assert main(["check-config", "-c", str(tmp_path / "mysched.cfg")]) == 0
    checked = capsys.readouterr().out
    assert "OK — 4 VOs (92 % of slots guaranteed)" in checked and "downtime rack7_1" in checked
    for param in ("QOSCFG[ops]", "FSWEIGHT", "NODEALLOCATIONPOLICY", "BACKFILLPOLICY", "SRCFG[sam]"):
        assert any(param in line and "not carried over" in line for line in err.splitlines())
    assert "Traceback" not in err


def test_a_vo_map_file_groups_the_groups(tmp_path, capsys):
    (tmp_path / "maui.cfg").write_text("GROUPCFG[usatlas1] FSTARGET=20\nGROUPCFG[sgmatl] FSTARGET=5\n")
    (tmp_path / "vo.map").write_text("usatlas1 atlas\nsgmatl atlas\n")
    code, out, _ = _run(capsys, str(tmp_path / "maui.cfg"), "--vo-map", str(tmp_path / "vo.map"))
    assert code == 0
    assert 'atlas = { groups = ["usatlas1", "sgmatl"]; share = 25; };' in out


@pytest.mark.parametrize("make, words", [
    (lambda d: d / "none.cfg", "none.cfg: no such file"),
    (lambda d: d, "is a directory"),
])
def test_a_missing_or_unreadable_file_is_one_line_and_exit_status_2(tmp_path, capsys, make, words):
    code, out, err = _run(capsys, str(make(tmp_path)))
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("mysched import-maui: error: ") and words in err


def test_a_garbled_line_is_a_located_warning(tmp_path, capsys):
    (tmp_path / "maui.cfg").write_text("GROUPCFG[cms] FSTARGET=30\nGROUPCFG[atlas FSTARGET=3\n\x00\x01 junk\n")
    code, out, err = _run(capsys, str(tmp_path / "maui.cfg"))
    assert code == 0 and "cms = { groups = [\"cms\"]; share = 30; };" in out
    lines = err.splitlines()
    assert [line.split(": ")[0] for line in lines] == [f"{tmp_path}/maui.cfg:2", f"{tmp_path}/maui.cfg:3"]
    assert all(": warning: " in line for line in lines)


def test_latin1_comments_are_read(tmp_path, capsys):
    (tmp_path / "maui.cfg").write_bytes("# M\xfcller's farm\nGROUPCFG[cms] FSTARGET=30\n".encode("latin-1"))
    code, out, _ = _run(capsys, str(tmp_path / "maui.cfg"))
    assert code == 0 and "share = 30" in out


def test_a_file_with_nothing_to_carry_over_is_said_so(tmp_path, capsys):
    (tmp_path / "maui.cfg").write_text("# nothing\nLOGLEVEL 3\n")
    code, out, err = _run(capsys, str(tmp_path / "maui.cfg"))
    assert code == 1 and out.startswith("# mysched configuration imported")
    assert err.splitlines()[-1] == f"mysched import-maui: error: {tmp_path}/maui.cfg: nothing in it could be carried over (see above)"
    assert f"{tmp_path}/maui.cfg:2: LOGLEVEL 3: not carried over: mysched logs to the journal" in err
