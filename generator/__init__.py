"""rdbspec's compiler for the Kaitai Struct subset the specs in spec/ use.

load (pyyaml) → model (precompile pass) → plan (per type, target-neutral; expressions, facts)
→ one package per target: `python` (emit, write, translate, render) and `cython` (emit, render),
each with its jinja2 templates and a runtime copied as it is; `docs` (the spec reference).
"""
