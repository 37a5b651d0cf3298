"""What a requirement given as a URL or path installs: its distribution and, where named, release.

A requirements line may be a wheel's URL (``https://download.pytorch.org/whl/cu117/
torch-2.0.1%2Bcu117-cp39-cp39-linux_x86_64.whl``), an archive, a VCS URL
(``git+https://github.com/Lightning-AI/lightning@2.1.0``) or a path. Its distribution is
read from the file name (PEP 427 for wheels, the sdist convention for archives), from an
``#egg=`` fragment, or from the repository's or folder's own name; only a name that *is*
a framework's counts (``lightning-minGPT`` and ``torch-optimizer`` are other packages). A
wheel or archive also names its release; a VCS URL or a path does not.

Example:
    >>> pinned("https://download.pytorch.org/whl/cu117/torch-2.0.1%2Bcu117-cp39-cp39-linux_x86_64.whl")
    ('torch', <Version('2.0.1+cu117')>)
    >>> pinned("git+https://github.com/Lightning-AI/lightning-minGPT@bench")  # not Lightning
    ('lightning-mingpt', None)
    >>> pinned("git+https://github.com/PyTorchLightning/pytorch-lightning.git@3e1d2c4")
    ('pytorch-lightning', None)
"""  # noqa: E501

from __future__ import annotations

import re
from urllib.parse import unquote, urlsplit

from packaging.utils import (
    InvalidSdistFilename,
    InvalidWheelFilename,
    canonicalize_name,
    parse_sdist_filename,
    parse_wheel_filename,
)
from packaging.version import Version

__all__ = ["pinned"]

_EGG = re.compile(r"(?:^|&)egg=([A-Za-z0-9][A-Za-z0-9._-]*)")
_VCS = re.compile(r"^(git|hg|svn|bzr)\+", re.IGNORECASE)


def pinned(text: str) -> tuple[str | None, Version | None]:
    """The canonical distribution name ``text`` installs and its release, where they are named.

    Args:
        text: A URL or a path, as a requirements line or a ``name @ url`` gives it.

    Returns:
        ``(name, release)``: ``name`` None where nothing names the distribution,
        ``release`` None where nothing names the release.

    Example:
        >>> pinned("./vendor/pytorch_lightning-1.9.4.tar.gz")
        ('pytorch-lightning', <Version('1.9.4')>)
        >>> pinned("git+https://github.com/x/fork.git@main#egg=torch")
        ('torch', None)
    """
    parts = urlsplit(text.strip())
    egg = _EGG.search(parts.fragment)
    path = unquote(parts.path).rstrip("/")
    leaf = path.rpartition("/")[2]
    if not _VCS.match(text):
        try:
            name, version, *_ = parse_wheel_filename(leaf)
            return canonicalize_name(name), version
        except InvalidWheelFilename:
            pass
        try:
            name, version = parse_sdist_filename(leaf)
            return canonicalize_name(name), version
        except InvalidSdistFilename:
            pass
    if egg:
        return canonicalize_name(egg.group(1)), None
    # a repository or folder: its own name, without `.git` and an `@ref`
    leaf = leaf.partition("@")[0].removesuffix(".git")
    return (canonicalize_name(leaf), None) if leaf.strip(".") else (None, None)
