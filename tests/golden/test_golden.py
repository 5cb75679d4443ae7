"""Golden fixtures (tests/golden/) through our generated parsers, one test per fixture and
backend: the Python modules (rdbspec_generated) and the native ones (rdbspec_generated.native).

The official Kaitai Struct outputs (Python and JavaScript) run the same fixtures in
tests/conformance/run.py (`make conformance`).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "conformance"))

from golden import (  # noqa: E402
    GOLDEN_DIR,
    fixture_names,
    import_ours,
    load_fixture,
    load_spec_info,
    run_ours,
)

SPEC_INFO = load_spec_info()


@pytest.mark.parametrize("package", ["rdbspec_generated", "rdbspec_generated.native"])
@pytest.mark.parametrize("name", fixture_names(GOLDEN_DIR))
def test_golden(name: str, package: str) -> None:
    fx = load_fixture(name, GOLDEN_DIR)
    import_ours()
    problems = run_ours(fx, SPEC_INFO, package)
    if problems:
        pytest.fail(f"{name} ({fx.root}):" + "".join(f"\n  {p}" for p in problems), pytrace=False)
