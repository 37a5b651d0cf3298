r"""Name resolution on the ``ast`` tree, giving the answers libcst's scopes give.

The libcst engine asks ``ScopeProvider`` which fully qualified names a name or
attribute chain may refer to. :class:`Names` answers the same question from one walk
over the ``ast`` tree: the imports of every scope (module, class, function, lambda,
comprehension), looked up the way libcst looks them up (the longest dotted prefix bound
in the nearest visible scope; class scopes are not visible from the functions inside
them; ``import a.b.c`` binds ``a.b.c``, ``a.b`` and ``a``).

A name bound otherwise (an assignment, a ``def``, a parameter) refers to libcst's local
qualified name (``f.<locals>.x``); a use in the scope that binds it reads only the
bindings before it, as libcst orders them. Where this module does not model libcst
exactly (an imported name declared ``nonlocal``, type parameters, a method reading a
name before its function binds it), :class:`Undecided` is raised and the file goes to
the libcst engine.

Example:
    >>> tree = ast.parse("import torch.distributed as dist\ndist.fsdp.X\n")
    >>> names = Names(tree)
    >>> sorted(names.qualified(tree.body[1].value))
    ['torch.distributed.fsdp.X']
"""

from __future__ import annotations

import ast
import builtins

from codemods.registry.names import lightning_strategy
from codemods.syntax.ast_nodes import (
    Undecided,
    alias_assignment,
    dotted,
    import_names,
    subclass_alias,
    tree_index,
)

__all__ = ["Names", "Scope", "Undecided", "dotted", "import_names"]

#: Names Python provides everywhere (libcst's builtin scope).
_BUILTINS = frozenset(dir(builtins))
MODULE, CLASS, FUNCTION, COMPREHENSION = "module", "class", "function", "comprehension"
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
#: What ``Names._visit`` does more for than walk its children (``match``: 3.10+, types: 3.12+)
_BINDING = frozenset(
    getattr(ast, name)
    for name in "Import ImportFrom FunctionDef AsyncFunctionDef Lambda ClassDef ListComp SetComp "
    "DictComp GeneratorExp Global Nonlocal ExceptHandler NamedExpr MatchAs MatchStar "
    "MatchMapping TypeAlias TypeVar ParamSpec TypeVarTuple".split()
    if hasattr(ast, name)
)


class Scope:
    """One scope: what it binds, by imports and otherwise.

    Attributes:
        kind: MODULE, CLASS, FUNCTION or COMPREHENSION.
        parent: The enclosing scope (None for the module).
        prefix: libcst's qualified-name prefix of the names it binds (``f.<locals>``).
        imports: Each bound name (dotted for ``import a.b``) -> the import statements.
        others: Names bound other than by an import, with the positions of the bindings.
        declared: Names declared ``global`` here.
        nonlocals: Names declared ``nonlocal`` here (bound in the enclosing function).
        nonclass: Names bound here other than by an import or a class statement.
    """

    __slots__ = tuple("kind parent prefix imports others declared nonclass count nonlocals".split())

    def __init__(self, kind: str, parent: Scope | None, name: str | None = None) -> None:
        self.kind = kind
        self.parent = parent
        base = parent.prefix if parent is not None else ""
        if kind == CLASS:
            parts = [base, name]
        elif kind == COMPREHENSION:
            parts = [base, "<comprehension>"]
        elif kind == FUNCTION:
            parts = [base, name, "<locals>"]
        else:
            parts = []
        self.prefix = ".".join(p for p in parts if p)
        self.imports: dict[str, list[ast.Import | ast.ImportFrom]] = {}
        self.others: dict[str, list[tuple[int, int]]] = {}
        self.declared: set[str] = set()
        self.nonclass: set[str] = set()
        self.nonlocals: set[str] = set()
        self.count: dict[str, int] = {}  # name -> how many bindings (libcst's assignments)

    def binds(self, name: str) -> bool:
        """Whether this scope binds ``name``."""
        return name in self.imports or name in self.others

    def visible_parent(self) -> Scope | None:
        """The next scope a name not bound here is looked up in (classes are skipped)."""
        parent = self.parent
        while parent is not None and parent.kind == CLASS:
            parent = parent.parent
        return parent


def _builtin(name: str) -> set[str]:
    return {f"builtins.{name}"} if name in _BUILTINS else set()


