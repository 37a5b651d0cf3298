"""python -m codemods.lint: findings, formats, exit codes, suppression and configuration."""

from __future__ import annotations

import io
import json
import re
import sys
import textwrap
from pathlib import Path

import pytest

from codemods.engine.run import run
from codemods.lint import main
from codemods.registry import REGISTRY
from codemods.settings import Settings
from tests.migrate_fixtures import FIXTURES

# One safe fix (FSDP101), one unsafe (FSDP205), one manual (FSDP304).
LEGACY = """\
from torch.distributed.fsdp.wrap import default_auto_wrap_policy
from pytorch_lightning import Trainer
from fairscale.nn.wrap import auto_wrap

policy = default_auto_wrap_policy
trainer = Trainer(strategy="ddp_fully_sharded")
"""
TRANSFORMER_PARTIAL = """\
import functools
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy

policy = functools.partial(transformer_auto_wrap_policy, transformer_layer_cls={Block})
model = FSDP(model, auto_wrap_policy=policy)
"""


@pytest.fixture(autouse=True)
def _at_the_current_releases(current_releases):
    """Tests of the command line, not of ranges (tests/test_ranges.py): the scratch project
    declares the current releases, so each fix's new form runs on the whole range."""


@pytest.fixture
def project(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "legacy.py").write_text(LEGACY)
    (tmp_path / "src" / "clean.py").write_text("import torch\n")
    (tmp_path / "src" / "notes.txt").write_text(LEGACY)
    return tmp_path


