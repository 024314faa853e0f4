"""Node admission is one list of checks, and every caller asks it: on random farms (`farmcases`:
node types, restricted and exclusive queues, limits, packing, drains, guarantee pools,
downtimes, reservations kept from the last plan), after a plan, the compiled scan, the
explanation, whole-request placement with the node named, and the share-violation check's
admission rebuilt from what the plan reports give every waiting job, on every node, the same
verdict and the same first reason."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mysched.core.hold.gates import as_planned
from mysched.core.model.batch import JobState
from mysched.core.model.reasons import Reason
from mysched.core.model.request import NodePart, Request
from mysched.core.place.admission import CHECKS, Ask
from mysched.core.place.nodeindex import NodeIndex
from mysched.core.planner import POLICIES, Planner
from mysched.core.share.usage import Usage

from .farmcases import ALL, Case, cases

RUN = dict(derandomize=True, deadline=None, database=None,
           suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _asks(pl: Planner) -> list[Ask]:
    out = []
    for job, vo in pl.queued:
        if job.state is not JobState.QUEUED or (job.request is not None and not job.request.simple):
            continue
        rules = pl.rules(job.queue, vo, job.group)
        pc = pl.cy.index.job_class(job.queue, vo, job.group, job.user) if pl.cy.packing else None
        out.append(Ask(job, vo, pc.name if pc else None, job.cores, rules.groups, rules.vo_node_max,
                       rules.group_node_max))
    return out


def _disagreements(case: Case, policy: str) -> list[str]:
    snap = case.snapshot()
    index = NodeIndex().get(case.config, snap.nodes)
    pl = Planner(snap, case.config, Usage(), case.now, policy, index, (), case.reservations, case.drains,
                 case.pool_gates)
    out = pl.run()
    adm, usages = pl.admission, pl.board.usages
    names = list(index.by_name)
    bad = []
    verdicts: dict[tuple[str, str], Reason | None] = {}
    for ask in _asks(pl):
        job = ask.job
        rules = pl.rules(job.queue, ask.vo, job.group)
        for name in names:
            ld = usages.peek(name)
            first = adm.first(ld, ask)
            verdicts[(job.id, name)] = first
            if adm.admits(ld, ask) != (first is None):
                bad.append(f"{job.id} on {name}: the compiled check says {adm.admits(ld, ask)}, the first refusal {first}")
            scanned = adm.scan([(name,)], usages, ask, False, None, None, False)
            if (scanned is not None) != (first is None):
                bad.append(f"{job.id} on {name}: the scan {'takes' if scanned else 'skips'} it, the first refusal {first}")
            placed = pl.requests.place(job, ask.vo, ask.cls, rules, Request((NodePart(1, job.cores, name),)))
            if isinstance(placed, str) != (first is not None):
                bad.append(f"{job.id} on {name}: the request path says {placed!r}, the first refusal {first}")
    # the share-violation check's admission, rebuilt from the plan and its starts booked on it
    if pl.resv.nodes != out.holds:
        return bad  # a reservation released or replaced in the plan: its holds changed as it went
    adm2, board2 = as_planned(out, snap, case.config, index)
    jobs = {j.id: j for j in snap.jobs}
    for s in out.starts:
        j = jobs[s.job_id]
        pc = index.job_class(j.queue, s.vo, j.group, j.user) if index.packing else None
        req = j.request
        for n, c in s.placement:
            board2.take(j, s.vo, pc, board2.usages[n], c, req.mem_for(c, j.cores) if req else 0,
                        bool(req and req.exclusive), req.vmem_for(c, j.cores) if req else 0)
    for ask in _asks(pl):
        for name in names:
            again = adm2.first(board2.usages.peek(name), ask)
            if again != verdicts[(ask.job.id, name)]:
                bad.append(f"{ask.job.id} on {name}: the plan says {verdicts[(ask.job.id, name)]}, the check "
                           f"rebuilt from it {again}")
    return bad


@settings(max_examples=700, **RUN)
@given(cases(ALL), st.sampled_from(POLICIES))
def test_every_caller_gives_a_node_the_same_verdict_and_first_reason(case, policy):
    assert _disagreements(case, policy) == []


def test_every_check_has_a_reason_a_user_can_read():
    from mysched.core.model.reasons import NODE_REFUSALS, NODE_REJECTIONS, REASONS

    for check in CHECKS:
        assert check.reason in REASONS or check.reason in NODE_REFUSALS, check.reason
        assert check.reason not in NODE_REFUSALS or check.reason not in NODE_REJECTIONS
