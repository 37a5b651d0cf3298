"""The import changes a fixing pass queued, applied after it as libcst's codemod tools would.

Fixes queue what they need (:class:`Edits`) while the engine visits the module. The
order is that of a libcst ``CodemodCommand``: renames, then added imports, then the
removal of imports left unused. Imports are added by :mod:`codemods.engine.imports.adding`
and removed line by line by :mod:`codemods.engine.imports.removal`, as libcst's visitors
would; only a rename, or a removal the module's text leaves open, loads
``libcst.codemod`` (most of its load is its matchers) for libcst's own tools.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from libcst.metadata import MetadataWrapper

from codemods.engine.imports.adding import add_imports, is_import_line
from codemods.engine.imports.removal import Queued, queue_forgotten, without_unused
from codemods.syntax.alias_positions import parse
from codemods.syntax.lazy_libcst import cst


@dataclass
class Edits:
    """What a fixing pass leaves to the import pass (:func:`finish`).

    Attributes:
        renames: Old qualified name to new, for libcst's ``RenameCommand`` (where the
            engine could not rename every use itself).
        imports_to_add: ``(module, name, asname)`` imports the new code needs.
        imports_to_forget: Nodes of the visited module whose import a fix may have left
            unused (removed only where nothing else uses it).
        local_renames: Imported local names the pass renamed (old to new), which the
            rewritten module must no longer use (see :mod:`codemods.verify.check`).
    """

    renames: dict[str, str] = field(default_factory=dict)
    imports_to_add: list[tuple[str, str | None, str | None]] = field(default_factory=list)
    imports_to_forget: list[cst.BaseExpression] = field(default_factory=list)
    local_renames: dict[str, str] = field(default_factory=dict)

    def __bool__(self) -> bool:
        """Whether anything is left for the import pass (``local_renames`` is not)."""
        return bool(self.renames or self.imports_to_add or self.imports_to_forget)


def finish(
    edits: Edits,
    wrapper: MetadataWrapper,
    tree: cst.Module,
    filename: str,
    original: str | None = None,
) -> cst.Module:
    """Apply ``edits``, queued while visiting ``wrapper``'s module, to ``tree``.

    ``original``: the visited module's code, where the caller has it (else generated).
    """
    before = tree
    code = _CodeOnce()  # the removal and the check of additions ask for the same code
    if edits.renames:
        from libcst.codemod import CodemodContext
        from libcst.codemod.commands.rename import RenameCommand

        for old, new in sorted(edits.renames.items()):
            # A context of its own: it applies its own import changes, and ours are
            # applied once, below, instead of again after each rename.
            context = CodemodContext(filename=filename)
            tree = RenameCommand(context, old, new).transform_module(tree)
    # The removals are looked up in the module the engine visited, as during its pass.
    queued = [q for node in edits.imports_to_forget for q in queue_forgotten(wrapper, node)]
    if edits.imports_to_add:
        tree = add_imports(tree, edits.imports_to_add)
    if queued:
        tree = _remove_unused_imports(queued, tree, filename, code)
    if edits.imports_to_add:
        original = code(wrapper.module) if original is None else original
        tree = _drop_unused_additions(original, tree, edits.imports_to_add, filename, code)
    return keep_one_name_a_line(before, tree)


def _generated(module: cst.Module) -> str:
    return module.code


class _CodeOnce:
    """A module's code, generated once however often the import pass asks for it."""

    def __init__(self) -> None:
        self._last: tuple[cst.Module | None, str] = (None, "")

    def __call__(self, module: cst.Module) -> str:
        if self._last[0] is not module:
            self._last = (module, module.code)
        return self._last[1]


def _drop_unused_additions(
    original: str,
    tree: cst.Module,
    added: list[Queued],
    filename: str = "<string>",
    code_of: Callable[[cst.Module], str] = _generated,
) -> cst.Module:
    """The imports this pass added that the new code does not use, taken out again.

    One fix can drop code another fix of the same pass rewrote: FSDP401 replaces a whole
    wrapper call, so ``ModuleWrapPolicy``, which FSDP103 brought in for the policy inside
    it, is used nowhere (and the check of the rewrite would then withhold every fix of
    the file). Only a name the original module never spelled and the new one spells in
    its import lines alone is taken out: certainly added, certainly unused.
    """
    lines = [tree.code_for_node(s) for s in tree.body if is_import_line(s)]
    unused = []
    for module, name, asname in added:
        word = _words([_bound_name(module, name, asname)])
        if word.search(original):
            continue  # the module had it, or it means something else there
        if _only_in(word, code_of(tree), lines):
            unused.append((module, name, asname))
    if not unused:
        return tree
    return _remove_unused_imports(unused, tree, filename, code_of)


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
        if is_import_line(statement):
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
        if not is_import_line(statement) or len(statement.body) != 1:
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


def _remove_unused_imports(
    queued: list[Queued],
    tree: cst.Module,
    filename: str = "<string>",
    code_of: Callable[[cst.Module], str] = _generated,
) -> cst.Module:
    """Libcst's ``RemoveImportsVisitor`` on ``tree``, on the import lines alone where it may.

    The visitor decides which queued imports are unused from the whole module's scopes,
    which costs as much as the fix itself on a long script. Two cases are certain without
    them: a name that only imports bind and that the code reads (:func:`_read_names`) stays,
    as the visitor would keep it; a name that appears nowhere in the module's text outside
    its top-level import lines (no code, string, comment or ``__all__`` can use it) is
    unused, and removing it changes only its own line. Where every queued import is one or
    the other, each import line goes without them as the visitor leaves it alone with its
    line (:func:`codemods.engine.imports.removal.without_unused`, or the visitor itself on
    the line); otherwise the visitor gets the whole module.
    """
    code = code_of(tree)
    read = _read_names(code)
    unused = [imported for imported in queued if _bound_name(*imported) not in read]
    lines = [i for i, statement in enumerate(tree.body) if is_import_line(statement)]
    if not unused:
        return tree
    words = _words([_bound_name(*imported) for imported in unused])
    texts = {i: tree.code_for_node(tree.body[i]) for i in lines}
    if not _only_in(words, code, texts.values()):
        return _remover(filename, queued=queued).transform_module(tree)
    body = list(tree.body)
    # Only the lines that name one.
    for index in reversed([i for i in lines if words.search(texts[i])]):
        left = without_unused(body[index], unused)
        if left is None:
            alone = tree.with_changes(body=[body[index]])
            left = _remover(filename, unused=unused).transform_module(alone).body
        body[index : index + 1] = left
    return tree.with_changes(body=body)


def _remover(filename: str, queued: Iterable[Queued] = (), unused: Iterable[Queued] = ()) -> Any:
    """Libcst's ``RemoveImportsVisitor``, given ``queued`` as queued and ``unused`` as known."""
    from libcst.codemod import CodemodContext
    from libcst.codemod.visitors import RemoveImportsVisitor

    context = CodemodContext(filename=filename)
    if queued:
        context.scratch[RemoveImportsVisitor.CONTEXT_KEY] = list(queued)
    return RemoveImportsVisitor(context, unused_imports=list(unused))


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
        tree = parse(code)
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
