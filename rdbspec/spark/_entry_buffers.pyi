"""What type checkers know of the compiled `_entry_buffers.pyx` (its docstrings say what each does)."""

from typing import Any

def entry_buffers(nodes: list[Any], include_deleted: bool) -> tuple[Any, ...]: ...
