"""FSDP2 beside FSDP1, chosen by the torch release, where a range starts before FSDP2.

A project whose releases reach below torch 2.4 (no ``fully_shard``) cannot drop its
FSDP1 calls; fairseq2, verl and accelerate kept them and added FSDP2 beside them. The
dual stack FSDP401 writes there is a ``try`` importing ``fully_shard`` from FSDP2's
public home (``torch.distributed.fsdp``, torch 2.6 and later), else from
``torch.distributed._composable.fsdp`` (2.4 and 2.5), else binding it to None (before
2.4: the FSDP1 calls run), then ``HAS_FSDP2 = fully_shard is not None``;
and each wrapper call's statement becomes ``if HAS_FSDP2:`` the plain FSDP2 code,
``else:`` the FSDP1 statement as written. Only the homes the range reaches are tried.
The check names FSDP (``HAS_FSDP2``), so a later run takes the ``if`` for a version
gate and leaves both branches alone.

The uses of a converted model the plain form rewrites (``no_sync``, ``clip_grad_norm_``,
``isinstance(m, FSDP)``, state dicts) dispatch on the same flag
(:mod:`codemods.rules.fsdp401.dual_code`); what has no plain form keeps the file FSDP1
with a reason (:func:`dual_blockers`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from packaging.version import Version

from codemods.registry.appearances import APPEARED
from codemods.registry.names import COMPOSABLE_FSDP, TORCH_FSDP
from codemods.rules.api import Engine
from codemods.rules.fsdp401.lookups import fresh, in_module, line_of
from codemods.rules.fsdp401.outcome import Conversion
from codemods.rules.fsdp401.values import shown
from codemods.rules.layout import LINE_LENGTH
from codemods.syntax.lazy_libcst import cst

#: The oldest torch with FSDP2, and the one that made its home public.
FSDP2_FIRST, PUBLIC_HOME = "2.4", "2.6"
#: Why a converted statement has two branches, said in its finding.
WHY_DUAL = (
    "FSDP2 beside FSDP1: the releases {span} start before FSDP2 (torch 2.4), so `{flag}` "
    "(whether FSDP2 imports) runs this `fully_shard` code, and the FSDP1 call as written "
    "on older torch"
)


def needs_dual(engine: Engine) -> bool:
    """Whether the file's range holds releases without FSDP2 (and, to be asked, some with)."""
    return not engine.target_at_least(FSDP2_FIRST)


def dual_blockers(
    engine: Engine, conversions: list[Conversion], others: frozenset[int]
) -> list[str]:
    """Why the file's conversions cannot be written as a dual stack (empty: they can).

    Args:
        engine: The engine, at the file's module.
        conversions: The file's wrapper calls that have plain FSDP2 code.
        others: What the plain form rewrites and the dual stack does not dispatch
            (``id`` of each node): FSDP1 class calls, a listing whose loop reads
            ``unit.module`` (one loop body for both), a companion file's checks.
    """
    span = engine.settings.releases.torch.text()
    keep = f"FSDP1's spelling must stay for torch {span} before 2.4"
    why = []
    for node in in_module(engine, lambda n: id(n) in others) if others else ():
        where = f"`{shown(engine, node)}` at line {line_of(engine, node)}"
        why.append(f"{where}: {keep}, and the dual stack does not dispatch it")
    # (A precision bound to a name is converted at run time there, not rebound.)
    anchor = import_anchor(engine.module.body)
    first = min((line_of(engine, c.call) for c in conversions), default=None)
    if anchor is None or (first is not None and line_of(engine, anchor) > first):
        why.append("no top-level import comes before the wrapper calls to put FSDP2's beside")
    fsdp2 = [name.rpartition(".")[2] for name in APPEARED if fsdp2_name(name.rpartition(".")[2])]
    names = {*fsdp2, *(n for c in conversions for n in c.keywords.imports)}
    # One the module binds at its top level is imported apart (`import_block`); one bound
    # in a function would be what the new code there reads.
    taken = sorted(
        n
        for n in names
        if fresh(engine, n) != n
        and not _fsdp2_import(engine, n)
        and engine.spelling(COMPOSABLE_FSDP, n) == n
    )
    if taken:
        why.append(f"`{taken[0]}`, which the FSDP2 branch imports, is a name here already")
    return why


def _fsdp2_import(engine: Engine, name: str) -> bool:
    """Whether the file's ``name`` comes from an import from one of FSDP2's homes."""
    code = engine.module.code_for_node
    return any(
        isinstance(node.names, Sequence) and any(code(alias.name) == name for alias in node.names)
        for node in in_module(engine, lambda n: isinstance(n, cst.ImportFrom))
        if node.module is not None and code(node.module) in (TORCH_FSDP, COMPOSABLE_FSDP)
    )


def import_anchor(body: Sequence[cst.BaseStatement]) -> cst.SimpleStatementLine | None:
    """The last top-level line of imports before the first other top-level statement.

    FSDP2's imports go after it (a module docstring and ``__future__`` imports before).
    """
    found = None
    for statement in body:
        if isinstance(statement, cst.SimpleStatementLine):
            kinds = {type(small) for small in statement.body}
            if kinds <= {cst.Import, cst.ImportFrom}:
                found = statement
                continue
            if found is None and _docstring(statement):
                continue
        if found is not None:
            break
    return found


def _docstring(statement: cst.SimpleStatementLine) -> bool:
    small = statement.body[0] if len(statement.body) == 1 else None
    return isinstance(small, cst.Expr) and isinstance(small.value, cst.SimpleString)


