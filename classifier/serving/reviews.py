"""Reading reviews from files and stdin within bounded memory, one line per bad input.

Inputs are files or ``-`` (stdin): one review per file, or one per line (``per_line``). Each
review is read within a bounded number of bytes (:func:`review_byte_limit`; a longer one is cut
at the end the model keeps, at a word boundary, with a note), bytes that are not UTF-8 are
replaced (with a warning), and a bad input is reported on one line by a :class:`Reporter`
without stopping the others. The texts of a request to a served model follow the same rules
(:func:`request_texts`), a bad one refused in one line. No TensorFlow here: this module imports
only the standard library and :mod:`classifier.errors`.

Example:
    >>> import io
    >>> reporter = Reporter(print)
    >>> stream = io.BytesIO(b"A wonderful film.\\n\\nDull.\\n")
    >>> [r.source for r in read_reviews(["-"], reporter, per_line=True, stdin=stream)]
    ['<stdin>:1', '<stdin>:3']
"""

from __future__ import annotations

import io
import itertools
import os
import re
import stat
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import BinaryIO

from classifier.errors import InputError

STDIN = "-"
STDIN_NAME = "<stdin>"
#: Bytes read per review: enough for ``sequence_length`` words with a wide margin.
MIN_REVIEW_BYTES = 64 * 1024
BYTES_PER_WORD = 64
_CHUNK = 1024 * 1024
_WHITESPACE = re.compile(rb"\s")


def review_byte_limit(sequence_length: int) -> int:
    """How many bytes of one review are read: enough for ``sequence_length`` words.

    Example:
        >>> review_byte_limit(256), review_byte_limit(4096)
        (65536, 262144)
    """
    return max(MIN_REVIEW_BYTES, BYTES_PER_WORD * sequence_length)


def request_texts(values: Iterable[object], max_bytes: int) -> list[str]:
    """The texts of a request to a served model: each a string of at most ``max_bytes`` bytes
    in UTF-8 (:func:`review_byte_limit`, as for ``classify predict``: a file's longer review is
    cut with a note, a request's is refused, since the client can send less). A blank text is
    a text: the model answers it ``unknown``, as it always has.

    Raises:
        InputError: one line naming the first bad row (numbered from 1) and what it holds, and
            how many other rows are bad.

    Example:
        >>> request_texts(["A wonderful film.", "Dull."], max_bytes=100)
        ['A wonderful film.', 'Dull.']
        >>> request_texts(["Fine.", None, 42], max_bytes=100)
        Traceback (most recent call last):
        ...
        classifier.errors.InputError: row 2: null, not a text (and 1 more bad row)
    """
    texts: list[str] = []
    problems: list[str] = []
    for row, value in enumerate(values, start=1):
        problem = _text_problem(value, max_bytes)
        if problem is None:
            texts.append(value)  # type: ignore[arg-type] - a str, as _text_problem checked
        else:
            problems.append(f"row {row}: {problem}")
    if problems:
        more = len(problems) - 1
        also = f" (and {more:,} more bad row{'s' if more > 1 else ''})" if more else ""
        raise InputError(problems[0] + also)
    return texts


def _text_problem(value: object, max_bytes: int) -> str | None:
    """What is wrong with ``value`` as a review to classify, or ``None``."""
    if not isinstance(value, str):
        return f"{_json_kind(value)}, not a text"
    size = len(value.encode("utf-8", errors="surrogatepass"))
    if size > max_bytes:
        return f"{size:,} bytes of UTF-8; a review may have at most {max_bytes:,}"
    return None


def _json_kind(value: object) -> str:
    """How a JSON value that is not a string reads to the client who sent it."""
    if value is None or (isinstance(value, float) and value != value):  # pandas' NaN for null
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return f"a number ({value})"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, (list, tuple)) or hasattr(value, "__array__"):
        return "a list"
    return f"a {type(value).__name__}"


@dataclass(frozen=True)
class Review:
    """One review to classify and where it came from (``file`` or ``file:line``)."""

    source: str
    text: str


