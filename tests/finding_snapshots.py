"""Per-rule snapshots of the printed findings: a wrong column or message shows as a diff.

For every rule, each of its examples (the example, its cases, its untouched snippets)
is linted alone as ``fsdp-lint --select CODE`` lints a file, and the lines it prints
(``path:line:col: CODE [*] message``) are kept in ``tests/snapshots/findings/CODE.txt``.
``FSDP_UPDATE_SNAPSHOTS=1 python -m pytest tests/test_finding_snapshots.py`` writes them
anew; read the diff before committing it.
"""

from __future__ import annotations

import os
from pathlib import Path

from codemods.batch.runner import process_source
from codemods.cli.output import finding_line
from codemods.registry import Rule
from codemods.settings import Settings

SNAPSHOTS = Path(__file__).parent / "snapshots" / "findings"
UPDATE = "FSDP_UPDATE_SNAPSHOTS"


def examples(rule: Rule) -> list[tuple[str, str]]:
    """Each example of ``rule`` with the file name its lines are printed under."""
    named = [("example.py", rule.example.before)]
    named += [(f"case_{i}.py", case.before) for i, case in enumerate(rule.cases, 1)]
    named += [(f"untouched_{i}.py", text) for i, text in enumerate(rule.untouched, 1)]
    return named


def printed(rule: Rule) -> str:
    """What lint prints for each example of ``rule``, under a heading per example."""
    settings = Settings(select=(rule.code,))
    out = [f"# fsdp-lint --select {rule.code}, one run per example"]
    for name, source in examples(rule):
        result = process_source(name, source.encode("utf-8"), settings)
        out.append(f"\n## {name}")
        out += [finding_line(name, finding, settings) for finding in result.findings]
        if result.error:
            out.append(f"error: {name}: {result.error}")
    return "\n".join(out) + "\n"


def check(rule: Rule, directory: Path = SNAPSHOTS) -> None:
    """Compare ``rule``'s printed findings with its snapshot (write it under ``UPDATE``)."""
    path = directory / f"{rule.code}.txt"
    text = printed(rule)
    if os.environ.get(UPDATE):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return
    assert path.exists(), (
        f"{rule.code} has no snapshot of its printed findings: run "
        f"{UPDATE}=1 python -m pytest tests/test_finding_snapshots.py and read it"
    )
    assert text == path.read_text(encoding="utf-8")
