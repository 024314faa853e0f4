"""The long-running scheduler: one cycle's I/O, the service loop, metrics, status file."""
