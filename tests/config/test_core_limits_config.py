"""max_cores on VOs, groups and queues, and the users section: read, and refused with FILE:LINE."""

from __future__ import annotations

import pytest

from mysched.cli.main import main
from mysched.config import config_from_text, load_config
from mysched.core.settings import UserLimits
from mysched.errors import ConfigError

from ..conftest import REPO


def problems(text: str) -> list[str]:
    with pytest.raises(ConfigError) as exc:
        config_from_text(text, "site.cfg")
    return exc.value.problems


def test_max_cores_and_users_are_read():
    cfg = config_from_text('vos = { cms = { groups = ["cms"]; max_cores = 96; }; };\n'
                           'groups = { cmssgm = { vo = "cms"; max_cores = 8; }; };\n'
                           'queues = { long = { max_cores = 400; }; };\n'
                           'users = { default = { max_running = 50; max_cores = 200; }; prd = { max_cores = 800; };'
                           ' ops = {}; };\n')
    assert (cfg.vos["cms"].max_cores, cfg.groups["cmssgm"].max_cores, cfg.queues["long"].max_cores) == (96, 8, 400)
    assert cfg.user_limits("alice") == ("users.default", UserLimits(50, 200))
    assert cfg.user_limits("prd") == ("users.prd", UserLimits(None, 800))  # instead of the default, not on top of it
    assert cfg.user_limits("ops") == ("users.ops", UserLimits())
    assert config_from_text('users = { prd = { max_cores = 8; }; };').user_limits("alice") is None


def test_bad_limits_name_their_line():
    out = problems('vos = {\n  cms = { groups = ["cms"]; max_cores = -1; };\n};\n'
                   'groups = {\n  cmssgm = { max_cores = "8"; };\n};\n'
                   'queues = {\n  long = { max_cores = 1.5; };\n};\n'
                   'users = {\n  default = { max_running = -2; max_procs = 4; };\n  bob = 5;\n};\n')
    assert out == [
        "site.cfg:2: vos.cms.max_cores: must be at least 0, got -1",
        "site.cfg:5: groups.cmssgm.max_cores: expected an integer, got a string '8'",
        "site.cfg:8: queues.long.max_cores: expected an integer, got a number 1.5",
        "site.cfg:11: users.default.max_procs: unknown setting",
        "site.cfg:11: users.default.max_running: must be at least 0, got -2",
        "site.cfg:12: users.bob: expected a group { ... }, got an integer",
    ]


def test_a_users_section_that_is_no_group_and_a_misspelt_key():
    out = problems('users = 5;\n')
    assert out == ["site.cfg:1: users: expected a group of users { default = { max_running = N; max_cores = N; }; }, "
                   "got an integer"]
    out = problems('vos = { cms = { groups = ["cms"]; max_core = 8; }; };\n')
    assert out == ["site.cfg:1: vos.cms.max_core: unknown setting (did you mean 'max_cores'?)"]


def test_check_config_refuses_a_bad_user_limit_in_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.cfg"
    bad.write_text('users = {\n  default = { max_cores = -8; };\n};\n')
    assert main(["check-config", "-c", str(bad)]) == 1
    err = capsys.readouterr().err
    assert f"{bad}:2: users.default.max_cores: must be at least 0, got -8" in err and "Traceback" not in err


def test_the_example_file_documents_max_cores_and_users():
    text = (REPO / "etc" / "mysched.cfg").read_text()
    assert "max_cores" in text and "users" in text
    cfg = load_config(str(REPO / "etc" / "mysched.cfg"))
    assert cfg.users == {} and all(v.max_cores is None for v in cfg.vos.values())
