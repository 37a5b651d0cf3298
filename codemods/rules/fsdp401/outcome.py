"""What FSDP401's survey of a file finds: each wrapper call's conversion, and the verdict.

:func:`codemods.rules.fsdp401.decide.survey` makes a :class:`Survey`; the rule's text
and hooks read it.
"""

from __future__ import annotations

from dataclasses import dataclass

from codemods.rules.fsdp401.keywords import Keywords
from codemods.rules.fsdp401.uses import Use
from codemods.syntax.lazy_libcst import cst


def blocker_text(blockers: list[str]) -> str | None:
    """Why a file's FSDP4 fix is withheld: every reason, each once, in order.

    A user porting the file by hand removes them all in one pass; naming only the first
    (with a count of the others) left them to meet each in a later run.

    Example:
        >>> blocker_text(["`a` at line 1 is FSDP1 only", "`b` at line 2 is FSDP1 only"])
        '`a` at line 1 is FSDP1 only; `b` at line 2 is FSDP1 only'
        >>> blocker_text(["r0", "r1", "r2", "r0"])
        'r0; r1; r2'
        >>> blocker_text([]) is None
        True
    """
    return "; ".join(dict.fromkeys(blockers)) or None


@dataclass(frozen=True)
class Conversion:
    """How one wrapper call becomes FSDP2.

    Attributes:
        call: The original wrapper call.
        line: The original statement line holding the call (the loop goes before it).
        root: Source of the module sharded last (a name or attribute).
        before: Source of a statement binding ``root`` first, if the call built it.
        classes: Source of each unit class (none: the root is the only unit).
        keywords: The ``fully_shard`` keywords.
        policy: Source of an ``auto_wrap_policy`` whose units are decided at run time
            (passed to the code that decides them as FSDP1 does), or None.
    """

    call: cst.Call
    line: cst.SimpleStatementLine
    root: str
    before: str | None
    classes: tuple[str, ...]
    keywords: Keywords
    policy: str | None = None


@dataclass(frozen=True)
class Bridged:
    """A wrapper call that becomes one call of ``compat``'s FSDP1 bridge.

    Its arguments stay as they are: the bridge takes FSDP1's own and applies FSDP1's
    semantics on FSDP2 at run time (:func:`compat.fsdp2.fully_shard_like_fsdp1`).

    Attributes:
        call: The original wrapper call.
        why: What kept it from plain FSDP2 code, each with the recipe to finish by hand.
    """

    call: cst.Call
    why: str


@dataclass
class Survey:
    """Every FSDP1 wrapper call of a file, and why the file must stay FSDP1 (if it must).

    Attributes:
        conversions: Each wrapper call's conversion, or why it has none (by ``id``).
        uses: The calls on each wrapped model that are rewritten with it.
        blocker: Why no FSDP4 fix is written in the file, or None.
        module_lists: The ``FSDP.fsdp_modules(module)`` calls (``id``): a comprehension
            of the ``FSDPModule`` instances in ``module.modules()`` on FSDP2.
        api_calls: The ``FSDP.state_dict_type(model, ...)``-like calls (``id``): the same
            call of ``compat``'s ``FSDP1Api`` where the file's models are bridged.
        class_checks: The FSDP1 classes ``isinstance`` tests or a function's annotations
            name (``id`` of the reference): ``FSDPModule`` on FSDP2, the class every
            ``fully_shard``-ed module takes on.
        companion: In a file with no wrapper call that converts with its project's
            (:mod:`codemods.rules.fsdp401.companion`), the node its finding is reported
            at: the first rewritten.
        subclass_calls: Calls of the file's own subclasses of FSDP1's class (or the FSDP1
            base of one it never calls), each with why it stays FSDP1
            (:mod:`codemods.rules.fsdp401.subclasses`).
        dual: Where the range starts before FSDP2, the name of the flag choosing FSDP2
            or FSDP1 at run time (:mod:`codemods.rules.fsdp401.dual`); None: plain code.
    """

    conversions: dict[int, Conversion | Bridged | str]
    uses: dict[int, list[Use]]
    blocker: str | None
    class_checks: frozenset[int] = frozenset()
    module_lists: frozenset[int] = frozenset()
    api_calls: frozenset[int] = frozenset()
    companion: cst.CSTNode | None = None
    subclass_calls: tuple[tuple[cst.CSTNode, str], ...] = ()
    dual: str | None = None

    def converts(self) -> bool:
        """Whether the file is converted (in a run that applies the family's fixes)."""
        if self.blocker is not None:
            return False
        return self.companion is not None or any(
            isinstance(c, (Conversion, Bridged)) for c in self.conversions.values()
        )
