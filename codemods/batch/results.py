"""What happened to one file of a run (:class:`FileResult`), apart from the run itself.

:mod:`codemods.batch.runner` makes them; the notebook and syntax-error helpers it uses
fill them in without importing it.
"""

from __future__ import annotations

from codemods.findings import Finding
from codemods.records import Record


class FileResult(Record):
    """What happened to one file.

    Attributes:
        path: The file as named on the command line (or found in a directory).
        findings: What the engine found.
        old_source: The bytes read (kept only when the file changes, for diffs).
        new_source: The rewritten bytes, or None when nothing changes.
        error: Why the file could not be processed (or written), or None.
        written: The new bytes were written to disk.
        crashed: The engine itself failed on this file (a bug to report).
        skipped: Why the new bytes were not written although nothing failed (the file
            changed on disk since it was read), or None.
        reached: False when the run stopped before finishing this file (it is unchanged).
        syntax: Where and why the file does not parse as Python (an ``invalid-syntax``
            finding), when that is its ``error``; None otherwise.
        releases: The releases the file was judged against, where it was parsed
            (``torch 2.4..latest (floor: evidence: ...); Lightning latest``), or None.
        notes: ``note:`` lines for the run's summary about this file (a declared range
            below what the file uses, set aside for it).
        hook: Whether the file's bytes hold one of the words the run asked about (a
            hook rule's method name: see :mod:`codemods.cli.later_classes`); where the
            screening parsed such a file, its names and classes' bases instead of True
            (:func:`~codemods.syntax.class_bases.names_and_bases`).
    """

    _fields = (
        "path",
        "findings",
        "old_source",
        "new_source",
        "error",
        "written",
        "crashed",
        "skipped",
        "reached",
        "syntax",
        "releases",
        "notes",
        "hook",
    )

    def __init__(
        self,
        path: str,
        findings: list[Finding] | None = None,
        old_source: bytes | None = None,
        new_source: bytes | None = None,
        error: str | None = None,
        written: bool = False,
        crashed: bool = False,
        skipped: str | None = None,
        reached: bool = True,
        syntax: Finding | None = None,
        releases: str | None = None,
        notes: list[str] | None = None,
        hook: bool | tuple = False,
    ) -> None:
        self.path = path
        self.findings = [] if findings is None else findings
        self.old_source = old_source
        self.new_source = new_source
        self.error = error
        self.written = written
        self.crashed = crashed
        self.skipped = skipped
        self.reached = reached
        self.syntax = syntax
        self.releases = releases
        self.notes = [] if notes is None else notes
        self.hook = hook

    @property
    def outcome(self) -> str:
        """One word for what happened to the file on disk.

        ``written``, ``failed`` (a write was due and failed), ``skipped``, ``not
        reached``, ``error`` (it could not be read or parsed), ``would change`` (a run
        that writes nothing), or ``unchanged``.
        """
        if not self.reached:
            return "not reached"
        if self.written:
            return "written"
        if self.skipped:
            return "skipped"
        if self.error:
            return "failed" if self.new_source is not None else "error"
        return "unchanged" if self.new_source is None else "would change"
