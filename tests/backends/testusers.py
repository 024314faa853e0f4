"""The unprivileged users the live farm tests submit jobs as (through `su`, as root)."""

from __future__ import annotations

import os
import subprocess

import pytest


def require_test_users(users: tuple[str, ...]) -> None:
    """Skip unless this process can submit as each of `users`: root, and every user exists."""
    if os.geteuid() != 0:
        pytest.skip("submitting as the test users needs root (su)")
    for user in users:
        if subprocess.run(["id", user], capture_output=True).returncode:
            pytest.skip(f"test user {user} missing")
