"""The import changes a fixing pass queued, applied after it with libcst's codemod tools.

Fixes queue what they need (:class:`Edits`) while the engine visits the module; only a
run that queued something loads ``libcst.codemod`` (about 0.25 s, most of it its
matchers). The order is that of a libcst ``CodemodCommand``: renames, then added
imports, then the removal of imports left unused.
"""

from __future__ import annotations

import ast
import dataclasses
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from libcst.metadata import MetadataWrapper

from codemods.import_removal import queue_forgotten, without_unused
from codemods.lazy_libcst import cst
from codemods.syntax import dotted


@dataclass
class Edits:
    """What a fixing pass leaves to libcst's codemod tools.

    Attributes:
        renames: Old qualified name to new, for libcst's ``RenameCommand`` (where the
            engine could not rename every use itself).
        imports_to_add: ``(module, name, asname)`` imports the new code needs.
        imports_to_forget: Nodes of the visited module whose import a fix may have left
            unused (removed only where nothing else uses it).
        local_renames: Imported local names the pass renamed (old to new), which the
            rewritten module must no longer use (see :mod:`codemods.verify`).
    """

    renames: dict[str, str] = field(default_factory=dict)
    imports_to_add: list[tuple[str, str | None, str | None]] = field(default_factory=list)
    imports_to_forget: list[cst.BaseExpression] = field(default_factory=list)
    local_renames: dict[str, str] = field(default_factory=dict)

    def __bool__(self) -> bool:
        """Whether anything is left for the codemod tools (``local_renames`` is not)."""
        return bool(self.renames or self.imports_to_add or self.imports_to_forget)


def finish(edits: Edits, wrapper: MetadataWrapper, tree: cst.Module, filename: str) -> cst.Module:
    """Apply ``edits``, queued while visiting ``wrapper``'s module, to ``tree``."""
    from libcst.codemod import CodemodContext
    from libcst.codemod.commands.rename import RenameCommand
    from libcst.codemod.visitors import AddImportsVisitor, RemoveImportsVisitor

    before = tree
    for old, new in sorted(edits.renames.items()):
        # A context of its own: it applies its own import changes, and ours are applied
        # once, below, instead of again after each rename.
        tree = RenameCommand(CodemodContext(filename=filename), old, new).transform_module(tree)
    # The removals are looked up in the module the engine visited, as during its pass.
    context = CodemodContext(filename=filename, wrapper=wrapper)
    for module, name, asname in edits.imports_to_add:
        AddImportsVisitor.add_needed_import(context, module, name, asname=asname)
    for node in edits.imports_to_forget:
        queue_forgotten(context, wrapper, node)
    if AddImportsVisitor.CONTEXT_KEY in context.scratch:
        tree = _add_imports(context, tree)
    if RemoveImportsVisitor.CONTEXT_KEY in context.scratch:
        tree = _remove_unused_imports(context, tree)
    if edits.imports_to_add:
        tree = _drop_unused_additions(context, wrapper.module.code, tree, edits.imports_to_add)
    return keep_one_name_a_line(before, tree)


def _drop_unused_additions(
    context: Any, original: str, tree: cst.Module, added: list[tuple[str, str | None, str | None]]
) -> cst.Module:
    """The imports this pass added that the new code does not use, taken out again.

    One fix can drop code another fix of the same pass rewrote: FSDP401 replaces a whole
    wrapper call, so ``ModuleWrapPolicy``, which FSDP103 brought in for the policy inside
    it, is used nowhere (and the check of the rewrite would then withhold every fix of
    the file). Only a name the original module never spelled and the new one spells in
    its import lines alone is taken out: certainly added, certainly unused.
    """
    from libcst.codemod.visitors import RemoveImportsVisitor

    lines = [tree.code_for_node(s) for s in tree.body if _is_import_line(s)]
    unused = []
    for module, name, asname in added:
        word = _words([_bound_name(module, name, asname)])
        if word.search(original):
            continue  # the module had it, or it means something else there
        if _only_in(word, tree.code, lines):
            unused.append((module, name, asname))
    if not unused:
        return tree
    alone = dataclasses.replace(context, scratch={RemoveImportsVisitor.CONTEXT_KEY: unused})
    return _remove_unused_imports(alone, tree)


#: A ``from`` import that lists one name a line, each with its comma, ``)`` alone on the
#: last line (black's and isort's layout of a long import), without comments.
_ONE_NAME_A_LINE = re.compile(
    r"(?P<head>from [^\n#(]+ import )\(\r?\n(?P<indent>[ \t]+)[\w. ]+,\r?\n"
    r"(?:(?P=indent)[\w. ]+,\r?\n)*\)"
)


