"""A connection to a live server: where it is (`Address`, read from a `redis://` or `rediss://`
URL), the socket (TLS for `rediss://`), the handshake a client makes (AUTH, SELECT) and what the
restore needs to know of the server (`ServerInfo`: its family and version, from INFO; its
`proto-max-bulk-len` and `client-query-buffer-limit`; whether it is a cluster node).

URLs as redis-cli reads them (redis src/cli_common.c parseRedisUri): `redis://[[user]:password@]
host[:port][/db]`, the password percent-decoded; without one in the URL, the environment's
REDISCLI_AUTH (cliSecureConnection's source of a password that stays out of `ps`).

Errors: a server that cannot be reached, or that closes the connection, is an OSError naming the
URL (`ConnectionError`, exit 6); an error reply is a `ServerError` naming the command (exit 8)."""

from __future__ import annotations

import os
import socket
import ssl
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from urllib.parse import quote, unquote, urlsplit

from ..errors import ServerError
from ..server.versions import Version, parse_version
from .resp import Arg, ProtocolError, Replies, Reply, ReplyError, command

DEFAULT_PORT = 6379
# what a server takes of one bulk string unless configured otherwise (redis.conf proto-max-bulk-len)
DEFAULT_MAX_BULK = 512 << 20
# the most a client's command may take in the server's input buffer before the server closes the
# connection, unless configured otherwise (redis.conf client-query-buffer-limit; redis src/networking.c
# processInputBuffer counts the arguments read and the buffer)
DEFAULT_QUERY_BUFFER = 1 << 30
QUERY_MARGIN = 64 << 10  # of that, left to a command's other arguments (its name, key, options)
DEFAULT_DATABASES = 16  # redis.conf `databases`
RECEIVE_BYTES = 1 << 16
TLS_HANDSHAKE_S = 5.0
SEND_BYTES = 1 << 16  # commands gathered before a write: a system call a key would cost more than the key


@dataclass(frozen=True)
class Tls:
    """`rediss://`'s options, as redis-cli names them: the CA that signs the server's certificate
    (`ca_cert`, else the system's), a client certificate and key, the name the certificate must
    hold (`sni`, else the host), and `insecure` (no check of the server's certificate)."""

    ca_cert: str | None = None
    cert: str | None = None
    key: str | None = None
    sni: str | None = None
    insecure: bool = False

    def context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=self.ca_cert)
        if self.insecure:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        if self.cert is not None:
            context.load_cert_chain(self.cert, self.key)
        return context


@dataclass(frozen=True)
class Address:
    """A server: host, port, database, credentials, TLS (None: plain TCP)."""

    host: str
    port: int = DEFAULT_PORT
    db: int | None = None
    user: str | None = None
    password: str | None = field(default=None, repr=False)
    tls: Tls | None = None

    @classmethod
    def parse(cls, url: str, tls: Tls | None = None, environ: dict[str, str] | None = None) -> Address:
        """`redis://…` or `rediss://…`, or either with `+cluster` (a node of a cluster: the
        scheme says what to read of it, not how to reach it); ValueError for anything else."""
        parts = urlsplit(url)
        if parts.scheme.removesuffix("+cluster") not in ("redis", "rediss") or not parts.hostname:
            raise ValueError(f"not a server URL (redis://[user:password@]host[:port][/db] or rediss://…): {url!r}")
        try:
            port = parts.port or DEFAULT_PORT
        except ValueError:
            raise ValueError(f"not a port in {url!r}") from None
        path = parts.path.strip("/")
        if path and not path.isdigit():
            raise ValueError(f"not a database number in {url!r}: {path!r}")
        password = unquote(parts.password) if parts.password is not None else None
        if password is None:
            password = (os.environ if environ is None else environ).get("REDISCLI_AUTH")
        user = unquote(parts.username) if parts.username else None
        return cls(parts.hostname, port, int(path) if path else None, user, password,
                   (tls or Tls()) if parts.scheme.startswith("rediss") else None)

    def at(self, host: str, port: int) -> Address:
        """Another node of the same cluster: the same credentials and TLS, no database."""
        return replace(self, host=host, port=port, db=None)

    @property
    def url(self) -> str:
        """The URL without its password (what a message names)."""
        return self._url(f"{self.user}@" if self.user else "")

    @property
    def connect_url(self) -> str:
        """The URL with its credentials, percent-encoded: what another process (a Spark task)
        connects with, where this one's environment (REDISCLI_AUTH) may not be."""
        if self.password is None:
            return self.url
        return self._url(f"{quote(self.user or '', safe='')}:{quote(self.password, safe='')}@")

    def _url(self, credentials: str) -> str:
        scheme = "rediss" if self.tls is not None else "redis"
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{scheme}://{credentials}{host}:{self.port}" + (f"/{self.db}" if self.db is not None else "")


@dataclass(frozen=True)
class ServerInfo:
    """What the restore asks a server: its family ("redis" or "valkey": Valkey's INFO has
    `valkey_version`), its version, the largest bulk string it takes in a command (its
    proto-max-bulk-len, and less than its client-query-buffer-limit, past which it closes the
    connection), whether it is a cluster node, and how many databases it has (a cluster node: 1, but
    Valkey 9's `cluster-databases`)."""

    family: str
    version: Version
    max_bulk: int
    cluster: bool
    databases: int

    @property
    def name(self) -> str:
        return f"{self.family.capitalize()} {self.version[0]}.{self.version[1]}"


