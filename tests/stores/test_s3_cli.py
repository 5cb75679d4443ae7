"""The command line on dumps in an object store: moto's S3 server on 127.0.0.1 (tests/support/s3.py),
reached as a user reaches S3, through the AWS SDKs' environment variables.

Each command reads an `s3://` URL as it reads the same file on disk; a missing object, an
endpoint that does not answer and a bucket the user may not read each give one line naming the
URL, and exit 6 (the exit of a file that cannot be read)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from rdbspec.errors import EXIT_CODES
from tests.support import dragonfly_dumps, s3
from tests.support.s3 import DENIED, S3Server, unused_endpoint
from tests.support.valkey_dumps import vcs_lz4

REAL = Path(__file__).resolve().parents[1] / "corpus" / "real"
DUMPS = [REAL / "redis-7.0.15" / "stream_basic.rdb", REAL / "redis-7.4.1" / "mixed_types.rdb",
         REAL / "valkey-8.0.1" / "stream_groups.rdb"]
s3_server = s3.s3_server  # the fixture (pytest finds module attributes)
COMMANDS = [["info", "--json"], ["dump"], ["keys", "--memory"], ["prefixes"]]


def rdbspec(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rdbspec", *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, **env}, check=False)


@pytest.fixture(scope="module")
def uploaded(s3_server: S3Server, tmp_path_factory: pytest.TempPathFactory) -> list[tuple[Path, str]]:
    """(local file, its URL) of each dump put in the store, and a compressed one."""
    compressed = tmp_path_factory.mktemp("lz4") / "stream_basic_lz4.rdb"
    compressed.write_bytes(vcs_lz4(DUMPS[0].read_bytes()))
    return [(path, s3_server.upload(path, f"cli/{path.parent.name}/{path.name}")) for path in [*DUMPS, compressed]]


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_a_url_reads_as_the_file(s3_server: S3Server, uploaded: list[tuple[Path, str]], command: list[str]) -> None:
    for path, url in uploaded:
        local = rdbspec({}, command[0], str(path), *command[1:])
        remote = rdbspec(s3_server.environment(), command[0], url, *command[1:])
        assert local.returncode == remote.returncode == 0, remote.stderr
        assert remote.stdout.replace(url, str(path)) == local.stdout and remote.stderr == local.stderr


@pytest.mark.parametrize("command", [["rewrite", "--target", "redis-6.2", "--allow-lossy"], ["report", "--json"]],
                         ids=" ".join)
def test_a_url_writes_what_the_file_writes(s3_server: S3Server, uploaded: list[tuple[Path, str]], command: list[str],
                                           tmp_path: Path) -> None:
    for path, url in uploaded:
        local, remote = tmp_path / "local.out", tmp_path / "remote.out"
        done = [rdbspec(env, command[0], name, "-o", str(out), *command[1:])
                for env, name, out in (({}, str(path), local), (s3_server.environment(), url, remote))]
        assert [d.returncode for d in done] == [0, 0], done[1].stderr
        assert remote.read_bytes() == local.read_bytes()


@pytest.mark.parametrize("named", ["set", "set/snap-summary.dfs", "set/snap-0001.dfs"])
def test_a_dragonfly_set_in_the_store_reads_as_on_disk(s3_server: S3Server, tmp_path: Path, named: str) -> None:
    """The set named by its directory, its summary or a shard: its files found beside it in the store."""
    dragonfly_dumps.build(tmp_path)
    for path in sorted((tmp_path / "set").iterdir()):
        s3_server.upload(path, f"cli-dfs/set/{path.name}")
    local = rdbspec({}, "dump", str(tmp_path / named))
    remote = rdbspec(s3_server.environment(), "dump", f"s3://dumps/cli-dfs/{named}")
    assert local.returncode == remote.returncode == 0, remote.stderr
    assert remote.stdout == local.stdout and local.stdout


def one_line_exit_6(done: subprocess.CompletedProcess[str], url: str, words: str) -> None:
    assert done.returncode == EXIT_CODES["io"] == 6
    assert done.stdout == "" and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith(f"rdbspec: {url}: {words}"), done.stderr


def test_a_missing_object_is_one_line(s3_server: S3Server, uploaded: list[tuple[Path, str]]) -> None:
    url = "s3://dumps/cli/no-such.rdb"
    one_line_exit_6(rdbspec(s3_server.environment(), "info", url), url, "no such object or bucket")


def test_an_endpoint_that_does_not_answer_is_one_line(s3_server: S3Server) -> None:
    url = "s3://dumps/cli/redis-7.4.1/mixed_types.rdb"
    env = {**s3_server.environment(), "AWS_ENDPOINT_URL": unused_endpoint()}
    one_line_exit_6(rdbspec(env, "dump", url), url, "the store's endpoint does not answer")


def test_a_denied_bucket_is_one_line(s3_server: S3Server, uploaded: list[tuple[Path, str]]) -> None:
    url = s3_server.upload(DUMPS[0], "a.rdb", bucket=DENIED)  # the admin may; the reader may not
    one_line_exit_6(rdbspec(s3_server.environment(), "keys", url), url, "access denied")
