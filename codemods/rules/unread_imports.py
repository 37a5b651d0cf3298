"""FairScale imports nothing reads: reported, not swapped for torch's.

A FairScale rule's fix moves its import to torch's replacement (FSDP301's class,
FSDP309's scaler). Where nothing in the file reads what the statement binds, that swap
would only put an import of torch's where nothing here runs it: the import keeps its
finding, and what to do (delete it, or swap it where other modules import it from
here) is the user's call. A fix the file's plan withholds anyway keeps the plan's reason.
"""

from __future__ import annotations

from codemods.registry import Framework, Rule

#: Why an import of FairScale's that nothing in its file reads is not swapped for torch's.
UNREAD_IMPORT = (
    "nothing in this file reads it: swap it for torch's where other modules import it from "
    "here, or delete it (your call)"
)


def unread_imports(names: list[tuple[Rule, bool | None]]) -> set[str]:
    """The FairScale rules of one import statement none of whose names is read.

    Args:
        names: ``(rule, read)`` per name of the statement that brings in an old name;
            ``read`` is None where the detector cannot tell (``import fairscale.nn``).

    Example:
        >>> from codemods.registry import REGISTRY
        >>> fairscale, torch = REGISTRY["FSDP309"], REGISTRY["FSDP101"]
        >>> sorted(unread_imports([(fairscale, False), (torch, False)]))
        ['FSDP309']
        >>> unread_imports([(fairscale, False), (fairscale, True)])
        set()
    """
    read = {rule.code for rule, was_read in names if was_read is not False}
    return {
        rule.code
        for rule, _ in names
        if rule.framework is Framework.FAIRSCALE and rule.code not in read
    }
