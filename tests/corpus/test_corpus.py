"""The dump corpus: real servers' dumps against what the server reported. (The dumps other
projects publish are read by `test_peers.py`, in `make test-peers` only.)"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rdbspec import cli
from tests.support.expected import compare  # noqa: E402

pytestmark = pytest.mark.usefixtures("each_backend")  # every test once per backend (conftest.py)
TESTS = Path(__file__).resolve().parents[1]
REPO = TESTS.parent
REAL = sorted((TESTS / "corpus" / "real").glob("*/*.rdb"))


def _id(path: Path) -> str:
    return f"{path.parent.name}/{path.stem}"


def run_cli(argv: list[str], tmp_path: Path) -> tuple[int, str]:
    out = tmp_path / "out.txt"
    code = cli.main([*argv, "-o", str(out)])
    return code, out.read_text(encoding="utf-8")


def dump_records(path: Path, tmp_path: Path, *extra: str) -> list[dict[str, Any]]:
    code, text = run_cli(["dump", str(path), *extra], tmp_path)
    assert code == 0, f"rdbspec dump {path} exited {code}"
    return [json.loads(line) for line in text.splitlines()]


# -- real servers ------------------------------------------------------------------------------


def test_real_corpus_is_present() -> None:
    assert len(REAL) >= 21, REAL


@pytest.mark.parametrize("path", REAL, ids=_id)
def test_real_dump_matches_expected(path: Path, tmp_path: Path) -> None:
    expected = json.loads(path.with_name(path.stem + ".expected.json").read_text(encoding="utf-8"))
    records = dump_records(path, tmp_path)
    assert compare(expected, records) == []


@pytest.mark.parametrize("path", REAL, ids=_id)
def test_real_dump_checksum_and_header(path: Path, tmp_path: Path, each_backend: str) -> None:
    expected = json.loads(path.with_name(path.stem + ".expected.json").read_text(encoding="utf-8"))
    code, text = run_cli(["info", "--json", str(path)], tmp_path)
    assert code == 0
    info = json.loads(text)
    assert info["checksum"] == "ok"
    assert info["backend"] == each_backend
    assert expected["rdb"]["checksum"] == "ok"
    assert info["magic"] == expected["rdb"]["header"]
    assert info["version"] == expected["rdb"]["rdb_version"]
    total = sum(len(recs) for recs in expected["databases"].values())
    assert sum(db["keys"] for db in info["databases"].values()) == total
    assert info["dialect"] == ("valkey" if path.parent.name.startswith("valkey") else "redis")


@pytest.mark.parametrize("path", [p for p in REAL if p.stem.startswith("stream")], ids=_id)
def test_real_dump_include_deleted_only_adds_flagged_entries(path: Path, tmp_path: Path) -> None:
    plain = dump_records(path, tmp_path)
    full = dump_records(path, tmp_path, "--include-deleted")
    assert len(plain) == len(full)
    for a, b in zip(plain, full):
        if a["type"] != "stream":
            assert a == b
            continue
        live = [e for e in b["value"]["entries"] if not e.get("deleted")]
        assert live == a["value"]["entries"]
        assert a["value"]["length"] == len(live)
