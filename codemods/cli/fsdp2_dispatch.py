"""Where a module sends FSDP2 models away before its FSDP1 code, read with ``ast``.

Projects that met FSDP2 keep their FSDP1 code behind an early return for FSDP2 models
(verl's offload helpers)::

    def offload(model):
        if fsdp_version(model) == 2:
            return offload_fsdp2(model)
        assert isinstance(model, FSDP)  # FSDP1 only from here

where ``fsdp_version`` is a function of the same module whose ``isinstance(model,
FSDPModule)`` branch returns that constant (or the early return tests
``isinstance(model, FSDPModule)`` itself). Such FSDP1 checks and class calls answer
FSDP1 and FSDP2 models alike as written: across files they stand in no one's way
(:mod:`codemods.cli.project_fsdp1`), as within the file
(:func:`codemods.rules.fsdp401.fsdp2_aware.dispatched_away`, which reads the same idiom
with libcst).
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from codemods.cli.shared_walks import walk
from codemods.syntax.ast_nodes import dotted

_NO_ANSWER = object()


def _isinstance_of(test: ast.expr, name: str) -> str | None:
    """The dotted class of ``isinstance(name, Class)``, where ``test`` is that."""
    if not (isinstance(test, ast.Call) and isinstance(test.func, ast.Name)):
        return None
    if test.func.id != "isinstance" or len(test.args) != 2 or test.keywords:
        return None
    subject = test.args[0]
    if not (isinstance(subject, ast.Name) and subject.id == name):
        return None
    return dotted(test.args[1])


def _answer(function: ast.FunctionDef, is_fsdp1: Callable, is_fsdp2: Callable) -> object:
    """What a ``fsdp_version(model)``-like function returns for an FSDP2 model.

    Its body starts with an ``if``/``elif`` chain on its first parameter whose
    ``isinstance(param, FSDPModule)`` branch is ``return <constant>``, after tests for
    FSDP1's class only; anything else answers nothing.
    """
    if not function.args.args or not function.body or not isinstance(function.body[0], ast.If):
        return _NO_ANSWER
    name = function.args.args[0].arg
    link: ast.stmt | None = function.body[0]
    while isinstance(link, ast.If):
        kind = _isinstance_of(link.test, name)
        if kind is None:
            return _NO_ANSWER
        if not is_fsdp2(kind):
            if not is_fsdp1(kind) or len(link.orelse) != 1:
                return _NO_ANSWER  # a test an FSDP2 model may pass first
            link = link.orelse[0]
            continue
        (line,) = link.body if len(link.body) == 1 else (None,)
        value = line.value if isinstance(line, ast.Return) else None
        return value.value if isinstance(value, ast.Constant) else _NO_ANSWER
    return _NO_ANSWER


def _returns_for_fsdp2(
    statement: ast.stmt, params: set[str], answers: dict[str, object], is_fsdp2: Callable
) -> bool:
    """``if fsdp_version(param) == 2: ... return`` (or ``if isinstance(param, FSDPModule)``)."""
    if not isinstance(statement, ast.If) or statement.orelse or not statement.body:
        return False
    if not isinstance(statement.body[-1], (ast.Return, ast.Raise)):
        return False
    test = statement.test
    if any(is_fsdp2(_isinstance_of(test, param)) for param in params):
        return True
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return False
    call, constant = test.left, test.comparators[0]
    if not (isinstance(test.ops[0], ast.Eq) and isinstance(constant, ast.Constant)):
        return False
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and len(call.args) == 1):
        return False
    subject = call.args[0]
    if not (isinstance(subject, ast.Name) and subject.id in params):
        return False
    return answers.get(call.func.id, _NO_ANSWER) == constant.value


def fsdp2_answers(tree: ast.Module, is_fsdp1: Callable, is_fsdp2: Callable) -> dict[str, object]:
    """What each ``fsdp_version(model)``-like function of the module returns for FSDP2 models."""
    found = {}
    for statement in tree.body:
        if isinstance(statement, ast.FunctionDef):
            answer = _answer(statement, is_fsdp1, is_fsdp2)
            if answer is not _NO_ANSWER:
                found[statement.name] = answer
    return found


def _guarded(tree: ast.Module, answers: dict[str, object]) -> set[int]:
    """The nodes in ``if version(x) == c:`` bodies where ``c`` is not FSDP2 models' answer.

    ``if fsdp_version(self.module) == 1:`` (or ``if full and fsdp_version(m) == 1:``)
    holds FSDP1's code, which FSDP2 models (whose answer is 2) never reach.
    """
    found: set[int] = set()
    for node in walk(tree):
        test = node.test if isinstance(node, ast.If) else None
        both = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else []
        if any(_not_fsdp2s(part, answers) for part in [test, *both]):
            found.update(id(inner) for statement in node.body for inner in ast.walk(statement))
    return found


def _not_fsdp2s(test: ast.expr | None, answers: dict[str, object]) -> bool:
    """Whether ``test`` is ``version(x) == c`` with ``c`` not FSDP2 models' answer."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return False
    call, constant = test.left, test.comparators[0]
    if not (isinstance(test.ops[0], ast.Eq) and isinstance(constant, ast.Constant)):
        return False
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)):
        return False
    answer = answers.get(call.func.id, _NO_ANSWER)
    return answer is not _NO_ANSWER and answer != constant.value


