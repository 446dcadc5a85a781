"""A real PostgreSQL server for the tests, started from the Debian ``postgresql-15`` binaries.

The cluster lives in a temporary directory owned by the ``postgres`` user (Postgres refuses
to run as root; the tests here run as root, so the server runs through ``runuser``), listens
on 127.0.0.1 on a free port with ``trust`` authentication, and is stopped at the end of the
session. Each test gets its own schema (``search_path`` in the URL), which is much cheaper than
a database per test.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from pathlib import Path

BIN = Path(os.environ.get("AGENTMEM_TEST_PG_BIN", "/usr/lib/postgresql/15/bin"))


def missing_reason() -> str | None:
    """Why no server can start here, or None."""
    for tool in ("initdb", "pg_ctl", "postgres"):
        if not (BIN / tool).exists():
            return f"PostgreSQL binaries not found ({BIN / tool}); install postgresql-15"
    if os.geteuid() == 0 and shutil.which("runuser") is None:
        return "running as root and runuser is missing (Postgres refuses to run as root)"
    return None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PostgresServer:
    """One running cluster; :meth:`new_schema` hands out an empty schema's URL."""

    def __init__(self) -> None:
        self.base = Path(tempfile.mkdtemp(prefix="agentmem-pg-"))
        self.data = self.base / "data"
        self.port = _free_port()
        self.user = "postgres" if os.geteuid() == 0 else os.environ.get("USER", "postgres")
        if os.geteuid() == 0:
            shutil.chown(self.base, "postgres", "postgres")
        self._run(
            [
                str(BIN / "initdb"),
                "-D",
                str(self.data),
                "-U",
                self.user,
                "-A",
                "trust",
                "--no-sync",
                "-E",
                "UTF8",
                "--locale=C",
            ]
        )
        options = (
            f"-c listen_addresses=127.0.0.1 -c port={self.port} "
            f"-c unix_socket_directories={self.base} -c fsync=off -c max_connections=300 "
            "-c shared_buffers=64MB"
        )
        self._run(
            [
                str(BIN / "pg_ctl"),
                "-D",
                str(self.data),
                "-l",
                str(self.base / "server.log"),
                "-o",
                options,
                "-w",
                "-t",
                "60",
                "start",
            ]
        )
        self.url = f"postgresql://{self.user}@127.0.0.1:{self.port}/postgres"

    def _run(self, argv: list[str]) -> None:
        if os.geteuid() == 0:
            argv = ["runuser", "-u", "postgres", "--", *argv]
        subprocess.run(argv, check=True, capture_output=True, cwd=self.base)

    def new_schema(self) -> str:
        """The URL of a new, empty schema (its own tables, sequences and functions)."""
        import psycopg

        name = f"t_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f"CREATE SCHEMA {name}")
        return f"{self.url}?options=-csearch_path%3D{name}"

    def stop(self) -> None:
        try:
            self._run([str(BIN / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "stop"])
        finally:
            shutil.rmtree(self.base, ignore_errors=True)
