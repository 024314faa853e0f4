"""History databases for the store and ingestion tests: a SQLite file, or a private schema on
the PostgreSQL server of MYSCHED_TEST_PG_URL (skipped when it is not set or not reachable)."""

from __future__ import annotations

import os
import uuid

import pytest
from sqlalchemy import create_engine, text

from mysched.history.store import Store

PG_URL = os.environ.get("MYSCHED_TEST_PG_URL")


def _with_schema(url: str, schema: str) -> str:
    return f"{url}{'&' if '?' in url else '?'}options=-csearch_path%3D{schema}"


@pytest.fixture
def db_url(request, tmp_path):
    """A fresh, empty database URL: a SQLite file, or a private PostgreSQL schema."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path}/history.db"
        return
    if not PG_URL:
        pytest.skip("MYSCHED_TEST_PG_URL not set (bash .ci/postgres.sh prints one)")
    try:
        eng = create_engine(PG_URL, connect_args={"connect_timeout": 5})
        schema = "t_" + uuid.uuid4().hex[:10]
        with eng.begin() as c:
            c.execute(text(f"CREATE SCHEMA {schema}"))
    except Exception as exc:  # noqa: BLE001
        pytest.skip(f"PostgreSQL at MYSCHED_TEST_PG_URL not reachable: {str(exc).splitlines()[0]}")
    yield _with_schema(PG_URL, schema)
    with eng.begin() as c:
        c.execute(text(f"DROP SCHEMA {schema} CASCADE"))
    eng.dispose()


@pytest.fixture
def store(db_url):
    s = Store(db_url)
    yield s
    s.close()
