"""Code that bridges API generations on purpose, on both trees: it is left alone.

A ``try: ... except ImportError:`` block, or an ``if`` (with its ``elif`` and ``else``
branches) whose test reads a torch, Lightning or FairScale version or capability. The
libcst engine asks :func:`is_fallback`, the ``ast`` detector :func:`is_ast_fallback`:
one definition of a gate for both.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable

from codemods.syntax.ast_nodes import dotted as ast_dotted
from codemods.syntax.cst_nodes import dotted
from codemods.syntax.lazy_libcst import cst

#: The exceptions whose handler makes a ``try`` an import fallback.
IMPORT_ERRORS = {"ImportError", "ModuleNotFoundError"}
#: What a test that gates code on a torch, Lightning or FairScale release or capability
#: reads: ``torch.__version__``, ``version.parse(...)``, ``Version(...)``, flags like
#: ``_TORCH_GREATER_EQUAL_2_0``, ``is_torch_2_0`` or ``HAVE_FAIRSCALE``, helpers like
#: ``torch_version()``, ``hasattr(torch.distributed.fsdp, ...)``.
GATE = re.compile(
    r"__version__|\bversion\b|\bVersion\b|parse_version|_GREATER_EQUAL|_LESS_THAN|_EQUAL_\d"
    r"|\b_?(?:is|IS)_(?:torch|TORCH|pl|PL|lightning|LIGHTNING)\w*\d|torch_version"
    r"|\b_?(?:HAVE|HAS|HAVE_NO)_\w*(?:FAIRSCALE|TORCH|LIGHTNING|FSDP)|_AVAILABLE\b"
    r"|hasattr\(\s*(?:torch|lightning|pytorch_lightning|fairscale)\b"
)


def is_import_fallback(node: cst.Try) -> bool:
    """Whether ``node`` is a ``try: ... except ImportError:`` (or bare ``except``) block."""
    for handler in node.handlers:
        if handler.type is None:
            return True
        elements = (
            handler.type.elements
            if isinstance(handler.type, cst.Tuple)
            else [cst.Element(handler.type)]
        )
        if any(dotted(e.value) in IMPORT_ERRORS for e in elements):
            return True
    return False


def is_version_gate(node: cst.If) -> bool:
    r"""Whether ``node``'s test reads a torch, Lightning or FairScale version or capability.

    Example:
        >>> gate = cst.parse_statement("if _TORCH_GREATER_EQUAL_2_0:\n    pass\n")
        >>> is_version_gate(gate)
        True
        >>> is_version_gate(cst.parse_statement("if world_size > 1:\n    pass\n"))
        False
    """
    return GATE.search(cst.Module([]).code_for_node(node.test)) is not None


def is_fallback(node: cst.CSTNode) -> bool:
    """Whether ``node`` deliberately bridges API generations: code in it is left alone.

    That is a ``try: ... except ImportError:`` block, or an ``if`` (with its ``elif``
    and ``else`` branches) whose test reads a version or capability.
    """
    kind = type(node)
    known = _TRY_OR_IF.get(kind)
    if known is None:  # isinstance on libcst's classes goes through ABCMeta: once a class
        known = _TRY_OR_IF[kind] = (issubclass(kind, cst.Try), issubclass(kind, cst.If))
    is_try, is_if = known
    if is_try:
        return is_import_fallback(node)
    return is_if and is_version_gate(node)


#: A node class -> whether it is a ``try`` and whether an ``if`` (asked of every node).
_TRY_OR_IF: dict[type, tuple[bool, bool]] = {}


def is_ast_fallback(node: ast.AST, segment: Callable[[ast.AST], str]) -> bool:
    """:func:`is_fallback` on ``ast``; ``segment`` gives a node's source text."""
    kind = type(node)
    if kind is ast.Try:
        for handler in node.handlers:  # type: ignore[attr-defined]
            if handler.type is None:
                return True
            types = handler.type.elts if type(handler.type) is ast.Tuple else [handler.type]
            if any(ast_dotted(t) in IMPORT_ERRORS for t in types):
                return True
        return False
    if kind is ast.If:
        return GATE.search(segment(node.test)) is not None  # type: ignore[attr-defined]
    return False
