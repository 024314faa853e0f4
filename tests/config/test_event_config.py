"""daemon.event_allow and daemon.event_reserved_port: check-config refuses what the listener
could not use, naming the file, line and key."""

from __future__ import annotations

import pytest

from mysched.cli.main import main
from mysched.config import config_from_text
from mysched.errors import ConfigError


def _problems(text: str) -> list[str]:
    with pytest.raises(ConfigError) as exc:
        config_from_text(text, "site.cfg")
    return str(exc.value).splitlines()


def test_good_forms_are_kept():
    cfg = config_from_text('daemon = { event_address = "10.0.0.1:15004";\n'
                           '  event_allow = ["head01.example.org", "10.0.0.0/8", "::1"];\n'
                           '  event_reserved_port = false; };\n')
    assert cfg.event_allow == ("head01.example.org", "10.0.0.0/8", "::1") and cfg.event_reserved_port is False
    auto = config_from_text('daemon = { event_allow = "head01"; event_reserved_port = "auto"; };')
    assert auto.event_allow == ("head01",) and auto.event_reserved_port is None
    unset = config_from_text('daemon = { state_dir = "/var/lib/mysched"; };')
    assert unset.event_allow == () and unset.event_reserved_port is None


@pytest.mark.parametrize("value, says", [
    ('["10.0.0.0/33"]', "expected a host name, an IP address or a network such as 10.0.0.0/8, got '10.0.0.0/33'"),
    ('["head 01"]', "got 'head 01'"),
    ('["10.0.0.300"]', "got '10.0.0.300'"),
    ('[' + '"a", ' * 2 + '"' + "x" * 5000 + '.example"]', "got '" + "x" * 200 + "... (5008 characters)'"),
    ("[]", "an empty list would refuse every pbs_server contact"),
    ("15004", "expected a list of strings"),
])
def test_bad_allow_lists_are_refused(value, says):
    out = _problems(f"daemon = {{\n  event_allow = {value};\n}};\n")
    assert len(out) == 1 and out[0].startswith("site.cfg:2: daemon.event_allow: ") and says in out[0]
    assert "x" * 201 not in out[0]  # at most 200 characters of the value


def test_a_bad_reserved_port_setting_is_refused():
    out = _problems('daemon = { event_reserved_port = "maybe"; };\n')
    assert out == ["site.cfg:1: daemon.event_reserved_port: expected true, false or \"auto\", got a string 'maybe'"]


def test_check_config_refuses_a_bad_allow_list(tmp_path, capsys):
    path = tmp_path / "mysched.cfg"
    path.write_text('daemon = { event_allow = ["10.0.0.0/40"]; };\n')
    assert main(["check-config", "-c", str(path)]) != 0
    err = capsys.readouterr().err
    assert f"{path}:1: daemon.event_allow:" in err and "Traceback" not in err
