"""The deprecation census: the scanner, the triage of the installed releases, the coverage page."""

from __future__ import annotations

import dataclasses
import re
import subprocess
import sys
from importlib.metadata import PackageNotFoundError, version
from importlib.util import find_spec
from pathlib import Path

import pytest

from codemods.census import scan as census
from codemods.census.page import render_page
from codemods.registry import REGISTRY
from codemods.registry.deprecations import (
    DEPRECATIONS,
    LIGHTNING_RELEASES,
    TORCH_RELEASES,
    Deprecation,
    matching,
)
from tests.kept import fingerprint, kept

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "coverage.md"
RELEASES = {"torch": TORCH_RELEASES, "lightning": LIGHTNING_RELEASES}

# --- (a) the scanner, on sources of our own -------------------------------------------------

FSDP_MODULE = """\
import logging
import warnings
from warnings import warn

import typing_extensions
from typing_extensions import deprecated

logger = logging.getLogger(__name__)
warnings.warn("the module `old_home` is deprecated", DeprecationWarning)

NOTE = "`Planner.plan` will be removed; " "call `Planner.make` instead"


class Planner:
    @deprecated("`Planner.plan` is deprecated.", category=FutureWarning)
    def plan(self):
        pass

    @typing_extensions.deprecated("Use `Planner.make` with `fast=True`")
    def plan_fast(self):
        pass

    def plan_later(self):
        warnings.warn(NOTE, category=FutureWarning, stacklevel=2)


def legacy(curr, new):
    warnings.warn(
        f"``Planner.{curr}`` is being deprecated and is "
        f"replaced by ``Planner.{new}``.",
        FutureWarning,
    )


def quiet(flag):
    if flag is None:
        warn("pass `flag` explicitly: calling without it is deprecated")
    warnings.warn("`flag` is " + "deprecated in " + "{}".format(3), UserWarning)
    warnings.warn("Tensors on two devices: gradients may be wrong")
    warnings.warn("no inputs require grad", RuntimeWarning)
    logger.warning("`dedup` is being deprecated and has no effect")
    logger.warning("falling back to the slow path")
"""

LIGHTNING_FSDP = """\
from lightning.fabric.utilities.rank_zero import rank_zero_deprecation, rank_zero_warn


def _kwargs(policy):
    rank_zero_deprecation(
        f"`FSDPStrategy(policy={policy})` is deprecated, use `FSDPStrategy(auto_wrap_policy=...)`"
    )
    rank_zero_warn("FSDP is slow on CPU")
    rank_zero_warn("`cpu_offload=True` is deprecated", category=FutureWarning)
"""

#: (scope, category, form, message) of everything the scanner must find in FSDP_MODULE.
EXPECTED_FSDP = [
    ("<module>", "DeprecationWarning", "warn", "the module `old_home` is deprecated"),
    ("Planner.plan", "FutureWarning", "decorator", "`Planner.plan` is deprecated."),
    (
        "Planner.plan_fast",
        "DeprecationWarning",
        "decorator",
        "Use `Planner.make` with `fast=True`",
    ),
    (
        "Planner.plan_later",
        "FutureWarning",
        "warn",
        "`Planner.plan` will be removed; call `Planner.make` instead",
    ),
    (
        "legacy",
        "FutureWarning",
        "warn",
        "``Planner.{curr}`` is being deprecated and is replaced by ``Planner.{new}``.",
    ),
    (
        "quiet",
        "UserWarning",
        "warn",
        "pass `flag` explicitly: calling without it is deprecated",
    ),
    ("quiet", "UserWarning", "warn", "`flag` is deprecated in {}"),
    ("quiet", "log", "log", "`dedup` is being deprecated and has no effect"),
]


def _write(root: Path, relative: str, text: str) -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    _write(tmp_path, "torch/distributed/fsdp/planner.py", FSDP_MODULE)
    _write(tmp_path, "torch/nn/elsewhere.py", FSDP_MODULE)  # not a census area
    _write(tmp_path, "lightning/fabric/strategies/fsdp.py", LIGHTNING_FSDP)
    _write(tmp_path, "lightning/fabric/strategies/ddp.py", LIGHTNING_FSDP)  # not FSDP's
    return tmp_path


