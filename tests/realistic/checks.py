"""What a migrated file must still satisfy, measured on the file before and after.

Each function reads one source and returns a set (or list) that must not grow (or must
not change) through a migration: pyflakes' undefined and unused names, the version- and
capability-gated fallbacks (issue 15: never fixed), and keyword calls of the file's own
functions against their parameters (issue 15's defect 3).
"""

from __future__ import annotations

import ast
import functools
import re
from typing import Any, Callable

from pyflakes import checker, messages

UNDEFINED = (messages.UndefinedName, messages.UndefinedExport, messages.UndefinedLocal)
# an import rebound before any use is as unused as one never used
UNUSED = (messages.UnusedImport, messages.RedefinedWhileUnused)

_GATE = re.compile(r"__version__|version|Version|_GREATER_EQUAL|_AVAILABLE|HAVE_|hasattr\(")
_IMPORT_ERRORS = {"ImportError", "ModuleNotFoundError"}


def flakes(source: str, kinds: tuple[type, ...]) -> set[tuple[str, str]]:
    """Pyflakes' messages of these kinds, as (kind, name) pairs.

    >>> sorted(flakes("import os\\nprint(x)\\n", UNDEFINED + UNUSED))
    [('UndefinedName', 'x'), ('UnusedImport', 'os')]
    """
    return {(kind.__name__, name) for kind, name in _flakes(source) if issubclass(kind, kinds)}


# Each source is measured once: a file's original is held against both modes' outputs,
# and pyflakes' messages serve two checks (the answers are small; sources are keys by value).
# It is parsed once, too, for every check at the same time (large files: the parse is most
# of a check's time); the tree is not kept.
_CHECKS: dict[str, Callable[[ast.Module], Any]] = {}


def _flakes(source: str) -> tuple[tuple[type, str], ...]:
    return _answers(source)["pyflakes"]


@functools.cache
def _answers(source: str) -> dict[str, Any]:
    tree = ast.parse(source)
    answers = {name: check(tree) for name, check in _CHECKS.items()}
    # last: pyflakes marks the tree's nodes (attributes the checks above never read)
    found = checker.Checker(tree, filename="<migrated>").messages
    answers["pyflakes"] = tuple((type(m), str(m.message_args[0])) for m in found)
    return answers


def _once(check):
    """``check`` of a module's tree, asked with its source: run once per source (see
    ``_answers``); each caller gets its own copy of the answer."""
    _CHECKS[check.__name__] = check

    @functools.wraps(check)
    def measured(source: str):
        found = _answers(source)[check.__name__]
        return type(found)(found)

    return measured


@_once
def fallbacks(tree: ast.Module) -> list[str]:
    """The gated ``if`` statements and ``try: ... except ImportError`` blocks, dumped.

    An ``if`` is gated when its test reads a version or a capability flag
    (``torch.__version__``, ``_TORCH_GREATER_EQUAL_2_0``, ``HAVE_FAIRSCALE``...).

    >>> len(fallbacks("if _TORCH_GREATER_EQUAL_2_0:\\n    a = 1\\nif ready:\\n    b = 2\\n"))
    1
    """
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and _GATE.search(ast.unparse(node.test)):
            found.append(ast.dump(node))
        elif isinstance(node, ast.Try) and any(_catches_import_error(h) for h in node.handlers):
            found.append(ast.dump(node))
    return found


def _catches_import_error(handler: ast.ExceptHandler) -> bool:
    kinds = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return any(isinstance(k, ast.Name) and k.id in _IMPORT_ERRORS for k in kinds)