def dispatched(
    tree: ast.Module,
    is_fsdp1: Callable,
    is_fsdp2: Callable,
    known: dict[str, object] | None = None,
) -> set[int]:
    r"""The nodes (``id``) no FSDP2 model reaches: after an early return of their function.

    Args:
        tree: The module.
        is_fsdp1: Whether a dotted class name is FSDP1's class in this module.
        is_fsdp2: Whether it is FSDP2's (``FSDPModule`` or the module's name for it).
        known: What the project's other modules' such functions answer (by name), for
            those the module imports.

    Example:
        >>> source = (
        ...     "def fsdp_version(m):\n"
        ...     "    if isinstance(m, FSDP):\n        return 1\n"
        ...     "    elif isinstance(m, FSDPModule):\n        return 2\n"
        ...     "def offload(model):\n"
        ...     "    if fsdp_version(model) == 2:\n        return offload2(model)\n"
        ...     "    assert isinstance(model, FSDP)\n"
        ... )
        >>> tree = ast.parse(source)
        >>> found = dispatched(tree, lambda n: n == "FSDP", lambda n: n == "FSDPModule")
        >>> sorted(n.lineno for n in ast.walk(tree) if isinstance(n, ast.Assert) and id(n) in found)
        [9]
    """
    answers = {**(known or {}), **fsdp2_answers(tree, is_fsdp1, is_fsdp2)}
    found = _guarded(tree, answers)
    for function in walk(tree):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        params = {argument.arg for argument in function.args.args}
        for index, statement in enumerate(function.body):
            if _returns_for_fsdp2(statement, params, answers, is_fsdp2):
                for later in function.body[index + 1 :]:
                    found.update(id(node) for node in ast.walk(later))
                break
    return found


def paired_checks(tree: ast.Module, is_fsdp1: Callable, is_fsdp2: Callable) -> set[int]:
    """The ``isinstance(x, FSDP)`` calls in ``if``/``elif`` chains that test FSDP2's class too.

    A chain that also asks ``isinstance(x, FSDPModule)`` of the same ``x`` sends FSDP2
    models down the branch written for them, so its FSDP1 check stands in no way (as in
    the file's own conversion). ``is_fsdp1``/``is_fsdp2`` tell a class's dotted name.
    Returns the ``id`` of each such call.
    """
    elifs = {id(n.orelse[0]) for n in walk(tree) if isinstance(n, ast.If) and _elif(n)}
    found: set[int] = set()
    for node in walk(tree):
        if not isinstance(node, ast.If) or id(node) in elifs:
            continue
        chain, tests = node, []
        while True:
            tests += [c for c in ast.walk(chain.test) if _isinstance_call(c)]
            if not _elif(chain):
                break
            chain = chain.orelse[0]
        asked = {ast.dump(c.args[0]) for c in tests if is_fsdp2(dotted(c.args[1]))}
        found.update(
            id(c) for c in tests if ast.dump(c.args[0]) in asked and is_fsdp1(dotted(c.args[1]))
        )
    return found


def _elif(node: ast.If) -> bool:
    return len(node.orelse) == 1 and isinstance(node.orelse[0], ast.If)


def _isinstance_call(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "isinstance"
        and len(node.args) == 2
    )


def aware(tree: ast.Module, is_fsdp2: Callable) -> set[int]:
    """The ``isinstance`` calls on a value its function also asks FSDP2's class of (``id``).

    Such a function's authors met FSDP2 models there (verl's activation offloading asks
    ``isinstance(child, FSDP | FSDP2)``, then unwraps ``child._fsdp_wrapped_module``
    where ``isinstance(child, FSDP)``): its FSDP1 checks on that value send FSDP2 models
    the way they meant. A function holds its nested ones; class calls are not checks.
    """
    found: set[int] = set()
    for function in walk(tree):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        tests = [node for node in ast.walk(function) if _isinstance_call(node)]
        asked = {
            ast.dump(test.args[0])
            for test in tests
            if any(is_fsdp2(dotted(kind)) for kind in _kinds(test.args[1]))
        }
        found.update(id(test) for test in tests if ast.dump(test.args[0]) in asked)
    return found


def _kinds(kinds: ast.expr) -> list[ast.expr]:
    if isinstance(kinds, ast.Tuple):
        return [part for element in kinds.elts for part in _kinds(element)]
    if isinstance(kinds, ast.BinOp) and isinstance(kinds.op, ast.BitOr):
        return [*_kinds(kinds.left), *_kinds(kinds.right)]
    return [kinds]