def keep_one_name_a_line(before: cst.Module, after: cst.Module) -> cst.Module:
    r"""Top-level ``from`` imports the pass changed keep the one-name-a-line layout.

    libcst's import visitors rebuild a changed import's names with plain commas: an
    import laid out one name a line (black's layout of a long one) came out as
    ``(\n    ModuleWrapPolicy, size_based_auto_wrap_policy)``. Where the module's import
    from the same module (the same ``from ... import``, once) had that layout, the
    changed one is laid out the same way again, with its indentation.

    Example:
        >>> old = cst.parse_module("from m import (\n    a,\n    b,\n)\n")
        >>> new = cst.parse_module("from m import (\n    a)\n")
        >>> print(keep_one_name_a_line(old, new).code, end="")
        from m import (
            a,
        )
    """
    layouts: dict[str, str | None] = {}
    unchanged = set()
    for statement in before.body:
        if _is_import_line(statement):
            code = _own_code(before, statement)
            unchanged.add(code)
            match = _ONE_NAME_A_LINE.match(code)
            if match:
                head = match["head"]
                layouts[head] = None if head in layouts else match["indent"]  # once only
    if not any(layouts.values()):
        return after
    body = list(after.body)
    for index, statement in enumerate(body):
        if not _is_import_line(statement) or len(statement.body) != 1:
            continue
        node = statement.body[0]
        code = _own_code(after, statement)
        if code in unchanged or not isinstance(node, cst.ImportFrom):
            continue
        head = code.split("(", 1)[0] if node.lpar else None
        if isinstance(node.names, cst.ImportStar) or not layouts.get(head or ""):
            continue
        body[index] = _one_name_a_line(after, statement, node, head, layouts[head])
    return after.with_changes(body=body)


def _own_code(module: cst.Module, line: cst.SimpleStatementLine) -> str:
    """A statement line's code without the blank lines and comments above it."""
    return module.code_for_node(line.with_changes(leading_lines=()))


def _one_name_a_line(
    module: cst.Module, line: cst.SimpleStatementLine, node: cst.ImportFrom, head: str, indent: str
) -> cst.SimpleStatementLine:
    newline = module.default_newline
    names = [
        module.code_for_node(alias.with_changes(comma=cst.MaybeSentinel.DEFAULT))
        for alias in node.names
    ]
    text = f"{head}({newline}" + "".join(f"{indent}{name},{newline}" for name in names) + ")"
    rebuilt = cst.parse_statement(text + newline, module.config_for_parsing)
    return rebuilt.with_changes(
        leading_lines=line.leading_lines, trailing_whitespace=line.trailing_whitespace
    )


def _is_import_line(statement: cst.CSTNode) -> bool:
    """Whether ``statement`` is a line of imports and nothing else."""
    return isinstance(statement, cst.SimpleStatementLine) and all(
        isinstance(small, (cst.Import, cst.ImportFrom)) for small in statement.body
    )


def _add_imports(context: Any, tree: cst.Module) -> cst.Module:
    """Libcst's ``AddImportsVisitor`` on ``tree``, run on the top of the module only.

    The visitor looks at and changes nothing but the imports before the module's first
    other statement (after a docstring), that statement (a blank line before it) and
    the module's top, yet it copies and visits the whole module: about 1 s for a
    600-line training script. Here it gets the module up to that first statement, and
    the rest is put back behind what it returns.
    """
    from libcst.codemod.visitors import AddImportsVisitor

    body = tree.body
    first_other = 1  # the first statement is the visitor's whatever it is (a docstring)
    while first_other < len(body) and _is_import_line(body[first_other]):
        first_other += 1
    tree, context = _into_later_imports(context, tree, first_other)
    if not context.scratch[AddImportsVisitor.CONTEXT_KEY]:
        return tree
    body = tree.body
    top = tree.with_changes(body=body[: first_other + 1])
    done = AddImportsVisitor(context).transform_module(top)
    return tree.with_changes(body=[*done.body, *body[first_other + 1 :]])


def _into_later_imports(context: Any, tree: cst.Module, first_other: int) -> tuple[cst.Module, Any]:
    """Queued ``from m import name`` go into a later top-level ``from m import`` line.

    Real scripts set things up between their imports (``sys.path.append``, torch flags),
    so the top block the visitor sees may not hold the module's ``from m import`` line
    while a later one does; a new line at the top would then stand apart from the
    imports of the same module (often the line the old name came from). Each such name
    goes through the visitor with that line alone. Returns the tree and a context
    holding what is still queued.
    """
    from libcst.codemod.visitors import AddImportsVisitor

    key = AddImportsVisitor.CONTEXT_KEY
    body = list(tree.body)
    top = {_from_module(statement) for statement in body[: first_other + 1]}
    left = []
    for item in context.scratch[key]:
        index = None
        if item.obj_name and not item.relative and item.module_name not in top:
            later = range(first_other + 1, len(body))
            index = next((i for i in later if _from_module(body[i]) == item.module_name), None)
        if index is None:
            left.append(item)
            continue
        alone = dataclasses.replace(context, scratch={key: [item]})
        done = AddImportsVisitor(alone).transform_module(tree.with_changes(body=[body[index]]))
        if len(done.body) != 1:
            left.append(item)  # the visitor wanted a line of its own after all
            continue
        body[index] = done.body[0]
    context = dataclasses.replace(context, scratch={**context.scratch, key: left})
    return tree.with_changes(body=body), context


