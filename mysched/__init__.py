"""mysched: an external scheduler for TORQUE batch farms (the MYSCHED algorithm)."""

__version__ = "0.1.0"
