"""The `each_backend` fixture: tests that read dumps run once per backend (rdbspec/backend.py),
the pure-Python parsers and the native ones. Both must be there: `make test` builds the native
one, so a missing native backend fails these tests instead of skipping them.

`RDBSPEC_TEST_BACKENDS=native` narrows the runs to one backend (`make test-asan` runs only the
native one, built with the sanitizers)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from rdbspec import backend

BACKENDS = [name for name in os.environ.get("RDBSPEC_TEST_BACKENDS", ",".join(backend.BACKENDS)).split(",") if name]


@pytest.fixture(params=BACKENDS)
def each_backend(request: pytest.FixtureRequest) -> Iterator[str]:
    """The test body runs with `request.param`'s parsers, in this process; the subprocesses it
    starts get RDBSPEC_BACKEND too. The choice goes back to RDBSPEC_BACKEND's afterwards."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(backend.ENV, request.param)
        yield backend.select(request.param)
    backend.select(os.environ.get(backend.ENV))
