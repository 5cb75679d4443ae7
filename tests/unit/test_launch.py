"""The Java check before Spark starts (`rdbspec.spark.launch.java_version`): the version of the
installation's ``release`` file when there is one (no JVM started for it), else `java -version`'s."""

from __future__ import annotations

from pathlib import Path

import pytest

from rdbspec.spark.launch import java_version


def _java(home: Path, says: str, release: str | None) -> Path:
    """A fake Java installation: bin/java notes each run in `home`/ran and prints `says` as
    `java -version` does (on stderr), with a ``release`` file when given."""
    (home / "bin").mkdir(parents=True)
    java = home / "bin" / "java"
    java.write_text(f'#!/bin/sh\necho run >> "{home}/ran"\necho \'{says}\' >&2\n')
    java.chmod(0o755)
    if release is not None:
        (home / "release").write_text(release)
    return java


@pytest.mark.parametrize(("version", "feature"), [("17.0.15", 17), ("21", 21), ("1.8.0_402", 8)])
def test_the_release_file_gives_the_version_without_starting_java(tmp_path: Path, version: str,
                                                                  feature: int) -> None:
    home = tmp_path / "jdk"
    java = _java(home, 'openjdk version "11.0.2"', f'IMPLEMENTOR="Someone"\nJAVA_VERSION="{version}"\n')
    link = tmp_path / "java"  # as /usr/bin/java links into the installation
    link.symlink_to(java)
    assert java_version(str(link)) == feature
    assert not (home / "ran").exists()


@pytest.mark.parametrize(("says", "feature"), [('openjdk version "17.0.15" 2025-04-15', 17),
                                               ('java version "1.8.0_402"', 8), ("no version here", None)])
def test_without_a_release_file_java_is_asked(tmp_path: Path, says: str, feature: int | None) -> None:
    home = tmp_path / "jre"
    assert java_version(str(_java(home, says, None))) == feature
    assert (home / "ran").read_text() == "run\n"