class Connection:
    """One TCP (or TLS) connection, handshake done: `call` sends a command and returns its reply
    (an error reply raised as ServerError), `send` queues commands whose replies `reply` reads
    later in order (a pipeline)."""

    def __init__(self, address: Address, timeout: float | None = 30.0, select: bool = True):
        self.address = address
        self.sock = self._connect(timeout)
        self.replies = Replies(self.receive)
        self.out = bytearray()  # what `send` has gathered and not written yet
        try:
            if address.password is not None:
                credentials = (address.user, address.password) if address.user else (address.password,)
                self.call("AUTH", *credentials)
            if select and address.db is not None:
                self.call("SELECT", address.db)
        except BaseException:
            self.close()
            raise

    def _connect(self, timeout: float | None) -> socket.socket:
        address = self.address
        try:
            sock = socket.create_connection((address.host, address.port), timeout=timeout)
        except OSError as err:
            raise ConnectionError(err.errno, f"cannot connect: {err.strerror or err}", address.url) from None
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if address.tls is None:
            return sock
        try:
            # a server without TLS never answers the ClientHello: it waits for the end of a command line
            sock.settimeout(TLS_HANDSHAKE_S)
            wrapped = address.tls.context().wrap_socket(sock, server_hostname=address.tls.sni or address.host)
            wrapped.settimeout(timeout)
            return wrapped
        except (ssl.SSLError, OSError) as err:
            sock.close()
            raise ConnectionError(None, f"TLS handshake failed ({getattr(err, 'reason', None) or err}): is "
                                        "the server speaking TLS?", address.url) from None

    def receive(self, most: int = RECEIVE_BYTES) -> bytes:
        """What the server sent next, up to `most` bytes (b"" once it closed the connection)."""
        try:
            return self.sock.recv(most)
        except OSError as err:
            raise self.lost(err) from None

    def lost(self, err: BaseException) -> ConnectionError:
        """The OSError that says this server went away (or never answered as a server)."""
        text = getattr(err, "strerror", None) or str(err)
        return ConnectionError(getattr(err, "errno", None), f"connection lost: {text}", self.address.url)

    def send(self, *data: bytes | memoryview) -> None:
        """Commands' bytes, gathered and written `SEND_BYTES` at a time (a large part as it is, never
        copied), and written whole before a reply is read."""
        for part in data:
            if len(part) < SEND_BYTES:
                self.out += part
                if len(self.out) >= SEND_BYTES:
                    self.flush()
            else:
                self.flush()
                self._write(part)

    def flush(self) -> None:
        if self.out:
            self._write(self.out)
            self.out = bytearray()

    def _write(self, data: bytes | bytearray | memoryview) -> None:
        try:
            self.sock.sendall(data)
        except OSError as err:
            raise self.lost(err) from None

    def reply(self) -> Reply:
        """The next reply (a ReplyError returned as it is: a pipeline's error belongs to its command)."""
        self.flush()
        try:
            return self.replies.next()
        except ConnectionResetError as err:
            raise self.lost(err) from None
        except ProtocolError as err:
            raise ConnectionError(None, f"not a Redis or Valkey server ({err})", self.address.url) from None

    def call(self, *args: Arg) -> Reply:
        self.send(command(*args))
        answer = self.reply()
        if isinstance(answer, ReplyError):
            raise ServerError(answer.text, self.address.url, command_words(args))
        return answer

    def info(self) -> ServerInfo:
        """The server's family, version and limits (INFO server, INFO cluster, CONFIG GET
        proto-max-bulk-len, client-query-buffer-limit, databases or cluster-databases)."""
        fields = info_fields(self.call("INFO", "server")) | info_fields(self.call("INFO", "cluster"))
        family = "valkey" if "valkey_version" in fields else "redis"
        version = parse_version(fields.get(f"{family}_version", "0.0"))
        cluster = fields.get("cluster_enabled") == "1"
        max_bulk = min(self._config("proto-max-bulk-len", DEFAULT_MAX_BULK),
                       self._config("client-query-buffer-limit", DEFAULT_QUERY_BUFFER) - QUERY_MARGIN)
        databases = self._config("cluster-databases", 1) if cluster else self._config("databases", DEFAULT_DATABASES)
        return ServerInfo(family, version, max_bulk, cluster, databases)

    def _config(self, name: str, default: int) -> int:
        """A number of CONFIG GET: `default` when the server has no such setting, or the user's
        ACL denies CONFIG."""
        try:
            reply = self.call("CONFIG", "GET", name)
        except ServerError:
            return default
        if isinstance(reply, list) and len(reply) == 2 and isinstance(reply[1], bytes) and reply[1].isdigit():
            return int(reply[1])
        return default

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def command_words(args: Sequence[Arg]) -> str:
    """A command as a message names it: its first words, not its data (a payload, a password)."""
    words = [a.decode(errors="replace") if isinstance(a, bytes) else str(a) for a in args[:2]]
    if words and words[0].upper() == "AUTH":
        return "AUTH"
    return " ".join(w if len(w) <= 60 else w[:57] + "..." for w in words)


def info_fields(reply: Reply) -> dict[str, str]:
    """INFO's `name:value` lines."""
    text = reply.decode(errors="replace") if isinstance(reply, bytes) else ""
    return dict(line.split(":", 1) for line in text.splitlines() if ":" in line and not line.startswith("#"))
