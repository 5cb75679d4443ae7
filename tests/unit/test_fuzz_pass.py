"""A short fixed-seed pass of the coverage-guided fuzzing (tests/fuzz/run.py): each target with each
backend (the installed one: `make fuzz` runs the sanitized build) for `RUNS` inputs from the seeds
and the committed corpus, the mutations fixed by `-seed`. Any crash fails it, with the fuzzer's
output; what the pass finds new goes to a temporary directory, never into the corpus."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from tests.fuzz import run

RUNS = 400
SEED = 1


@pytest.mark.parametrize("target", ["read", "write"])
def test_a_fixed_seed_pass_finds_no_crash(target: str, each_backend: str, tmp_path: Path) -> None:
    found, seeds = tmp_path / "found", run.make_seeds(tmp_path / "seeds")
    found.mkdir()
    args = [str(found), str(run.CORPUS / target), str(seeds), *run.limits(each_backend), f"-runs={RUNS}",
            f"-seed={SEED}", f"-artifact_prefix={tmp_path}/"]
    done = subprocess.run(run.child_command(target, args), env=run.child_env(each_backend, sanitized=False),
                          cwd=run.ROOT, capture_output=True, text=True, timeout=600)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-6000:]
    assert f"backend {each_backend}" in output
    executed = re.search(r"^Done (\d+) runs", output, re.MULTILINE)
    assert executed is not None and int(executed[1]) >= RUNS, output[-3000:]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(("crash-", "timeout-", "oom-"))]
