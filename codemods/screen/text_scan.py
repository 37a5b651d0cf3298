"""What the text pre-filter asks of one file's bytes, each question answered once.

:class:`Scan` is shared by every rule's filter (:mod:`codemods.screen.prefilter`): a
word that several old names need is searched for once a file.
"""

from __future__ import annotations

from codemods.screen.alias_text import aliases, assigns
from codemods.screen.import_lines import IDENTIFIER_BYTES, import_text, whole, whole_words

#: What may stand between a dot and the name after it (a line broken inside brackets).
_BLANKS = frozenset(b" \t\f\r\n\\")


class Scan:
    """What the rules ask of one file, each answered once.

    ``within``: the scan of a text that ``source`` is a part of, the rest blanked (each
    byte of ``source`` is the text's or a space): what the text lacks, ``source`` lacks
    (a search of the whole text for an absent word is the costliest question).
    """

    def __init__(self, source: bytes, within: Scan | None = None) -> None:
        self.source = source
        self._contains: dict[bytes, bool] = {}
        self._imported: dict[bytes, bool] = {}
        self._imported_root: dict[bytes, bool] = {}
        self._imports: bytes | None = None  # the import lines, once asked
        self._spelled: dict[bytes, bool] = {}
        self._paths: dict[tuple[bytes, ...], bool] = {}
        if within is not None:
            for known, lacking in (
                (within._contains, self._contains),
                (within._spelled, self._spelled),
            ):
                lacking.update(
                    (word, False) for word, found in known.items() if not found and b" " not in word
                )

    @classmethod
    def of(cls, source: bytes) -> Scan:
        """The scan last made by :meth:`of` if it was of this very object, else a new one.

        The pre-filter's scan of a file it passes then answers the detector's walk
        too (the same bytes go on to it): each question once a file, not once a pass.

        Example:
            >>> source = b"import torch"
            >>> Scan.of(source) is Scan.of(source)
            True
            >>> copy = bytes(bytearray(source))  # equal, not the same object
            >>> Scan.of(copy) is Scan.of(source)
            False
        """
        last = _LAST[0]
        if last is None or last.source is not source:
            last = _LAST[0] = cls(source)
        return last

    def contains(self, text: bytes) -> bool:
        """``text`` appears anywhere in the source."""
        found = self._contains.get(text)
        if found is None:
            found = self._contains[text] = text in self.source
        return found

    def spelled(self, word: bytes) -> bool:
        """``word`` appears as a whole identifier (not inside another)."""
        found = self._spelled.get(word)
        if found is None:
            found = self._spelled[word] = self.contains(word) and whole(self.source, word)
        return found

    def spells_path(self, middle: tuple[bytes, ...]) -> bool:
        """Every part of a module path is :meth:`spelled` (asked once for each path)."""
        if middle not in self._paths:
            self._paths[middle] = all(map(self.spelled, middle))
        return self._paths[middle]

    def spelled_as_member(self, leaf: bytes, parent: bytes) -> bool:
        """``leaf`` appears where it can name a member of the module ``parent``.

        That is bare where an import's line spells it too (``from a.parent import leaf
        as x``: ``x`` is then used bare), or after a dot that follows ``parent``, a local
        alias (``as m``) or no name (``(p).leaf``): ``torch.distributed.fsdp`` does not
        spell ``fsdp`` of ``torch.distributed._composable``, ``c.fsdp`` may. A bare use
        elsewhere names what no import binds (a parameter, a string, a comment's word).
        A chain may break its line after the dot, inside brackets: where a comment may
        end the line before, the word counts.
        """
        if not self.contains(leaf):
            return False
        source = self.source
        for start in whole_words(source, leaf):
            dot = start - 1
            broken = False
            while dot >= 0 and source[dot] in _BLANKS:
                broken = broken or source[dot] == 0x0A
                dot -= 1
            if broken and b"#" in source[source.rfind(b"\n", 0, dot) + 1 : dot + 1]:
                return True  # `.  # why` then the word: a comment may sit between
            if dot < 0 or source[dot] != 0x2E:
                if self.imported(leaf):
                    return True  # bare, and an import's line spells it
                continue  # a bare use of a name no import binds
            start = dot
            while start > 0 and source[start - 1] in IDENTIFIER_BYTES:
                start -= 1
            owner = source[start:dot]
            if not owner or owner == parent or aliases(owner, source):
                return True
        return False

    def _import_lines(self) -> bytes:
        """The file's import lines (:func:`import_text`), found once."""
        if self._imports is None:
            self._imports = import_text(self.source)
        return self._imports

    def imports_root(self, root: bytes) -> bool:
        """The package ``root`` is named on an import's line.

        A name under a package is only ever reached through an import of it (an alias
        by assignment, ``F = fsdp.X``, needs ``fsdp`` imported first), so unlike
        :meth:`imported` the rest of the file is not searched: most files of a big tree
        spell no root, and the search of the whole file for each root was a third of
        the pre-filter's time on torch's tree.
        """
        found = self._imported_root.get(root)
        if found is None:
            found = self._imported_root[root] = whole(self._import_lines(), root)
        return found

    def imported(self, word: bytes) -> bool:
        """``word`` is on an import's line (:func:`import_text`) or a module-level alias's."""
        found = self._imported.get(word)
        if found is None:
            found = self._imported[word] = whole(self._import_lines(), word) or (
                self.contains(word) and assigns(word, self.source)
            )
        return found


#: The scan :meth:`Scan.of` made last (one: a file's passes follow each other).
_LAST: list[Scan | None] = [None]
