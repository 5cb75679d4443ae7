"""A Python process under a limit on the bytes a file may grow to (RLIMIT_FSIZE), for the tests
of what a writer does when its disk is full or it is killed while it writes (`rdbspec.atomic`).

With `die`, the write past the limit ends the process: the kernel sends SIGXFSZ, whose default
action ends it as SIGKILL does (no handler, no `finally`), at that very byte. Without, the write
fails with EFBIG, as one fails with ENOSPC on a full file system (which a test cannot make
without root): Python ignores SIGXFSZ."""

from __future__ import annotations

import sys

# run as `python -c`, with the limit, die|fail, then `-m MODULE ARGS...` or `-c CODE ARGS...`
_WRAPPER = """
import resource, runpy, signal, sys
limit, mode, how, what, *args = sys.argv[1:]
resource.setrlimit(resource.RLIMIT_FSIZE, (int(limit), int(limit)))
if mode == "die":
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    signal.signal(signal.SIGXFSZ, signal.SIG_DFL)
if how == "-m":
    sys.argv = [what, *args]
    runpy.run_module(what, run_name="__main__", alter_sys=True)
else:
    sys.argv = ["-c", *args]
    exec(compile(what, "<string>", "exec"), {"__name__": "__main__"})
"""


def limited(python_args: list[str], limit: int, die: bool) -> list[str]:
    """The command line of `python PYTHON_ARGS` (`-m MODULE ...` or `-c CODE ...`) whose files
    may grow to `limit` bytes."""
    return [sys.executable, "-c", _WRAPPER, str(limit), "die" if die else "fail", *python_args]
