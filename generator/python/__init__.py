"""The Python target: reading plans rendered as Python (`emit`: the reading functions; `write`:
the writers; `translate`: expressions; `render`: the modules, through `templates/`), into
`generated/`, with the runtime copied from `runtime/`. The Cython target builds on it."""