def fsdp2_name(name: str) -> bool:
    """Whether ``name`` of ``torch.distributed.fsdp`` is FSDP2's (not there before 2.4).

    Example:
        >>> fsdp2_name("MixedPrecisionPolicy"), fsdp2_name("ShardingStrategy")
        (True, False)
    """
    return APPEARED.get(f"{TORCH_FSDP}.{name}", ("", ""))[1] == PUBLIC_HOME


class CollectingImports:
    """An engine whose queued imports are collected for the dual stack's ``try``.

    The FSDP2 branch's code is written by the plain form's writers, which queue their
    imports; where FSDP1 stays beside it they must come from the ``try`` (a release
    without FSDP2 has none of them). ``import torch`` itself is safe everywhere.
    """

    def __init__(self, engine: Engine, imports: list[tuple[str, str]]) -> None:
        self._engine, self._imports = engine, imports

    def need_import(self, module: str, name: str | None, asname: str | None = None) -> None:
        if module in (TORCH_FSDP, COMPOSABLE_FSDP) and name is not None:
            if not fsdp2_name(name):  # FSDP1's own (`ShardingStrategy`): every release has it
                self._engine.need_import(TORCH_FSDP, name, asname)
                return
            module = COMPOSABLE_FSDP
        if name is None or asname is not None:
            self._engine.need_import(module, name, asname)
        elif (module, name) not in self._imports:
            self._imports.append((module, name))

    def __getattr__(self, attribute: str) -> Any:
        return getattr(self._engine, attribute)


def with_import_block(
    engine: Engine, module: cst.Module, imports: list[tuple[str, str]], flag: str
) -> cst.Module:
    """``module`` with the ``try`` importing FSDP2's names after its imports, and ``flag``."""
    body = list(module.body)
    anchor = import_anchor(body)
    at = body.index(anchor) + 1 if anchor is not None else 0
    return module.with_changes(body=[*body[:at], *import_block(engine, imports, flag), *body[at:]])


def import_block(
    engine: Engine, imports: list[tuple[str, str]], flag: str
) -> list[cst.BaseStatement]:
    """The ``try`` importing ``imports`` from FSDP2's homes in the range, and ``flag``'s binding.

    Names of FSDP2's home are tried from each home the range reaches (the public one
    first); others are imported beside them in each; on a torch without FSDP2 every name
    is None and ``flag`` False.
    """
    top = engine.settings.releases.torch
    one = engine.module.default_indent
    fsdp2 = sorted({"fully_shard", *(n for m, n in imports if m in (TORCH_FSDP, COMPOSABLE_FSDP))})
    # A name the module binds otherwise comes under a name of its own (the new code
    # spells it so); one it binds from FSDP2's homes is that object, imported as it is.
    spelled = {name: engine.spelling(COMPOSABLE_FSDP, name) or name for name in fsdp2}
    fsdp2 = [name if spelled[name] == name else f"{name} as {spelled[name]}" for name in fsdp2]
    others: dict[str, list[str]] = {}
    for module, name in imports:
        if module in (TORCH_FSDP, COMPOSABLE_FSDP) or name in others.get(module, []):
            continue
        if fresh(engine, name) == name:  # one the file binds already stays as it is
            others.setdefault(module, []).append(name)
    homes = []
    if top.reaches(Version(PUBLIC_HOME)):
        homes.append((TORCH_FSDP, f"FSDP2's public home (torch {PUBLIC_HOME} and later)"))
    if not engine.target_at_least(PUBLIC_HOME):
        homes.append((COMPOSABLE_FSDP, "torch 2.4 and 2.5"))
    text, depth = "", ""
    for index, (home, comment) in enumerate(homes):
        text += f"{depth}try:  # {comment}\n"
        for module, names in [(home, fsdp2), *others.items()]:
            text += _import_line(module, sorted(names), depth + one, one)
        if index < len(homes) - 1:
            text += f"{depth}except ImportError:\n"
            depth += one
    bound = [name.split(" as ")[-1] for name in fsdp2]
    missing = " = ".join(sorted({*bound, *(n for names in others.values() for n in names)}))
    text += f"{depth}except ImportError:  # torch before 2.4: no FSDP2, the FSDP1 calls run\n"
    text += f"{depth}{one}{missing} = None\n"
    config = engine.module.config_for_parsing
    block = cst.parse_statement(text, config).with_changes(leading_lines=[cst.EmptyLine()])
    flag_line = cst.parse_statement(f"{flag} = {spelled['fully_shard']} is not None\n", config)
    return [block, flag_line]


def _import_line(module: str, names: list[str], indent: str, one: str) -> str:
    """``from module import names`` at ``indent``, one name a line where it would be long.

    Example:
        >>> print(_import_line("m", ["a", "b"], "", "    "), end="")
        from m import a, b
        >>> print(_import_line("m", ["x" * 50, "y" * 50], "", "    "), end="")
        from m import (
            xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx,
            yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy,
        )
    """
    flat = f"{indent}from {module} import {', '.join(names)}\n"
    if len(flat) <= LINE_LENGTH + 1:
        return flat
    listed = "".join(f"{indent}{one}{name},\n" for name in names)
    return f"{indent}from {module} import (\n{listed}{indent})\n"


def dual_statement(
    flag: str,
    fsdp2: list[cst.BaseStatement],
    fsdp1: cst.SimpleStatementLine,
) -> cst.If:
    """``if flag:`` the FSDP2 statements ``else:`` the FSDP1 line, with its comments above."""
    return cst.If(
        test=cst.Name(flag),
        body=cst.IndentedBlock(body=fsdp2),
        orelse=cst.Else(body=cst.IndentedBlock(body=[fsdp1.with_changes(leading_lines=())])),
        leading_lines=fsdp1.leading_lines,
    )
