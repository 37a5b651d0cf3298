"""What a run reports and fixes: rule selection, fix safety and target releases."""

from __future__ import annotations

from codemods.records import Frozen
from codemods.registry import FixSafety, Rule
from codemods.releases import Releases

#: The releases a run judges code against where nothing says otherwise.
_CURRENT = Releases()


class Settings(Frozen):
    """Which rules run and which fixes apply.

    Attributes:
        select: Rule codes (or prefixes, ``FSDP2``) to report; empty means every rule
            that is not opt-in.
        ignore: Codes or prefixes never reported.
        fix: Apply fixes (migrate), rather than only report (lint).
        unsafe_fixes: Also apply fixes marked unsafe.
        releases: The releases of torch and Lightning the code must run on
            (:mod:`codemods.releases`): what is a problem on any of them is reported,
            and a fix is made only where its new form runs on all of them. The
            default: the current releases.
        fsdp2_bridge: The FSDP1-to-FSDP2 fix (FSDP401) may rewrite a wrapper call it
            cannot translate with certainty to one call of ``compat``'s FSDP1 bridge
            (``--fsdp2-bridge``, opt-in); False (the default): such calls stay FSDP1 for
            a human, with their recipes.
        lightning_bases: The base-class spellings in this file that are the project's
            own ``LightningModule`` subclasses defined in other files of the run
            (:mod:`codemods.cli.project_classes`), for the hook rules.
        fsdp1_elsewhere: The checks for FSDP1's class that other files of this file's
            project keep in the run (``file:line: text``,
            :mod:`codemods.cli.project_fsdp1`): FSDP401 converts nothing beside them.
        fsdp1_api_elsewhere: The FSDP1 class calls the bridge's model answers that other
            files of the project make: FSDP401 puts the file's calls on the bridge.
        fsdp1_elsewhere_why: Why the file of the first of ``fsdp1_elsewhere`` stays FSDP1.
        fsdp1_companion: The wrapper calls of other files of the project that FSDP401
            converts (``file:line``), given to a file with none of its own: its checks
            for FSDP1's class are rewritten with them (the project converts together).
        fsdp1_tests_elsewhere: The uses of FSDP1's class that the project's tests keep
            on this file's models (``file:line: text``): they hold no code of the
            project's own, and a conversion names them.
        fsdp1_held: Why FSDP401 converts nothing in this file in this run: a file whose
            conversion stands with it did not convert (:mod:`codemods.cli.project_writes`).
    """

    _fields = (
        "select",
        "ignore",
        "fix",
        "unsafe_fixes",
        "releases",
        "fsdp2_bridge",
        "lightning_bases",
        "fsdp1_elsewhere",
        "fsdp1_api_elsewhere",
        "fsdp1_elsewhere_why",
        "fsdp1_companion",
        "fsdp1_tests_elsewhere",
        "fsdp1_held",
    )
    __slots__ = (*_fields, "_hash")

    select: tuple[str, ...]
    ignore: tuple[str, ...]
    fix: bool
    unsafe_fixes: bool
    releases: Releases
    fsdp2_bridge: bool
    lightning_bases: frozenset[str]
    fsdp1_elsewhere: tuple[str, ...]
    fsdp1_api_elsewhere: tuple[str, ...]
    fsdp1_elsewhere_why: str | None
    fsdp1_companion: tuple[str, ...]
    fsdp1_tests_elsewhere: tuple[str, ...]
    fsdp1_held: str | None

    def __init__(
        self,
        select: tuple[str, ...] = (),
        ignore: tuple[str, ...] = (),
        fix: bool = False,
        unsafe_fixes: bool = False,
        releases: Releases = _CURRENT,
        fsdp2_bridge: bool = False,
        lightning_bases: frozenset[str] = frozenset(),
        fsdp1_elsewhere: tuple[str, ...] = (),
        fsdp1_api_elsewhere: tuple[str, ...] = (),
        fsdp1_elsewhere_why: str | None = None,
        fsdp1_companion: tuple[str, ...] = (),
        fsdp1_tests_elsewhere: tuple[str, ...] = (),
        fsdp1_held: str | None = None,
    ) -> None:
        self._set(
            select=select,
            ignore=ignore,
            fix=fix,
            unsafe_fixes=unsafe_fixes,
            releases=releases,
            fsdp2_bridge=fsdp2_bridge,
            lightning_bases=lightning_bases,
            fsdp1_elsewhere=fsdp1_elsewhere,
            fsdp1_api_elsewhere=fsdp1_api_elsewhere,
            fsdp1_elsewhere_why=fsdp1_elsewhere_why,
            fsdp1_companion=fsdp1_companion,
            fsdp1_tests_elsewhere=fsdp1_tests_elsewhere,
            fsdp1_held=fsdp1_held,
        )

    def __hash__(self) -> int:
        # Kept once made: every file of a run asks its settings' caches (the pre-filter's
        # groups, the scan's targets), each hashing all the fields and the releases.
        try:
            return self._hash  # type: ignore[no-any-return]
        except AttributeError:
            object.__setattr__(self, "_hash", super().__hash__())
            return self._hash  # type: ignore[no-any-return]

    def enabled(self, rule: Rule) -> bool:
        """Whether ``rule`` is reported under these settings."""
        if any(rule.code.startswith(prefix) for prefix in self.ignore):
            return False
        if self.select and not any(rule.code.startswith(prefix) for prefix in self.select):
            return False
        return (bool(self.select) or not rule.opt_in) and self.relevant(rule)

    def relevant(self, rule: Rule) -> bool:
        """Whether the old spelling is a problem on some release the code runs on.

        Example:
            >>> from codemods.registry import REGISTRY
            >>> Settings(releases=Releases.parse(torch="1.13")).relevant(REGISTRY["FSDP102"])
            False
            >>> Settings(releases=Releases.parse(torch="1.13..")).relevant(REGISTRY["FSDP102"])
            True
        """
        return self.releases.reported(rule)

    def fix_available(self, rule: Rule) -> bool:
        """Whether the rule's new form runs on every release the code runs on."""
        return self.releases.fixable(rule)

    def can_fix(self, rule: Rule) -> bool:
        """Whether ``rule`` is reported and has a fix usable here (safe or unsafe)."""
        return rule.fixable and self.enabled(rule) and self.fix_available(rule)

    def fixes(self, rule: Rule, fixable: bool = True, unsafe: bool = False) -> bool:
        """Whether a fixing run with these settings rewrites a finding of ``rule``.

        The one answer to "does this fix apply": the engine asks it as it reports, the
        ``ast`` screening to know whether libcst must run, and lint's output for its
        ``[*]`` marker (what ``--fix`` would do, this run's ``--unsafe-fixes`` kept).

        Args:
            rule: The finding's rule.
            fixable: Its fix can rewrite this use (a finding's ``fixable``).
            unsafe: The fix is unsafe here although the rule's is safe elsewhere.

        Example:
            >>> from codemods.registry import REGISTRY
            >>> rule = REGISTRY["FSDP101"]  # a safe rename
            >>> Settings().fixes(rule), Settings().fixes(rule, unsafe=True)
            (True, False)
        """
        if not (fixable and self.can_fix(rule)):
            return False
        return (rule.fix is FixSafety.SAFE and not unsafe) or self.unsafe_fixes

    def applies_fix(self, rule: Rule) -> bool:
        """Whether this run rewrites ``rule``'s findings (where they are fixable and safe)."""
        return self.fix and self.fixes(rule)
