"""FSDP224: ``Trainer(strategy="fsdp")`` across Lightning 2.0, where the name changed meaning.

Lightning 1.x gave the Trainer's ``"fsdp"`` to FairScale's strategy; 2.0 gave it to
torch's FSDP, with no warning. The finding comes where the range holds both sides,
judged as each project declares it (or by the file's evidence), and never for Fabric's
``"fsdp"``, which was torch's all along.
"""

from __future__ import annotations

import pytest

from codemods.engine.run import run
from codemods.lint import main as lint
from codemods.releases import Releases
from codemods.settings import Settings

TRAINER = 'from pytorch_lightning import Trainer\ntrainer = Trainer(strategy="fsdp", devices=2)\n'


@pytest.mark.parametrize(
    ("span", "reported"),
    [
        ("1.6..", True),  # FairScale's name, then torch's
        ("1.9..2.1", True),
        ("2.0..", False),  # torch's all along
        ("1.6..1.9", False),  # FairScale's all along
        ("1.9", False),
    ],
)
def test_reported_where_the_range_holds_both_sides_of_2_0(span, reported):
    settings = Settings(releases=Releases.parse(lightning=span))
    codes = [f.code for f in run(TRAINER.encode(), settings).findings]
    assert codes == (["FSDP224"] if reported else [])


@pytest.mark.parametrize(
    ("declared", "reported"),
    [
        ('[project]\nname = "p"\ndependencies = ["pytorch-lightning>=1.8"]\n', True),
        ('[project]\nname = "p"\ndependencies = ["lightning>=2.1"]\n', False),
        ('[tool.fsdp-compat]\ntarget-lightning = "latest"\n', False),
        (None, True),  # nothing declared: the file's evidence, pytorch_lightning's Trainer
    ],
)
def test_a_project_declares_which_side_it_runs_on(tmp_path, capsys, declared, reported):
    if declared is not None:
        (tmp_path / "pyproject.toml").write_text(declared)
    (tmp_path / "train.py").write_text(TRAINER)
    code = lint([str(tmp_path / "train.py")])
    out = capsys.readouterr().out
    assert (code, "FSDP224" in out) == ((1, True) if reported else (0, False))


def test_evidence_of_lightning_2_settles_it(tmp_path, capsys):
    # FSDPStrategy is Lightning 2.0's name: the file runs on 2.0 and later only.
    (tmp_path / "train.py").write_text(
        "from lightning.pytorch import Trainer\n"
        "from lightning.pytorch.strategies import FSDPStrategy\n"
        "strategy = FSDPStrategy()\n"
        'trainer = Trainer(strategy="fsdp")\n'
    )
    assert lint([str(tmp_path / "train.py")]) == 0


@pytest.mark.parametrize(
    "source",
    [
        'from lightning.fabric import Fabric\nfabric = Fabric(strategy="fsdp")\n',
        'from lightning_lite import LightningLite\nlite = LightningLite(strategy="fsdp")\n',
        'from pytorch_lightning import Trainer\ntrainer = Trainer(strategy="fsdp_native")\n',
    ],
)
def test_fabric_and_other_names_are_not_reported(source):
    settings = Settings(select=("FSDP224",), releases=Releases.parse(lightning="1.6.."))
    assert run(source.encode(), settings).findings == []


def test_a_name_bound_once_is_followed():
    source = (
        "import pytorch_lightning as pl\n\n\ndef fit():\n"
        '    strategy = "fsdp"\n'
        "    return pl.Trainer(strategy=strategy)\n"
    )
    settings = Settings(releases=Releases.parse(lightning="1.8.."))
    found = run(source.encode(), settings).findings
    assert [(f.code, f.line, f.fixable) for f in found] == [("FSDP224", 6, False)]
