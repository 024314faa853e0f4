"""The pure scheduling core: model, configuration values, planner, usage, estimates.

Standard library only, no I/O, no clock, no globals: everything comes in as arguments, so
the daemon, the simulator, the benchmarks and the tests all run the same code."""

from mysched.core.planner import POLICIES, NodeIndex, plan

__all__ = ["POLICIES", "NodeIndex", "plan"]
