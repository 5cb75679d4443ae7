"""The spec reference, `docs/spec/<spec>.md`: each spec's types and fields as tables, from the
model (target-neutral: no target's output is read)."""

from __future__ import annotations

from pathlib import Path

from . import templating
from .model import Attribute, TypeSpec

TEMPLATES = Path(__file__).parent / "templates"


def render_docs(roots: dict[str, TypeSpec]) -> dict[str, str]:
    """The spec reference, `docs/spec/<spec>.md`, keyed by file name."""
    env = templating.environment(TEMPLATES, {"cell": lambda text: " ".join(str(text).split()).replace("|", "\\|")})
    template = env.get_template("spec.md.j2")
    return {f"{name}.md": template.render(root=root, types=list(root.walk()), describe=describe)
            for name, root in roots.items()}


def describe(a: Attribute) -> dict[str, str]:
    """A one-row summary of an attribute for the spec reference."""
    raw = a.raw
    kind = raw.get("type")
    if isinstance(kind, dict):
        cases = ", ".join(f"{k} → {v}" for k, v in kind.get("cases", {}).items())
        kind = f"switch on `{kind.get('switch-on')}`: {cases}"
    size = raw.get("size", "to end of stream" if raw.get("size-eos") else "")
    if raw.get("contents") is not None:
        kind = f"contents {raw['contents']}"
    extra = []
    if raw.get("process"):
        extra.append(f"process {raw['process']}")
    if raw.get("encoding"):
        extra.append(f"encoding {raw['encoding']}")
    if raw.get("enum"):
        extra.append(f"enum {raw['enum']}")
    if raw.get("repeat"):
        how = {"expr": raw.get("repeat-expr"), "until": raw.get("repeat-until"), "eos": "end of stream"}
        extra.append(f"repeat {raw['repeat']}: {how[raw['repeat']]}")
    if raw.get("valid") is not None:
        message = f" (else: {raw['-rdbspec-message']})" if raw.get("-rdbspec-message") else ""
        extra.append(f"valid {raw['valid']}{message}")
    if raw.get("value") is not None:
        kind = f"value `{raw['value']}`"
    if raw.get("-rdbspec-lookup") is not None:
        extra.append(f"rdbspec looks it up: {raw['-rdbspec-lookup']}")
    if raw.get("-rdbspec-index") is not None:
        extra.append(f"rdbspec indexes the elements: {raw['-rdbspec-index']}")
    if raw.get("pos") is not None:
        extra.append(f"at position {raw['pos']}")
    return {
        "id": a.id,
        "type": str(kind or "bytes"),
        "size": str(size),
        "condition": str(raw.get("if", "")),
        "details": "; ".join(str(e) for e in extra),
        "doc": " ".join((a.doc or "").split()),
        "ref": a.doc_ref,
    }
