"""Source-to-source tools for FSDP code: ``codemods.migrate`` rewrites, ``codemods.lint`` checks.

Nothing in this package imports torch: the pre-commit hook installs it without torch.
"""

from codemods._version import __version__

__all__ = ["__version__"]
