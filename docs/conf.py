"""Sphinx configuration for the fsdp-compat documentation.

Build with ``sphinx-build -W -b html docs OUT`` (the ``docs`` extra); the guide's and the
API's examples run with ``sphinx-build -b doctest docs OUT``. The API reference imports
``compat``, which needs torch (and Lightning for ``compat.strategies``).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from codemods import __version__  # noqa: E402

project = "fsdp-compat"
author = "the fsdp-compat developers"
copyright = "2026, the fsdp-compat developers"  # noqa: A001
release = version = __version__

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.doctest",
    "sphinx.ext.napoleon",
]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"
exclude_patterns = ["_build", "matrix/**"]

# Headings down to ## get anchors: the rule reference links to #fsdp101 and so on.
myst_heading_anchors = 3
myst_enable_extensions = ["colon_fence"]

napoleon_google_docstring = True
napoleon_numpy_docstring = False
autodoc_member_order = "bysource"
autodoc_typehints = "description"
# Document what each compat module defines, not the torch names it re-exports.
autodoc_default_options = {"members": True, "ignore-module-all": True}

doctest_global_setup = "import warnings\nwarnings.simplefilter('ignore')"
# Docstring examples need their module's globals: tests/test_doctests.py runs them
# with doctest.testmod. The builder runs the guides' own ``doctest`` blocks.
doctest_test_doctest_blocks = ""

html_theme = "alabaster"
html_title = f"fsdp-compat {release}"
