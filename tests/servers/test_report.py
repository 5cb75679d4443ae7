"""`rdbspec prefixes` and `rdbspec report` (issue 16) on a dump Redis 7.0 writes during the test:
every number equals what `rdbspec keys --memory --csv` gives for the same keys (sums by type,
by prefix, the largest keys), the streams' lags and pending entries what XINFO GROUPS and
XPENDING answered on the live server before SAVE, and the HTML page, rendered by headless
Chromium at 1280 px, holds each section with the same numbers and does not scroll sideways.

`make test` installs Debian's chromium (the Makefile's debian-packages); without it the page
test fails saying so. It leaves a screenshot in docs/report.png (the README shows it)."""

from __future__ import annotations

import csv
import io
import json
import shutil
import subprocess
import sys
from collections import Counter, defaultdict
from html.parser import HTMLParser
from pathlib import Path

import pytest

from tests.support.memory_content import write as write_varied
from tests.support.servers import RedisServer, binary_for

ROOT = Path(__file__).resolve().parents[2]
SECTIONS = ("summary", "type-mix", "memory-by-type", "prefixes", "top-keys", "expiry", "streams")
TTLS_S = (30, 2 * 3600, 3 * 86400, 20 * 86400, 90 * 86400)  # one key in each expiry bucket but "expired"


