"""Loading .ksy files: YAML in, plain dicts out, with each file's imports followed."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml


class SpecError(Exception):
    """A spec the generator cannot compile; names the file and the YAML path."""

    def __init__(self, file: str, yaml_path: str, message: str):
        super().__init__(f"{file}: {yaml_path}: {message}")
        self.file = file
        self.yaml_path = yaml_path


@dataclass
class SpecFile:
    """One .ksy file as loaded: its id (meta.id, which must equal the file stem) and body."""

    path: Path
    id: str
    body: dict

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def imports(self) -> list[str]:
        return list(self.body.get("meta", {}).get("imports", []))


def load_file(path: Path) -> SpecFile:
    with path.open(encoding="utf-8") as handle:
        body = yaml.safe_load(handle)
    if not isinstance(body, dict):
        raise SpecError(path.name, "/", "a .ksy file must be a YAML mapping")
    meta_id = body.get("meta", {}).get("id")
    if meta_id != path.stem:
        raise SpecError(path.name, "/meta/id", f"meta.id {meta_id!r} must equal the file stem {path.stem!r}")
    return SpecFile(path, meta_id, body)


def load_tree(spec_dir: Path) -> dict[str, SpecFile]:
    """Every .ksy in `spec_dir`, keyed by id, in a stable order; imports must resolve."""
    files = {f.id: f for f in (load_file(p) for p in sorted(spec_dir.glob("*.ksy")))}
    for spec in files.values():
        for index, name in enumerate(spec.imports):
            if name not in files:
                raise SpecError(spec.name, f"/meta/imports/{index}", f"no spec {name}.ksy in {spec_dir}")
    return files
