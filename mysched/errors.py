"""One exception tree for the whole project.

Adapters translate foreign errors (IFL error codes, SQLAlchemy, libconf, OS errors) into
these at their boundary; the CLI turns any `MyschedError` into a one-line message and a
non-zero exit status, never a traceback.
"""

from __future__ import annotations


class MyschedError(Exception):
    """Base of every error mysched raises on purpose."""


class ConfigError(MyschedError):
    """A configuration file is unreadable or invalid.

    `problems` lists every problem found, each already formatted as
    ``FILE:LINE: key.path: message`` so the admin sees all of them at once.
    """

    def __init__(self, problems: list[str] | str):
        if isinstance(problems, str):
            problems = [problems]
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


class InputError(MyschedError):
    """A workload trace, accounting log or other input file is unusable as a whole."""


class UsageError(MyschedError):
    """Command-line arguments that make no sense together."""


class ServerError(MyschedError):
    """Talking to the batch server failed."""

    def __init__(self, message: str, *, code: int | None = None, call: str | None = None):
        super().__init__(message)
        self.code = code
        self.call = call


class ServerUnavailable(ServerError):
    """The batch server cannot be reached (down, refused, timed out)."""


class ServerTimeout(ServerUnavailable):
    """A call did not answer in time: its effect is unknown."""


class Unauthorized(ServerError):
    """The server refused the request for lack of manager/operator rights."""


class JobGone(ServerError):
    """The job no longer exists on the server."""


class JobStateError(ServerError):
    """The job is not in a state that allows the request (e.g. already running)."""


class RunRefused(ServerError):
    """The server refused to run a job where we asked (node full, unknown node, ...)."""


class StoreError(MyschedError):
    """The history database failed."""


class StatusError(MyschedError):
    """The published status file is missing, stale or unreadable."""


MAX_SHOWN = 200
"""The most characters of an offending value that a message repeats: a 60,000-character name
or a line of 1 MiB is named, not printed."""


def clip(text: str, limit: int = MAX_SHOWN) -> str:
    """`text`, or its first `limit` characters and how long it was."""
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"
