"""A run's settings as the caches keyed on them see them: hashed once, equal by their fields."""

from __future__ import annotations

import pickle

import pytest

from codemods.releases import Releases
from codemods.settings import Settings


@pytest.mark.parametrize(
    "settings",
    [
        Settings(),
        Settings(select=("FSDP",), ignore=("FSDP2",), fix=True),
        Settings(releases=Releases.parse(torch="2.0"), lightning_bases=frozenset({"Base"})),
    ],
)
def test_the_kept_hash_is_the_fields_hash(settings):
    first = hash(settings)
    assert hash(settings) == first  # kept, not made again
    same = Settings(**{name: getattr(settings, name) for name in Settings._fields})
    assert same == settings and hash(same) == first
    copied = pickle.loads(pickle.dumps(settings))  # a worker's copy hashes alike
    assert copied == settings and hash(copied) == first
    changed = settings.replace(unsafe_fixes=not settings.unsafe_fixes)
    assert changed != settings and hash(changed) != first
    with pytest.raises(AttributeError):
        settings._hash = 0  # frozen still