def test_the_scanner_finds_every_form_and_nothing_else(tree):
    found = [f for f in census.scan_tree(tree) if f.package == "torch.distributed.fsdp"]
    assert [(f.scope, f.category, f.form, f.message) for f in found] == EXPECTED_FSDP
    assert {f.file for f in found} == {"torch/distributed/fsdp/planner.py"}


def test_lines_point_at_the_call_or_the_decorator(tree):
    lines = FSDP_MODULE.splitlines()
    for finding in census.scan_tree(tree):
        if finding.package == "torch.distributed.fsdp":
            text = lines[finding.line - 1]
            assert re.search(r"warn\(|deprecated\(|warning\(", text), (finding, text)


def test_lightning_helpers_are_found_in_its_fsdp_files_only(tree):
    found = [f for f in census.scan_tree(tree) if f.package.startswith("lightning")]
    assert [(f.file, f.scope, f.category, f.form, f.message) for f in found] == [
        (
            "lightning/fabric/strategies/fsdp.py",
            "_kwargs",
            "LightningDeprecationWarning",
            "rank_zero_deprecation",
            "`FSDPStrategy(policy={policy})` is deprecated, use "
            "`FSDPStrategy(auto_wrap_policy=...)`",
        ),
        (
            "lightning/fabric/strategies/fsdp.py",
            "_kwargs",
            "FutureWarning",
            "rank_zero_warn",
            "`cpu_offload=True` is deprecated",
        ),
    ]
    assert {f.package for f in found} == {"lightning.fabric"}


@pytest.mark.parametrize(
    ("expression", "rendered"),
    [
        ('"a  b\\n   c"', "a b c"),
        ('"one " "two"', "one two"),
        ('f"x {a.b} y {c!r:>4}"', "x {a.b} y {c}"),
        ('"a %s b" % name', "a %s b"),
        ("MESSAGE", "{MESSAGE}"),
        ("build()", "{build()}"),
        ("format(value, 'x')", "{format(value, 'x')}"),
        ("NOTE.format(1)", "`old` is deprecated {}"),
    ],
)
def test_message_rendering(expression, rendered):
    source = (
        "import warnings\n"
        "NOTE = '`old` is ' + 'deprecated {}'\n"
        f"warnings.warn({expression}, FutureWarning)\n"
    )
    [finding] = census.scan_source(source, "m.py", "pkg")
    assert finding.message == rendered


def test_a_tree_without_the_areas_gives_nothing(tmp_path):
    _write(tmp_path, "torch/nn/module.py", FSDP_MODULE)
    assert census.scan_tree(tmp_path) == []


def test_cli_prints_the_table_of_a_tree(tree, capsys):
    assert census.main(["--root", str(tree)]) == 0
    out = capsys.readouterr().out
    line = (
        FSDP_MODULE.splitlines().index(
            'warnings.warn("the module `old_home` is deprecated", DeprecationWarning)'
        )
        + 1
    )
    assert f"torch/distributed/fsdp/planner.py:{line} [DeprecationWarning] <module>:" in out
    assert "   8  torch.distributed.fsdp" in out
    assert "  10  in all" in out


def test_cli_rejects_a_missing_root_and_unparsable_source(tmp_path, capsys):
    with pytest.raises(SystemExit):
        census.main(["--root", str(tmp_path / "absent")])
    _write(tmp_path, "torch/utils/checkpoint.py", "def broken(:\n")
    assert census.main(["--root", str(tmp_path)]) == 2
    assert "cannot parse torch/utils/checkpoint.py:1" in capsys.readouterr().err


@pytest.mark.slow
def test_the_census_imports_neither_torch_nor_lightning():
    code = (
        "import sys\n"
        "from codemods.census.scan import scan_installed\n"
        "scan_installed()\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in "
        "{'torch', 'lightning', 'pytorch_lightning', 'lightning_fabric'})\n"
        "assert not loaded, loaded\n"
    )
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr


