"""rdbspec's compiler for the Kaitai Struct subset the specs in spec/ use.

load (pyyaml) → model (precompile pass) → expressions → emit → render (jinja2 templates).
"""
