r"""Check 4 of the verifier: an import the rewrite made unconditional.

A module that imports a package only inside a block (``if TORCH_AVAILABLE:``, a
``try``, a function that imports lazily) imports without it; a rewrite that adds a
module-level import of that package makes every import of the module need it (an
optional dependency becomes a hard one). Imports are read line by line: a module-level
import starts at column 0, any other one is indented.

Example:
    >>> old = "if HAVE_TORCH:\n    from torch import nn\n"
    >>> new = "from torch import optim\n\nif HAVE_TORCH:\n    from torch import nn\n"
    >>> [reason for _, _, _, reason in unguarded_imports(old, new)]
    ['`torch` imported unconditionally at 1:1; the old module imports it only inside a block (line 2)']
"""  # noqa: E501

from __future__ import annotations

import re

_IMPORT = re.compile(
    r"^(?P<indent>[ \t]*)"
    r"(?:from[ \t]+(?P<source>[\w.]+)[ \t]+import\b|import[ \t]+(?P<module>\w[\w.]*))",
    re.MULTILINE,
)


def _roots(text: str) -> tuple[dict[str, int], dict[str, int]]:
    """The packages imported at module level and elsewhere, each with its first line."""
    top: dict[str, int] = {}
    nested: dict[str, int] = {}
    for match in _IMPORT.finditer(text):
        root = (match["source"] or match["module"]).partition(".")[0]
        if not root:  # a relative import
            continue
        line = text.count("\n", 0, match.start()) + 1
        (nested if match["indent"] else top).setdefault(root, line)
    return top, nested


def unguarded_imports(old: str, new: str) -> list[tuple[int, int, str, str]]:
    """Each package the rewrite imports at module level, the old module only in a block.

    Returns:
        ``(line, column, package, reason)`` for each, at its first module-level import.
    """
    if "import" not in new:
        return []
    old_top, old_nested = _roots(old)
    new_top, _ = _roots(new)
    return [
        (
            line,
            1,
            root,
            f"`{root}` imported unconditionally at {line}:1; the old module imports it "
            f"only inside a block (line {old_nested[root]})",
        )
        for root, line in new_top.items()
        if root not in old_top and root in old_nested
    ]