def _from_module(statement: cst.CSTNode) -> str | None:
    """``m`` of a line holding one absolute ``from m import a, b`` (no star), else None."""
    if not (isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1):
        return None
    node = statement.body[0]
    if not isinstance(node, cst.ImportFrom) or node.relative or node.module is None:
        return None
    if isinstance(node.names, cst.ImportStar):
        return None
    return dotted(node.module)


def _remove_unused_imports(context: Any, tree: cst.Module) -> cst.Module:
    """Libcst's ``RemoveImportsVisitor`` on ``tree``, on the import lines alone where it may.

    The visitor decides which queued imports are unused from the whole module's scopes
    (about 2 s for a 600-line script). Two cases are certain without them: a name that
    only imports bind and that the code reads (:func:`_read_names`) stays, as the
    visitor would keep it; a name that appears nowhere in the module's text outside
    its top-level import lines (no code, string, comment or ``__all__`` can use it) is
    unused, and removing it changes only its own line. Where every queued import is
    one or the other, each import line goes through the visitor alone with the unused
    ones; otherwise the visitor gets the whole module.
    """
    from libcst.codemod.visitors import RemoveImportsVisitor

    queued = context.scratch[RemoveImportsVisitor.CONTEXT_KEY]
    code = tree.code
    read = _read_names(code)
    unused = [imported for imported in queued if _bound_name(*imported) not in read]
    lines = [i for i, statement in enumerate(tree.body) if _is_import_line(statement)]
    if not unused:
        return tree
    words = _words([_bound_name(*imported) for imported in unused])
    texts = {i: tree.code_for_node(tree.body[i]) for i in lines}
    if not _only_in(words, code, texts.values()):
        return RemoveImportsVisitor(context).transform_module(tree)
    alone_context = dataclasses.replace(context, scratch={})
    body = list(tree.body)
    # Only the lines that name one; each as the visitor leaves it alone with its line,
    # without the visitor where codemods.import_removal can (its set-up: 20 to 40 ms).
    for index in reversed([i for i in lines if words.search(texts[i])]):
        left = without_unused(body[index], unused, context.full_package_name)
        if left is None:
            alone = tree.with_changes(body=[body[index]])
            visitor = RemoveImportsVisitor(alone_context, unused_imports=unused)
            left = visitor.transform_module(alone).body
        body[index : index + 1] = left
    return tree.with_changes(body=body)


#: The patterns of ``match`` (Python 3.10+) that bind a name.
_MATCH_CAPTURES = tuple(
    getattr(ast, name) for name in ("MatchAs", "MatchStar", "MatchMapping") if hasattr(ast, name)
)


def _read_names(code: str) -> set[str]:
    r"""Names the module certainly reads from its imports: read, and bound by imports only.

    A name bound nowhere but by imports (no assignment, parameter, definition, ``for``,
    ``with``, ``except``, ``del``, ``global`` or star import anywhere) refers to an
    import wherever it is read, so an import of it is in use. Empty where ``ast``
    cannot parse the module.

    Example:
        >>> sorted(_read_names("import a, b, c\nfrom m import d\na.x\nd()\nc = 1\nc\n"))
        ['a', 'd']
    """
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return set()
    loads: set[str] = set()
    others: set[str] = set()
    for node in ast.walk(tree):
        kind = type(node)
        if kind is ast.Name:
            (loads if type(node.ctx) is ast.Load else others).add(node.id)  # type: ignore[attr-defined]
        elif kind in (ast.Import, ast.ImportFrom):
            if any(alias.name == "*" for alias in node.names):  # type: ignore[attr-defined]
                return set()
        elif kind in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef):
            others.add(node.name)  # type: ignore[attr-defined]
        elif kind is ast.arg:
            others.add(node.arg)  # type: ignore[attr-defined]
        elif kind in (ast.Global, ast.Nonlocal):
            others.update(node.names)  # type: ignore[attr-defined]
        elif kind is ast.ExceptHandler and node.name:  # type: ignore[attr-defined]
            others.add(node.name)  # type: ignore[attr-defined]
        elif kind in _MATCH_CAPTURES:
            others.add(getattr(node, "name", None) or getattr(node, "rest", None) or "")
    return loads - others


def _bound_name(module: str, name: str | None, asname: str | None) -> str:
    """The local name an import binds (``import a.b`` binds ``a``).

    Example:
        >>> _bound_name("torch.distributed.fsdp", "wrap", None), _bound_name("a.b", None, None)
        ('wrap', 'a')
    """
    return asname or name or module.partition(".")[0]


def _only_in(pattern: re.Pattern[str], code: str, parts: Iterable[str]) -> bool:
    r"""Whether every match of ``pattern`` in ``code`` lies in ``parts`` (lines of it).

    Example:
        >>> _only_in(_words(["os"]), "import os\nx = 1\n", ["import os\n"])
        True
    """
    return len(pattern.findall(code)) == sum(len(pattern.findall(part)) for part in parts)


def _words(names: list[str]) -> re.Pattern[str]:
    """A pattern for any of ``names`` as a whole word."""
    return re.compile("|".join(rf"\b{re.escape(name)}\b" for name in sorted(set(names))))