def _entry_id(entry: Deprecation) -> str:
    return f"{entry.package}:{entry.message[:40]}"


# --- (b) the installed releases: every warning triaged, the release columns hold --------------


def _release(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", text.split("+")[0])[:3])


def _measured_version(top: str, entry: Deprecation) -> tuple[int, ...] | None:
    """The installed release of a top-level package, if it is one the triage measured.

    Each top-level package is its own distribution (``pytorch_lightning`` may be installed
    at another release than ``lightning``); one between two measured releases proves
    nothing about an entry's span, so it counts as unknown.
    """
    try:
        installed = _release(version(top))
    except PackageNotFoundError:
        return None
    measured = {_release(r) for r in RELEASES[entry.framework]}
    return installed if installed in measured else None


def _in_span(installed: tuple[int, ...], entry: Deprecation) -> bool:
    return _release(entry.first) <= installed and (
        entry.last is None or installed <= _release(entry.last)
    )


def _scan_installed() -> list[census.Finding]:
    """``census.scan_installed()``, kept between runs while nothing it reads has changed.

    The scan parses every file of the areas (seconds, in each worker's collection); its
    answer is kept (``tests/kept.py``) under a hash of the scanner's source, the areas
    and every file it scans, path and content.
    """
    roots = census.installed_roots({area.top for area in census.AREAS})
    scanned = [
        path
        for top, root in sorted(roots.items())
        for area in census.AREAS
        if area.top == top
        for path in census._area_files(root, area)
    ]
    key = fingerprint([Path(census.__file__), *scanned], repr(census.AREAS))
    found = kept("census", key, lambda: [dataclasses.asdict(f) for f in census.scan_installed()])
    return [census.Finding(**f) for f in found]


INSTALLED = _scan_installed()


def test_the_installed_torch_has_deprecations_to_find():
    if find_spec("torch") is None:
        pytest.skip("torch is not installed")
    # every matrix release has at least the `optim_input` warning (since 1.13)
    assert any(f.package == "torch.distributed.fsdp" for f in INSTALLED)


@pytest.mark.parametrize("finding", INSTALLED, ids=lambda f: f"{f.file}:{f.line}")
def test_every_installed_deprecation_is_triaged(finding):
    entries = matching(finding.package, finding.message, finding.scope)
    assert len(entries) == 1, (
        f"{finding.file}:{finding.line} ({finding.scope}) warns\n    {finding.message}\n"
        f"and {len(entries)} entries of codemods/registry/deprecations.py match it. Add one "
        "entry for it (a pattern, the first release with it, and the rule that answers it "
        "or why none does), then run python -m codemods.census --render docs/coverage.md"
    )
    [entry] = entries
    installed = _measured_version(finding.file.split("/", 1)[0], entry)
    if installed is not None:
        assert _in_span(installed, entry), (
            f"{finding.file} of release {installed} has it, the triage says "
            f"{entry.first}..{entry.last or ''}: remeasure with python .ci/census_releases.py"
        )


@pytest.mark.parametrize("entry", DEPRECATIONS, ids=_entry_id)
def test_each_entry_in_the_installed_release_span_is_found(entry):
    tops = {area.top for area in census.AREAS if area.package == entry.package}
    expected = {top for top in tops if (v := _measured_version(top, entry)) and _in_span(v, entry)}
    if not expected:
        pytest.skip("no installed release measured within this entry's span")
    found = {
        f.file.split("/", 1)[0] for f in INSTALLED if entry.matches(f.package, f.message, f.scope)
    }
    assert expected <= found, (
        f"the triage says {sorted(expected - found)} (installed) have {entry.message!r}, the "
        "census does not find it there: remeasure with python .ci/census_releases.py"
    )


# --- (c) every entry answered by a rule that names it, or out of scope with a reason ----------


@pytest.mark.parametrize("entry", DEPRECATIONS, ids=_entry_id)
def test_each_entry_is_answered_or_out_of_scope(entry):
    assert (entry.answered_by is None) != (entry.out_of_scope is None)
    if entry.out_of_scope is not None:
        assert entry.out_of_scope.strip()
        return
    codes = {rule.code for rule in REGISTRY}
    assert entry.answered_by in codes, f"no rule {entry.answered_by} in the registry"
    rule = REGISTRY[entry.answered_by]
    assert any(re.search(pattern, entry.message) for pattern in rule.warns), (
        f"{rule.code}'s warns does not match {entry.message!r}"
    )


@pytest.mark.parametrize("entry", DEPRECATIONS, ids=_entry_id)
def test_each_entry_is_well_formed(entry):
    assert re.search(entry.pattern, entry.message), "the pattern must match the message"
    if entry.scope is not None:
        re.compile(entry.scope)
    assert {entry.package} <= {area.package for area in census.AREAS}
    releases = RELEASES[entry.framework]
    assert entry.first in releases
    if entry.last is not None:
        assert entry.last in releases[releases.index(entry.first) : -1]


def test_entries_sharing_a_text_are_told_apart_by_scope():
    for entry in DEPRECATIONS:
        for other in DEPRECATIONS:
            if other is entry or other.package != entry.package:
                continue
            if re.search(entry.pattern, other.message) or re.search(other.pattern, entry.message):
                assert entry.scope and other.scope and entry.scope != other.scope, (
                    f"two entries match {entry.message!r}: give each a distinct scope"
                )


@pytest.mark.parametrize("rule", [r for r in REGISTRY if r.warns], ids=lambda r: r.code)
def test_a_rule_that_names_warnings_answers_a_triaged_one(rule):
    # a pattern may be written for an older release's wording, so each need not match the
    # newest text the triage keeps; but the rule must answer at least one entry
    for pattern in rule.warns:
        re.compile(pattern)
    assert any(entry.answered_by == rule.code for entry in DEPRECATIONS), (
        f"{rule.code} names warnings in `warns`, but no entry of "
        "codemods/registry/deprecations.py is answered by it"
    )


# --- (d) the coverage page ----------------------------------------------------------------------


def test_the_coverage_page_is_current():
    assert PAGE.read_text(encoding="utf-8") == render_page(), (
        "docs/coverage.md is stale: run python -m codemods.census --render docs/coverage.md"
    )


def test_the_coverage_page_lists_every_entry_and_links_its_rule():
    page = render_page()
    for entry in DEPRECATIONS:
        assert entry.message.replace("|", "\\|") in page
        if entry.answered_by:
            assert f"[{entry.answered_by}](rules.md#{entry.answered_by.lower()})" in page


def test_render_check_detects_a_stale_page(tmp_path, capsys):
    stale = tmp_path / "coverage.md"
    stale.write_text("# old\n", encoding="utf-8")
    assert census.main(["--render", str(stale), "--check"]) == 1
    assert census.main(["--render", str(stale)]) == 0
    assert census.main(["--render", str(stale), "--check"]) == 0
    assert stale.read_text(encoding="utf-8") == render_page()


# --- the release measurement script ---------------------------------------------------------------


def _releases_script(cache: Path) -> subprocess.CompletedProcess:
    script = ROOT / ".ci" / "census_releases.py"
    return subprocess.run(
        [sys.executable, str(script), str(cache), "--check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )


def test_the_release_script_flags_missing_releases_and_untriaged_warnings(tmp_path):
    _write(tmp_path, "torch-2.13.0/torch/distributed/fsdp/api.py", FSDP_MODULE)
    run = _releases_script(tmp_path)
    assert run.returncode == 1, run.stderr
    assert f"MISSING {tmp_path / 'torch-1.13.1'}" in run.stdout
    assert "UNTRIAGED 2.13.0 torch/distributed/fsdp/api.py:" in run.stdout
    # an entry of 2.4.1 and later is absent from this cache: its columns disagree
    assert re.search(
        r"BAD torch\.distributed\.fsdp +first=None last=None \(recorded 2\.4\.1", run.stdout
    )
