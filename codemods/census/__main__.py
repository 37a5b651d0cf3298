"""``python -m codemods.census``: the deprecation census (see :mod:`codemods.census.scan`)."""

import sys

from codemods.census.scan import main

if __name__ == "__main__":
    sys.exit(main())
