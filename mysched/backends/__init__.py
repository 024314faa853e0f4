"""Batch servers behind one `BatchServer` protocol: TORQUE (IFL) and the simulated farm."""
