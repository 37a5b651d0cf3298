"""What translating an FSDP1 wrapper call's keywords gives, for FSDP401.

The ``fully_shard`` keywords with what they need (:class:`Keywords`), the earlier
bindings rewritten with them (:class:`Rebinding`), or why the call has no certain
translation (:class:`Untranslatable`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from codemods.syntax.lazy_libcst import cst


class Untranslatable(Exception):
    """The call has arguments without a certain FSDP2 translation: the message says why.

    Attributes:
        reasons: Each thing that stands in the way (the message joins them).
    """

    def __init__(self, *reasons: str) -> None:
        super().__init__(joined(list(reasons)))
        self.reasons = list(reasons)


@dataclass(frozen=True)
class Rebinding:
    """An earlier binding of a name the call passes, rewritten in place with the call.

    Attributes:
        value: The value bound (``MixedPrecision(...)`` or ``None``), an original node.
        dropped: Of a ``MixedPrecision(...)`` call, the arguments FSDP2 has no twin for
            (by position); the call keeps its layout and comments otherwise.
    """

    value: cst.BaseExpression
    dropped: tuple[int, ...] = ()

    def replacement(self, updated: cst.BaseExpression) -> cst.BaseExpression:
        """What takes the place of the value (given as the visit updated it).

        Example:
            >>> call = cst.parse_expression("MixedPrecision(param_dtype=a, buffer_dtype=b)")
            >>> new = Rebinding(call, (1,)).replacement(call)
            >>> cst.Module([]).code_for_node(new)
            'MixedPrecisionPolicy(param_dtype=a)'
        """
        if not isinstance(updated, cst.Call):
            return cst.parse_expression("MixedPrecisionPolicy()")  # FSDP1's None
        args = [arg for index, arg in enumerate(updated.args) if index not in self.dropped]
        if args and len(args) < len(updated.args):
            # the last argument kept ends the way the call's last one did
            args[-1] = args[-1].with_changes(comma=updated.args[-1].comma)
        return updated.with_changes(func=cst.Name("MixedPrecisionPolicy"), args=args)


@dataclass
class Keywords:
    """A wrapper call's FSDP2 keywords, the imports they need and the notes to report.

    Attributes:
        code: ``name=value`` source texts, in order.
        imports: FSDP2 names the values use (imported from the FSDP2 module).
        notes: What was dropped and changes something.
        rebindings: Bindings of the names passed that are rewritten too.
        unit_values: Keywords whose value differs on the units below the root: the
            units' value's source, given the name the root's value is bound to
            (FSDP1's root-only input casting: :mod:`codemods.rules.fsdp401.precision`).
        setup: What FSDP1 did to each unit before sharding it, written as plain code
            before each ``fully_shard`` (:mod:`codemods.rules.fsdp401.setup`).
        more_imports: ``(module, name)`` imports the values need from elsewhere.
        runtime_strategy: Source of a ``sharding_strategy`` known only at run time.
        runtime_members: The ``ShardingStrategy`` members the file binds that name to
            (None: not known, any member).
        bindings: Statements binding a value the keywords name, before the call.
        strategy: Source of a ``sharding_strategy`` that may be one whose ranks FSDP2
            takes from a mesh of its own (``NO_SHARD``, a hybrid one without a mesh).
    """

    code: list[str] = field(default_factory=list)
    imports: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    rebindings: list[Rebinding] = field(default_factory=list)
    unit_values: dict[str, Callable[[str], str]] = field(default_factory=dict)
    setup: Setup = field(default_factory=lambda: Setup())
    more_imports: list[tuple[str, str | None]] = field(default_factory=list)
    runtime_strategy: str | None = None
    runtime_members: frozenset[str] | None = None
    bindings: list[str] = field(default_factory=list)
    strategy: str | None = None


@dataclass
class Setup:
    """FSDP1's per-unit steps before it shards a unit, as sources of the call's values.

    Attributes:
        device: ``device_id``'s source (None: FSDP1's current device).
        init_fn: ``param_init_fn``'s source, where given.
        materialise: Whether units holding meta tensors are materialised (FSDP1 does it
            whenever a unit holds them; written where the file builds on meta, or
            passes ``param_init_fn``).
        sync: ``sync_module_states``'s source where not ``False`` (``True`` or a flag).
        group: ``process_group``'s source (None: every rank).
        set_device: Whether the current CUDA device is set to ``device`` first: FSDP2
            shards on the current device, and the file never sets it
            (:func:`codemods.rules.fsdp401.device.sets_device`).
    """

    device: str | None = None
    init_fn: str | None = None
    materialise: bool = False
    sync: str | None = None
    group: str | None = None
    set_device: bool = False

    def needed(self) -> bool:
        """Whether each unit needs steps of its own before ``fully_shard``."""
        return self.materialise or self.sync is not None

    def sources(self) -> list[str]:
        """The call's values the steps name (kept alive in the new code)."""
        return [s for s in (self.device, self.init_fn, self.sync, self.group) if s]


def joined(reasons: list[str]) -> str:
    """Several reasons as one message, numbered where there are more than one.

    Example:
        >>> joined(["a"]), joined(["a", "b"])
        ('a', '(1) a; (2) b')
    """
    if len(reasons) == 1:
        return reasons[0]
    return "; ".join(f"({number}) {why}" for number, why in enumerate(reasons, 1))
