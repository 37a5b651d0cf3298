"""The migrate fixtures: ``tests/fixtures/migrate/NAME/input.py`` and its ``output.py``.

A fixture without ``output.py`` must come out unchanged. Comment lines at the top of
``input.py`` say how to run it (they survive the rewrite, so ``output.py`` has them too):

- ``# fsdp-migrate: --unsafe-fixes`` (and/or ``--select CODES``, ``--fsdp2-bridge``):
  the run's options;
- ``# left unfixed: FSDP103, FSDP208``: the findings migrate must leave, by code
  (without this line, none may be left);
- ``# runnable: compat warns FSDP103, FSDP106`` (or ``compat warns nothing``): the
  fixture defines ``build(model, device)``; the equivalence suite runs the input through
  ``compat`` and the output on native torch, and compat must warn with exactly these codes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from codemods.settings import Settings

ROOT = Path(__file__).resolve().parent / "fixtures" / "migrate"
_HEADER = re.compile(r"^# (fsdp-migrate|left unfixed|runnable): *(.*)$")


@dataclass(frozen=True)
class Fixture:
    """One migrate fixture, read from its directory."""

    name: str
    source: str
    expected: str | None
    settings: Settings
    left: tuple[str, ...]
    compat_warns: frozenset[str] | None

    @property
    def path(self) -> Path:
        """The input file."""
        return ROOT / self.name / "input.py"


def _codes(text: str) -> list[str]:
    return re.findall(r"FSDP\d{3}", text)


def load(name: str) -> Fixture:
    """Read fixture ``name``."""
    directory = ROOT / name
    source = (directory / "input.py").read_text(encoding="utf-8")
    output = directory / "output.py"
    options: dict[str, str] = {}
    for line in source.splitlines():
        match = _HEADER.match(line)
        if match is None:
            break
        options[match.group(1)] = match.group(2)
    flags = options.get("fsdp-migrate", "").split()
    select = flags[flags.index("--select") + 1].split(",") if "--select" in flags else []
    settings = Settings(
        select=tuple(code.strip().upper() for code in select),
        fix=True,
        unsafe_fixes="--unsafe-fixes" in flags,
        fsdp2_bridge="--fsdp2-bridge" in flags,
    )
    runnable = options.get("runnable")
    return Fixture(
        name=name,
        source=source,
        expected=output.read_text(encoding="utf-8") if output.exists() else None,
        settings=settings,
        left=tuple(sorted(_codes(options.get("left unfixed", "")))),
        compat_warns=None if runnable is None else frozenset(_codes(runnable)),
    )


def triggered(fixture: Fixture) -> tuple[str, ...]:
    """The rule codes lint reports on the fixture's input, under the fixture's own options."""
    from codemods.engine.run import run  # the engine only where a test asks, not for every importer

    lint = fixture.settings.replace(fix=False)
    return tuple(sorted({f.code for f in run(fixture.source.encode(), lint).findings}))


def fixture_id(fixture: Fixture) -> str:
    """The fixture's test id, with the codes it triggers: ``pytest -k FSDP208`` finds it.

    Example:
        >>> fixture_id(FIXTURES["strategy-and-precision-keep-quotes"])
        'strategy-and-precision-keep-quotes[FSDP204,FSDP206]'
    """
    return f"{fixture.name}[{','.join(triggered(fixture))}]"


NAMES = sorted(p.name for p in ROOT.iterdir() if (p / "input.py").exists())
FIXTURES = {name: load(name) for name in NAMES}
RUNNABLE = {name: f for name, f in FIXTURES.items() if f.compat_warns is not None}


def sources(fix: bool) -> list:
    """Every fixture's source and settings (``fix`` set as asked), as pytest params."""
    import pytest

    params = []
    for path in sorted(ROOT.iterdir()):
        if (path / "input.py").exists():
            fixture = load(path.name)
            settings = fixture.settings.replace(fix=fix)
            params.append(pytest.param(fixture.source.encode(), settings, id=path.name))
    return params
