"""The history store (SQLAlchemy) and the TORQUE accounting-log reader that feeds it."""
