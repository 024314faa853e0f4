"""The simulated farm, and a `BatchServer` over it for running the daemon without TORQUE."""