class Names:
    """The scopes of one module, and the qualified names of its expressions.

    Args:
        tree: The module.
    """

    def __init__(self, tree: ast.Module) -> None:
        self.module = Scope(MODULE, None)
        self.scope_of: dict[ast.AST, Scope] = {}  # a Name/Attribute/Call/... -> its scope
        self.parents: dict[ast.AST, ast.AST] = {}
        self._cache: dict[ast.AST, set[str]] = {}
        self._imported: dict[tuple[int, str], set[str]] = {}  # see _bound
        self.loads: dict[str, list[ast.Name]] = {}  # each name's uses (Load context)
        # The first part of every name imports bind -> what a use of it names first
        self.imported_roots: dict[str, set[str]] = {}
        self.dotted_roots: set[str] = set()  # `a` of `import a.b` (see reach.names_nothing)
        self.deleted: set[str] = set()  # names in `del`: a binding here, an access to libcst
        self._below = tree_index(tree).below
        self.aliases: dict[str, set[str]] = {}  # see _find_aliases
        self._walk(tree, self.module)
        self._find_aliases(tree)

    # The walk ---------------------------------------------------------------------

    def _walk(self, node: ast.AST, scope: Scope) -> None:
        parents = self.parents
        for child in self._below[node]:
            parents[child] = node
            self._visit(child, scope)

    def _visit(self, node: ast.AST, scope: Scope) -> None:
        kind = type(node)
        if kind is ast.Name:
            self.scope_of[node] = scope
            if type(node.ctx) is not ast.Load:  # type: ignore[attr-defined]
                if type(node.ctx) is ast.Del:  # type: ignore[attr-defined]
                    self.deleted.add(node.id)  # type: ignore[attr-defined]
                self._other(scope, node.id, node)  # type: ignore[attr-defined]
            else:
                self.loads.setdefault(node.id, []).append(node)  # type: ignore[arg-type,attr-defined]
            return
        if kind not in _BINDING:  # most nodes: their children walked, one lookup in
            if kind is ast.Attribute or kind is ast.Call:
                self.scope_of[node] = scope
            for child in self._below[node]:
                self.parents[child] = node
                self._visit(child, scope)
            return
        if kind is ast.Import or kind is ast.ImportFrom:
            self.scope_of[node] = scope
            for alias in node.names:  # type: ignore[attr-defined]
                if alias.name == "*":
                    continue
                if alias.asname:
                    keys = [alias.asname]
                elif kind is ast.Import:
                    parts = alias.name.split(".")
                    keys = [".".join(parts[:n]) for n in range(len(parts), 0, -1)]
                else:
                    keys = [alias.name]
                if kind is ast.Import:  # what a use's name starts with: `a.b` of `import a.b as x`
                    source = alias.name if alias.asname else keys[-1]
                else:  # a relative import's names start with a dot: no rule's name does
                    source = "" if node.level else f"{node.module}.{alias.name}"  # type: ignore[attr-defined]
                self.imported_roots.setdefault(keys[-1].partition(".")[0], set()).add(source)
                if len(keys) > 1:  # `import a.b`: libcst reads `a` of `a.x` as `a.b` too
                    self.dotted_roots.add(keys[-1])
                for key in keys:
                    statements = scope.imports.setdefault(key, [])
                    if not statements or statements[-1] is not node:
                        statements.append(node)  # type: ignore[arg-type]
                    scope.count[key] = scope.count.get(key, 0) + 1
            return
        elif kind is ast.FunctionDef or kind is ast.AsyncFunctionDef or kind is ast.Lambda:
            self.scope_of[node] = scope
            self._function(node, scope)
            return
        elif kind is ast.ClassDef:
            if getattr(node, "type_params", None):  # `class C[T]`: as a function's, below
                raise Undecided("type parameters")
            self._other(scope, node.name, node)  # type: ignore[attr-defined]
            self._each(node, ("decorator_list", "bases", "keywords"), scope)
            inner = Scope(CLASS, scope, node.name)  # type: ignore[attr-defined]
            self._each(node, ("body",), inner)
            return
        elif kind in _COMPREHENSIONS:
            self._comprehension(node, scope)
            return
        elif kind is ast.Global:
            scope.declared.update(node.names)  # type: ignore[attr-defined]
        elif kind is ast.Nonlocal:
            scope.nonlocals.update(node.names)  # type: ignore[attr-defined]
        elif kind is ast.ExceptHandler and node.name:  # type: ignore[attr-defined]
            self._other(scope, node.name, node)  # type: ignore[attr-defined]
        elif kind is ast.NamedExpr:
            target = scope
            while target.kind == COMPREHENSION:  # `:=` binds outside the comprehension
                target = target.parent  # type: ignore[assignment]
            self._other(target, node.target.id, node)  # type: ignore[attr-defined]
        elif kind.__name__ in ("MatchAs", "MatchStar", "MatchMapping"):
            for field in ("name", "rest"):
                value = getattr(node, field, None)
                if isinstance(value, str):
                    self._other(scope, value, node)
        elif kind.__name__ in ("TypeAlias", "TypeVar", "ParamSpec", "TypeVarTuple"):
            raise Undecided("type parameters")
        self._walk(node, scope)

    def _each(self, node: ast.AST, fields: tuple[str, ...], scope: Scope) -> None:
        parents = self.parents
        for field in fields:
            value = getattr(node, field, None)
            for child in value if isinstance(value, list) else [value]:
                if child is not None:
                    parents[child] = node
                    self._visit(child, scope)

    def _function(self, node: ast.AST, scope: Scope) -> None:
        args: ast.arguments = node.args  # type: ignore[attr-defined]
        self.parents[args] = node
        if type(node) is not ast.Lambda:
            if getattr(node, "type_params", None):
                raise Undecided("type parameters")
            self._other(scope, node.name, node)  # type: ignore[attr-defined]
            self._each(node, ("decorator_list", "returns"), scope)
        self._each(args, ("defaults", "kw_defaults"), scope)
        every = [*args.posonlyargs, *args.args, *args.kwonlyargs]
        every += [a for a in (args.vararg, args.kwarg) if a is not None]
        for arg in every:
            self.parents[arg] = args
            if arg.annotation is not None:
                self.parents[arg.annotation] = arg
                self._visit(arg.annotation, scope)
        inner = Scope(FUNCTION, scope, getattr(node, "name", None))
        for arg in every:
            self._other(inner, arg.arg, arg)
        self._each(node, ("body",), inner)

    def _comprehension(self, node: ast.AST, scope: Scope) -> None:
        generators: list[ast.comprehension] = node.generators  # type: ignore[attr-defined]
        inner = Scope(COMPREHENSION, scope)
        for index, generator in enumerate(generators):
            self.parents[generator] = node
            self._each(generator, ("iter",), scope if index == 0 else inner)
            self._each(generator, ("target", "ifs"), inner)
        self._each(node, ("key", "value", "elt"), inner)

    def _other(self, scope: Scope, name: str, node: ast.AST) -> None:
        if name in scope.declared:  # `global name` first: it binds the module's name
            scope = self.module
        elif name in scope.nonlocals:
            scope = scope.visible_parent() or scope
        position = (getattr(node, "lineno", 0), getattr(node, "col_offset", 0))
        scope.others.setdefault(name, []).append(position)
        scope.count[name] = scope.count.get(name, 0) + 1
        if type(node) is not ast.ClassDef:
            scope.nonclass.add(name)

    def _find_aliases(self, tree: ast.Module) -> None:
        """Module-level ``FSDP = FullyShardedDataParallel``: an alias, as ``import ... as``.

        Where the module binds the name only there (no other assignment, import, ``del``
        or ``global`` rebinding) and the value is a dotted name whose first part only
        imports bind (or another such alias), a use of the name after it refers to what
        the value refers to; so does a Lightning strategy's subclass keeping its constructor.
        """
        module = self.module
        for statement in tree.body:
            found = alias_assignment(statement) or subclass_alias(statement)
            if found is None:
                continue
            subclass = type(statement) is ast.ClassDef
            name, value = found
            root = dotted(value).partition(".")[0]  # type: ignore[union-attr]
            if module.count.get(name) != 1 or name in self.deleted or name in module.imports:
                continue
            if root not in self.aliases and (root in module.others or root not in module.imports):
                continue
            targets = self.qualified(value)
            if targets and (not subclass or all(map(lightning_strategy, targets))):
                self.aliases[name] = targets

    # Questions ----------------------------------------------------------------------

    def lookup(self, scope: Scope, name: str) -> Scope | None:
        """The scope whose binding of ``name`` a use in ``scope`` sees (None: unbound)."""
        current: Scope | None = scope
        while current is not None:
            if name in current.declared:  # `global name`: the module's binding
                current = self.module
            elif name in current.nonlocals:
                found = self.lookup(current.visible_parent() or self.module, name)
                if found is not None and name in found.imports:
                    raise Undecided(f"`{name}` is imported and declared nonlocal")
                return found
            if current.binds(name):
                return current
            current = current.visible_parent()
        return None

    def qualified(self, node: ast.AST) -> set[str]:
        """The qualified names ``node`` may refer to (empty for other expressions)."""
        found = self._cache.get(node)
        if found is None:
            found = self._cache[node] = self._qualified(node)
        return found

    def _qualified(self, node: ast.AST) -> set[str]:
        scope = self.scope_of.get(node)
        full = dotted(node)
        if scope is None or full is None:
            return set()
        if type(node) is ast.Name and type(node.ctx) is not ast.Load:  # type: ignore[attr-defined]
            binder = self.lookup(scope, full)  # libcst: the binding's own name
            prefix = binder.prefix if binder is not None else scope.prefix
            return {f"{prefix}.{full}" if prefix else full}
        prefix = full
        while True:
            binder = self.lookup(scope, prefix)
            if binder is not None or "." not in prefix:
                break
            prefix = prefix.rpartition(".")[0]
        if binder is None:
            return _builtin(prefix)
        if type(node) is ast.Name and scope is binder and binder.kind != COMPREHENSION:
            return self._ordered(node, binder, full)
        return self._bound(binder, prefix, full)

    def _bound(
        self, binder: Scope, prefix: str, full: str, before: tuple[int, int] | None = None
    ) -> set[str]:
        """What ``full`` refers to through ``binder``'s bindings of ``prefix``.

        Only the bindings ``before`` a position count, where one is given.
        """
        others = binder.others.get(prefix, ())
        statements = binder.imports.get(prefix, ())
        if before is not None:
            others = [p for p in others if p < before]
            statements = [s for s in statements if (s.lineno, s.col_offset) < before]
        if others and binder is self.module and prefix in self.aliases:
            rest = full[len(prefix) :]
            return {target + rest for target in self.aliases[prefix]}
        results = {f"{binder.prefix}.{full}" if binder.prefix else full} if others else set()
        for statement in statements:
            # A name is used many times through one import: each answer asked once.
            key = (id(statement), full)
            found = self._imported.get(key)
            if found is None:
                found = self._imported[key] = import_names(statement, full)
            results |= found
        return results

    def _ordered(self, node: ast.Name, binder: Scope, name: str) -> set[str]:
        """A use in the scope that binds it, as libcst orders them.

        libcst reads the bindings before it there, else (none before) the enclosing
        scopes'. A comprehension binds before its element, so it is not ordered.
        """
        at = (node.lineno, node.col_offset)
        before = [p for p in binder.others.get(name, ()) if p < at]
        before += [s for s in binder.imports.get(name, ()) if (s.lineno, s.col_offset) < at]
        if before:
            return self._bound(binder, name, name, at)
        parent = binder.parent
        if parent is None:
            return _builtin(name)
        if parent.kind == CLASS:
            raise Undecided(f"`{name}` is read before it is bound in a method")
        outer = self.lookup(parent, name)
        return _builtin(name) if outer is None else self._bound(outer, name, name)

    def references(self, scope: Scope, name: str) -> list[ast.Name]:
        """The uses of ``name`` that read a binding ``scope`` makes (libcst's references).

        A use in ``scope`` before its first binding there reads the enclosing scopes'.
        """
        if name in scope.imports and name in scope.others:
            raise Undecided(f"`{name}` is imported and assigned in one scope")
        first = scope.others.get(name, [(0, 0)])[0]
        found = []
        for use in self.loads.get(name, ()):
            own = self.scope_of[use]
            if self.lookup(own, name) is not scope:
                continue
            if own is scope and (use.lineno, use.col_offset) < first:
                continue
            found.append(use)
        return found

    def scope_of_definition(self, node: ast.AST) -> Scope | None:
        """The scope a ``def`` binds its name in."""
        return self.scope_of.get(node)
