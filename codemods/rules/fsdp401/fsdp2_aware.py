"""Checks for FSDP1's class that a file already pairs with a check for FSDP2's.

Code that has met FSDP2 tells the two apart in one chain (``if isinstance(m, FSDP):
... elif isinstance(m, FSDPModule): ...``). A converted model is an ``FSDPModule``, so it
takes the branch the file's authors wrote for FSDP2 models: the FSDP1 check is left as
it is and stands in no way. A check with no such partner would send FSDP2 models down
another branch, and keeps such a file FSDP1.
"""

from __future__ import annotations

from codemods.rules.api import Engine
from codemods.rules.fsdp401.companion import branch_of
from codemods.rules.fsdp401.lookups import ISINSTANCE, fresh, fsdp1_reference
from codemods.syntax.cst_nodes import find_all
from codemods.syntax.lazy_libcst import cst

#: FSDP2's class, spelled so in each home and in projects that re-export it.
FSDP2_CLASS = "FSDPModule"


def _names_fsdp2(engine: Engine, node: cst.BaseExpression) -> bool:
    """Whether ``node`` is FSDP2's class: torch's, or a project's re-export of it."""
    names = engine.qualified(node) or {engine.module.code_for_node(node)}
    return any(name.rpartition(".")[2] == FSDP2_CLASS for name in names)


def _chain(engine: Engine, branch: cst.If) -> list[cst.If]:
    """Every ``if`` of the ``if``/``elif`` chain ``branch`` is part of."""
    first = branch
    while True:
        parent = engine.parent(first)
        if not (isinstance(parent, cst.If) and parent.orelse is first):
            break
        first = parent
    chain = [first]
    while isinstance(chain[-1].orelse, cst.If):
        chain.append(chain[-1].orelse)
    return chain


def _tests_fsdp2(engine: Engine, test: cst.BaseExpression, subject: str) -> bool:
    """Whether ``test`` holds ``isinstance(subject, FSDPModule)`` (FSDP2's class)."""
    code = engine.module.code_for_node
    for call in find_all(test, lambda n: isinstance(n, cst.Call)):
        if len(call.args) != 2 or ISINSTANCE not in engine.qualified(call.func):
            continue
        if code(call.args[0].value) != subject:
            continue
        kinds = call.args[1].value
        parts = [e.value for e in kinds.elements] if isinstance(kinds, cst.Tuple) else [kinds]
        if any(_names_fsdp2(engine, part) for part in parts):
            return True
    return False


def paired_with_fsdp2(engine: Engine, check: cst.CSTNode) -> bool:
    """Whether the ``isinstance(x, FSDP)`` ``check`` is in a chain that tests FSDP2's class.

    The chain must test the same ``x``; an ``FSDPModule`` test anywhere in it will do
    (before the FSDP1 one or after it: a converted model is never an FSDP1 one).
    """
    found = branch_of(engine, check)
    if found is None:
        return False
    subject, branch = found
    return any(_tests_fsdp2(engine, link.test, subject) for link in _chain(engine, branch))


def _fsdp2_answer(engine: Engine, function: cst.FunctionDef) -> object:
    """What a file's ``fsdp_version(model)``-like function returns for an FSDP2 model.

    Its body must be one ``if``/``elif`` chain on its first parameter whose
    ``isinstance(param, FSDPModule)`` branch is ``return <constant>``, after tests for
    FSDP1's class only (which an FSDP2 model fails); anything else answers nothing
    (``_NO_ANSWER``).
    """
    params = function.params.params
    if not params or not function.body.body or not isinstance(function.body.body[0], cst.If):
        return _NO_ANSWER
    name = params[0].name.value
    link: cst.BaseSuite | cst.If | cst.Else | None = function.body.body[0]
    while isinstance(link, cst.If):
        kind = _isinstance_of(link.test, name)
        if kind is None:
            return _NO_ANSWER
        if not _names_fsdp2(engine, kind):
            if not fsdp1_reference(engine, kind):
                return _NO_ANSWER  # a test an FSDP2 model may pass first
            link = link.orelse
            continue
        body = link.body.body
        line = body[0] if len(body) == 1 else None
        returned = line.body[0] if isinstance(line, cst.SimpleStatementLine) else None
        value = getattr(returned, "value", None)
        if isinstance(returned, cst.Return) and isinstance(value, (cst.Integer, cst.SimpleString)):
            return value.value
        return _NO_ANSWER
    return _NO_ANSWER


_NO_ANSWER = object()


def _isinstance_of(test: cst.BaseExpression, name: str) -> cst.BaseExpression | None:
    """The class in ``isinstance(name, Class)``, where ``test`` is that."""
    if not (isinstance(test, cst.Call) and isinstance(test.func, cst.Name)):
        return None
    if test.func.value != "isinstance" or len(test.args) != 2:
        return None
    subject, kind = test.args[0].value, test.args[1].value
    if not (isinstance(subject, cst.Name) and subject.value == name):
        return None
    return kind if isinstance(kind, (cst.Name, cst.Attribute)) else None


