"""`pools` in the configuration: what is accepted, and a clear FILE:LINE: key error for the rest."""

from __future__ import annotations

import pytest

from mysched.config import config_from_text
from mysched.core.settings import Consumer, LoanPolicy
from mysched.errors import ConfigError

BASE = ('vos = { atlas = { groups = ["atlas", "atlasprd"]; share = 50; }; cms = { groups = ["cms"]; share = 50; }; };\n'
        'queues = { atlas = {}; short = {}; };\n')


def test_a_pool_with_every_setting():
    cfg = config_from_text(BASE + '''pools = {
  big = { hosts = ["wn1*"]; properties = ["bigmem"]; min_mem = "64gb"; min_slots = 16;
          package = { slots = 8; mem = "16gb"; };
          vos = { atlas = "25%"; }; groups = { cms = 2; }; queues = { short = "5%"; };
          loan = { queues = ["short"]; max_walltime = "6h"; restricted = true; }; };
  rest = { package = { slots = 1; }; vos = { cms = 10; }; };
};''')
    big, rest = cfg.pools
    assert (big.name, rest.name) == ("big", "rest")  # configuration order: a host joins the first
    assert big.consumers == (Consumer("vo", "atlas", None, 25.0), Consumer("group", "cms", 2, None),
                             Consumer("queue", "short", None, 5.0))
    assert big.loan == LoanPolicy(frozenset({"short"}), 6 * 3600.0, True)
    assert rest.loan == LoanPolicy()  # no loan section: nothing is lent
    assert big.selects("wn10", None, frozenset(), 16, 64 * 1024**3)
    assert not big.selects("wn10", None, frozenset(), 16, 32 * 1024**3)  # min_mem
    assert big.selects("wn20", None, frozenset({"bigmem"}), 32, 128 * 1024**3)  # by property
    assert not big.selects("wn20", None, frozenset(), 32, 128 * 1024**3)
    assert rest.selects("anything", None, frozenset(), 1, None)


@pytest.mark.parametrize("pool, message", [
    ('p = { package = { slots = 8; }; };', "pools.p: a pool needs consumers"),
    ('p = { vos = { atlas = 1; }; };', "pools.p.package: a package needs slots and/or mem"),
    ('p = { package = { slots = 8; }; vos = { atlas = "60%"; cms = "50%"; }; };',
     "pools.p: overcommitted: the consumers are guaranteed 110 % of the pool's packages"),
    ('p = { package = { slots = 8; }; vos = { atlsa = 1; }; };', "pools.p.vos.atlsa: no such vo"),
    ('p = { package = { slots = 8; }; groups = { nobody = 1; }; };', "pools.p.groups.nobody: no such group"),
    ('p = { package = { slots = 8; }; queues = { long = 1; }; };', "pools.p.queues.long: no such queue"),
    ('p = { package = { slots = 8; }; vos = { atlas = "lots"; }; };', "pools.p.vos.atlas: expected packages"),
    ('p = { package = { slots = 8; }; vos = { atlas = -2; }; };', "pools.p.vos.atlas: must not be negative"),
    ('p = { package = { slots = 8; mem = "16 furlongs"; }; vos = { atlas = 1; }; };', "pools.p.package.mem"),
    ('p = { package = { slots = 8; }; vos = { atlas = 1; }; loan = { queues = ["nosuch"]; }; };',
     "pools.p.loan.queues: unknown queue 'nosuch'"),
    ('p = { package = { slots = 8; }; vos = { atlas = 1; }; loan = { max_walltime = "soon"; }; };',
     "pools.p.loan.max_walltime"),
    ('p = { package = { slots = 8; }; vos = { atlas = 1; }; node_types = ["gpu"]; };',
     "pools.p.node_types: unknown node type 'gpu'"),
    ('p = { package = { slot = 8; }; vos = { atlas = 1; }; };', "pools.p.package.slot: unknown setting"),
    ('p = 3;', "pools.p: expected a group"),
])
def test_bad_pools_name_file_line_and_key(pool, message):
    with pytest.raises(ConfigError) as exc:
        config_from_text(BASE + f"pools = {{ {pool} }};", "site.cfg")
    text = str(exc.value)
    assert message in text and "site.cfg:3:" in text, text
