"""Group shares within a VO (LSF's share tree): a VO's slots go to its groups by their
weights -- production 80, pilots 20 -- and alike when none is set."""

from __future__ import annotations

import pytest

from mysched.config import config_from_text
from mysched.core.model.batch import Node
from mysched.core.planner import plan
from mysched.core.share.usage import Usage
from mysched.errors import ConfigError

from ..conftest import queued, snap

VO = 'vos = { atlas = { groups = ["atlasprd", "atlaspil"]; share = 100; }; };\n'


def _started(cfg, usage=None) -> dict[str, int]:
    jobs = [queued(f"p{i}", "prd", "atlasprd", submit=i) for i in range(20)]
    jobs += [queued(f"a{i}", "pil", "atlaspil", submit=i) for i in range(20)]
    p = plan(snap(jobs, [Node("wn01", 10)]), cfg, usage or Usage(), 1000.0)
    out: dict[str, int] = {}
    for s in p.starts:
        out[s.group] = out.get(s.group, 0) + 1
    return out


def test_a_vos_slots_go_to_its_groups_by_their_shares():
    cfg = config_from_text(VO + 'groups = { atlasprd = { share = 80; }; atlaspil = { share = 20; }; };')
    assert _started(cfg) == {"atlasprd": 8, "atlaspil": 2}


def test_groups_without_shares_weigh_alike():
    assert _started(config_from_text(VO)) == {"atlasprd": 5, "atlaspil": 5}
    assert _started(config_from_text(VO + 'groups = { atlasprd = { max_per_node = 10; }; };')) == \
        {"atlasprd": 5, "atlaspil": 5}


def test_past_usage_counts_against_the_share():
    # production used 80 % of the window and pilots 20 %: as their shares, so alike now
    cfg = config_from_text(VO + 'groups = { atlasprd = { share = 80; }; atlaspil = { share = 20; }; };')
    usage = Usage(vo={"atlas": 100.0}, group={"atlasprd": 80.0, "atlaspil": 20.0})
    assert _started(cfg, usage) == {"atlasprd": 8, "atlaspil": 2}
    # pilots used it all: production catches up first
    usage = Usage(vo={"atlas": 100.0}, group={"atlaspil": 100.0})
    assert _started(cfg, usage) == {"atlasprd": 10}


@pytest.mark.parametrize("value, says", [("0", "must be above 0"), ('"80%"', "expected a number")])
def test_a_bad_group_share_is_named(value, says):
    with pytest.raises(ConfigError) as e:
        config_from_text(VO + f'groups = {{ atlasprd = {{ share = {value}; }}; }};')
    assert "groups.atlasprd.share" in str(e.value) and says in str(e.value)
