"""Validation of per-user limits: `users` (MAUI's USERCFG).

    users = {
      default = { max_running = 200; max_cores = 400; };   # every user, each counted alone
      prdatlas = { max_cores = 2000; };                    # this user instead of the default
    };

A user with a block of their own gets its limits instead of the default's (an empty block:
none), as MAUI's USERCFG[DEFAULT] applies to users without a USERCFG of their own.
"""

from __future__ import annotations

from typing import Any

from mysched.core.settings import UserLimits
from mysched.config.values import kind


def build_users(c: Any, top: dict) -> dict[str, UserLimits]:
    """The `users` section; problems go to the checker `c` with their key paths."""
    raw = top.get("users")
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        c.problem(("users",), f"expected a group of users {{ default = {{ max_running = N; max_cores = N; }}; }}, "
                  f"got {kind(raw)}")
        return {}
    out = {}
    for name, uraw in raw.items():
        p = ("users", name)
        g = c.group(uraw, p)
        out[name] = UserLimits(c.get(g, p, "max_running"), c.get(g, p, "max_cores"))
    return out
