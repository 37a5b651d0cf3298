"""``python -m compat.dropin.plan``: write ``plan_table.txt`` from the registry.

The plan itself lives in :mod:`compat.dropin.entries`, which the drop-in package imports;
this module is apart so that running it does not find it imported already by its own
package (runpy warns of that). Its names are re-exported here for callers.
"""

from __future__ import annotations

from pathlib import Path

from compat.dropin.entries import TABLE_PATH, from_table, mirror_of, plan, table

#: :data:`~compat.dropin.entries.TABLE_PATH` as a path.
TABLE = Path(TABLE_PATH)

__all__ = ["TABLE", "from_table", "mirror_of", "plan", "table"]

if __name__ == "__main__":
    import codemods.registry

    TABLE.write_text(table(codemods.registry.REGISTRY), encoding="utf-8")