@_once
def keyword_mismatches(tree: ast.Module) -> set[tuple[str, str]]:
    """(function, keyword) pairs where a call passes a keyword the function lacks.

    Only functions (and lambdas bound to a name) defined in the file count, called by
    name or through ``partial``; a function defined twice (both branches of a version
    gate) accepts the keywords of either definition.

    >>> keyword_mismatches("def f(a): ...\\nf(a=1)\\nf(b=2)\\n")
    {('f', 'b')}
    """
    params: dict[str, set[str] | None] = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            _accepts(params, node.name, node.args)
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Lambda):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    _accepts(params, target.id, node.value.args)
    found = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        callee = node.func
        if _is_partial(callee) and node.args:
            callee = node.args[0]
        if not isinstance(callee, ast.Name) or params.get(callee.id, None) is None:
            continue
        for keyword in node.keywords:
            if keyword.arg is not None and keyword.arg not in params[callee.id]:
                found.add((callee.id, keyword.arg))
    return found


def _accepts(params: dict[str, set[str] | None], name: str, args: ast.arguments) -> None:
    if args.kwarg is not None or params.get(name, set()) is None:
        params[name] = None  # takes any keyword
        return
    names = {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs}
    params[name] = params.get(name, set()) | names


def _is_partial(func: ast.expr) -> bool:
    return (isinstance(func, ast.Name) and func.id == "partial") or (
        isinstance(func, ast.Attribute) and func.attr == "partial"
    )


@_once
def fairscale_mismatches(tree: ast.Module) -> set[tuple[str, str]]:
    """What FairScale's wrappers are handed that only suits torch (issue 15's defects 2, 9).

    FairScale's ``enable_wrap``/``auto_wrap`` call a policy with ``unwrapped_params=``, so
    a policy defined in the file must keep that parameter and a ``partial`` policy must
    wrap FairScale's own; FairScale's ``FullyShardedDataParallel`` and ``wrap`` must not
    wrap torch's ``checkpoint_wrapper``. Returns (consumer, what it is handed) pairs.

    >>> fairscale_mismatches(
    ...     "from fairscale.nn import enable_wrap\\n"
    ...     "def big(module, recurse, nonwrapped_numel): ...\\n"
    ...     "enable_wrap(auto_wrap_policy=big)\\n"
    ... )
    {('enable_wrap', 'big')}
    """
    origin: dict[str, tuple[str, str]] = {}  # bound name -> (module, name there)
    params: dict[str, set[str] | None] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                origin[alias.asname or alias.name] = (node.module, alias.name)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            _accepts(params, node.name, node.args)

    def fairscale(name: str, *real: str) -> bool:
        module, there = origin.get(name, ("", ""))
        return module.split(".")[0] == "fairscale" and there in real

    def torch(name: str) -> bool:
        return origin.get(name, ("", ""))[0].split(".")[0] == "torch"

    found = set()
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
            continue
        consumer = node.func.id
        if fairscale(consumer, "enable_wrap", "auto_wrap"):
            for keyword in node.keywords:
                policy = _policy_name(keyword.value) if keyword.arg == "auto_wrap_policy" else None
                accepts = params.get(policy, None) if policy else None
                renamed = accepts is not None and "unwrapped_params" not in accepts
                if policy and (torch(policy) or renamed):
                    found.add((consumer, policy))
        if fairscale(consumer, "FullyShardedDataParallel", "wrap") and node.args:
            inner = node.args[0]
            if isinstance(inner, ast.Call) and isinstance(inner.func, ast.Name):
                if torch(inner.func.id) and origin[inner.func.id][1] == "checkpoint_wrapper":
                    found.add((consumer, inner.func.id))
    return found


def _policy_name(value: ast.expr) -> str | None:
    """``policy`` for ``policy`` and for ``partial(policy, ...)``."""
    if isinstance(value, ast.Call) and _is_partial(value.func) and value.args:
        value = value.args[0]
    return value.id if isinstance(value, ast.Name) else None


def endings(data: bytes) -> tuple[str, bool]:
    """The line endings of a file (``lf``, ``crlf`` or ``mixed``) and its final newline.

    >>> endings(b"a = 1\\r\\nb = 2")
    ('crlf', False)
    """
    crlf, lf = data.count(b"\r\n"), data.count(b"\n")
    style = "lf" if crlf == 0 else "crlf" if crlf == lf else "mixed"
    return style, data.endswith(b"\n")