def lint(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_text_lines_are_sorted_with_fix_markers_and_a_summary(project, capsys):
    code, out, _ = lint(capsys, "src")
    assert code == 1
    lines = out.splitlines()
    # line 5's use of the renamed name is its import's finding (line 1)
    assert lines[:3] == [
        "src/legacy.py:1:41: FSDP101 [*] " + REGISTRY["FSDP101"].message,
        "src/legacy.py:3:31: FSDP304 " + REGISTRY["FSDP304"].message,
        "src/legacy.py:6:19: FSDP205 " + REGISTRY["FSDP205"].message,
    ]
    assert lines[3] == "Found 3 findings."
    assert lines[4] == (
        "[*] 1 fixable with the `--fix` option "
        "(1 hidden fix can be enabled with the `--unsafe-fixes` option)."
    )
    assert (project / "src" / "legacy.py").read_text() == LEGACY  # lint writes nothing


def test_fix_applies_safe_fixes_and_reports_the_rest(project, capsys):
    code, out, _ = lint(capsys, "--fix", "src")
    assert code == 1
    text = (project / "src" / "legacy.py").read_text()
    assert "size_based_auto_wrap_policy" in text and '"ddp_fully_sharded"' in text
    assert "Found 3 findings (1 fixed, 2 remaining)." in out
    code, out, _ = lint(capsys, "--fix", "--unsafe-fixes", "src")
    assert code == 1 and 'strategy="fsdp"' in (project / "src" / "legacy.py").read_text()
    # What it left, then the unsafe fix it applied, named with what it may change.
    lines = out.splitlines()[:-1]
    assert [line.split()[1] for line in lines] == ["FSDP304", "FSDP205"]
    assert lines[1].endswith("[unsafe fix applied: behaviour may change]")


def test_exit_codes(project, capsys):
    assert lint(capsys, "src/clean.py")[0] == 0
    assert lint(capsys, "--exit-zero", "src")[0] == 0
    (project / "src" / "broken.py").write_text(
        "from torch.distributed.fsdp.wrap import default_auto_wrap_policy(\n"
    )
    # A file that does not parse is a finding (ruff's invalid-syntax), exit 1.
    code, out, _ = lint(capsys, "src")
    assert code == 1 and "src/broken.py:1:65: invalid-syntax invalid syntax" in out
    assert lint(capsys, "--exit-zero", "src")[0] == 0
    (project / "src" / "broken.py").unlink()
    (project / "src" / "binary.py").write_bytes(b"\0" + LEGACY.encode())
    code, _, err = lint(capsys, "src")
    assert code == 2 and "error: src/binary.py: not Python source" in err
    assert lint(capsys, "--exit-zero", "src")[0] == 2  # errors are not findings
    with pytest.raises(SystemExit) as exc:
        main(["--output-format", "xml", "src"])
    assert exc.value.code == 2
    code, _, err = lint(capsys, "missing/")
    assert code == 2 and "missing/: no such file or directory" in err


def test_zero_files_is_success(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "notes.md").write_text("default_auto_wrap_policy\n")
    code, out, _ = lint(capsys, "docs")
    assert code == 0 and "No Python files found." in out
    assert lint(capsys)[0] == 0  # pre-commit with nothing staged passes no names


def test_json_output(project, capsys):
    code, out, _ = lint(capsys, "--output-format", "json", "src")
    data = json.loads(out)
    assert code == 1 and len(data) == 3
    first = data[0]
    assert first["code"] == "FSDP101" and first["filename"] == "src/legacy.py"
    assert first["location"] == {"row": 1, "column": 41}
    # ruff's end_location: the end of the name the finding points at.
    assert first["end_location"] == {"row": 1, "column": 41 + len("default_auto_wrap_policy")}
    # ruff's fix.edits: the lines this finding's fix rewrites (rule by rule, as
    # `--select CODE --fix` would write them).
    assert first["fix"] == {
        "applicability": "safe",
        "edits": [
            {
                "content": "from torch.distributed.fsdp.wrap import size_based_auto_wrap_policy\n",
                "location": {"row": 1, "column": 1},
                "end_location": {"row": 2, "column": 1},
            },
            {  # the use the import's fix renames with it
                "content": "policy = size_based_auto_wrap_policy\n",
                "location": {"row": 5, "column": 1},
                "end_location": {"row": 6, "column": 1},
            },
        ],
    }
    assert {d["code"]: d["fix"] for d in data}["FSDP304"] is None
    unsafe = {d["code"]: d["fix"] for d in data}["FSDP205"]
    assert unsafe["applicability"] == "unsafe"
    assert [edit["content"] for edit in unsafe["edits"]] == ['trainer = Trainer(strategy="fsdp")\n']
    # Applying every finding's edits gives what --fix --unsafe-fixes writes.
    lines = LEGACY.splitlines(keepends=True)
    for edit in sorted(
        (e for d in data if d["fix"] for e in d["fix"]["edits"]),
        key=lambda e: -e["location"]["row"],
    ):
        start, end = edit["location"]["row"] - 1, edit["end_location"]["row"] - 1
        lines[start:end] = [edit["content"]]
    assert lint(capsys, "--fix", "--unsafe-fixes", "src")[0] == 1
    assert "".join(lines) == (project / "src" / "legacy.py").read_text()


# A workflow command: ::error <key=value,...>::<message>, values and message escaped.
_COMMAND = re.compile(r"^::error (?P<props>[^:]*)::(?P<message>.*)$")


def test_github_output_is_valid_workflow_commands(project, capsys):
    (project / "src" / "odd, name:1.py").write_text(
        "import pytorch_lightning as pl\npl.Trainer(precision=16)\n"
    )
    code, out, _ = lint(capsys, "--output-format", "github", "src")
    assert code == 1
    lines = out.splitlines()
    assert len(lines) == 4
    for line in lines:
        match = _COMMAND.match(line)
        assert match, line
        props = dict(p.split("=", 1) for p in match.group("props").split(","))
        assert set(props) == {"title", "file", "line", "col"}
        assert props["line"].isdigit() and props["col"].isdigit()
        assert "\n" not in match.group("message") and "%0A" not in props["file"]
    odd = [line for line in lines if "odd" in line][0]
    assert "file=src/odd%2C name%3A1.py" in odd  # `,` and `:` escaped in properties
    assert "title=fsdp-lint (FSDP206)" in odd


def test_sarif_has_what_sarif_2_1_0_requires(project, capsys):
    code, out, _ = lint(capsys, "--output-format", "sarif", "src")
    log = json.loads(out)
    assert code == 1
    # sarifLog: version and runs are required; version is the const "2.1.0".
    assert log["version"] == "2.1.0" and isinstance(log["runs"], list) and len(log["runs"]) == 1
    run_ = log["runs"][0]
    # run: tool is required; tool: driver; toolComponent: name.
    driver = run_["tool"]["driver"]
    assert driver["name"] == "fsdp-lint" and isinstance(driver["version"], str)
    rule_ids = [rule["id"] for rule in driver["rules"]]
    assert len(rule_ids) == len(set(rule_ids))
    for rule in driver["rules"]:
        assert rule["shortDescription"]["text"] and rule["id"] in {r.code for r in REGISTRY}
    assert len(run_["results"]) == 3
    for result in run_["results"]:
        # result: message is required (with text); level from the enum; ruleIndex in range.
        assert result["message"]["text"]
        assert result["level"] in {"none", "note", "warning", "error"}
        assert driver["rules"][result["ruleIndex"]]["id"] == result["ruleId"]
        (location,) = result["locations"]
        physical = location["physicalLocation"]
        assert physical["artifactLocation"]["uri"] == "src/legacy.py"
        region = physical["region"]
        assert region["startLine"] >= 1 and region["startColumn"] >= 1
    assert run_["invocations"][0]["executionSuccessful"] is True


def test_statistics_and_explain(project, capsys):
    code, out, _ = lint(capsys, "--statistics", "src")
    assert code == 1
    assert out.splitlines()[0] == "1\tFSDP101\t[*] default-auto-wrap-policy"
    assert "1\tFSDP304\t[ ] fairscale-auto-wrap" in out
    code, out, _ = lint(capsys, "--explain", "fsdp103")
    assert code == 0
    for heading in ("## What it does", "## Why is this bad?", "## Example", "## Fix safety"):
        assert heading in out
    assert "ModuleWrapPolicy({Block})" in out
    code, _, err = lint(capsys, "--explain", "FSDP999")
    assert code == 2 and "no rule 'FSDP999'" in err


@pytest.mark.parametrize(
    ("argv", "codes"),
    [
        ((), {"FSDP101", "FSDP205", "FSDP304"}),
        (("--select", "FSDP1"), {"FSDP101"}),
        (("--ignore", "FSDP1,FSDP304"), {"FSDP205"}),
        (("--select", "FSDP3", "--extend-select", "FSDP205"), {"FSDP205", "FSDP304"}),
    ],
)
def test_select_ignore_extend_select(project, capsys, argv, codes):
    _, out, _ = lint(capsys, "--output-format", "json", *argv, "src")
    assert {d["code"] for d in json.loads(out)} == codes


def test_extend_select_adds_an_opt_in_rule_to_the_defaults(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("m.py").write_text(
        "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
        "from pytorch_lightning import Trainer\n"
        "m = FSDP(m)\nTrainer(precision=16)\n"
    )
    _, out, _ = lint(capsys, "--output-format", "json", "m.py")
    assert {d["code"] for d in json.loads(out)} == {"FSDP206"}
    _, out, _ = lint(capsys, "--output-format", "json", "--extend-select", "FSDP4", "m.py")
    assert {d["code"] for d in json.loads(out)} == {"FSDP206", "FSDP401"}


@pytest.mark.parametrize(("target", "offered"), [("1.13", False), ("2.2", True), (None, True)])
def test_target_torch_decides_whether_module_wrap_policy_is_offered(
    tmp_path, capsys, monkeypatch, target, offered
):
    monkeypatch.chdir(tmp_path)
    Path("p.py").write_text(TRANSFORMER_PARTIAL)
    argv = ["--output-format", "json", *(["--target-torch", target] if target else []), "p.py"]
    found = json.loads(lint(capsys, *argv)[1])
    fixes = [d for d in found if d["code"] == "FSDP103" and d["fix"]]
    assert bool(fixes) is offered
    code, _, _ = lint(capsys, "--fix", *argv[2:])
    assert ("ModuleWrapPolicy" in Path("p.py").read_text()) is offered


def test_target_versions_flag_only_what_is_deprecated_there(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("p.py").write_text(
        "def policy(module, recurse, unwrapped_params):\n    return recurse\n"
        "from lightning.pytorch import Trainer\n"
        "Trainer(precision=16)\n"
    )

    def codes(*argv):
        return {
            d["code"] for d in json.loads(lint(capsys, "--output-format", "json", *argv, "p.py")[1])
        }

    assert codes() == {"FSDP102", "FSDP206"}
    assert codes("--target-torch", "1.13") == {"FSDP206"}  # unwrapped_params is right there
    assert codes("--target-lightning", "1.9") == {"FSDP102"}  # precision=16 was current
    with pytest.raises(SystemExit) as exc:
        main(["--target-torch", "two", "p.py"])
    assert exc.value.code == 2


def test_noqa_comments(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("n.py").write_text(
        "from lightning.pytorch import Trainer\n"
        "a = Trainer(precision=16)  # noqa\n"
        "b = Trainer(precision=16, strategy='fsdp_native')  # noqa: FSDP206\n"
        "c = Trainer(precision=16)  # noqa: FSDP1\n"
        "d = Trainer(precision=16, note='# noqa')\n"
    )
    code, out, _ = lint(capsys, "--output-format", "json", "n.py")
    assert sorted((d["location"]["row"], d["code"]) for d in json.loads(out)) == [
        (3, "FSDP204"),
        (4, "FSDP206"),
        (5, "FSDP206"),
    ]
    lint(capsys, "--fix", "n.py")
    fixed = Path("n.py").read_text().splitlines()
    assert fixed[1] == "a = Trainer(precision=16)  # noqa"  # silenced findings are not fixed
    assert fixed[2] == "b = Trainer(precision=16, strategy='fsdp')  # noqa: FSDP206"


def test_noqa_on_one_use_keeps_a_rename_out_of_the_whole_file():
    source = (
        b"from torch.distributed.fsdp.wrap import default_auto_wrap_policy\n"
        b"a = default_auto_wrap_policy\n"
        b"b = default_auto_wrap_policy  # noqa: FSDP101\n"
    )
    outcome = run(source, Settings(fix=True))
    assert outcome.new_source is None  # renaming the import would break line 3
    # line 2's use is the import's finding, which says the fix is not made
    assert [(f.line, f.fixable) for f in outcome.findings] == [(1, False)]


@pytest.mark.parametrize(
    "directive", ["# fsdp-compat: noqa", "# fsdp-compat: noqa: FSDP1", "# FSDP-Compat: noqa"]
)
def test_file_level_noqa(tmp_path, capsys, monkeypatch, directive):
    monkeypatch.chdir(tmp_path)
    Path("f.py").write_text(f"{directive}\n" + TRANSFORMER_PARTIAL)
    assert lint(capsys, "f.py")[0] == 0
    Path("g.py").write_text(f"x = 1  {directive}\n" + TRANSFORMER_PARTIAL)  # not on its own line
    assert lint(capsys, "g.py")[0] == 1


def write_config(root: Path, body: str) -> None:
    body = textwrap.dedent(body)
    if "target-" not in body:  # judged at the current releases, as the autouse fixture says
        body = 'target-torch = "latest"\ntarget-lightning = "latest"\n' + body
    (root / "pyproject.toml").write_text('[project]\nname = "demo"\n\n[tool.fsdp-compat]\n' + body)


def test_configuration_from_the_nearest_pyproject(project, capsys):
    write_config(
        project,
        """
        ignore = ["FSDP304"]
        exclude = ["generated_*.py"]
        target-lightning = "1.9"

        [tool.fsdp-compat.per-file-ignores]
        "src/legacy.py" = ["FSDP205"]
        """,
    )
    (project / "src" / "generated_old.py").write_text(LEGACY)
    _, out, _ = lint(capsys, "--output-format", "json", "src")
    found = {(d["filename"], d["code"]) for d in json.loads(out)}
    # FSDP205 is deprecated in Lightning 1.9 but ignored for legacy.py; FSDP304 ignored.
    assert found == {("src/legacy.py", "FSDP101")}
    # A file named on the command line is checked even when excluded.
    _, out, _ = lint(capsys, "--output-format", "json", "src/generated_old.py")
    assert {d["code"] for d in json.loads(out)} == {"FSDP101", "FSDP205"}
    # The command line overrides the file.
    _, out, _ = lint(capsys, "--output-format", "json", "--ignore", "FSDP101", "src")
    assert {d["code"] for d in json.loads(out)} == {"FSDP304"}


def test_configuration_is_found_from_a_subdirectory(project, capsys, monkeypatch):
    write_config(project, 'select = ["FSDP3"]\n')
    monkeypatch.chdir(project / "src")
    _, out, _ = lint(capsys, "--output-format", "json", ".")
    assert {d["code"] for d in json.loads(out)} == {"FSDP304"}


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ('selekt = ["FSDP1"]\n', "unknown key 'selekt'"),
        ("select = 3\n", "select must be a list of strings"),
        ('target-torch = "two"\n', "target-torch must be a release"),
        ("select = [\n", "cannot read the configuration"),
    ],
)
def test_bad_configuration_exits_2_naming_the_problem(project, capsys, body, message):
    write_config(project, body)
    with pytest.raises(SystemExit) as exc:
        main(["src"])
    assert exc.value.code == 2 and message in capsys.readouterr().err


def test_default_excludes_and_explicit_files(project, capsys):
    for directory in (".venv", "build", "node_modules", ".git"):
        (project / directory).mkdir(exist_ok=True)
        (project / directory / "legacy.py").write_text(LEGACY)
    _, out, _ = lint(capsys, "--output-format", "json", ".")
    assert {d["filename"] for d in json.loads(out)} == {"src/legacy.py"}
    _, out, _ = lint(capsys, "--output-format", "json", "build/legacy.py")
    assert {d["filename"] for d in json.loads(out)} == {"build/legacy.py"}


def test_stdin_with_a_filename(project, capsys, monkeypatch):
    write_config(project, '[tool.fsdp-compat.per-file-ignores]\n"src/*" = ["FSDP304"]\n')
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(LEGACY.encode())))
    code, out, _ = lint(capsys, "--stdin-filename", "src/piped.py", "-")
    assert code == 1
    assert out.startswith("src/piped.py:1:41: FSDP101 [*] ")
    assert "FSDP304" not in out  # the per-file-ignores of the name given


