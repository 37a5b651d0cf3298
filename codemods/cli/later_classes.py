"""The project's classes, read once the workers have said which files hold a hook's name.

Reading them (:class:`~codemods.cli.project_classes.ProjectClasses`: the files that hold
a hook's name, then the files their bases lead to, parsed) came before the workers
started, and cost a tenth of a lint on torch's tree; then on a thread beside the
workers, where searching every file of the run for the names was most of it (0.1 s of
CPU on torch's tree). They change the settings of few files (a class whose base is the
project's ``LightningModule``, defined in another file: 1 of the realistic tree's 69
files, 2 of 489 real ones, none of torch's): so a lint that writes nothing screens
every file without them, the workers, which read every file anyway, say in each result
whether its bytes hold a hook's name (:attr:`~codemods.batch.results.FileResult.hook`),
and then only those files (3 of torch's) and the files their bases lead to are read,
and the files whose settings the classes change linted again. The results are those of
a run that read them first. A file the screening parsed is not parsed again: its result
holds its names and its classes' bases (:func:`~codemods.syntax.class_bases.names_and_bases`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

TYPE_CHECKING = False  # typing is not imported at run time: see codemods/records.py
if TYPE_CHECKING:
    from codemods.batch.results import FileResult
    from codemods.cli.options import Choices
    from codemods.settings import Settings


class LaterClasses:
    """The project classes of ``paths``, read from the files the workers found hooks in.

    Args:
        chosen: The run's choices, read without the classes (``Choices.files(args,
            classes=False)``).
        paths: The run's files.

    Attributes:
        hooks: The hook names to look for as the files are screened (the
            ``hooks`` of :func:`~codemods.batch.runner.process_files`); empty: no
            classes to read (a single file, whose own classes the rule follows, or no
            hook rule enabled).
    """

    def __init__(self, chosen: Choices, paths: Sequence[Path]) -> None:
        self._paths = list(paths)
        self._names: list[str] = []
        self.hooks: tuple[bytes, ...] = ()
        if len(self._paths) < 2:
            return  # a file's own classes are followed by the rule itself
        # Here: a one-file run (a commit hook's) needs neither.
        from codemods.cli.project_classes import hook_names

        self._names = sorted(hook_names(chosen.settings))
        self.hooks = tuple(name.encode() for name in self._names)

    def finish(
        self,
        chosen: Choices,
        results: list[FileResult],
        again: Callable[[list[Path], Callable[[Path], Settings]], list[FileResult]],
    ) -> tuple[Choices, list[FileResult]]:
        """The choices with the classes, and ``results`` with the files they change redone.

        ``results``: the run's, with ``hooks`` looked for. ``again(paths,
        settings_for)`` lints ``paths`` with those settings.
        """
        if not self.hooks:
            return chosen, results
        from codemods.cli.project_classes import ProjectClasses

        holding = [path for path, result in zip(self._paths, results) if result.hook]
        # A file the screening parsed came with its names and bases: not parsed again
        known = {str(p): r.hook for p, r in zip(self._paths, results) if type(r.hook) is tuple}
        classes = ProjectClasses(self._paths, self._names, holding=holding, known=known)
        chosen = chosen._replace(classes=classes)
        redo = [i for i, path in enumerate(self._paths) if classes.lightning_bases(path)]
        if redo:
            again_results = again([self._paths[i] for i in redo], chosen.settings_for)
            results = list(results)
            for index, result in zip(redo, again_results):
                results[index] = result
        return chosen, results
