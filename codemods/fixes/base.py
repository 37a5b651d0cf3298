"""The shape of a call-site fix: a rename whose calls need their arguments translated.

Some old names cannot simply be renamed: ``DDPFullyShardedStrategy(min_num_params=N)``
or FairScale's ``FullyShardedDataParallel(module, reshard_after_forward=False)`` become
the new class only with their arguments translated. Such a rule has a
:class:`CallSiteFix`: a translator per call, and the rules about the rest of the file.
The engine applies the fix to a file only where every use of the old names there is
one the fix is certain about (pyupgrade's "intentionally timid"); otherwise each use is
reported for a human and nothing is changed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Protocol

import libcst as cst

#: An import a translation needs: ``(module, name)`` for ``from module import name``,
#: ``(module, None)`` for ``import module``.
Import = tuple[str, "str | None"]


class Resolver(Protocol):
    """What a translator may ask about the file (the engine answers from libcst metadata)."""

    def qualified(self, node: cst.CSTNode) -> set[str]:
        """The fully qualified names ``node`` may refer to."""

    def class_set(
        self, original: cst.BaseExpression, updated: cst.BaseExpression | None = None
    ) -> cst.BaseExpression | None:
        """``{...}`` for a class or a list/tuple/set display of classes; else None."""

    def applies(self, code: str) -> bool:
        """Whether this run applies rule ``code``'s fix."""


@dataclass(frozen=True)
class Site:
    """One call of an old name, as a translator sees it.

    Attributes:
        resolver: Answers questions about names in the file.
        old: The old qualified name the call refers to.
        original: The call as parsed (ask the resolver about these nodes).
        updated: The call with inner rewrites already done (build output from these).
        partial: The old name is the first argument of ``functools.partial(...)``
            rather than the called function; the call's other arguments are its.
    """

    resolver: Resolver
    old: str
    original: cst.Call
    updated: cst.Call
    partial: bool = False

    @property
    def pairs(self) -> list[tuple[cst.Arg, cst.Arg]]:
        """The call's own arguments (a partial's after the function), original and updated."""
        start = 1 if self.partial else 0
        return list(zip(self.original.args[start:], self.updated.args[start:]))


@dataclass(frozen=True)
class Translation:
    """A call rewritten: its new arguments, and what else the new code needs.

    Attributes:
        args: The call's new arguments (for a partial: all of them, the function first).
        imports: Imports the new arguments use.
        func: A new callee, where the call's shape changes (a factory call becoming a
            ``partial``); None keeps the callee, which the rename then renames.
    """

    args: list[cst.Arg]
    imports: tuple[Import, ...] = ()
    func: cst.BaseExpression | None = None


Translator = Callable[[Site], "Translation | None"]


@dataclass(frozen=True)
class CallSiteFix:
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
    """

    translate: Translator
    bare_references: bool = False
    partials: bool = False
    passed_as: tuple[tuple[str, str], ...] = ()
    requires: tuple[str, ...] = ()
    blocked_by: tuple[str, ...] = ()
    supersedes: tuple[str, ...] = ()


def unchanged(site: Site) -> Translation:
    """The translator of a fix whose calls keep their arguments."""
    return Translation(list(site.updated.args))
