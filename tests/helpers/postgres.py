"""A real PostgreSQL server for the tests, started by the test session itself (docs/store.md).

Debian's `postgresql` package provides the binaries (scripts/postgres.sh installs it); no server
is assumed to be running. `PostgresServer.start()` runs `initdb` in a temporary folder, starts
`postgres` on a free loopback port with its socket in that folder, and waits until it accepts
connections; `stop()` shuts it down and removes the folder. The server refuses to run as root,
so under root it runs as the `postgres` user the package creates.

A missing installation is an error, never a skip: the Postgres backend's tests must fail loudly.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

READY_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 30.0
USER = "blitz"


class PostgresMissing(RuntimeError):
    """No PostgreSQL binaries: the tests that need a server fail with this message."""


def binaries() -> Path:
    """The newest `/usr/lib/postgresql/<version>/bin` that has initdb and postgres."""
    found = sorted(
        (Path(path).parent for path in glob.glob("/usr/lib/postgresql/*/bin/initdb")),
        key=lambda folder: int(folder.parent.name) if folder.parent.name.isdigit() else 0,
    )
    usable = [folder for folder in found if (folder / "postgres").exists()]
    if not usable:
        raise PostgresMissing(
            "PostgreSQL is not installed (no initdb under /usr/lib/postgresql/*/bin): run scripts/postgres.sh "
            "(apt-get install postgresql); the Postgres store tests cannot run without a real server"
        )
    return usable[-1]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class PostgresServer:
    """One throw-away server: `url` reaches its `postgres` database as a trusted local user."""

    def __init__(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="blitz-pg-"))
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None
        self.url = f"postgresql://{USER}@127.0.0.1:{self.port}/postgres"

    def _as_server_user(self) -> dict[str, object]:
        """Popen arguments that drop root to the `postgres` user (postgres refuses root)."""
        if os.geteuid() != 0:
            return {}
        account = pwd.getpwnam("postgres")
        for path in (self.folder, *self.folder.rglob("*")):
            os.chown(path, account.pw_uid, account.pw_gid)
        return {"user": account.pw_uid, "group": account.pw_gid, "extra_groups": []}

    def start(self) -> PostgresServer:
        try:
            bin_dir = binaries()
        except PostgresMissing:
            self.stop()
            raise
        data = self.folder / "data"
        log = self.folder / "server.log"
        self.folder.chmod(0o755)
        dropped = self._as_server_user()
        subprocess.run(
            [str(bin_dir / "initdb"), "-D", str(data), "-U", USER, "--auth=trust", "-E", "UTF8", "--no-sync"],
            check=True,
            capture_output=True,
            timeout=120,
            cwd=self.folder,
            **dropped,  # type: ignore[arg-type]
        )
        dropped = self._as_server_user()  # the log file and the data folder belong to it too
        with log.open("ab") as output:
            self.process = subprocess.Popen(
                [
                    str(bin_dir / "postgres"),
                    "-D",
                    str(data),
                    "-h",
                    "127.0.0.1",
                    "-p",
                    str(self.port),
                    "-k",
                    str(self.folder),
                    "-c",
                    "fsync=off",
                    "-c",
                    "max_connections=200",
                ],
                stdout=output,
                stderr=subprocess.STDOUT,
                cwd=self.folder,
                **dropped,  # type: ignore[arg-type]
            )
        self._wait_ready(log)
        return self

    def _wait_ready(self, log: Path) -> None:
        """Poll until the server answers a query (or died, or the timeout passed)."""
        import psycopg

        deadline = time.monotonic() + READY_TIMEOUT_S
        while True:
            assert self.process is not None
            if self.process.poll() is not None:
                raise RuntimeError(f"postgres exited with {self.process.returncode}: {log.read_text()[-2000:]}")
            try:
                with psycopg.connect(self.url, connect_timeout=2) as connection:
                    connection.execute("SELECT 1")
                return
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"postgres did not accept connections: {log.read_text()[-2000:]}") from None
                time.sleep(0.05)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(2)  # SIGINT: fast shutdown, connections closed
            try:
                self.process.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=STOP_TIMEOUT_S)
        with contextlib.suppress(OSError):
            shutil.rmtree(self.folder)
