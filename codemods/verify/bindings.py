"""The walk over a syntax tree that records each scope's bindings and references.

Python resolves a name by where it is bound, not by what runs first: a name bound
anywhere in a function is local to all of it unless declared ``global`` or
``nonlocal``; a class body's names are invisible to its methods; a comprehension has
its own scope, though its first iterable is evaluated outside it; ``:=`` in a
comprehension binds outside it. :class:`Scanner` applies these rules (the compiler's,
as :mod:`symtable` implements them; ``tests/test_verify.py`` checks the two agree) and
:meth:`Scope.resolve` answers which binding a reference reads.

Annotations count as references wherever they stand, also under ``from __future__
import annotations`` and inside string annotations (``x: "Foo"``), as pyflakes counts
them: a type checker needs those names as much as the interpreter needs the others.

Why not :mod:`symtable` itself: it parses the file a second time, gives no positions,
and what it records changes with the Python version. Under the future import, 3.9
records annotation names as references but 3.10 to 3.13 record nothing of them (their
scopes are not even listed among the children). 3.12 inlines list, set and dict
comprehensions (PEP 709): their targets show as bound in the enclosing scope, and the
names they read lose their "referenced" mark there (``from m import f`` then
``[f(x) for x in xs]`` shows ``f`` as an unreferenced import). The tests compare the
two where symtable is reliable.
"""

from __future__ import annotations

import ast

from codemods.syntax.exports import ast_export_strings

#: (line, column): 1-based line, 0-based column in UTF-8 bytes, as :mod:`ast` counts.
Pos = tuple[int, int]

#: Scope kinds. An annotation scope (Python 3.12's type parameters, ``type X = ...``)
#: is a function scope that also sees the class whose body holds it.
MODULE, FUNCTION, CLASS, COMPREHENSION, ANNOTATION = range(5)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)
_FIELDS: dict[type, tuple[str, ...]] = {}
#: Subscripts whose arguments are values, not annotations (``Literal["fsdp"]``).
_VALUE_SUBSCRIPTS = frozenset({"Literal"})


class Scope:
    """One scope: what it binds, declares and reads.

    Attributes:
        kind: :data:`MODULE`, :data:`FUNCTION`, :data:`CLASS`, ...
        parent: The enclosing scope (``None`` for the module).
        key: Dotted qualified name of the function or class (``Model.setup``); a lambda
            or comprehension has its enclosing scope's.
        bound: Names bound here (assigned, imported, deleted, parameters, ...).
        globals, nonlocals: Names declared ``global`` / ``nonlocal`` here.
        imports: Import bindings made here, with their first position.
        refs: References made here, as ``(name, line, column)``.
    """

    __slots__ = ("kind", "parent", "key", "bound", "globals", "nonlocals", "imports", "refs")

    def __init__(self, kind: int, parent: Scope | None, key: str) -> None:
        self.kind = kind
        self.parent = parent
        self.key = key
        self.bound: set[str] = set()
        self.globals: set[str] = set()
        self.nonlocals: set[str] = set()
        self.imports: dict[str, Pos] = {}
        self.refs: list[tuple[str, int, int]] = []

    def child(self, kind: int, name: str = "") -> Scope:
        """A new scope inside this one (``name``: the function's or class's)."""
        key = f"{self.key}.{name}" if self.key and name else (name or self.key)
        return Scope(kind, self, key)

    def resolve(self, name: str) -> Scope | None:
        """The scope whose binding ``name`` reads here; ``None`` for the module's globals."""
        scope: Scope = self
        sees_class = True  # a scope always sees its own names, a class its own too
        while scope.kind != MODULE:
            if scope.kind != CLASS or sees_class:
                if name in scope.globals:
                    return None
                if name in scope.bound and name not in scope.nonlocals:
                    return scope
            # An enclosing class is visible only to the annotation scopes in its body.
            sees_class = scope.kind == ANNOTATION
            scope = scope.parent  # type: ignore[assignment]
        return None


