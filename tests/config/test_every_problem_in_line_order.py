"""check-config reports every problem, in the order of the file's lines: a section the validator
reads late (downtimes, duplicates found while parsing) no longer comes out before an earlier
line, and one mistake does not hide what the rest of the file says of the farm."""

from __future__ import annotations

import pytest

from mysched.backends.sim.farm import make_nodes
from mysched.cli.check_config import farm_warnings
from mysched.cli.main import main
from mysched.config import config_from_text, in_file_order, validate
from mysched.config.parse import parse_file, parse_text
from mysched.core.model.batch import Queue, Snapshot
from mysched.errors import ConfigError

FOUR = '''downtimes = {
  d1 = { start = "2026-12-01T12:00"; end = "2026-12-01T08:00"; };
};
hot = { queues = ["atlsa"]; };
queues = {
  atlas = { max_running = 10; };
  mcore = { node_types = ["fat"]; };
};
node_types = {
  fat = { nodes = ["fat*"]; };
};
vos = { cms = { groups = ["cms"]; share = 120; }; };
scheduler = { interval = 60; };
scheduler = { interval = 30; };
'''


def test_four_problems_come_out_together_in_line_order():
    with pytest.raises(ConfigError) as exc:
        config_from_text(FOUR, "site.cfg")
    assert exc.value.problems == [
        "site.cfg:2: downtimes.d1.end: must be after start",
        "site.cfg:4: hot.queues: unknown queue 'atlsa' (not declared under queues)",
        "site.cfg:12: vos.cms.share: must be between 0 and 100, got 120",
        "site.cfg:14: scheduler: duplicate setting (first set on line 13; libconfig would silently keep only the "
        "last one)",
    ]


def test_check_config_prints_them_in_line_order(tmp_path, capsys):
    f = tmp_path / "site.cfg"
    f.write_text(FOUR)
    assert main(["check-config", "-c", str(f)]) == 1
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    lines = [int(e.split(str(f) + ":", 1)[1].split(":", 1)[0]) for e in err]
    assert lines == [2, 4, 12, 14] and "Traceback" not in "".join(err)


def test_a_bad_downtime_does_not_hide_what_the_file_says_of_the_farm():
    """validate keeps the rest of the configuration, so the checks against the nodes (a node
    type matching none, a queue with no usable node, a queue the server lacks) still run."""
    parsed = parse_text(FOUR.replace('share = 120', 'share = 12'), "site.cfg")
    cfg, problems = validate(parsed)
    assert problems[0] == "site.cfg:2: downtimes.d1.end: must be after start" and len(problems) == 3
    assert cfg.downtimes == () and set(cfg.queues) == {"atlas", "mcore"} and cfg.node_types[0].name == "fat"
    snap = Snapshot(0.0, (), tuple(make_nodes(4, 8, "wn{index:02d}")), (Queue("atlas"),))
    warnings = farm_warnings(cfg, snap, parsed.where)
    merged = in_file_order(problems + warnings, parsed)
    assert [m.split(":", 2)[1] for m in merged] == ["2", "4", "7", "7", "10", "14"]
    assert "queues.mcore: pbs_server has no such queue" in merged[2]
    assert "queues.mcore: its nodes/node_types match none of the server's nodes" in merged[3]
    assert "node_types.fat: matches none of the server's 4 node(s)" in merged[4]


def test_an_included_file_comes_after_the_main_one_and_lines_sort_as_numbers(tmp_path):
    (tmp_path / "vos.cfg").write_text('vos = {\n  cms = { groups = ["cms"]; share = -1; };\n};\n')
    main_cfg = tmp_path / "site.cfg"
    main_cfg.write_text('@include "vos.cfg"\n' + "\n" * 8 + 'hot = { queues = 5; };\nfarm = { nodes = 0; };\n'
                        'scheduler = { intervall = 60; };\n')
    parsed = parse_file(str(main_cfg))
    _, problems = validate(parsed)
    where = [p.split(": ", 1)[0] for p in problems]
    assert where == [f"{main_cfg}:10", f"{main_cfg}:11", f"{main_cfg}:12", f"{tmp_path / 'vos.cfg'}:2"]
