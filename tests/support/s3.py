"""An S3-compatible object store for tests: moto's server on 127.0.0.1, with credentials enforced.

``S3Server`` starts ``moto_server`` (from the ``moto[server]`` package) on a free port of
127.0.0.1 and sets up two users before it enforces credentials (moto's
``INITIAL_NO_AUTH_ACTION_COUNT``: the first requests are not checked, every later one is):

* ``admin``, allowed everything: the tests upload with it (`upload`);
* ``reader``, allowed the bucket ``dumps`` only (`READABLE`): the reads under test use it, so
  that the bucket ``private`` (`DENIED`) answers "access denied" as a real store would.

`environment()` gives the variables a reader needs (the AWS SDKs' names: the endpoint, the
region, the reader's keys); a test puts them in its own environment or a child's, as a user
would in theirs.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest

from tests.support.servers import die_with_parent, free_port

READABLE, DENIED = "dumps", "private"
REGION = "us-east-1"
SETUP_ACTIONS = 6  # the unchecked requests `_users` makes: two users, their keys and policies
START_TIMEOUT_S = 60


def _policy(*buckets: str) -> str:
    resources = [f"arn:aws:s3:::{b}{tail}" for b in buckets for tail in ("", "/*")] if buckets else ["*"]
    return json.dumps({"Version": "2012-10-17",
                       "Statement": [{"Effect": "Allow", "Action": "*" if not buckets else "s3:*",
                                      "Resource": resources}]})


class S3Server:
    """moto's S3 server on 127.0.0.1 (see the module doc); a context manager."""

    def __init__(self) -> None:
        self.port = free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self._process: subprocess.Popen[bytes] | None = None
        self.admin: dict[str, str] = {}
        self.reader: dict[str, str] = {}

    def __enter__(self) -> S3Server:
        env = dict(os.environ, INITIAL_NO_AUTH_ACTION_COUNT=str(SETUP_ACTIONS))
        moto = Path(sys.executable).with_name("moto_server")
        self._process = subprocess.Popen([str(moto), "-H", "127.0.0.1", "-p", str(self.port)], env=env,
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                         preexec_fn=die_with_parent)
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), 0.5).close()
                break
            except OSError:
                if self._process.poll() is not None or time.monotonic() > deadline:
                    self.__exit__()
                    raise RuntimeError(f"moto_server did not start on 127.0.0.1:{self.port}") from None
                time.sleep(0.1)
        self.admin, self.reader = self._users()
        for bucket in (READABLE, DENIED):
            self.client().create_bucket(Bucket=bucket)
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._process is not None:
            self._process.terminate()
            try:
                self._process.wait(10)
            except subprocess.TimeoutExpired:
                self._process.kill()
            self._process = None

    def _users(self) -> tuple[dict[str, str], dict[str, str]]:
        """The admin's and the reader's keys, made with the `SETUP_ACTIONS` unchecked requests."""
        iam = boto3.client("iam", endpoint_url=self.endpoint, region_name=REGION,
                           aws_access_key_id="setup", aws_secret_access_key="setup")
        keys = []
        for user, policy in (("admin", _policy()), ("reader", _policy(READABLE))):
            iam.create_user(UserName=user)
            key = iam.create_access_key(UserName=user)["AccessKey"]
            iam.put_user_policy(UserName=user, PolicyName="access", PolicyDocument=policy)
            keys.append({"aws_access_key_id": key["AccessKeyId"], "aws_secret_access_key": key["SecretAccessKey"]})
        return keys[0], keys[1]

    def client(self, user: dict[str, str] | None = None) -> object:
        """A boto3 S3 client of `user` (the admin by default)."""
        return boto3.client("s3", endpoint_url=self.endpoint, region_name=REGION, **(user or self.admin))

    def upload(self, path: Path, key: str, bucket: str = READABLE) -> str:
        """Puts the file at `key` of `bucket`; its URL."""
        self.client().upload_file(str(path), bucket, key)  # type: ignore[attr-defined]
        return f"s3://{bucket}/{key}"

    def environment(self) -> dict[str, str]:
        """What a reader's environment holds: the endpoint, the region and the reader's keys."""
        return {"AWS_ENDPOINT_URL": self.endpoint, "AWS_REGION": REGION,
                "AWS_ACCESS_KEY_ID": self.reader["aws_access_key_id"],
                "AWS_SECRET_ACCESS_KEY": self.reader["aws_secret_access_key"]}


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    """One moto S3 server for the session (see `S3Server`)."""
    with S3Server() as server:
        yield server


def unused_endpoint() -> str:
    """An endpoint where nothing listens (a port of 127.0.0.1 just found free)."""
    return f"http://127.0.0.1:{free_port()}"
