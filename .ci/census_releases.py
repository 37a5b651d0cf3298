r"""Measure the release columns of the deprecation triage from unpacked releases.

    python .ci/census_releases.py CACHE            # print what each release has
    python .ci/census_releases.py CACHE --check    # exit 1 where the triage disagrees

``CACHE`` holds one directory per release, ``torch-2.13.0/`` and ``lightning-2.6.6/``,
each with the release's sources unpacked under their top-level package
(``torch-2.13.0/torch/distributed/...``; only the census areas are needed). To build one:

    PIP_CONSTRAINT=/dev/null pip download --no-deps torch==2.13.0 -d CACHE/wheels
    unzip -q CACHE/wheels/torch-2.13.0-*.whl 'torch/distributed/*' \
        'torch/utils/checkpoint.py' -d CACHE/torch-2.13.0

(any platform's wheel will do: the Python sources are the same). The releases measured
are ``TORCH_RELEASES`` and ``LIGHTNING_RELEASES`` of ``codemods/registry/deprecations.py``;
one missing from the cache is reported and, with ``--check``, fails.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from codemods.census.scan import Finding, scan_tree  # noqa: E402
from codemods.registry.deprecations import (  # noqa: E402
    DEPRECATIONS,
    LIGHTNING_RELEASES,
    TORCH_RELEASES,
    Deprecation,
    matching,
)

RELEASES = {"torch": TORCH_RELEASES, "lightning": LIGHTNING_RELEASES}


def measure(
    cache: Path,
) -> tuple[dict[Deprecation, list[str]], list[tuple[str, Finding]], list[str]]:
    """Which releases have each entry; the findings no entry (or several) match; missing trees."""
    seen: dict[Deprecation, list[str]] = {entry: [] for entry in DEPRECATIONS}
    strays: list[tuple[str, Finding]] = []
    missing: list[str] = []
    for framework, releases in RELEASES.items():
        for release in releases:
            tree = cache / f"{framework}-{release}"
            if not tree.is_dir():
                missing.append(tree.name)
                continue
            for finding in scan_tree(tree):
                entries = matching(finding.package, finding.message, finding.scope)
                if len(entries) != 1:
                    strays.append((release, finding))
                for entry in entries:
                    if release not in seen[entry]:
                        seen[entry].append(release)
    return seen, strays, missing


def measured_span(entry: Deprecation, releases: list[str]) -> tuple[str | None, str | None]:
    """First release with it, and its last one if the newest measured release lacks it."""
    if not releases:
        return None, None
    newest = RELEASES[entry.framework][-1]
    return releases[0], (None if releases[-1] == newest else releases[-1])


def main(argv: list[str] | None = None) -> int:
    """Print the measured columns; with ``--check`` exit 1 on any disagreement."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("cache", type=Path)
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args(argv)
    seen, strays, missing = measure(args.cache)
    wrong = 0
    for entry, releases in seen.items():
        first, last = measured_span(entry, releases)
        agrees = (first, last) == (entry.first, entry.last)
        wrong += not agrees
        print(
            f"{'ok ' if agrees else 'BAD'} {entry.package:36} first={first} last={last} "
            f"(recorded {entry.first}..{entry.last or ''}) in {' '.join(releases) or 'none'}\n"
            f"    {entry.message[:110]}"
        )
    for release, finding in strays:
        count = len(matching(finding.package, finding.message, finding.scope))
        print(
            f"{'UNTRIAGED' if count == 0 else 'AMBIGUOUS'} {release} {finding.file}:{finding.line}"
        )
        print(f"    {finding.message}")
    for name in missing:
        print(f"MISSING {args.cache / name}")
    print(f"{len(seen) - wrong} entries agree, {wrong} disagree, {len(strays)} stray findings")
    return 1 if args.check and (wrong or strays or missing) else 0


if __name__ == "__main__":
    sys.exit(main())
