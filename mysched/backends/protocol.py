"""The batch-server interface every backend implements (TORQUE, the simulated farm)."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from mysched.core.model.batch import Job, Placement, Snapshot


@runtime_checkable
class BatchServer(Protocol):
    """What the daemon needs from a batch server.

    Implementations raise only `mysched.errors.ServerError` subclasses.
    """

    name: str

    def snapshot(self) -> Snapshot:
        """Read queues, jobs and nodes in one go."""
        ...

    def run_job(self, job_id: str, placement: Placement) -> None:
        """Start a queued job on exactly the given nodes and cores."""
        ...

    def get_job(self, job_id: str) -> Job | None:
        """Re-read one job (None if the server no longer knows it); used after a timeout."""
        ...

    def close(self) -> None:
        """Release the connection."""
        ...
