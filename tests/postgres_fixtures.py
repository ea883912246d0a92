"""A throwaway real PostgreSQL server for the chat history tests (``history.url``).

``postgres_server`` (one per test session) runs Debian's own binaries: ``initdb`` into a new
folder under /tmp, ``pg_ctl start`` listening on 127.0.0.1 at a free port (and on a Unix socket in
that folder, which only the fixture uses), a role with a password (password authentication over
TCP, scram-sha-256: a wrong or missing password is refused as on a real server); at teardown the
server is stopped and the folder removed. ``pg_history`` gives each test its own new database
on it. PostgreSQL refuses to run as root, so as root the server runs as the ``postgres`` user
(``runuser``), in a folder that user owns.

Binaries are looked for on PATH, then in /usr/lib/postgresql/<version>/bin (the newest). Without
them the tests skip, saying how to install them (``make test`` does it as root: Makefile
``postgres``); under CI=true that skip fails the run (tests/conftest.py allows no such skip).

Import both fixtures into a test module (they are named ``postgres_server`` and ``pg_history``):
``from tests.postgres_fixtures import pg_history_fixture, postgres_server_fixture``.
"""

from __future__ import annotations

import glob
import itertools
import os
import pwd
import secrets
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

PG_BIN_GLOB = "/usr/lib/postgresql/*/bin"
INSTALL_HINT = "install it with `apt-get install postgresql` (as root; `make test` does it)"
ROLE = "assistant"  # the role the tests' history URL names (not a superuser)
SUPERUSER = "postgres"
START_TIMEOUT_S = 60
# a test server: nothing here needs to survive a crash
SERVER_OPTIONS = ("-c fsync=off -c synchronous_commit=off -c full_page_writes=off "
                  "-c max_connections=40 -c shared_buffers=16MB")


def _version_key(path: str) -> tuple[int, ...]:
    digits = Path(path).parent.name
    return tuple(int(p) for p in digits.split(".") if p.isdigit())


def find_pg_bin(path: str | None = None, search: Sequence[str] | None = None) -> Path | None:
    """The folder of the server binaries (initdb, pg_ctl, postgres, psql): ``initdb`` on PATH
    (its real folder: /usr/local/bin may hold links), else the newest of ``search``
    (/usr/lib/postgresql/*/bin). None when there is none."""
    found = shutil.which("initdb", path=path)
    candidates = [Path(found).resolve().parent] if found else []
    dirs = glob.glob(PG_BIN_GLOB) if search is None else list(search)
    candidates += [Path(d) for d in sorted(dirs, key=_version_key, reverse=True)]
    for folder in candidates:
        if all((folder / tool).is_file() for tool in ("initdb", "pg_ctl", "postgres", "psql")):
            return folder
    return None


def require_pg_bin(path: str | None = None, search: Sequence[str] | None = None) -> Path:
    folder = find_pg_bin(path, search)
    if folder is None:
        pytest.skip(f"PostgreSQL server binaries (initdb, pg_ctl) not found on PATH or in "
                    f"{PG_BIN_GLOB}: {INSTALL_HINT}")
    return folder


def _run_as() -> list[str]:
    """The command prefix that runs the server's tools: as root, ``runuser -u postgres --``."""
    if os.geteuid() != 0:
        return []
    try:
        pwd.getpwnam(SUPERUSER)
    except KeyError:
        pytest.skip(f"running as root and there is no `{SUPERUSER}` user to run PostgreSQL as: "
                    f"{INSTALL_HINT} (it creates the user)")
    runuser = shutil.which("runuser")
    if runuser is None:
        pytest.skip("running as root and `runuser` (util-linux) is absent: PostgreSQL cannot "
                    "be run as another user")
    return [runuser, "-u", SUPERUSER, "--"]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass(frozen=True)
class PgDatabase:
    """One database: its history URL (no password, as cfg.yaml's ``history.url``), the
    password (what ``history.password_env`` names) and its name."""

    url: str
    password: str
    name: str


@dataclass
class PgServer:
    bin_dir: Path
    folder: Path
    port: int
    password: str
    prefix: list[str]
    host: str = "127.0.0.1"
    role: str = ROLE
    _names: Iterator[int] = field(default_factory=lambda: itertools.count(1))

    @property
    def data_dir(self) -> Path:
        return self.folder / "data"

    @property
    def log_file(self) -> Path:
        return self.folder / "server.log"

    def tool(self, name: str, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*self.prefix, str(self.bin_dir / name), *args],
                              capture_output=True, text=True, check=check, timeout=120,
                              cwd=self.folder)

    def sql(self, statement: str, database: str = "postgres") -> str:
        """Run one statement as the superuser over the Unix socket (fixture setup only)."""
        done = self.tool("psql", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1",
                         "-h", str(self.folder), "-p", str(self.port), "-U", SUPERUSER,
                         "-d", database, "-c", statement)
        return done.stdout.strip()

    def url(self, database: str, role: str | None = None) -> str:
        return f"postgresql+asyncpg://{role or self.role}@{self.host}:{self.port}/{database}"

    def new_database(self) -> PgDatabase:
        name = f"history_{next(self._names)}"
        self.sql(f'CREATE DATABASE "{name}" OWNER "{self.role}"')
        return PgDatabase(self.url(name), self.password, name)

    def log(self) -> str:
        try:
            return self.log_file.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""


def _start(bin_dir: Path, prefix: list[str]) -> PgServer:
    folder = Path(tempfile.mkdtemp(prefix="pubmed-pg-"))
    if prefix:  # the server's own user owns the folder (mode 0700 from mkdtemp)
        entry = pwd.getpwnam(SUPERUSER)
        os.chown(folder, entry.pw_uid, entry.pw_gid)
    server = PgServer(bin_dir, folder, _free_port(), secrets.token_urlsafe(18), prefix)
    try:
        server.tool("initdb", "-D", str(server.data_dir), "-U", SUPERUSER, "--encoding=UTF8",
                    "--locale=C", "--auth-local=trust", "--auth-host=scram-sha-256", "--no-sync")
        options = (f"-c listen_addresses={server.host} -p {server.port} "
                   f"-c unix_socket_directories={folder} {SERVER_OPTIONS}")
        server.tool("pg_ctl", "-D", str(server.data_dir), "-l", str(server.log_file), "-o",
                    options, "-w", "-t", str(START_TIMEOUT_S), "start")
        server.sql(f"CREATE ROLE \"{server.role}\" LOGIN PASSWORD '{server.password}'")
    except subprocess.CalledProcessError as err:
        log = server.log()
        _stop(server)
        raise RuntimeError(f"PostgreSQL did not start: {err.stderr}\n{log[-3000:]}") from err
    return server


def _stop(server: PgServer) -> None:
    if (server.data_dir / "postmaster.pid").exists():
        server.tool("pg_ctl", "-D", str(server.data_dir), "-m", "fast", "-w", "stop",
                    check=False)
    shutil.rmtree(server.folder, ignore_errors=True)


@pytest.fixture(scope="session", name="postgres_server")
def postgres_server_fixture() -> Iterator[PgServer]:
    """A real PostgreSQL server for this test session (about 2 s to start), stopped and removed
    at the end."""
    bin_dir = require_pg_bin()
    pytest.importorskip("asyncpg", reason="asyncpg is not installed (requirements.txt)")
    server = _start(bin_dir, _run_as())
    try:
        yield server
    finally:
        _stop(server)


@pytest.fixture(name="pg_history")
def pg_history_fixture(postgres_server: PgServer) -> PgDatabase:
    """A new, empty database on the session's server (no tables: the app makes them)."""
    return postgres_server.new_database()
