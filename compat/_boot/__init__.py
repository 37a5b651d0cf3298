"""The folder put first on ``PYTHONPATH`` for the processes a drop-in program starts.

It holds a ``sitecustomize`` (see :mod:`compat._boot.sitecustomize`); nothing here runs
when the package is imported as ``compat._boot``.
"""