def _arg_names(args: ast.arguments) -> list[ast.arg]:
    found = [*getattr(args, "posonlyargs", ()), *args.args, *args.kwonlyargs]
    found += [a for a in (args.vararg, args.kwarg) if a is not None]
    return found


class Scanner:
    """One pass over some statements: scopes with their bindings and references."""

    def __init__(self, line_offset: int, shallow: bool = False) -> None:
        self.offset = line_offset
        self.shallow = shallow  # bindings of the statements' own scope only
        self.module = Scope(MODULE, None, "")
        self.scopes = [self.module]
        self.exports: dict[str, list[Pos]] = {}
        self.star = False
        self.stack: list[tuple[ast.AST, Scope]] = []

    # The traversal: an explicit stack, so that deep expressions cannot overflow.
    def run(self, body: list[ast.stmt], scope: Scope) -> None:
        """Walk ``body``, whose statements stand in ``scope``."""
        stack = self.stack
        stack.extend((stmt, scope) for stmt in reversed(body))
        handlers = _HANDLERS
        name_type, attribute, constant = ast.Name, ast.Attribute, ast.Constant
        push = stack.append
        while stack:
            node, scope = stack.pop()
            kind = type(node)
            # The commonest nodes first: a third of all are names, attributes, constants.
            if kind is name_type:
                self.name(node, scope)  # type: ignore[arg-type]
            elif kind is attribute:
                push((node.value, scope))  # type: ignore[attr-defined]
            elif kind is not constant:
                handler = handlers.get(kind)
                if handler is None or handler(self, node, scope):
                    self.children(node, scope)

    def children(self, node: ast.AST, scope: Scope) -> None:
        """Queue the child nodes of ``node``, in the same scope."""
        push = self.stack.append
        fields = _FIELDS.get(type(node))
        if fields is None:  # `ctx` (Load, Store) holds no names
            fields = _FIELDS[type(node)] = tuple(f for f in node._fields if f != "ctx")
        for field in fields:
            value = getattr(node, field, None)
            if isinstance(value, list):
                for item in value:
                    if isinstance(item, ast.AST):
                        push((item, scope))
            elif isinstance(value, ast.AST):
                push((value, scope))

    def visit(self, nodes, scope: Scope) -> None:
        """Queue ``nodes`` (``None`` skipped) in ``scope``."""
        push = self.stack.append
        for node in nodes:
            if node is not None:
                push((node, scope))

    def name(self, node: ast.Name, scope: Scope) -> None:
        """A name: read (``del`` reads it too), bound, or both."""
        ctx = type(node.ctx)
        if ctx is not ast.Store:
            scope.refs.append((node.id, node.lineno + self.offset, node.col_offset))
        if ctx is not ast.Load:
            scope.bound.add(node.id)

    def ref(self, name: str, scope: Scope, pos: Pos) -> None:
        """A reference made otherwise than by a name node."""
        scope.refs.append((name, pos[0], pos[1]))

    def pos(self, node: ast.AST) -> Pos:
        """Where ``node`` starts, in the file."""
        return node.lineno + self.offset, node.col_offset  # type: ignore[attr-defined]

    def annotation(self, node: ast.AST | None, scope: Scope, at: Pos | None = None) -> None:
        """The names an annotation reads, also inside strings (placed at ``at`` if given).

        Walked on its own: an annotation binds nothing.
        """
        if node is None:
            return
        if isinstance(node, ast.Name):
            self.ref(node.id, scope, at or self.pos(node))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            self.string_annotation(node, scope, at)
        elif isinstance(node, ast.Subscript):
            self.annotation(node.value, scope, at)
            head = node.value.attr if isinstance(node.value, ast.Attribute) else None
            head = node.value.id if isinstance(node.value, ast.Name) else head
            if head in _VALUE_SUBSCRIPTS:
                return
            inner = node.slice
            if head == "Annotated" and isinstance(inner, ast.Tuple) and inner.elts:
                inner = inner.elts[0]  # the rest is metadata, not types
            self.annotation(inner, scope, at)
        else:
            for child in ast.iter_child_nodes(node):
                self.annotation(child, scope, at)

    def string_annotation(self, node: ast.Constant, scope: Scope, at: Pos | None) -> None:
        """A forward reference (``"Foo"``): parsed, its names placed at the string."""
        text = node.value.strip()
        try:
            tree = ast.parse(text, mode="eval").body
        except (SyntaxError, ValueError):
            return  # not an annotation (a docstring-like value): nothing to resolve
        if at is None:
            at = self.pos(node)
            simple = node.lineno == node.end_lineno and (  # type: ignore[attr-defined]
                node.end_col_offset - node.col_offset == len(node.value.encode()) + 2  # type: ignore[attr-defined,operator]
            )
            if simple and isinstance(tree, ast.Name) and "\n" not in text:
                lead = len(node.value) - len(node.value.lstrip())
                at = (at[0], at[1] + 1 + lead)  # the name itself, past the quote
        self.annotation(tree, scope, at)