class Reporter:
    """Prints one line per problem (``classify: SOURCE: ...``) and counts failed inputs."""

    def __init__(self, echo: Callable[[str], None]):
        self.echo = echo
        self.failed = 0

    def error(self, source: str, message: str) -> None:
        """An input that could not be classified."""
        self.failed += 1
        self.echo(f"classify: {source}: {message}")

    def warning(self, source: str, message: str) -> None:
        """An input that was classified, but not exactly as given."""
        self.echo(f"classify: {source}: warning: {message}")

    def note(self, source: str, message: str) -> None:
        """Something worth knowing about an input that was classified."""
        self.echo(f"classify: {source}: note: {message}")


def read_reviews(
    paths: Iterable[str],
    reporter: Reporter,
    *,
    per_line: bool = False,
    max_bytes: int = MIN_REVIEW_BYTES,
    keep: str = "tail",
    stdin: BinaryIO | None = None,
) -> Iterator[Review]:
    """Yield the reviews of every input, lazily, reporting bad inputs and going on.

    Args:
        paths: files, or ``-`` for stdin.
        reporter: receives one line per missing, unreadable or empty input, per non-UTF-8
            input (a warning; its bytes are replaced with U+FFFD) and per truncated review.
        per_line: each non-blank line is a review (sources ``file:line``); else each file is one.
        max_bytes: at most this many bytes of a review are kept (memory stays bounded).
        keep: which end of a longer review to keep, ``"tail"`` or ``"head"`` (as the model's
            ``truncate``).
        stdin: the binary stream that ``-`` reads (default: ``sys.stdin.buffer``).
    """
    for path in paths:
        name = STDIN_NAME if path == STDIN else path
        stream = _open(path, name, reporter, stdin)
        if stream is None:
            continue
        try:
            if per_line:
                yield from _line_reviews(stream, name, reporter, max_bytes, keep)
            else:
                review = _file_review(stream, name, reporter, max_bytes, keep)
                if review is not None:
                    yield review
        except OSError as error:
            reporter.error(name, f"read error ({error.strerror or error})")
        finally:
            if path != STDIN:
                stream.close()


def _open(path: str, name: str, reporter: Reporter, stdin: BinaryIO | None) -> BinaryIO | None:
    if path == STDIN:
        stream = stdin if stdin is not None else getattr(sys.stdin, "buffer", None)
        if stream is None:
            reporter.error(name, "standard input is closed")
        return stream
    try:
        if os.path.isdir(path):
            raise IsADirectoryError(path)
        return open_binary(path)
    except FileNotFoundError:
        reporter.error(name, "no such file")
    except IsADirectoryError:
        reporter.error(name, "is a directory")
    except PermissionError:
        reporter.error(name, "permission denied")
    except OSError as error:
        reporter.error(name, f"cannot open ({error.strerror or error})")
    return None


def input_problem(path: str, stdin: BinaryIO | None) -> str | None:
    """Why ``path`` (``-``: ``stdin``) cannot be read, found without opening it (a FIFO would
    block), or ``None``; the words :func:`read_reviews` would report. Commands that load a model
    first check their inputs with it, so a missing file is one line at once, not after
    TensorFlow has loaded.

    Example::

        input_problem("/no/such/review.txt", None)  # 'no such file'
    """
    if path == STDIN:
        return "standard input is closed" if stdin is None else None
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return "no such file"
    except PermissionError:
        return "permission denied"
    except OSError as error:
        return f"cannot open ({error.strerror or error})"
    if stat.S_ISDIR(mode):
        return "is a directory"
    if not os.access(path, os.R_OK):
        return "permission denied"
    return None


def open_binary(path: str) -> BinaryIO:
    """Open ``path`` for reading bytes (a seam for tests)."""
    return open(path, "rb")  # noqa: SIM115 - closed by read_reviews


def _file_review(stream, name, reporter, max_bytes, keep) -> Review | None:
    data, size, truncated = _read_bounded(stream, max_bytes, keep)
    if truncated:
        data = _trim_cut(data, keep)
        _note_truncated(reporter, name, size, max_bytes, keep)
    text = _decode(data, name, reporter)
    if not text.strip():
        reporter.error(name, "empty review (no text, or only whitespace)")
        return None
    return Review(name, text)


