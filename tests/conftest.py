"""The `each_backend` fixture: tests that read dumps run once per backend (rdbspec/read/backend.py),
the pure-Python parsers and the native ones. Both must be there: `make test` builds the native
one, so a missing native backend fails these tests instead of skipping them.

`RDBSPEC_TEST_BACKENDS=native` narrows the runs to one backend (`make test-asan` runs only the
native one, built with the sanitizers)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

# No test reaches a store beyond 127.0.0.1: S3 requests go to a closed local port unless a test
# names its own server (tests/support/s3.py), and the SDK never asks an instance's metadata
# service for credentials. Set before rdbspec is imported: it reads them once.
os.environ.setdefault("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
os.environ.setdefault("AWS_REGION", "us-east-1")
os.environ["AWS_EC2_METADATA_DISABLED"] = "true"

from rdbspec.read import backend  # noqa: E402 - after the environment above

BACKENDS = [name for name in os.environ.get("RDBSPEC_TEST_BACKENDS", ",".join(backend.BACKENDS)).split(",") if name]


@contextmanager
def _using(name: str) -> Iterator[str]:
    """`name`'s parsers in this process and RDBSPEC_BACKEND for the subprocesses it starts; the
    choice goes back to RDBSPEC_BACKEND's afterwards."""
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv(backend.ENV, name)
            yield backend.select(name)
    finally:
        backend.select(os.environ.get(backend.ENV))


@pytest.fixture(params=BACKENDS)
def each_backend(request: pytest.FixtureRequest) -> Iterator[str]:
    """The test body runs once with each backend's parsers."""
    with _using(request.param) as name:
        yield name


@pytest.fixture
def python_backend() -> Iterator[str]:
    """The Python parsers, for a test that injects a bug into a generated class: the native
    classes are compiled (cdef), their methods cannot be replaced."""
    with _using("python") as name:
        yield name