def _function(self: Scanner, node: ast.AST, scope: Scope) -> bool:
    scope.bound.add(node.name)  # type: ignore[attr-defined]
    self.visit(node.decorator_list, scope)  # type: ignore[attr-defined]
    args: ast.arguments = node.args  # type: ignore[attr-defined]
    self.visit(args.defaults, scope)
    self.visit(args.kw_defaults, scope)
    if self.shallow:
        return False
    outer = _type_params(self, node, scope)
    for arg in _arg_names(args):
        self.annotation(arg.annotation, outer)
    self.annotation(node.returns, outer)  # type: ignore[attr-defined]
    inner = outer.child(FUNCTION, node.name)  # type: ignore[attr-defined]
    self.scopes.append(inner)
    inner.bound.update(arg.arg for arg in _arg_names(args))
    self.visit(reversed(node.body), inner)  # type: ignore[attr-defined]
    return False


def _type_params(self: Scanner, node: ast.AST, scope: Scope) -> Scope:
    """Python 3.12's ``def f[T]()``: an annotation scope that binds the parameters."""
    params = getattr(node, "type_params", None)
    if not params:
        return scope
    outer = scope.child(ANNOTATION)
    self.scopes.append(outer)
    for param in params:
        outer.bound.add(param.name)
        self.visit([getattr(param, "bound", None), getattr(param, "default_value", None)], outer)
    return outer


def _lambda(self: Scanner, node: ast.Lambda, scope: Scope) -> bool:
    self.visit(node.args.defaults, scope)
    self.visit(node.args.kw_defaults, scope)
    if self.shallow:
        return False
    inner = scope.child(FUNCTION)
    self.scopes.append(inner)
    inner.bound.update(arg.arg for arg in _arg_names(node.args))
    self.visit([node.body], inner)
    return False


def _class(self: Scanner, node: ast.ClassDef, scope: Scope) -> bool:
    scope.bound.add(node.name)
    self.visit(node.decorator_list, scope)
    outer = _type_params(self, node, scope)
    self.visit(node.bases, outer)
    self.visit(node.keywords, outer)
    if self.shallow:
        return False
    inner = outer.child(CLASS, node.name)
    self.scopes.append(inner)
    self.visit(reversed(node.body), inner)
    return False


def _comprehension(self: Scanner, node: ast.AST, scope: Scope) -> bool:
    generators: list[ast.comprehension] = node.generators  # type: ignore[attr-defined]
    self.visit([generators[0].iter], scope)  # evaluated outside the comprehension
    if self.shallow:
        return False
    inner = scope.child(COMPREHENSION)
    self.scopes.append(inner)
    for index, generator in enumerate(generators):
        self.visit([generator.target, *generator.ifs], inner)
        if index:
            self.visit([generator.iter], inner)
    if isinstance(node, ast.DictComp):
        self.visit([node.key, node.value], inner)
    else:
        self.visit([node.elt], inner)  # type: ignore[attr-defined]
    return False


