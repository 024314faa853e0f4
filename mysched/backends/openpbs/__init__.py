"""OpenPBS (23.x) behind the `BatchServer` protocol: its IFL through the TORQUE binding, its attributes mapped here."""
