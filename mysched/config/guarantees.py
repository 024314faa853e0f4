"""Whether the VOs' guarantees fit the farm: the one rule that check-config (on the `sim://`
farm of the file, or pbs_server's nodes with --server), `mysched run` at its start and a reload
(on the farm the daemon last read) all ask.

A guarantee is `slots` given as a number, or a `share` of the farm's slots. Together they may
not promise more slots than the farm has: the planner would then serve every VO "below its
guarantee" and the guarantees would order nothing, silently. Without a farm (a torque:// file
checked without --server) nothing can be said, and nothing is.
"""

from __future__ import annotations

import math
from typing import Callable, Iterable

from mysched.config.parse import Path, clip
from mysched.config.servers import sim_params
from mysched.core.settings import Config


def overpromised(cfg: Config, farm_slots: int, where: Callable[[Path], str] | None = None) -> str | None:
    """``FILE[:LINE]: vos: ...`` if the guarantees add up to more than `farm_slots`, else
    None; `where` gives a key's ``FILE:LINE`` (the parsed file's), else the file alone."""
    fixed = {n: v.slots for n, v in cfg.vos.items() if v.slots is not None}
    share = sum(v.share for v in cfg.vos.values() if v.slots is None)
    promised = sum(fixed.values()) + math.floor(share * farm_slots + 1e-9)
    if promised <= farm_slots:
        return None
    parts = []
    if fixed:
        top = sorted(fixed, key=lambda n: (-fixed[n], n))
        parts.append("slots: " + (", ".join(f"{clip(n)} {fixed[n]}" for n in top) if len(top) <= 3 else
                                  f"{len(top)} VOs, {sum(fixed.values())} in all, the most {clip(top[0])} {fixed[top[0]]}"))
    if share:
        parts.append(f"shares: {share * 100:g} % of the farm")
    at = (where or (lambda path: cfg.source))(("vos",))
    return (f"{at}: vos: the guarantees add up to {promised} slots ({'; '.join(parts)}), more than the farm's "
            f"{farm_slots}: lower the VOs' slots or shares")


def farm_slots(slots: Iterable[int]) -> int:
    """The farm's slots: every node's, down or offline ones too (they come back)."""
    return sum(slots)


def sim_farm_slots(cfg: Config) -> int | None:
    """The slots of the `sim://` farm the file's server.url names (None: not a sim:// URL,
    or one that is refused for its own reasons)."""
    if not cfg.server.startswith("sim:"):
        return None
    try:
        p = sim_params(cfg.server, cfg.farm)
    except ValueError:
        return None
    return p.nodes * p.slots


UNGUARANTEED_MOST = 0.10
"""A VO with no guarantee that runs this part of the farm's work or more is named: its jobs get
only what the guaranteed VOs leave, so a busier farm would starve them -- usually groups that
fell into the default VO unmapped, or a VO whose share was forgotten."""


def unguaranteed(cfg: Config, parts: dict[str, float], total_slots: int) -> list[tuple[str, float]]:
    """The VOs of `parts` (VO -> its part of the work, 0 to 1) that have no guarantee on a
    farm of `total_slots` (no share, no slots, or undeclared, as the default VO may be) and
    ran at least `UNGUARANTEED_MOST` of it, most first."""
    heavy = [(vo, p) for vo, p in parts.items() if p >= UNGUARANTEED_MOST and cfg.vo(vo).guarantee(total_slots) <= 0]
    return sorted(heavy, key=lambda x: (-x[1], x[0]))


def unguaranteed_text(cfg: Config, vo: str, part: float, what: str) -> str:
    """One sentence for `unguaranteed`'s VO; `what` says what it did, with ``{part}`` where its
    part goes ("ran {part} of the work")."""
    how = "not declared under vos" if vo not in cfg.vos else "share 0 %"
    default = ", the default VO (of the groups no VO names)" if vo == cfg.default_vo else ""
    return (f"VO {clip(vo)}{default} {what.format(part=f'{part:.1%}')} with no guarantee ({how}): its jobs get "
            f"only what the guaranteed VOs leave, so on a busier farm they would wait -- give it a share "
            f"(vos.{clip(vo)}.share)" + (" or map its groups to their VOs" if default else ""))
