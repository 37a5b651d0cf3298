"""A command's start: the modules it loads live as long as the run.

A one-file lint (a commit hook's) makes tens of thousands of objects while it loads
its modules (functions, classes, the registry's rules), all of them kept to the end.
Python's cycle collector would go over them some ten times while they load, freeing
nothing, then in every collection of the oldest generation, and once more at exit:
about 7 ms of the hook's CPU (benchmarks/README.md). :func:`long_lived` loads them
with the collector paused, then freezes them (``gc.freeze``: later collections, the
one at exit included, leave them alone; a forked worker shares their memory pages),
as Python's documentation advises for objects that live as long as the process.
"""

from __future__ import annotations

import gc


class long_lived:  # lower case: it was a function, and is called as one
    """Pause the cycle collector in the block, then freeze what exists at its end.

    The collector is left as it was found (on, unless the caller turned it off). A
    class rather than a ``contextlib.contextmanager``: importing ``contextlib`` costs a
    commit hook's start about 3 million instructions, 5% of its answer for a file that
    names nothing legacy.

    Example:
        >>> with long_lived():
        ...     table = {"kept": [1, 2, 3]}
        >>> gc.isenabled(), gc.get_freeze_count() > 0
        (True, True)
    """

    def __enter__(self) -> None:
        self._collecting = gc.isenabled()
        gc.disable()

    def __exit__(self, *exc_info: object) -> None:
        gc.freeze()
        if self._collecting:
            gc.enable()
