"""Release numbers read without ``packaging`` order and print as ``packaging`` has them."""

from __future__ import annotations

import itertools
import operator

import pytest
from packaging.version import InvalidVersion, Version

from codemods.registry import REGISTRY
from codemods.release_numbers import Release, release

TEXTS = ("1", "1.0", "1.0.0", "0.9", "1.12", "1.12.1", "2", "2.0", "2.0.1", "2.4", "10.0", " v2.4 ")
TEXTS += ("V2.4", "\t2.4\n", "01.02")
#: Not plain: read by ``packaging``, their pre-, post-, dev- and local parts dropped.
OTHERS = ("2.4rc1", "2.4.post1", "2.4.dev0", "2.4+cu121", "1!1.0")
OPERATORS = (operator.lt, operator.le, operator.eq, operator.ne, operator.gt, operator.ge)


def _packaging(text: str) -> Version:
    return Version(Version(text).base_version)


@pytest.mark.parametrize(("left", "right"), list(itertools.product(TEXTS + OTHERS, repeat=2)))
def test_releases_compare_as_packaging_s_versions(left, right):
    ours, theirs = release(left), _packaging(left)
    for compare in OPERATORS:
        expected = compare(theirs, _packaging(right))
        assert compare(ours, release(right)) is expected
        # beside a declaration's Version, either way round
        assert compare(ours, Version(right)) is compare(theirs, Version(right))
        assert compare(Version(right), ours) is compare(Version(right), theirs)
    assert str(ours) == str(theirs) == ours.base_version
    if ours == release(right):
        assert hash(ours) == hash(release(right))


def test_a_plain_release_is_read_without_packaging():
    assert type(release("2.4")) is Release and release("2.4").release == (2, 4)
    assert (release("2").major, release("2").minor, release("2.13.1").minor) == (2, 0, 13)
    assert type(release("1!1.0")) is Version  # an epoch stays packaging's


@pytest.mark.parametrize(
    "text", ["", "two", "2.4..", "2..4", "latest", "vv2.4", "vV2.4", " v 2.4", ".2", "２.4", "2 .4"]
)
def test_a_text_that_is_no_version_is_refused_as_packaging_refuses_it(text):
    with pytest.raises(InvalidVersion):
        Version(text)
    with pytest.raises(InvalidVersion):
        release(text)


def test_every_release_a_rule_names_is_plain():
    named = {v for rule in REGISTRY for v in (rule.introduced, rule.deprecated, rule.removed) if v}
    assert named and all(type(release(text)) is Release for text in named)
