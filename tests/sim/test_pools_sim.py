"""Package guarantees in a replay: bursts of 8-core pilots into a farm kept full by
single-core work get their guaranteed packages within the longest loan, every plan's pool
figures pass the invariant check, and no share is violated."""

from __future__ import annotations

from importlib import resources

from mysched.backends.sim.farm import make_nodes
from mysched.config import config_from_text
from mysched.sim.replay import SimOptions, simulate
from mysched.sim.workloads.synthetic import SyntheticSpec, generate

HOUR = 3600.0


def pool_config(loan_h: int, pools: bool = True):
    # the partition off (on by default): the guarantee is measured against no multi-core help;
    # with it on in both runs, the partition alone kept 92.8 % occupied against 89.3 % with the pool
    text = resources.files("mysched.data").joinpath("mysched.cfg").read_text() + "drain = { rate = 0; };\n"
    swmgr = next(ln for ln in text.splitlines(keepends=True) if ln.startswith("  swmgr = {"))
    text = text.replace(swmgr, swmgr + '  wn = { nodes = ["wn*"]; mem = "16gb"; };\n', 1)
    if pools:
        text += ('pools = { mcore = { hosts = ["wn*"]; package = { slots = 8; mem = "16gb"; };\n'
                 '  groups = { atlasmc = "25%"; };\n'
                 f'  loan = {{ queues = ["all"]; max_walltime = "{loan_h}:00:00"; }}; }}; }};\n')
    return config_from_text(text, "pools.cfg")


def test_bursts_get_their_packages_within_the_longest_loan():
    nodes = make_nodes(16, 8)
    wl = generate(SyntheticSpec(duration=36 * HOUR, slots=128, seed=3, burst_jobs=6, burst_every=12 * HOUR))
    with_pool = simulate(wl, pool_config(8), nodes, SimOptions())
    without = simulate(wl, pool_config(8, pools=False), nodes, SimOptions())
    pool = with_pool.pools["mcore"]
    unmet = pool["consumers"]["group atlasmc"]
    # 25 % of 14 usable packages (wn0001/2 are swmgr nodes atlasmc may not use; they still
    # count) = 4: each burst of 6 was owed 4 and got them once the loans (<= 8 h) ended
    assert 0 < unmet["longest_unmet_s"] <= 8 * HOUR
    assert pool["invariant_breaches"] == 0 and with_pool.share_violations == 0
    assert pool["loaned_slot_h"] > 0  # the idle guarantee was lent, not left idle
    assert with_pool.started == without.started == len(wl)
    assert with_pool.occupancy >= without.occupancy - 0.02
    mc = with_pool.by_size["2-8"]
    assert sum(w for w, _ in mc) / len(mc) < sum(w for w, _ in without.by_size["2-8"]) / len(mc)
