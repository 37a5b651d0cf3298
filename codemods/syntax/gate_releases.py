"""The releases a version gate's branches run on: a newer branch's floor, an older one's ceiling.

``if <torch >= X>:`` runs its body on ``X`` or later only, its ``else`` before ``X``
only (:mod:`codemods.syntax.gates` reads which branch is which). Only a gate whose test
is that comparison alone says so: ``if a and <torch >= X>:`` runs its ``else`` on
every release.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Callable

from codemods.syntax.gates import GATE, newer_branch
from codemods.syntax.lazy_libcst import cst


#: A release number in a gate's test: ``"2.1.0"``, ``_GREATER_EQUAL_2_1``.
@functools.cache
def _release() -> re.Pattern[str]:
    return re.compile(r"(?<![\d.])(\d+)[._](\d+)")


def newer_release(test: str) -> tuple[int, int] | None:
    """The release a directed gate's newer branch runs on, as ``(major, minor)``, or None.

    Example:
        >>> newer_release("version.parse(torch.__version__) < version.parse('2.1.0')")
        (2, 1)
        >>> newer_release("_TORCH_GREATER_EQUAL_2_1"), newer_release("world_size > 1")
        ((2, 1), None)
        >>> newer_release("torch_version() >= (2, 1)") is None  # a tuple is not read
        True
    """
    if GATE.search(test) is None or newer_branch(test) is None:
        return None
    found = _release().findall(test)
    if len({tuple(map(int, f)) for f in found}) != 1:
        return None  # none, or several numbers: which one is the threshold is not certain
    major, minor = found[0]
    return int(major), int(minor)


def cst_gate_floor(
    parent: Callable[[cst.CSTNode], cst.CSTNode | None], node: cst.CSTNode
) -> tuple[int, int] | None:
    """The highest release a gate around ``node`` says its branch runs on (libcst).

    ``node`` is in the newer branch of ``if <torch >= X>:`` (or the ``else`` of
    ``if <torch < X>:``): that code only runs on ``X`` or later, whatever the project's
    target. ``parent`` gives an original node's parent.
    """
    best: tuple[int, int] | None = None
    child, current = node, parent(node)
    while current is not None:
        if isinstance(current, cst.If):
            test = cst.Module([]).code_for_node(current.test)
            release = newer_release(test)
            newer = newer_branch(test) if release is not None else None
            branch = current.body if newer else current.orelse
            if release is not None and branch is child and (best is None or release > best):
                best = release
        child, current = current, parent(current)
    return best


def cst_gate_ceiling(
    parent: Callable[[cst.CSTNode], cst.CSTNode | None], node: cst.CSTNode
) -> tuple[int, int] | None:
    """The lowest release a torch gate around ``node`` says its branch runs below (libcst).

    ``node`` is in the older branch of ``if <torch >= X>:`` (the body of ``if <torch <
    X>:``): that code only runs before torch ``X``. Gates on Lightning or FairScale
    releases say nothing about torch's and are passed over.
    """
    best: tuple[int, int] | None = None
    child, current = node, parent(node)
    while current is not None:
        if isinstance(current, cst.If):
            test = cst.Module([]).code_for_node(current.test)
            release = newer_release(test) if _torch_only().search(test) else None
            newer = newer_branch(test) if release is not None else None
            branch = current.orelse if newer else current.body
            if release is not None and branch is child and (best is None or release < best):
                best = release
        child, current = current, parent(current)
    return best


#: A gate on torch's own release, not Lightning's or FairScale's.
@functools.cache
def _torch_only() -> re.Pattern[str]:
    return re.compile(r"(?i)^(?!.*(?:lightning|\bpl\b|_pl_|fairscale)).*torch")


def ast_gate_floor(
    parent: Callable[[ast.AST], ast.AST | None], segment: Callable[[ast.AST], str], node: ast.AST
) -> tuple[int, int] | None:
    """:func:`cst_gate_floor` on ``ast``: a branch is a list of statements there."""
    best: tuple[int, int] | None = None
    child, current = node, parent(node)
    while current is not None:
        if type(current) is ast.If:
            test = segment(current.test)  # type: ignore[attr-defined]
            release = newer_release(test)
            newer = newer_branch(test) if release is not None else None
            branch = current.body if newer else current.orelse  # type: ignore[attr-defined]
            if release is not None and child in branch and (best is None or release > best):
                best = release
        child, current = current, parent(current)
    return best
