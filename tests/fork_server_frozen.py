"""Imported last by the fork server of :mod:`tests.distributed`: its heap, frozen for the ranks.

The fork server has imported torch and the rest of ``PRELOAD`` (hundreds of thousands
of objects) when it reaches this module. A rank forked from it shares those pages with
it until something writes to them, and the cycle collector writes to every object it
scans: a rank's first full collection copied the server's heap page by page, about
0.2 s of CPU per rank before its function even began (benchmarks/README.md), and every
later full collection scanned it again. Frozen, the collector leaves those objects out
(they live as long as the process anyway: modules, classes, functions). Objects the
rank makes itself are collected as before.
"""

from __future__ import annotations

import gc

gc.collect()  # what the imports left behind goes first; only what stays is frozen
gc.freeze()