def _ends_the_function(body: cst.BaseSuite) -> bool:
    last = body.body[-1] if isinstance(body, cst.IndentedBlock) and body.body else None
    if isinstance(last, cst.SimpleStatementLine):
        return isinstance(last.body[-1], (cst.Return, cst.Raise))
    return False


def _returns_on_fsdp1_check(engine: Engine, branch: cst.If, params: set[str]) -> bool:
    """``if isinstance(param, FSDP): ... return`` in a file whose checks become FSDP2's.

    A file that does not name ``FSDPModule`` has its checks rewritten to it, so a
    converted model returns there (torchtnt's ``_is_fsdp_module``).
    """
    kind = next((k for p in params if (k := _isinstance_of(branch.test, p)) is not None), None)
    return (
        kind is not None
        and fsdp1_reference(engine, kind)
        and fresh(engine, FSDP2_CLASS) == FSDP2_CLASS
        and _ends_the_function(branch.body)
    )


def dispatched_away(engine: Engine, node: cst.CSTNode) -> bool:
    """Whether FSDP2 models return from ``node``'s function before it runs.

    The idiom of projects that met FSDP2 (verl's offload helpers), or an early return
    on a check for FSDP1's class that the conversion makes a check for FSDP2's::

        def offload(model):
            if fsdp_version(model) == 2:
                return offload_fsdp2(model)
            assert isinstance(model, FSDP)  # FSDP1 only from here
            _lazy_init(model, model)

    where ``fsdp_version`` is a function of the same file whose ``isinstance(model,
    FSDPModule)`` branch returns that constant, and ``model`` is a parameter of the
    function. A converted model is an ``FSDPModule``, so it never reaches ``node``.
    """
    # The statement of the function's own body that holds ``node``, and the function.
    statement, block = node, engine.parent(node)
    while block is not None and not (
        isinstance(block, cst.IndentedBlock) and isinstance(engine.parent(block), cst.FunctionDef)
    ):
        statement, block = block, engine.parent(block)
    if block is None:
        return False
    function = engine.parent(block)
    body = list(block.body)
    index = next((i for i, s in enumerate(body) if s is statement), None)
    if index is None:
        return False
    params = {p.name.value for p in function.params.params}
    answers = engine.scratch.get("FSDP401-fsdp2-answers")
    if answers is None:
        answers = engine.scratch["FSDP401-fsdp2-answers"] = {
            s.name.value: _fsdp2_answer(engine, s)
            for s in engine.module.body
            if isinstance(s, cst.FunctionDef)
        }
    for earlier in body[:index]:
        if not isinstance(earlier, cst.If) or earlier.orelse is not None:
            continue
        if _returns_on_fsdp1_check(engine, earlier, params):
            return True
        test = earlier.test
        if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1):
            continue
        if not isinstance(test.comparisons[0].operator, cst.Equal):
            continue
        call, constant = test.left, test.comparisons[0].comparator
        if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Name)):
            continue
        if not (len(call.args) == 1 and isinstance(call.args[0].value, cst.Name)):
            continue
        if call.args[0].value.value not in params:
            continue
        answer = answers.get(call.func.value, _NO_ANSWER)
        same = isinstance(constant, (cst.Integer, cst.SimpleString)) and constant.value == answer
        if same and _ends_the_function(earlier.body):
            return True
    return False


def _classes(kinds: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The classes of an ``isinstance`` class argument: a tuple's, a ``A | B`` union's."""
    if isinstance(kinds, cst.Tuple):
        return [part for element in kinds.elements for part in _classes(element.value)]
    if isinstance(kinds, cst.BinaryOperation) and isinstance(kinds.operator, cst.BitOr):
        return [*_classes(kinds.left), *_classes(kinds.right)]
    return [kinds]


def answers_fsdp2(engine: Engine, node: cst.CSTNode) -> bool:
    """Whether ``node`` is FSDP1's class in an ``isinstance`` that names FSDP2's class too.

    ``isinstance(m, (FSDP, FSDPModule))`` or ``isinstance(m, FSDP | FSDP2)`` (FSDP2's class
    imported under another name) holds for FSDP1 and FSDP2 models alike: it is left as
    written and stands in no way, in the file or in its project.
    """
    top, parent = node, engine.parent(node)
    while isinstance(parent, (cst.Element, cst.Tuple, cst.BinaryOperation)):
        if isinstance(parent, cst.BinaryOperation) and not isinstance(parent.operator, cst.BitOr):
            return False
        if not isinstance(parent, cst.Element):
            top = parent
        parent = engine.parent(parent)
    if not (isinstance(parent, cst.Arg) and parent.value is top and not parent.star):
        return False
    call = engine.parent(parent)
    if not (isinstance(call, cst.Call) and len(call.args) == 2 and call.args[1] is parent):
        return False
    if not engine.qualified(call.func) & {ISINSTANCE, "builtins.issubclass"}:
        return False
    return any(_names_fsdp2(engine, part) for part in _classes(top))
