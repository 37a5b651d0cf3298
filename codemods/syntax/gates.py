r"""Code that bridges API generations on purpose, on both trees: it is left alone.

Two shapes, and only these, are such bridges:

- a ``try: ... except ImportError:`` block whose handler binds a real implementation
  (``try: new / except ImportError: old``). A handler that only binds ``None``, a flag or
  a stub (``checkpoint_wrapper = None``, ``def wrap(module, **kw): return module``)
  marks an optional dependency: that code is current code and is checked like any;
- an ``if`` whose test reads a torch, Lightning or FairScale version or capability. Where
  the test says which branch is for the newer release (``>=``, ``_GREATER_EQUAL_``,
  ``hasattr(torch...)``, ``<`` and ``_LESS_THAN_`` the other way round, ``not`` turning
  it), that branch is current code and only the older one (with its ``elif``\ s) is left
  alone; where it does not say (``==``, ``HAVE_FAIRSCALE``), the whole ``if`` is. A test
  that joins a newer gate with ``and`` (``if full and torch_2_0:``) says it of its ``if``
  branch, which runs on the newer releases alone; its ``else``, which runs on every
  release where the other part is false, is left alone as an older branch (and the other
  way round for an older gate joined with ``or``).

The libcst engine asks :func:`fallback_regions`, the ``ast`` detector
:func:`ast_fallback_regions`: the parts of a node inside which code is left alone. One
definition of a bridge for both trees.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Sequence

from codemods.syntax.ast_nodes import dotted as ast_dotted
from codemods.syntax.cst_nodes import dotted
from codemods.syntax.lazy_libcst import cst

TYPE_CHECKING = False  # typing is not imported at run time: see codemods/records.py
if TYPE_CHECKING:
    from typing import Any

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


def fallback_regions(node: cst.CSTNode) -> tuple[cst.CSTNode, ...]:
    r"""The parts of ``node`` that bridge API generations: code in them is left alone.

    ``(node,)`` for an import fallback or a gate that does not say which branch is
    newer; the older branch of one that does; ``()`` for anything else.

    Example:
        >>> gate = cst.parse_statement("if _TORCH_GREATER_EQUAL_2_0:\n    a\nelse:\n    b\n")
        >>> [type(n).__name__ for n in fallback_regions(gate)]
        ['Else']
        >>> fallback_regions(cst.parse_statement("if world_size > 1:\n    a\n"))
        ()
    """
    kind = type(node)
    known = _TRY_OR_IF.get(kind)
    if known is None:  # isinstance on libcst's classes goes through ABCMeta: once a class
        known = _TRY_OR_IF[kind] = (issubclass(kind, cst.Try), issubclass(kind, cst.If))
    is_try, is_if = known
    if is_try:
        return (node,) if is_import_fallback(node) else ()
    if not is_if:
        return ()
    test = cst.Module([]).code_for_node(node.test)
    if GATE.search(test) is None:
        return ()
    newer = newer_branch(test, combined=True)
    if newer is None:
        return (node,)
    older = node.orelse if newer else node.body
    return () if older is None else (older,)


def is_fallback(node: cst.CSTNode) -> bool:
    """Whether all of ``node`` is left alone (see :func:`fallback_regions`)."""
    return any(region is node for region in fallback_regions(node))


def is_import_fallback(node: cst.Try) -> bool:
    """Whether ``node`` is ``try: ... except ImportError:`` binding a real implementation.

    A bare ``except`` counts; a handler that binds only ``None``, a flag or a stub does
    not (an optional dependency).
    """
    for handler in node.handlers:
        if handler.type is None:
            caught = True
        else:
            elements = (
                handler.type.elements
                if isinstance(handler.type, cst.Tuple)
                else [cst.Element(handler.type)]
            )
            caught = any(dotted(e.value) in IMPORT_ERRORS for e in elements)
        if caught and not _cst_optional_only(handler.body.body):
            return True
    return False


def _cst_optional_only(body: Sequence[cst.BaseStatement]) -> bool:
    """:func:`_optional_only` on libcst statements."""
    for statement in body:
        if isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
            continue
        if not isinstance(statement, cst.SimpleStatementLine):
            return False
        for small in statement.body:
            if isinstance(small, (cst.Pass, cst.Raise)):
                continue
            if isinstance(small, cst.Return) and not isinstance(small.value, cst.Call):
                continue  # gives up (`return module`): binds nothing in the import's place
            value = getattr(small, "value", None)
            if isinstance(small, cst.Expr) and (isinstance(value, cst.Call) or _constant(value)):
                continue
            if isinstance(small, (cst.Assign, cst.AnnAssign)) and _constant(value):
                continue
            return False
    return True


def _constant(node: cst.BaseExpression | None) -> bool:
    """``None``, ``True``, ``False``, a number or a string, as ``ast`` has constants."""
    if isinstance(node, cst.Name):
        return node.value in ("None", "True", "False")
    return isinstance(node, (cst.BaseNumber, cst.BaseString, cst.Ellipsis))


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


#: A node class -> whether it is a ``try`` and whether an ``if`` (asked of every node).
_TRY_OR_IF: dict[type, tuple[bool, bool]] = {}


def ast_fallback_regions(node: ast.AST, segment: Callable[[ast.AST], str]) -> tuple[ast.AST, ...]:
    """:func:`fallback_regions` on ``ast``; ``segment`` gives a node's source text.

    A branch is a list of statements there: its statements are the regions.
    """
    kind = type(node)
    if kind is ast.Try:
        for handler in node.handlers:  # type: ignore[attr-defined]
            if catches_import_error(handler) and not _optional_only(handler.body):
                return (node,)
        return ()
    if kind is not ast.If:
        return ()
    test = segment(node.test)  # type: ignore[attr-defined]
    if GATE.search(test) is None:
        return ()
    newer = newer_branch(test, combined=True)
    if newer is None:
        return (node,)
    return tuple(node.orelse if newer else node.body)  # type: ignore[attr-defined]


def inside_fallback(
    node: Any, parent: Callable[[Any], Any], regions: Callable[[Any], tuple]
) -> bool:
    r"""Whether ``node`` lies in a region some ancestor leaves alone (either tree).

    For hooks that look at a whole file before the visit, which would otherwise not know
    that a node sits in a fallback or in a gate's older branch.

    Args:
        node: A node of either tree.
        parent: The tree's parent lookup (``engine.parent``, ``detector.parent``).
        regions: :func:`fallback_regions`, or :func:`ast_fallback_regions` with the
            detector's ``segment``.

    Example:
        >>> source = "if _TORCH_GREATER_EQUAL_2_0:\n    a = 1\nelse:\n    b = 2\n"
        >>> tree = ast.parse(source)
        >>> parents = {id(c): n for n in ast.walk(tree) for c in ast.iter_child_nodes(n)}
        >>> regions = lambda n: ast_fallback_regions(n, lambda m: ast.unparse(m))
        >>> [inside_fallback(s, lambda n: parents.get(id(n)), regions) for s in (
        ...     tree.body[0].body[0], tree.body[0].orelse[0])]
        [False, True]
    """
    chain = []
    current = node
    while current is not None:
        chain.append(current)
        current = parent(current)
    ids = {id(n) for n in chain}
    return any(id(region) in ids for ancestor in chain for region in regions(ancestor))


def catches_import_error(handler: ast.ExceptHandler) -> bool:
    """Whether an ``except`` clause catches ``ImportError`` (bare, named, or in a tuple)."""
    if handler.type is None:
        return True
    types = handler.type.elts if type(handler.type) is ast.Tuple else [handler.type]  # type: ignore[attr-defined]
    return any(ast_dotted(t) in IMPORT_ERRORS for t in types)


def newer_branch(test: str, combined: bool = False) -> bool | None:
    """Whether a gate's ``if`` branch is the newer release's (True), its ``else`` (False).

    None where the test does not say: an equality, a flag that names no direction
    (``HAVE_FAIRSCALE``), a combination with ``and``/``or``. With ``combined``, also
    ``a and <newer>`` (True: the ``if`` branch runs on the newer releases alone) and
    ``a or <older>`` (False: the ``else`` does), where every part that reads a version
    points that way; the other branch then runs on every release (where ``a`` says
    so), so only the fallback regions ask this (they leave that branch alone), not a
    gate's floor or ceiling.

    Example:
        >>> newer_branch("version.parse(torch.__version__) >= version.parse('2.0')")
        True
        >>> newer_branch("not _TORCH_GREATER_EQUAL_2_0"), newer_branch("torch_version() < (2, 0)")
        (False, False)
        >>> newer_branch("hasattr(torch.distributed.fsdp, 'ModuleWrapPolicy')")
        True
        >>> newer_branch("Version(torch.__version__) == Version('1.12.0')") is None
        True
        >>> test = "full and torch.__version__ >= '2.0'"
        >>> newer_branch(test), newer_branch(test, combined=True)
        (None, True)
    """
    try:
        expression = ast.parse(test.strip(), mode="eval").body
    except SyntaxError:
        return None
    return _direction(expression, combined)


def _direction(node: ast.expr, combined: bool = False) -> bool | None:
    if type(node) is ast.UnaryOp and type(node.op) is ast.Not:
        inner = _direction(node.operand, combined)
        return None if inner is None else not inner
    if type(node) is ast.BoolOp:
        if not combined:
            return None
        # `a and <newer>`: the body runs on the newer releases alone; `a or <older>`: the
        # else does. Each part that reads a version must point that way.
        wanted = type(node.op) is ast.And
        parts = [v for v in node.values if GATE.search(ast.unparse(v)) is not None]
        return wanted if parts and all(_direction(v, combined) is wanted for v in parts) else None
    if type(node) is ast.Compare and len(node.ops) == 1:
        # The running release is the side without constants; the other is the threshold
        # (`version.parse(torch.__version__) >= version.parse("2.0")`).
        left = not _has_constant(node.left)
        right = not _has_constant(node.comparators[0])
        if left == right:
            return None
        op = type(node.ops[0])
        if op in (ast.GtE, ast.Gt):
            return left
        if op in (ast.Lt, ast.LtE):
            return right
        return None
    if type(node) is ast.Call and ast_dotted(node.func) == "hasattr":
        return True if GATE.search(ast.unparse(node)) else None
    name = ast_dotted(node) if type(node) in (ast.Name, ast.Attribute) else None
    if type(node) is ast.Call:
        name = ast_dotted(node.func)
    if name is None:
        return None
    upper = name.rpartition(".")[2].upper()
    if "GREATER" in upper or re.search(r"_GE_?\d", upper):
        return True
    if "LESS" in upper or re.search(r"_LT_?\d", upper):
        return False
    if re.fullmatch(r"_?IS_(?:TORCH|PL|LIGHTNING)\w*\d", upper):
        return True  # `is_torch_2_0`: the release named or later, as projects use it
    return None


def _has_constant(node: ast.expr) -> bool:
    return any(type(n) is ast.Constant for n in ast.walk(node))


def _optional_only(body: list[ast.stmt]) -> bool:
    """Whether an ``except ImportError:`` body only marks the import as missing.

    It binds ``None``, a constant or a stub function or class, passes, warns, logs,
    raises or returns what it has (``return module``: a function that does without the
    import); it imports nothing and binds nothing else (no real implementation).
    """
    for statement in body:
        kind = type(statement)
        if kind in (ast.Pass, ast.Raise, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef):
            continue
        if kind is ast.Expr and type(statement.value) in (ast.Constant, ast.Call):
            continue  # a docstring, warnings.warn(...), logger.info(...), print(...)
        if kind in (ast.Assign, ast.AnnAssign) and type(statement.value) is ast.Constant:
            continue
        if kind is ast.Return and type(statement.value) is not ast.Call:
            continue  # gives up (`return module`): binds nothing in the import's place
        return False
    return True