def _read_bounded(stream: BinaryIO, max_bytes: int, keep: str) -> tuple[bytes, int | None, bool]:
    """At most ``max_bytes`` bytes from the kept end; also the size (when known), truncated."""
    size = None
    try:
        info = os.fstat(stream.fileno())
        if stat.S_ISREG(info.st_mode):
            size = info.st_size
    except (OSError, ValueError, io.UnsupportedOperation):
        pass
    if size is not None and size > max_bytes:
        if keep == "tail":
            stream.seek(size - max_bytes)
        return stream.read(max_bytes), size, True
    if keep == "head" or size is not None:
        data = stream.read(max_bytes)
        return data, size, bool(stream.read(1))
    # A stream of unknown size, keeping the tail: a rolling window of the last max_bytes.
    window = bytearray()
    total = 0
    while chunk := stream.read(_CHUNK):
        total += len(chunk)
        window += chunk
        if len(window) > 2 * max_bytes:
            del window[:-max_bytes]
    return bytes(window[-max_bytes:]), total, total > max_bytes


def _line_reviews(stream, name, reporter, max_bytes, keep) -> Iterator[Review]:
    found = False
    warned = False
    for number, data, truncated in _bounded_lines(stream, max_bytes, keep):
        source = f"{name}:{number}"
        if not data.strip():
            continue  # blank lines separate nothing and are skipped
        found = True
        if truncated:
            data = _trim_cut(data, keep)
            _note_truncated(reporter, source, None, max_bytes, keep)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            text = data.decode("utf-8", errors="replace")
            if not warned:  # once per file
                warned = True
                reporter.warning(
                    source,
                    "not valid UTF-8; undecodable bytes replaced with U+FFFD "
                    "(warned once per file)",
                )
        yield Review(source, text.removeprefix("\ufeff"))
    if not found:
        reporter.error(name, "empty (no non-blank line to classify)")


def _bounded_lines(
    stream: BinaryIO, max_bytes: int, keep: str
) -> Iterator[tuple[int, bytes, bool]]:
    """``(line number, at most max_bytes of the line, truncated)``; memory stays bounded."""
    for number in itertools.count(1):
        line = stream.readline(max_bytes + 1)
        if not line:
            return
        if len(line) <= max_bytes or line.endswith(b"\n"):
            yield number, line.rstrip(b"\r\n"), False
            continue
        if keep == "head":
            while (rest := stream.readline(_CHUNK)) and not rest.endswith(b"\n"):
                pass
            yield number, line[:max_bytes], True
            continue
        window = bytearray(line)
        while rest := stream.readline(_CHUNK):
            window += rest
            if len(window) > 2 * max_bytes:
                del window[:-max_bytes]
            if rest.endswith(b"\n"):
                break
        yield number, bytes(window.rstrip(b"\r\n")[-max_bytes:]), True


def _trim_cut(data: bytes, keep: str) -> bytes:
    """Drop the partial word (and any partial UTF-8 character) at the end that was cut."""
    if keep == "head":
        spaces = [match.start() for match in _WHITESPACE.finditer(data, max(0, len(data) - 200))]
        if spaces:
            return data[: spaces[-1]]
        cut = len(data)
        while cut > len(data) - 4 and cut > 0 and data[cut - 1] & 0xC0 == 0x80:
            cut -= 1
        if cut > 0 and data[cut - 1] >= 0xC0:
            cut -= 1  # the lead byte of a character whose continuation was cut
        return data[:cut]
    space = _WHITESPACE.search(data, 0, 200)
    if space:
        return data[space.end() :]
    start = 0
    while start < min(3, len(data)) and data[start] & 0xC0 == 0x80:
        start += 1
    return data[start:]


def _note_truncated(reporter, source, size, max_bytes, keep) -> None:
    end = "last" if keep == "tail" else "first"
    how_big = f"{size:,} bytes" if size is not None else f"longer than {max_bytes:,} bytes"
    reporter.note(
        source,
        f"{how_big}; classified from its {end} {max_bytes:,} bytes "
        f"(the model keeps the {end} words of a long review)",
    )


def _decode(data: bytes, source: str, reporter: Reporter) -> str:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("utf-8", errors="replace")
        reporter.warning(source, "not valid UTF-8; undecodable bytes replaced with U+FFFD")
    return text.removeprefix("\ufeff")
