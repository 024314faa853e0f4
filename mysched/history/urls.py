"""History database URLs: the password masked for logs, the SQLite file one names."""

from __future__ import annotations

import re

from sqlalchemy.engine import make_url
from sqlalchemy.exc import SQLAlchemyError

CREDENTIALS = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*://[^:/@]*:)(.*)@")
"""``scheme://user:`` and the password, up to the last ``@`` before the query string."""


def mask_url(url: str) -> str:
    """The URL with its password replaced by ``***`` (also a password with a raw ``@``)."""
    head, q, query = url.partition("?")
    m = CREDENTIALS.match(head)
    return f"{m.group(1)}***@{head[m.end():]}{q}{query}" if m else url


def sqlite_file(url: str) -> str | None:
    """The file a SQLite URL names, '' for an in-memory database, None for another kind of
    database or a URL that does not parse (`Store` says what is wrong with it)."""
    try:
        u = make_url(url)
    except (SQLAlchemyError, ValueError):
        return None
    if u.get_backend_name() != "sqlite":
        return None
    db = u.database or ""
    if db.startswith("file:"):  # an SQLite URI (with uri=true)
        db = "" if u.query.get("mode") == "memory" else db[len("file:"):].partition("?")[0]
    return "" if db in ("", ":memory:") else db


def in_memory(url: str) -> bool:
    """True for ``sqlite://``, ``sqlite:///:memory:`` and the like: gone when closed."""
    return sqlite_file(url) == ""