def test_stdin_fix_writes_the_code_to_stdout(project, capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(LEGACY.encode())))
    code, out, err = lint(capsys, "--fix", "-")
    assert code == 1
    assert out == LEGACY.replace("default_auto_wrap_policy", "size_based_auto_wrap_policy")
    assert "-:3:31: FSDP304" in err


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_after_migrate_only_findings_without_a_fix_remain(name):
    """Lint and migrate agree: migrate fixes every finding lint marks fixable.

    Except where the verifier withholds the fixes of a file: lint does not rewrite, so it
    cannot know; migrate says why for each of them.
    """
    fixture = FIXTURES[name]
    every_fix = Settings(select=fixture.settings.select, fix=True, unsafe_fixes=True)
    outcome = run(fixture.source.encode(), every_fix)
    migrated = outcome.new_source or fixture.source.encode()
    withheld = {(f.line, f.col, f.code) for f in outcome.findings if f.withheld}
    remaining = run(migrated, Settings(select=fixture.settings.select)).findings
    assert not [f for f in remaining if f.fixable and (f.line, f.col, f.code) not in withheld]


def test_no_false_positives_on_code_that_only_looks_old(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("looks_old.py").write_text(
        textwrap.dedent(
            """
            import functools

            def default_auto_wrap_policy(module, recurse, nonwrapped_numel):
                return recurse

            class Config:
                activation_checkpointing = True

                def configure_sharded_model(self):
                    return {"min_num_params": 1e8, "transformer_layer_cls_to_wrap": "Block"}

            hf_fsdp_config = {"min_num_params": 1000, "fsdp_transformer_layer_cls_to_wrap": "Block"}
            note = "use DDPFullyShardedStrategy(min_num_params=...) and unwrapped_params no more"
            policy = functools.partial(default_auto_wrap_policy, nonwrapped_numel=0)
            Config().configure_sharded_model()
            trainer_kwargs = dict(strategy="fsdp_native", precision=16)
            """
        )
    )
    Path("current.py").write_text(FIXTURES["already-current"].source)
    code, out, _ = lint(capsys, ".")
    assert code == 0 and out == "All checks passed!\n"
