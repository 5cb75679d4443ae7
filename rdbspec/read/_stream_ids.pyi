"""What type checkers know of the compiled `_stream_ids.pyx` (its docstrings say what each does)."""

from array import array
from typing import Any

def ascending(ms: array[int], seq: array[int], previous: tuple[int, int] | None) -> bool: ...
def group_pel(
    group: list[Any], consumers: list[list[Any]]
) -> tuple[array[int], array[int], array[int], array[int], array[int], list[tuple[array[int], array[int]]]] | None: ...
