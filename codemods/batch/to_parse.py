"""What the screening of one file hands on to its parse (:class:`ToParse`)."""

from __future__ import annotations

from codemods.records import Frozen

TYPE_CHECKING = False  # typing is not imported at run time: see codemods/records.py
if TYPE_CHECKING:
    from codemods.astlint.lint import Detection
    from codemods.batch.notebooks import Notebook
    from codemods.settings import Settings


class ToParse(Frozen):
    """A screened file that the libcst engine decides.

    Attributes:
        source: The bytes read.
        detection: The screening's ``ast`` pass, which the engine's pruning reuses; only
            within one process (None once the file goes to a worker).
        settings: The file's settings with its evidence floor filled in, where the
            screening found one (None: the run's settings for it).
        notebook: The notebook whose cells ``source`` joins, where the file is one.
        hook: As :attr:`~codemods.batch.results.FileResult.hook`, for the file's result.
    """

    __slots__ = _fields = ("source", "detection", "settings", "notebook", "hook")

    source: bytes
    detection: Detection | None
    settings: Settings | None
    notebook: Notebook | None
    hook: bool | tuple

    def __init__(
        self,
        source: bytes,
        detection: Detection | None = None,
        settings: Settings | None = None,
        notebook: Notebook | None = None,
        hook: bool | tuple = False,
    ) -> None:
        self._set(
            source=source, detection=detection, settings=settings, notebook=notebook, hook=hook
        )
