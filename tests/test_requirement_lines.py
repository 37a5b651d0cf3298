"""The look that passes over requirement lines of other packages without packaging's parser.

``another_distribution`` may only say yes where packaging reads the line as a valid
requirement of a distribution that sets no framework floor: anything else goes to the
parser, which counts it or reports it.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from codemods.cli.floors import declared_floors
from codemods.cli.requirement_names import FRAMEWORKS, another_distribution


@pytest.mark.parametrize(
    ("text", "other"),
    [
        ("numpy", True),
        ("numpy>=1.24,<2", True),
        ("  einops >= 0.6 , != 0.7.1 ", True),
        ("transformers[torch]~=4.30", True),
        ("ruamel.yaml==0.17.21", True),
        ("torch>=2.0", False),
        ("Torch", False),
        ("pytorch_lightning>=1.9", False),
        ("Lightning.Fabric<2.2", False),
        ("lightning[extra]", False),
        ("numpy>=>1", False),  # refused by packaging: left to it, which reports it
        ("numpy>=1.0,", False),
        ("numpy~=1", False),  # `~=` needs two release numbers
        ("numpy==1.*", False),  # wildcards, pre-releases, markers and URLs: the parser's
        ("numpy>=2.0rc1", False),
        ("numpy; python_version < '3.9'", False),
        ("mylib @ https://example.com/mylib-1.0.tar.gz", False),
        ("-e .", False),
        ("", False),
    ],
)
def test_plain_lines_of_other_packages_are_recognised(text, other):
    assert another_distribution(text) is other


_NAME = st.sampled_from(
    ["numpy", "torch", "Py-Torch", "pytorch.lightning", "lightning_fabric", "a", "x9", "_x", "a-"]
)
_PIECE = st.sampled_from(
    ["", " ", "[", "]", ",", "extra", ">=", "<=", "<", ">", "==", "!=", "~=", "===", "=", "!",
     "1", "1.2", "2.0.1", ".", "*", "rc1", ";", "@", "-"]
)  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(_NAME, st.lists(_PIECE, max_size=8))
def test_a_line_it_passes_over_is_a_valid_requirement_of_another_package(name, pieces):
    text = name + "".join(pieces)
    if not another_distribution(text):
        return
    try:
        requirement = Requirement(text)
    except InvalidRequirement as exc:
        pytest.fail(f"{text!r} passed over, but packaging refuses it: {exc}")
    assert canonicalize_name(requirement.name) not in FRAMEWORKS


def test_a_requirements_file_of_many_packages_still_declares_torch(tmp_path):
    lines = [f"package{i}>={i}.0" for i in range(50)]
    lines[25:25] = ["torch>=1.13,<2.3", "numpy>=>1"]
    (tmp_path / "requirements.txt").write_text("\n".join(lines) + "\n")
    floors = declared_floors(tmp_path)
    assert str(floors.torch) == "1.13"
    assert floors.sources["torch"] == "requirements.txt:26: torch>=1.13,<2.3"
    assert len(floors.problems) == 1
    assert floors.problems[0].startswith(
        "requirements.txt:27: cannot parse requirement 'numpy>=>1'"
    )
