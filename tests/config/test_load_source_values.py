"""Load-source settings that could never work are refused by check-config, not at run time."""

from __future__ import annotations

import pytest

from mysched.config import config_from_text
from mysched.errors import ConfigError


@pytest.mark.parametrize("source, message", [
    ('type = "prometheus"; url = "http://127.0.0.1:99999"; query = "up";', "load_sources.s.url: expected"),
    ('type = "prometheus"; url = "http://prom:9090"; query = " ";', "load_sources.s.query: must not be empty"),
    ('type = "file"; path = "";', "load_sources.s.path: must not be empty"),
    ('type = "command"; command = [""];', "load_sources.s.command: needs the program"),
    ('type = "command"; command = "/bin/echo 1";', "give the program and its arguments as a list"),
])
def test_a_source_that_could_never_work_is_refused_naming_its_key(source, message):
    with pytest.raises(ConfigError, match=message):
        config_from_text(f"load_sources = {{ s = {{ {source} }}; }};\n", "site.cfg")


def test_a_working_source_passes():
    cfg = config_from_text('load_sources = { s = { type = "command"; command = ["/bin/echo", "1"]; }; '
                           't = { type = "prometheus"; url = "http://prom:9090"; query = "up"; }; };\n')
    assert set(cfg.load_sources) == {"s", "t"}
