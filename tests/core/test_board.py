"""One plan's view of the nodes over the tally: starting a job books its cores and keeps the
free total, a full or closed node leaves its group's rankings, an exclusive class holds the
node it starts on, and at the start of a plan a class holds only as many nodes as its waiting
jobs need. The tally itself stays as it was."""

from __future__ import annotations

from mysched.config import config_from_text
from mysched.core.model.batch import Job, JobState, Node, Snapshot
from mysched.core.place.board import Board
from mysched.core.place.nodeindex import NodeIndex

CFG = config_from_text('''
vos = { atlas = { groups = ["atlas", "mc"]; share = 50; }; cms = { groups = ["cms"]; share = 50; }; };
packing = { mc = { policy = "exclusive"; groups = ["mc"]; ttl = "1h"; }; };
''')
NOW = 100_000.0
TTL = 3600.0
NODES = (Node("wn01", 8), Node("wn02", 8), Node("wn03", 8))
RUNNING = (  # wn01: two mc jobs, 2 cores free; wn02: one mc job, 6 free; wn03 idle
    Job("1", "q", "u1", "mc", 3, JobState.RUNNING, 0.0, NOW - 600, 9000.0, placement=(("wn01", 3),)),
    Job("2", "q", "u1", "mc", 3, JobState.RUNNING, 0.0, NOW - 500, 9000.0, placement=(("wn01", 3),)),
    Job("3", "q", "u1", "mc", 2, JobState.RUNNING, 0.0, NOW - 300, 9000.0, placement=(("wn02", 2),)),
)


def _board(*waiting: Job, now: float = NOW):
    snap = Snapshot(now, RUNNING + waiting, NODES)
    index = NodeIndex().get(CFG, NODES)
    tally = index.tally("mysched")
    queued, _ = tally.sync(snap)
    return Board(index, tally, now), tally, queued


def _ranked(ranking) -> list[str]:
    return sorted(k[-1] for k in ranking.keys)


def _group(board: Board):
    (group,) = board.groups.values()
    return group


def test_a_start_books_its_cores_on_the_board_and_not_in_the_tally():
    board, tally, _ = _board()
    job = Job("9", "q", "u2", "cms", 2)
    assert board.take(job, "cms", None, board.usages["wn03"], 2) is None
    assert (board.usages["wn03"].free, board.usages["wn03"].users, board.free_total) == (6, {"u2": 1}, 14)
    assert (tally.free, "wn03" in tally.loads, tally.loads["wn01"].free) == (16, False, 2)


def test_a_node_filled_leaves_its_groups_rankings_but_not_the_tallys():
    board, tally, _ = _board()
    board.take(Job("9", "q", "u2", "cms", 2), "cms", None, board.usages["wn01"], 2)
    group = _group(board)
    assert (_ranked(group.ranking), _ranked(group.by_class["mc"])) == (["wn02", "wn03"], ["wn02"])
    (key,) = tally.rankings
    assert (_ranked(tally.rankings[key]), _ranked(tally.by_class[key]["mc"])) == (["wn01", "wn02", "wn03"],
                                                                                  ["wn01", "wn02"])


def test_a_start_of_an_exclusive_class_holds_its_node_for_the_ttl():
    board, _, _ = _board()
    pc = board.index.packing["mc"]
    assert board.take(Job("9", "q", "u1", "mc", 1), "atlas", pc, board.usages["wn03"], 1) == NOW + TTL
    assert (board.usages["wn03"].reserved, board.node_classes) == ("mc", {"wn03": "mc"})
    assert _ranked(_group(board).by_class["mc"]) == ["wn01", "wn02", "wn03"]


def test_a_closed_node_is_unusable_and_out_of_every_ranking():
    board, tally, _ = _board()
    board.close("wn02")
    group = _group(board)
    assert (board.usages["wn02"].usable, _ranked(group.ranking), _ranked(group.by_class["mc"])) == \
        (False, ["wn01", "wn03"], ["wn01"])
    assert tally.loads["wn02"].usable is True


def test_a_class_holds_its_fullest_node_when_that_covers_what_waits():
    board, _, queued = _board(Job("8", "q", "u1", "mc", 1), Job("7", "q", "u2", "cms", 4))
    assert board.hold_classes(queued) == [NOW - 500 + TTL]
    assert (board.node_classes, board.usages["wn02"].reserved) == ({"wn01": "mc"}, None)


def test_a_class_holds_more_nodes_while_what_waits_needs_them():
    board, _, queued = _board(Job("8", "q", "u1", "mc", 2), Job("7", "q", "u1", "mc", 1))
    assert board.hold_classes(queued) == [NOW - 500 + TTL, NOW - 300 + TTL]
    assert board.node_classes == {"wn01": "mc", "wn02": "mc"}


def test_a_class_with_nothing_waiting_or_past_its_ttl_holds_nothing():
    board, _, queued = _board(Job("7", "q", "u2", "cms", 1))
    assert (board.hold_classes(queued), board.node_classes) == ([], {})
    late, _, queued = _board(Job("8", "q", "u1", "mc", 1), now=NOW - 300 + TTL)
    assert (late.hold_classes(queued), late.node_classes) == ([], {})
