"""Line spans of a module, and the question asked of them most: does one meet these lines?"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable
from itertools import accumulate

#: Sorted ``(first line, last line)`` spans.
Spans = tuple[tuple[int, int], ...]


class Lines:
    """Line spans, asked many times whether one of them meets a range of lines.

    Example:
        >>> lines = Lines([(12, 12), (3, 9), (5, 5)])
        >>> lines.meet(6, 8), lines.meet(10, 11), lines.meet(11, 20)
        (True, False, True)
    """

    def __init__(self, spans: Iterable[tuple[int, int]]) -> None:
        spans = sorted(spans)
        self._starts = [first for first, _ in spans]
        self._reach = list(accumulate((last for _, last in spans), max))

    def meet(self, first: int, last: int) -> bool:
        """Whether a span overlaps lines ``first`` to ``last``."""
        index = bisect_right(self._starts, last)
        return index > 0 and self._reach[index - 1] >= first
