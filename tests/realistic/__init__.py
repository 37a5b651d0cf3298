"""Parts of the realistic legacy tree that ``tests/realistic_tree.py`` writes.

Every template here is of this project's own writing, in the shapes real training code,
model files, Lightning modules, FairScale code and tests take; none is copied.
"""
