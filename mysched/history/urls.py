"""History database URLs: the password masked for logs, the SQLite file one names."""

from __future__ import annotations

import os
import re
from urllib.parse import quote

from sqlalchemy.engine import make_url
from sqlalchemy.exc import SQLAlchemyError

from mysched.errors import StoreError

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


def read_only_url(url: str) -> str:
    """The URL to read a SQLite file this process cannot write: opened read-write, SQLite
    needs to create its journal (or the WAL's shared memory) beside it and fails with "unable
    to open database file". A file or directory not writable is opened ``mode=ro``; on a
    read-only filesystem also ``immutable=1`` (nothing can change it there, and SQLite then
    takes no lock at all). Any other URL comes back as it is."""
    path = sqlite_file(url)
    if not path or "file:" in url or not os.path.exists(path):
        return url
    folder = os.path.dirname(os.path.abspath(path))
    if os.access(path, os.W_OK) and os.access(folder, os.W_OK):
        return url
    try:
        frozen = bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except OSError:
        frozen = False
    return f"sqlite:///file:{quote(os.path.abspath(path))}?mode=ro{'&immutable=1' if frozen else ''}&uri=true"


def make_sqlite_dir(url: str) -> None:
    """Create the directory of a SQLite file URL (a daemon's first start on a new host);
    `StoreError` naming it and why it cannot be made (permission denied, a file in the way,
    a filesystem such as /proc that takes none)."""
    path = sqlite_file(url)
    if not path:
        return
    folder = os.path.dirname(os.path.abspath(path))
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as exc:
        raise StoreError(f"history database {mask_url(url)}: cannot create its directory {folder}: "
                         f"{exc.strerror or exc}") from None