def _named_expr(self: Scanner, node: ast.NamedExpr, scope: Scope) -> bool:
    target = scope
    while target.kind == COMPREHENSION:  # `:=` binds outside the comprehension
        target = target.parent  # type: ignore[assignment]
    target.bound.add(node.target.id)  # type: ignore[attr-defined]
    self.visit([node.value], scope)
    return False


def _import(self: Scanner, node: ast.AST, scope: Scope) -> bool:
    for alias in node.names:  # type: ignore[attr-defined]
        if alias.name == "*":
            self.star = True
            continue
        local = alias.asname or alias.name.partition(".")[0]
        scope.bound.add(local)
        # On Python 3.9 an alias has a position only from codemods.syntax.alias_positions:
        # in a tree ast.parse made, the statement's stands in.
        scope.imports.setdefault(local, self.pos(alias if hasattr(alias, "lineno") else node))
    return False


def _declaration(self: Scanner, node: ast.AST, scope: Scope) -> bool:
    names = node.names  # type: ignore[attr-defined]
    (scope.globals if isinstance(node, ast.Global) else scope.nonlocals).update(names)
    return False


def _bind_field(self: Scanner, node: ast.AST, scope: Scope) -> bool:
    """``except E as name``, ``case [*rest]``, ``case {**rest}``, ``case x``: plain strings."""
    for field in ("name", "rest"):
        value = getattr(node, field, None)
        if isinstance(value, str):
            scope.bound.add(value)
    return True


def _ann_assign(self: Scanner, node: ast.AnnAssign, scope: Scope) -> bool:
    self.annotation(node.annotation, scope)
    self.visit([node.target, node.value], scope)
    if scope.kind == MODULE:
        _exports(self, node)
    return False


def _assign(self: Scanner, node: ast.AST, scope: Scope) -> bool:
    target = getattr(node, "target", None)
    if isinstance(target, ast.Name):  # `x += 1` reads x as well
        self.ref(target.id, scope, self.pos(target))
    if scope.kind == MODULE:
        _exports(self, node)
    return True


def _expression(self: Scanner, node: ast.Expr, scope: Scope) -> bool:
    if scope.kind == MODULE:  # __all__.extend([...]) / __all__.append("...")
        _exports(self, node)
    return True


def _type_alias(self: Scanner, node: ast.AST, scope: Scope) -> bool:
    """Python 3.12's ``type X[T] = ...``: the value is evaluated lazily, in its own scope."""
    self.visit([node.name], scope)  # type: ignore[attr-defined]
    outer = _type_params(self, node, scope)
    inner = outer.child(ANNOTATION)
    self.scopes.append(inner)
    self.annotation(node.value, inner)  # type: ignore[attr-defined]
    return False


def _exports(self: Scanner, statement: ast.AST) -> None:
    """The strings a module-level statement puts in ``__all__``, with their positions."""
    for string in ast_export_strings(statement):
        self.exports.setdefault(string.value, []).append(self.pos(string))


_HANDLERS = {
    ast.FunctionDef: _function,
    ast.AsyncFunctionDef: _function,
    ast.Lambda: _lambda,
    ast.ClassDef: _class,
    **dict.fromkeys(_COMPREHENSIONS, _comprehension),
    ast.NamedExpr: _named_expr,
    ast.Import: _import,
    ast.ImportFrom: _import,
    ast.Global: _declaration,
    ast.Nonlocal: _declaration,
    ast.ExceptHandler: _bind_field,
    ast.AnnAssign: _ann_assign,
    ast.Assign: _assign,
    ast.AugAssign: _assign,
    ast.Expr: _expression,
}
for _name in ("MatchAs", "MatchStar", "MatchMapping"):  # Python 3.10+
    if hasattr(ast, _name):
        _HANDLERS[getattr(ast, _name)] = _bind_field
if hasattr(ast, "TypeAlias"):  # Python 3.12+
    _HANDLERS[ast.TypeAlias] = _type_alias
