"""rdbspec's compiler for the Kaitai Struct subset the specs in spec/ use.

load (pyyaml) → model (precompile pass) → plan (per type, target-neutral; expressions, facts)
→ one emitter per language (emit_python) → render (jinja2 templates).
"""
