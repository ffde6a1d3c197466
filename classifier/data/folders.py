"""Class folders as a labelled source, laid out as Keras' ``text_dataset_from_directory`` reads
them: one sub-folder per class, named by it, holding text files (in sub-folders too). A row is
one text file, its label the class folder's name, its ``where`` the file's path in the folder
(``pos/123_9.txt``). Class folders are read in name order, in each the files sorted and a
folder's files before its sub-folders; hidden (``.``) entries are skipped.

Bad input is one line: a file outside any class folder, no class folders, class folders that
hold no text files, a file that is not UTF-8.

Example::

    rows = ClassFolders("reviews", "reviews/", "folder").rows("text", "label")
    next(rows)  # ('A quiet film ...', 'neg', 'neg/0_3.txt')
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from classifier.data.sources import Row, Source, lines
from classifier.errors import DataError


@dataclass(frozen=True)
class ClassFolders(Source):
    """A folder of class folders (``format`` ``folder``)."""

    def rows(self, text_field: str, label_field: str) -> Iterator[Row]:
        del text_field, label_field  # a file is the text, its folder the label
        return _folder_rows(Path(self.path), self.name)


def _folder_rows(root: Path, name: str) -> Iterator[Row]:
    try:
        entries = sorted((e for e in os.scandir(root) if e.name[0] != "."), key=lambda e: e.name)
    except OSError as error:
        raise DataError(f"cannot read {name}: {error.strerror}") from None
    if loose := [entry.name for entry in entries if entry.is_file()]:
        many = f"{len(loose)} files are" if len(loose) > 1 else "1 file is"
        raise DataError(
            f"{name}: {many} outside any class folder (e.g. {loose[0]}); put each text in a "
            f"folder named by its class"
        )
    if not (classes := [entry.name for entry in entries if entry.is_dir()]):
        raise DataError(
            f"{name} has no class folders; put each text in a folder named by its class"
        )
    found = False
    for label in classes:
        for directory, folders, files in os.walk(root / label):
            folders[:] = sorted(folder for folder in folders if folder[0] != ".")
            for path in (Path(directory, file) for file in sorted(files) if file[0] != "."):
                if path.is_file():
                    found, where = True, path.relative_to(root).as_posix()
                    yield "".join(lines(path, f"{name}{where}")), label, where
    if not found:
        raise DataError(f"{name}: its class folders ({', '.join(classes)}) hold no text files")
