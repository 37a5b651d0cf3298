"""The generic behaviour of each kind of change (``codemods.registry.ChangeKind``).

One module per kind: a rule of that kind behaves as its module says unless it has a
module of its own in :mod:`codemods.rules`. :mod:`codemods.rules.index` picks the one.
"""
