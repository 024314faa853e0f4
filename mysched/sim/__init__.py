"""Replaying workloads through the planner on a simulated farm, and reporting on it."""