def rdbspec(*args: str | Path) -> str:
    done = subprocess.run([sys.executable, "-m", "rdbspec", *map(str, args)], capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _text(value: bytes) -> str:
    """A name as `rdbspec keys --csv` writes it."""
    try:
        return value.decode()
    except UnicodeDecodeError:
        return json.dumps({"hex": value.hex()})


def _name(value: str | dict) -> str:
    """A name of the report's JSON (text or {"hex": ...}) as `rdbspec keys --csv` writes it."""
    return json.dumps(value) if isinstance(value, dict) else value


def _bytes(text: str) -> bytes:
    return bytes.fromhex(json.loads(text)["hex"]) if text.startswith('{"hex"') else text.encode()


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The dump, the server's clock after SAVE, and per stream per group what XINFO GROUPS and
    XPENDING answered just before it."""
    directory = tmp_path_factory.mktemp("report")
    with RedisServer(binary_for("debian")) as server, server.client() as c:
        write_varied(c, seed=16)
        for i, ttl in enumerate(TTLS_S):
            c.set(b"ttl:%d" % i, b"x" * (i * 10), ex=ttl)
        c.set(b"bin:\xff\x00:key", b"value")
        c.hset(b"bin:\xff\x00:hash", mapping={b"a": b"1"})
        c.set(b"plain", b"no separator")
        streams: dict[str, dict] = {}
        for key in c.scan_iter(match=b"stream:*", count=1000):
            groups = {}
            for info in c.xinfo_groups(key):
                name = info["name"]
                summary = c.xpending(key, name)
                now_ms = int(c.time()[0]) * 1000 + int(c.time()[1]) // 1000
                first = c.xpending_range(key, name, "-", "+", 1)
                groups[_text(name)] = {
                    "lag": info["lag"], "pending": info["pending"],
                    "consumers": {_text(x["name"]): int(x["pending"]) for x in summary["consumers"]},
                    "oldest": summary["min"].decode() if summary["pending"] else None,
                    "delivered_ms": now_ms - first[0]["time_since_delivered"] if first else None}
            streams[_text(key)] = {"length": c.xlen(key), "groups": groups}
        rdb = server.save(directory / "dump.rdb")
        seconds, micros = c.time()
    return {"rdb": rdb, "now_ms": int(seconds) * 1000 + int(micros) // 1000, "streams": streams}


@pytest.fixture(scope="module")
def keys(live: dict) -> list[dict]:
    """`rdbspec keys --memory --csv`: the reference numbers."""
    rows = list(csv.DictReader(io.StringIO(rdbspec("keys", live["rdb"], "--memory", "--csv"))))
    for row in rows:
        for name in ("db", "size_in_file", "elements", "memory"):
            row[name] = int(row[name])
    assert len(rows) > 100 and any(r["key"].startswith('{"hex"') for r in rows)
    return rows


def expected_prefixes(keys: list[dict], depth: int, separator: bytes = b":") -> dict[str, list[int]]:
    """prefix -> [level, keys, elements, memory], by the rule of `rdbspec prefixes`."""
    sums: dict[str, list[int]] = {}
    for row in keys:
        parts = _bytes(row["key"]).split(separator)
        for level in range(1, min(depth, len(parts)) + 1):
            sum_ = sums.setdefault(_text(separator.join(parts[:level])), [level, 0, 0, 0])
            sum_[1] += 1
            sum_[2] += row["elements"]
            sum_[3] += row["memory"]
    return sums


@pytest.mark.parametrize(("depth", "separator"), [(2, ":"), (1, ":"), (3, "_")])
def test_prefixes_csv_sums_keys_memory(live: dict, keys: list[dict], depth: int, separator: str) -> None:
    out = rdbspec("prefixes", live["rdb"], "--csv", "--depth", str(depth), "--separator", separator)
    rows = list(csv.DictReader(io.StringIO(out)))
    found = {r["prefix"]: [int(r["level"]), int(r["keys"]), int(r["elements"]), int(r["memory"])] for r in rows}
    assert found == expected_prefixes(keys, depth, separator.encode())
    memories = [int(r["memory"]) for r in rows]
    assert memories == sorted(memories, reverse=True)
    level1 = [v for v in found.values() if v[0] == 1]
    assert sum(v[3] for v in level1) == sum(r["memory"] for r in keys)  # every key under one first part


def test_prefixes_jsonl_top(live: dict, keys: list[dict]) -> None:
    out = rdbspec("prefixes", live["rdb"], "--top", "3", "--type", "hash")
    rows = [json.loads(line) for line in out.splitlines()]
    hashes = [r for r in keys if r["type"] == "hash"]
    want = sorted(expected_prefixes(hashes, 2).items(), key=lambda item: (-item[1][3], _bytes(item[0])))[:3]
    assert [(r["prefix"], r["level"], r["keys"], r["elements"], r["memory"]) for r in rows] == \
        [(json.loads(p) if p.startswith('{"hex"') else p, *v) for p, v in want]


@pytest.fixture(scope="module")
def report(live: dict, tmp_path_factory: pytest.TempPathFactory) -> dict:
    path = tmp_path_factory.mktemp("json") / "report.json"
    rdbspec("report", live["rdb"], "--json", "--now", str(live["now_ms"]), "-o", path)
    return json.loads(path.read_text(encoding="utf-8"))


def _by_type(keys: list[dict]) -> dict[str, dict[str, int]]:
    sums: dict[str, Counter] = defaultdict(Counter)
    for row in keys:
        sums[row["type"]].update(keys=1, memory=row["memory"], elements=row["elements"],
                                 size_in_file=row["size_in_file"])
    return {t: dict(c) for t, c in sums.items()}


def _prefix_nodes(nodes: list[dict], level: int = 1) -> dict[str, list[int]]:
    found = {}
    for node in nodes:
        assert not node.get("other")
        found[_name(node["prefix"])] = [level, node["keys"], node["elements"], node["memory"]]
        found.update(_prefix_nodes(node["children"], level + 1))
    return found


def test_report_json_matches_keys_memory(report: dict, keys: list[dict], live: dict) -> None:
    assert report["now_ms"] == live["now_ms"]
    totals = report["totals"]
    assert (totals["keys"], totals["memory"], totals["elements"], totals["size_in_file"]) == \
        (len(keys), sum(r["memory"] for r in keys), sum(r["elements"] for r in keys),
         sum(r["size_in_file"] for r in keys))
    assert {t["type"]: {k: t[k] for k in ("keys", "memory", "elements", "size_in_file")} for t in report["types"]} == \
        _by_type(keys)
    assert sum(e["memory"] for e in report["encodings"]) == totals["memory"]
    top = sorted(keys, key=lambda r: -r["memory"])[:50]  # a stable sort: file order among equals, as keys --top
    assert [(k["db"], _name(k["key"]), k["memory"], k["elements"]) for k in report["top_keys"]] == \
        [(r["db"], r["key"], r["memory"], r["elements"]) for r in top]
    assert _prefix_nodes(report["prefixes"]) == expected_prefixes(keys, 3)
    expiry = {b["bucket"]: b for b in report["expiry"]}
    assert sum(b["keys"] for b in expiry.values()) == len(keys)
    assert sum(b["memory"] for b in expiry.values()) == totals["memory"]
    assert expiry["expired"]["keys"] == 0 and totals["expires"] == len(TTLS_S)
    for bucket in ("under 1 hour", "under 1 day", "under 7 days", "under 30 days", "later"):
        assert expiry[bucket]["keys"] == 1, bucket


def test_report_streams_match_the_live_server(report: dict, live: dict) -> None:
    found = {_name(s["key"]): s for s in report["streams"]["top"]}
    assert set(found) == set(live["streams"]) and report["streams"]["streams"] == len(live["streams"])
    now = live["now_ms"]
    for key, want in live["streams"].items():
        stream = found[key]
        assert stream["length"] == want["length"], key
        groups = {_name(g["name"]): g for g in stream["groups"]}
        assert set(groups) == set(want["groups"]), key
        for name, server in want["groups"].items():
            group = groups[name]
            assert (group["lag"], group["pending"]) == (server["lag"], server["pending"]), (key, name)
            by_consumer = {_name(c["name"]): c["pending"] for c in group["pending_by_consumer"]}
            assert {c: n for c, n in by_consumer.items() if n} == server["consumers"], (key, name)
            assert group["oldest_pending_id"] == server["oldest"], (key, name)
            if server["oldest"] is not None:
                assert group["oldest_pending_age_ms"] == now - int(server["oldest"].split("-")[0])
                assert abs((now - group["oldest_pending_idle_ms"]) - server["delivered_ms"]) <= 5, (key, name)
    assert any(g["pending"] for s in found.values() for g in s["groups"])


class Dom(HTMLParser):
    """The elements of a page: (tag, attributes, the section id they are in, the row attributes
    of the <tr> they are in)."""

    VOID = {"col", "meta", "br", "img", "input", "link", "hr"}

    def __init__(self, text: str):
        super().__init__()
        self.elements: list[tuple[str, dict[str, str], str | None, dict[str, str]]] = []
        self.stack: list[tuple[str, dict[str, str]]] = []
        self.feed(text)

    def _context(self, name: str) -> dict[str, str]:
        return next((attrs for tag, attrs in reversed(self.stack) if tag == name), {})

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = {k: v or "" for k, v in attrs}
        self.elements.append((tag, found, (found if tag == "section" else self._context("section")).get("id"),
                              self._context("tr")))
        if tag not in self.VOID:
            self.stack.append((tag, found))

    def handle_endtag(self, tag: str) -> None:
        while self.stack:
            if self.stack.pop()[0] == tag:
                break

    def cells(self, section: str, row_key: str, field: str) -> dict[str, int]:
        """row's `row_key` attribute -> the number in its cell of `field`."""
        return {row[row_key]: int(attrs.get("data-bytes") or attrs["data-count"])
                for tag, attrs, where, row in self.elements
                if where == section and tag == "td" and attrs.get("data-field") == field and row_key in row}


WIDTH_PROBE = ("<script>document.body.setAttribute('data-scroll-width', "
               "document.documentElement.scrollWidth)</script></body>")


def chromium() -> str:
    found = shutil.which("chromium")
    assert found, "chromium is missing: `make test` installs Debian's chromium (apt-get install chromium, as root)"
    return found


def test_report_page_in_chromium(live: dict, keys: list[dict], report: dict, tmp_path: Path) -> None:
    browser = chromium()
    page = tmp_path / "report.html"
    rdbspec("report", live["rdb"], "--now", str(live["now_ms"]), "-o", page)
    text = page.read_text(encoding="utf-8")
    assert "http://" not in text and "https://" not in text and "url(" not in text and "<script" not in text
    probe = tmp_path / "probe.html"
    probe.write_text(text.replace("</body>", WIDTH_PROBE), encoding="utf-8")
    argv = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--window-size=1280,2000"]
    dumped = subprocess.run([*argv, "--dump-dom", probe.as_uri()], capture_output=True, text=True, timeout=120,
                            check=True).stdout
    dom = Dom(dumped)
    ids = {attrs.get("id") for tag, attrs, _, _ in dom.elements if tag == "section"}
    assert set(SECTIONS) <= ids
    body = next(attrs for tag, attrs, _, _ in dom.elements if tag == "body")
    assert 0 < int(body["data-scroll-width"]) <= 1280, "the page scrolls sideways at 1280 px"

    totals = {attrs["data-field"]: int(attrs.get("data-bytes") or attrs["data-count"])
              for tag, attrs, where, _ in dom.elements if where == "summary" and tag == "b"}
    assert (totals["keys"], totals["memory"]) == (len(keys), sum(r["memory"] for r in keys))
    by_type = _by_type(keys)
    assert dom.cells("type-mix", "data-type", "keys") == {t: v["keys"] for t, v in by_type.items()}
    assert dom.cells("type-mix", "data-type", "memory") == {t: v["memory"] for t, v in by_type.items()}
    bars = {attrs["data-type"]: int(attrs["data-bytes"]) for tag, attrs, where, _ in dom.elements
            if where == "memory-by-type" and tag == "g" and "data-type" in attrs}
    assert bars == {t: v["memory"] for t, v in by_type.items()}
    memory = {(r["db"], r["key"]): r["memory"] for r in keys}
    shown = {(int(row["data-db"]), row["data-key"]): int(attrs["data-bytes"])
             for tag, attrs, where, row in dom.elements
             if where == "top-keys" and tag == "td" and attrs.get("data-field") == "memory"}
    assert len(shown) == 50 and all(memory[k] == v for k, v in shown.items())
    prefixes = expected_prefixes(keys, 3)
    rows = dom.cells("prefixes", "data-prefix", "memory")
    assert rows and all(prefixes[p][3] == v for p, v in rows.items() if p)
    tiles = {attrs["data-prefix"]: int(attrs["data-bytes"]) for tag, attrs, where, _ in dom.elements
             if where == "prefixes" and tag == "g" and attrs.get("data-prefix")}
    assert tiles and all(prefixes[p][3] == v for p, v in tiles.items())
    buckets = {attrs["data-bucket"]: int(attrs["data-count"]) for tag, attrs, where, _ in dom.elements
               if where == "expiry" and tag == "g"}
    assert buckets == {b["bucket"]: b["keys"] for b in report["expiry"]}
    pending = {(row["data-key"], row["data-group"]): int(attrs["data-count"]) for tag, attrs, where, row in dom.elements
               if where == "streams" and tag == "td" and attrs.get("data-field") == "pending"}
    assert pending == {(key, group): g["pending"] for key, stream in live["streams"].items()
                       for group, g in stream["groups"].items()}

    screenshot = ROOT / "docs" / "report.png"
    subprocess.run([*argv, f"--screenshot={screenshot}", page.as_uri()], capture_output=True, timeout=120, check=True)
    assert screenshot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("command", [["prefixes"], ["report", "-o", "never.html"]])
def test_an_empty_separator_is_a_usage_error(command: list[str], tmp_path: Path) -> None:
    """--separator "" is refused by the command line (exit 2, argparse's message), before the dump is read."""
    sample = Path(__file__).resolve().parents[2] / "examples" / "sample.rdb"
    done = subprocess.run([sys.executable, "-m", "rdbspec", command[0], str(sample), *command[1:], "--separator", ""],
                          capture_output=True, text=True, check=False, cwd=tmp_path)
    assert done.returncode == 2 and "the separator is empty" in done.stderr, done.stderr
    assert not (tmp_path / "never.html").exists()
