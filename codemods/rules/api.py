"""What a rule's behaviour is made of: the hooks the engine calls, and the rename fix.

A :class:`Behaviour` is one rule's detection and fix: the engine indexes it under the
names it looks at and calls its hooks (``call``, ``partial``, ``function``,
``class_def``) as it meets them; a behaviour reports through the engine and returns the
rewritten node. Each kind of change has a generic behaviour (``codemods.rules.kinds.*``) and a
rule with a fix of its own has its own module (``codemods.rules.fsdpNNN``).

Renames are the other half. Some old names cannot simply be renamed:
``DDPFullyShardedStrategy(min_num_params=N)``
or FairScale's ``FullyShardedDataParallel(module, reshard_after_forward=False)`` become
the new class only with their arguments translated. Such a rule has a
:class:`CallSiteFix`: a translator per call, and the rules about the rest of the file.
The engine applies the fix to a file only where every use of the old names there is
one the fix is certain about (pyupgrade's "intentionally timid"); otherwise each use is
reported for a human and nothing is changed.

This is the one module a rule author imports from: what the hooks may ask of the
engines that run them (:class:`Engine`, :class:`Detector` and their parts) is defined
in :mod:`codemods.rules.protocols` and re-exported here.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping, Sequence

from codemods.records import Frozen
from codemods.registry import Rule
from codemods.rules.protocols import Detector, Engine, NameTable, Resolver
from codemods.syntax.ast_nodes import arguments
from codemods.syntax.lazy_libcst import cst

TYPE_CHECKING = False  # typing is not imported at run time: see codemods/records.py
if TYPE_CHECKING:
    from typing import ClassVar

__all__ = [
    "PARTIAL",
    "PLAIN_RENAME",
    "AstSite",
    "Behaviour",
    "CallSiteFix",
    "Detector",
    "Engine",
    "Import",
    "NameTable",
    "Resolver",
    "Site",
    "Translation",
    "Translator",
    "unchanged",
]

#: The qualified name of ``functools.partial``.
PARTIAL = "functools.partial"

#: An import a translation needs: ``(module, name)`` for ``from module import name``,
#: ``(module, None)`` for ``import module``.
Import = tuple[str, "str | None"]


class Site(Frozen):
    """One call of an old name, as a translator sees it.

    Attributes:
        resolver: Answers questions about names in the file.
        old: The old qualified name the call refers to.
        original: The call as parsed (ask the resolver about these nodes).
        updated: The call with inner rewrites already done (build output from these).
        partial: The old name is the first argument of ``functools.partial(...)``
            rather than the called function; the call's other arguments are its.
    """

    __slots__ = _fields = ("resolver", "old", "original", "updated", "partial")

    resolver: Resolver
    old: str
    original: cst.Call
    updated: cst.Call
    partial: bool

    def __init__(
        self,
        resolver: Resolver,
        old: str,
        original: cst.Call,
        updated: cst.Call,
        partial: bool = False,
    ) -> None:
        self._set(resolver=resolver, old=old, original=original, updated=updated, partial=partial)

    @property
    def pairs(self) -> list[tuple[cst.Arg, cst.Arg]]:
        """The call's own arguments (a partial's after the function), original and updated."""
        start = 1 if self.partial else 0
        return list(zip(self.original.args[start:], self.updated.args[start:]))


class AstSite(Frozen):
    """One call of an old name, as a fix's ``certain`` sees it (the ``ast`` twin of :class:`Site`).

    Attributes:
        resolver: The detector (``qualified``, ``applies``, ``class_set``).
        old: The old qualified name the call refers to.
        call: The call.
        partial: The old name is ``partial(old, ...)``'s first argument.
    """

    __slots__ = _fields = ("resolver", "old", "call", "partial")

    resolver: Detector
    old: str
    call: ast.Call
    partial: bool

    def __init__(
        self,
        resolver: Detector,
        old: str,
        call: ast.Call,
        partial: bool = False,
    ) -> None:
        self._set(resolver=resolver, old=old, call=call, partial=partial)

    @property
    def arguments(self) -> list[ast.expr | ast.keyword]:
        """The call's own arguments in source order (a partial's after the function)."""
        return arguments(self.call)[1 if self.partial else 0 :]


class Translation(Frozen):
    """A call rewritten: its new arguments, and what else the new code needs.

    Attributes:
        args: The call's new arguments (for a partial: all of them, the function first).
        imports: Imports the new arguments use.
        func: A new callee, where the call's shape changes (a factory call becoming a
            ``partial``); None keeps the callee, which the rename then renames.
    """

    __slots__ = _fields = ("args", "imports", "func")

    args: list[cst.Arg]
    imports: tuple[Import, ...]
    func: cst.BaseExpression | None

    def __init__(
        self,
        args: list[cst.Arg],
        imports: tuple[Import, ...] = (),
        func: cst.BaseExpression | None = None,
    ) -> None:
        self._set(args=args, imports=imports, func=func)


Translator = Callable[[Site], "Translation | None"]


class CallSiteFix(Frozen):
    """How one rule's fix treats calls and the rest of a file.

    Attributes:
        translate: Each call's new arguments, or None where the translation is not certain.
        bare_references: A use that is not a call (``isinstance(m, Old)``, an attribute of
            the class) means the same under the new name.
        partials: ``partial(old, ...)`` is translated like a call.
        passed_as: ``(code, keyword)`` pairs: a use passed as ``keyword=`` to a call of
            rule ``code`` (``enable_wrap(wrapper_cls=FSDP)``) is certain when that call is.
        requires: Rules whose old names, where the file has any, must be fixed in the same
            run, or this fix would leave a mix that breaks (torch's ``wrap`` inside
            FairScale's ``enable_wrap``).
        blocked_by: Rules whose mere presence in the file rules this fix out.
        supersedes: Rules not reported where this fix applies (it rewrites the same
            arguments to the new callee's spelling).
        certain: The ``ast`` half of ``translate`` (:mod:`codemods.astlint.detector`): whether
            it translates a call (an ``AstSite``) rather than returning None. None: where
            ``blockers`` is given, a call is certain where it gives no reason; else the
            lint of a file with such a call goes to the libcst engine (a translator that
            keeps every call, :func:`unchanged`, needs none).
        calls_of: The old names whose calls ``translate`` changes (None: every one); a
            call of another old name only takes the rename, which its import's fix makes.
        blockers: Why ``translate`` leaves a call (a :class:`Site` or an :class:`AstSite`):
            the reasons the file's findings name, the same from both detectors.
    """

    __slots__ = _fields = (
        "translate",
        "bare_references",
        "partials",
        "passed_as",
        "requires",
        "blocked_by",
        "supersedes",
        "certain",
        "calls_of",
        "blockers",
    )

    translate: Translator
    bare_references: bool
    partials: bool
    passed_as: tuple[tuple[str, str], ...]
    requires: tuple[str, ...]
    blocked_by: tuple[str, ...]
    supersedes: tuple[str, ...]
    certain: Callable[[AstSite], bool] | None
    calls_of: tuple[str, ...] | None
    blockers: Callable[[Site | AstSite], list[str]] | None

    def __init__(
        self,
        translate: Translator,
        bare_references: bool = False,
        partials: bool = False,
        passed_as: tuple[tuple[str, str], ...] = (),
        requires: tuple[str, ...] = (),
        blocked_by: tuple[str, ...] = (),
        supersedes: tuple[str, ...] = (),
        certain: Callable[[AstSite], bool] | None = None,
        calls_of: tuple[str, ...] | None = None,
        blockers: Callable[[Site | AstSite], list[str]] | None = None,
    ) -> None:
        self._set(
            translate=translate,
            bare_references=bare_references,
            partials=partials,
            passed_as=passed_as,
            requires=requires,
            blocked_by=blocked_by,
            supersedes=supersedes,
            certain=certain,
            calls_of=calls_of,
            blockers=blockers,
        )


def unchanged(site: Site) -> Translation:
    """The translator of a fix whose calls keep their arguments."""
    return Translation(list(site.updated.args))


#: A plain rename: every use means the same under the new name.
PLAIN_RENAME = CallSiteFix(unchanged, bare_references=True, partials=True)


class Behaviour:
    """One rule's detection and fix, as hooks the engine calls.

    The engine indexes a behaviour by what it returns from :meth:`references`,
    :meth:`calls` and :meth:`partials`, and by :attr:`definitions` and :attr:`classes`;
    it calls only the hooks a behaviour is indexed for. Hooks report through
    ``engine.report`` (which says whether this run applies the fix) and return the
    node to put in the tree.

    Each hook has an ``ast`` half that lint runs instead (:mod:`codemods.astlint.detector`):
    ``ast_call(detector, call)``, ``ast_partial``, ``ast_function``, ``ast_class_def``,
    reporting through ``detector.report`` exactly what the libcst hook reports in a run
    that fixes nothing. None: a file that needs it goes to the libcst engine. An ``ast``
    half answers for the libcst hooks :attr:`AST_MIRRORS` names; a subclass that
    overrides one of those must define its own ``ast`` half (or reuse its parent's
    explicitly), else the libcst engine runs. A fixing run also uses the ``ast`` half
    to choose what libcst sees (:mod:`codemods.engine.pruning`): the functions holding what
    it reported on, and the nodes it passed to ``detector.depends_on``; a hook whose
    answer rests on other code of the module (every call passing a keyword, every
    ``x.name`` attribute) must pass those nodes there.

    Attributes:
        rename: Where the rule's old names are renamed at every use, the fix that says
            how their calls are translated and what else the file must hold; None
            for rules that rewrite in place or only report.
        definitions: :meth:`function` is called for every function and lambda.
        classes: :meth:`class_def` is called for every class.
        blocks: :meth:`block` is called for every statement list (a module's, an
            indented block's), after its statements: a fix that replaces or drops
            whole statements does it there.
        modules: :meth:`module` is called once, before any statement is visited: a fix
            that also rewrites code before the node it is found at (a name's earlier
            bindings) registers that rewrite there (``engine.replace``).
        tested: For a rule that only reports its names' uses, the detail a use adds
            where it only tests for the old name, by test
            (:mod:`codemods.rules.tested_uses`: ``"comparison"``, ``"isinstance"``):
            the message is worded for the use that chooses the old thing.
    """

    rename: ClassVar[CallSiteFix | None] = None
    definitions: ClassVar[bool] = False
    classes: ClassVar[bool] = False
    blocks: ClassVar[bool] = False
    modules: ClassVar[bool] = False
    tested: ClassVar[Mapping[str, str]] = {}
    ast_call: ClassVar[Callable[..., None] | None] = None
    ast_partial: ClassVar[Callable[..., None] | None] = None
    ast_function: ClassVar[Callable[..., None] | None] = None
    ast_class_def: ClassVar[Callable[..., None] | None] = None
    #: Defined where :meth:`block` reports nothing in a run that fixes nothing (it only
    #: applies what the other hooks planned): lint then need not call it.
    ast_block: ClassVar[Callable[..., None] | None] = None
    #: The libcst methods each ``ast`` half answers for (see the class docstring).
    AST_MIRRORS: ClassVar[dict[str, tuple[str, ...]]] = {
        "ast_call": ("call",),
        "ast_partial": ("partial",),
        "ast_function": ("function",),
        "ast_class_def": ("class_def",),
        "ast_block": ("block",),
    }

    def __init__(self, rule: Rule) -> None:
        self.rule = rule

    def references(self) -> tuple[str, ...]:
        """Names any use of which is a finding of this rule."""
        return ()

    def calls(self) -> tuple[str, ...]:
        """Callables whose calls :meth:`call` inspects."""
        return ()

    def partials(self) -> tuple[str, ...]:
        """Callables whose ``functools.partial(name, ...)`` :meth:`partial` inspects."""
        return ()

    def call(self, engine: Engine, original: cst.Call, updated: cst.Call) -> cst.Call:
        """A call of one of :meth:`calls`; return it, rewritten where the fix applies."""
        return updated

    def partial(self, engine: Engine, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        """A ``partial(name, ...)`` of one of :meth:`partials`; return its replacement."""
        return updated

    def function(self, engine: Engine, node: cst.FunctionDef | cst.Lambda) -> None:
        """A function or lambda definition (for :attr:`definitions` behaviours)."""

    def class_def(
        self, engine: Engine, original: cst.ClassDef, updated: cst.ClassDef
    ) -> cst.ClassDef:
        """A class definition (for :attr:`classes` behaviours); return it, rewritten."""
        return updated

    def module(self, engine: Engine, node: cst.Module) -> None:
        """The module, before its statements are visited (for :attr:`modules` behaviours)."""

    def block(
        self,
        engine: Engine,
        original: Sequence[cst.BaseStatement],
        updated: Sequence[cst.BaseStatement],
    ) -> Sequence[cst.BaseStatement]:
        """A statement list (for :attr:`blocks` behaviours); return it, rewritten."""
        return updated
