"""The project's classes, read on a thread while the workers screen the run's files.

Reading them (:class:`~codemods.cli.project_classes.ProjectClasses`: every file searched
for a hook's name, then the files those lead to parsed) came before the workers started,
and cost a tenth of a lint on torch's tree. They change the settings of few files (a
class whose base is the project's ``LightningModule``, defined in another file: 1 of the
realistic tree's 69 files, 2 of 489 real ones, none of torch's): so a lint that writes
nothing screens every file without them, reads them meanwhile, and then lints again
the files whose settings they change. The results are those of a run that read them
first.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

TYPE_CHECKING = False  # typing is not imported at run time: see codemods/records.py
if TYPE_CHECKING:
    from codemods.batch.results import FileResult
    from codemods.cli.options import Choices
    from codemods.cli.project_classes import ProjectClasses
    from codemods.settings import Settings


class LaterClasses:
    """The project classes of ``paths``, read on a thread from :meth:`start` on.

    Args:
        chosen: The run's choices, read without the classes (``Choices.files(args,
            classes=False)``).
        paths: The run's files.
    """

    def __init__(self, chosen: Choices, paths: Sequence[Path]) -> None:
        self._paths = list(paths)
        self._classes: ProjectClasses | None = None
        self._error: BaseException | None = None
        self._thread = None
        if len(self._paths) < 2:
            return  # a file's own classes are followed by the rule itself
        # Here: a one-file run (a commit hook's) needs neither. Imported by this thread:
        # the workers are forked while the other one reads, and must not inherit an
        # import lock it holds.
        import threading

        from codemods.cli.project_classes import ProjectClasses, hook_names

        hooks = hook_names(chosen.settings)
        if hooks:
            self._thread = threading.Thread(
                target=self._read, args=(ProjectClasses, hooks), daemon=True
            )

    def start(self) -> None:
        """Start reading (once): when the workers have their first files, not before.

        Before, the thread and the one handing the files out shared this process's
        interpreter lock.
        """
        if self._thread is not None and self._thread.ident is None:
            self._thread.start()

    def _read(self, read: type[ProjectClasses], hooks: set[str]) -> None:
        try:
            self._classes = read(self._paths, hooks)
        except BaseException as exc:  # noqa: BLE001 - raised again in the main thread
            self._error = exc

    def finish(
        self,
        chosen: Choices,
        results: list[FileResult],
        again: Callable[[list[Path], Callable[[Path], Settings]], list[FileResult]],
    ) -> tuple[Choices, list[FileResult]]:
        """The choices with the classes, and ``results`` with the files they change redone.

        ``again(paths, settings_for)`` lints ``paths`` with those settings.
        """
        if self._thread is None:
            return chosen, results  # no hook rule, or a single file: no classes to read
        self.start()
        self._thread.join()
        if self._error is not None:
            raise self._error
        classes = self._classes
        chosen = chosen._replace(classes=classes)
        redo = [i for i, path in enumerate(self._paths) if classes.lightning_bases(path)]  # type: ignore[union-attr]
        if redo:
            again_results = again([self._paths[i] for i in redo], chosen.settings_for)
            results = list(results)
            for index, result in zip(redo, again_results):
                results[index] = result
        return chosen, results
