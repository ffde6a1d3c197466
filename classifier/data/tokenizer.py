"""Review text to token ids without TensorFlow: exactly the ids of ``data.ReviewVectorizer``.

``classify predict`` uses this module to tokenize without importing TensorFlow; it imports only
the standard library and NumPy. Every step works on UTF-8 bytes, as the TensorFlow ops do, and
reproduces them exactly (``tests/test_tokenizer*.py`` check every id against ``ReviewVectorizer``,
on adversarial strings and on all test and unlabelled IMDB reviews):

- ``tf.strings.lower`` (default ``encoding=""``) lowers ASCII ``A-Z`` only: ``É``, ``Σ`` and
  ``İ`` stay as they are. ``bytes.lower`` does the same; ``str.lower`` would not.
- The control-character regex (RE2, UTF-8 mode) replaces each code point U+0000-U+001F,
  U+007F-U+009F, U+2028 and U+2029 by one space. In bytes: ``00-1F``, ``7F``, ``C2 80-C2 9F``,
  ``E2 80 A8``, ``E2 80 A9``, wherever they occur; a lone ``85`` byte (invalid UTF-8), an overlong
  form or a surrogate encoding is left alone.
- ``<br\\s*/?>`` becomes a space; RE2's ``\\s`` is ``[\\t\\n\\f\\r ]`` (no ``\\v``, nothing beyond
  ASCII). Apostrophes are deleted, then each ASCII punctuation byte becomes a space: Unicode
  punctuation (``…``, ``“``, ``—``) stays inside words.
- With ``sentences`` (``data.sentences``, ``vectorizer.standardize_sentences``), ``<br\\s*/?>``
  becomes `` . `` instead, then each run of ``. ! ? ; :`` (spaces between them included) becomes
  one `` . `` and each run of commas one `` , ``, before the apostrophes and other punctuation
  go: ``.`` and ``,`` are then words of their own.
- ``TextVectorization(split="whitespace")`` calls ``tf.strings.split``, which splits on ASCII
  whitespace only (space, ``\\t \\n \\v \\f \\r``), as ``bytes.split()`` does; ``str.split()``
  would also split on ``\\x1c-\\x1f``, ``\\x85``, no-break and other Unicode spaces.

A ``str`` is encoded as strict UTF-8, as ``tf.constant`` does (a lone surrogate raises
``ValueError`` in both); ``bytes`` are taken as they are, invalid UTF-8 included.

Example:
    >>> tokenizer = Tokenizer(["", "[UNK]", "dont", "miss", "it"], sequence_length=4)
    >>> tokenizer.words("Don't MISS it!<br />Émigré.")
    ['dont', 'miss', 'it', 'Émigré']
    >>> tokenizer.encode(["Don't MISS it!<br />Émigré.", "it"]).tolist()
    [[2, 3, 4, 1], [4, 0, 0, 0]]
    >>> Tokenizer(["", "[UNK]", "."], 8, sentences=True).words("Not bad... at ALL!<br />Great")
    ['not', 'bad', '.', 'at', 'all', '.', 'great']
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from classifier.config.negation import NEGATION_PHRASE_PATTERNS, NEGATION_PHRASE_READING
from classifier.data.spelling import check_spelling, nearest

PADDING = ""  # id 0
OOV = "[UNK]"  # id 1
OOV_ID = 1
TRUNCATE_SIDES = ("head", "tail")

_PUNCTUATION = string.punctuation.replace("'", "").encode("ascii")
# Step 1 in one pass: ASCII lower-casing and the one-byte control characters (00-1F, 7F).
_LOWER_AND_CONTROL = bytes.maketrans(
    bytes(range(ord("A"), ord("Z") + 1)) + bytes(range(0x20)) + b"\x7f",
    bytes(range(ord("a"), ord("z") + 1)) + b" " * 0x21,
)
# The two-byte (U+0080-U+009F) and three-byte (U+2028, U+2029) control characters. No byte of
# these is below 0x80, so replacing the one-byte ones first does not change where they match.
_WIDE_CONTROL = re.compile(rb"\xc2[\x80-\x9f]|\xe2\x80[\xa8\xa9]")
_BREAK_TAG = re.compile(rb"<br[\t\n\f\r ]*/?>")
_PUNCTUATION_TO_SPACE = bytes.maketrans(_PUNCTUATION, b" " * len(_PUNCTUATION))
# With sentences: a run of sentence-end marks, the spaces between them included (control
# characters and <br /> are spaces by then), becomes one " . ", then a run of commas one " , ";
# "." and "," then survive the punctuation.
_SENTENCE_END_RUN = re.compile(rb"[.!?;:][ .!?;:]*")
_COMMA_RUN = re.compile(rb",[ ,]*")
_OTHER_PUNCTUATION = _PUNCTUATION.replace(b".", b"").replace(b",", b"")
_OTHER_PUNCTUATION_TO_SPACE = bytes.maketrans(_OTHER_PUNCTUATION, b" " * len(_OTHER_PUNCTUATION))
# With negation_phrases: each two-word negation's second word becomes "not".
_NEGATION_PHRASES = [re.compile(pattern.encode("ascii")) for pattern in NEGATION_PHRASE_PATTERNS]
_NOT = NEGATION_PHRASE_READING.encode("ascii")


def standardize(
    text: str | bytes, sentences: bool = False, negation_phrases: bool = False
) -> bytes:
    """The bytes of ``classifier.data.vectorizer.standardize_review(tf.constant(text)).numpy()``,
    or with ``sentences`` those of ``standardize_sentences`` (sentence ends kept as ``.``), or
    with ``negation_phrases`` too those of ``standardize_negation_phrases`` ("far not").

    Example:
        >>> standardize("Don't miss it!<br />Great.")
        b'dont miss it  great '
        >>> standardize("ÉTÉ\\u00a0Σ\\x85x")  # ASCII-only lower-casing; U+0085 is a control
        b'\\xc3\\x89t\\xc3\\x89\\xc2\\xa0\\xce\\xa3 x'
        >>> standardize("Not bad... at ALL!<br />Great,, really", sentences=True)
        b'not bad . at all . great , really'
        >>> standardize("Far from perfect!", sentences=True, negation_phrases=True)
        b'far not perfect . '
    """
    data = text.encode("utf-8") if isinstance(text, str) else bytes(text)
    data = data.translate(_LOWER_AND_CONTROL)
    if b"\xc2" in data or b"\xe2\x80" in data:
        data = _WIDE_CONTROL.sub(b" ", data)
    if b"<br" in data:
        data = _BREAK_TAG.sub(b" . " if sentences else b" ", data)
    if not sentences:
        return data.translate(_PUNCTUATION_TO_SPACE, b"'")
    data = _SENTENCE_END_RUN.sub(b" . ", data)
    data = _COMMA_RUN.sub(b" , ", data)
    data = data.translate(_OTHER_PUNCTUATION_TO_SPACE, b"'")
    if negation_phrases:
        for phrase in _NEGATION_PHRASES:
            data = phrase.sub(_NOT, data)
    return data


class Tokenizer:
    """Review strings to ``(B, T)`` int64 token ids, equal to ``ReviewVectorizer(texts).numpy()``.

    Args:
        vocabulary: the tokens by id, as ``ReviewVectorizer.get_vocabulary()`` returns them:
            ``''`` (padding, id 0), ``'[UNK]'`` (out of vocabulary, id 1), then the words.
        sequence_length: ids per review (T); shorter reviews are padded with 0 at the end.
        truncate: ``"tail"`` keeps the last T ids of a longer review, ``"head"`` the first T.
        sentences: standardize as ``ReviewVectorizer(..., sentences=True)`` does (sentence
            ends kept as ``.``; :func:`standardize`).
        spelling: as ``ReviewVectorizer``'s: inputs of fewer words have their misspelt words
            read as known ones (:func:`classifier.data.spelling.nearest`); 0: none.
        negation_phrases: with ``sentences``, as ``ReviewVectorizer``'s: "far from" reads as
            "far not" (:func:`standardize`).

    Example:
        >>> tokenizer = Tokenizer(["", "[UNK]", "a", "b"], sequence_length=2, truncate="head")
        >>> tokenizer.encode(["A b c", b"b", ""]).tolist()
        [[2, 3], [3, 0], [0, 0]]
    """

    def __init__(
        self,
        vocabulary: Sequence[str],
        sequence_length: int,
        truncate: str = "tail",
        sentences: bool = False,
        spelling: int = 0,
        negation_phrases: bool = False,
    ):
        vocabulary = list(vocabulary)
        if vocabulary[:2] != [PADDING, OOV]:
            raise ValueError(
                f"vocabulary must start with {PADDING!r} and {OOV!r}, got {vocabulary[:2]!r}"
            )
        if truncate not in TRUNCATE_SIDES:
            raise ValueError(f"truncate must be 'head' or 'tail', got {truncate!r}")
        if sequence_length < 1:
            raise ValueError(f"sequence_length must be at least 1, got {sequence_length}")
        if negation_phrases and not sentences:
            raise ValueError("negation_phrases standardizes sentences: set sentences too")
        check_spelling(spelling, sequence_length)
        ids = _Ids((token.encode("utf-8"), index) for index, token in enumerate(vocabulary))
        if len(ids) != len(vocabulary):
            repeated = sorted(token for token, n in Counter(vocabulary).items() if n > 1)
            raise ValueError(f"vocabulary repeats {len(repeated)} token(s): {repeated[:5]!r}")
        self.vocabulary = vocabulary
        self.sequence_length = sequence_length
        self.truncate = truncate
        self.sentences = sentences
        self.spelling = spelling
        self.negation_phrases = negation_phrases
        self._ids = ids

    @classmethod
    def from_file(
        cls,
        path: str | Path,
        sequence_length: int,
        truncate: str = "tail",
        sentences: bool = False,
        spelling: int = 0,
        negation_phrases: bool = False,
    ) -> Tokenizer:
        """A tokenizer for a ``vocabulary.txt`` as training writes it (one token per line).

        Example:
            >>> import pathlib, tempfile
            >>> path = pathlib.Path(tempfile.mkdtemp()) / "vocabulary.txt"
            >>> _ = path.write_text("\\n".join(["", "[UNK]", "good"]), encoding="utf-8")
            >>> Tokenizer.from_file(path, 3).encode(["Good, good movie"]).tolist()
            [[2, 2, 1]]
        """
        vocabulary = Path(path).read_text(encoding="utf-8").split("\n")
        return cls(vocabulary, sequence_length, truncate, sentences, spelling, negation_phrases)

    def words(self, text: str | bytes, as_typed: bool = False) -> list[str]:
        """All words of ``text`` after standardization, before truncation (invalid UTF-8 in
        ``bytes`` input shows as U+FFFD); ``as_typed``: without reading "far from" as "far
        not" (``negation_phrases``), in the same places.

        Example:
            >>> Tokenizer(["", "[UNK]"], 4).words("Rock'n'roll\\u00a0ÉTÉ… <BR/>x\\x1cy")
            ['rocknroll\\xa0ÉtÉ…', 'x', 'y']
            >>> Tokenizer(["", "[UNK]"], 4, "head", True, negation_phrases=True).words("far from it")
            ['far', 'not', 'it']
        """
        phrases = self.negation_phrases and not as_typed
        words = standardize(text, self.sentences, phrases).split()
        return [word.decode("utf-8", "replace") for word in words]

    def kept_words(self, text: str | bytes, as_typed: bool = False) -> list[str]:
        """The words the model reads: :meth:`words` (``as_typed`` or not) cut to
        ``sequence_length`` at the kept end.

        Example:
            >>> Tokenizer(["", "[UNK]"], 2).kept_words("a b c")
            ['b', 'c']
        """
        words = self.words(text, as_typed)
        if len(words) <= self.sequence_length:
            return words
        tail = self.truncate == "tail"
        return words[-self.sequence_length :] if tail else words[: self.sequence_length]

    def knows(self, word: str) -> bool:
        """Whether ``word`` (standardized) is in the vocabulary, beyond padding and OOV.

        Example:
            >>> tokenizer = Tokenizer(["", "[UNK]", "good"], 4)
            >>> tokenizer.knows("good"), tokenizer.knows("bad")
            (True, False)
        """
        return self._ids.get(word.encode("utf-8"), OOV_ID) > OOV_ID

    def encode(self, texts: Sequence[str | bytes]) -> np.ndarray:
        """Token ids of shape ``(len(texts), sequence_length)``, dtype int64.

        Example:
            >>> Tokenizer(["", "[UNK]", "a"], 3).encode(["a b a c a", "b"]).tolist()
            [[2, 1, 2], [1, 0, 0]]
            >>> Tokenizer(["", "[UNK]", "awful"], 3, spelling=2).encode(["Aweful!"]).tolist()
            [[2, 0, 0]]
        """
        length = self.sequence_length
        lookup = self._ids.__getitem__
        tail = self.truncate == "tail"
        sentences, phrases = self.sentences, self.negation_phrases
        flat: list[int] = []
        counts: list[int] = []
        for text in texts:
            data = standardize(text, sentences, phrases)
            # Split off at most `length` words from the kept end: the rest stays one piece.
            words = data.rsplit(None, length) if tail else data.split(None, length)
            if len(words) > length:
                words = words[1:] if tail else words[:length]
            if len(words) < self.spelling:  # all the input's words: spelling <= length
                flat += map(self._spelt, words)
            else:
                flat += map(lookup, words)
            counts.append(len(words))
        ids = np.zeros((len(counts), length), dtype=np.int64)
        kept = np.arange(length) < np.array(counts, dtype=np.int64)[:, None]
        ids[kept] = np.array(flat, dtype=np.int64)  # row-major: each row's ids, then padding
        return ids

    def _spelt(self, word: bytes) -> int:
        """The id of ``word`` in a short input: its own, else its nearest known word's."""
        found = self._ids[word]
        if found == OOV_ID:
            found = nearest(word, self._ids) or OOV_ID
        return found


class _Ids(dict):
    """Word (UTF-8 bytes) to id; a word not in it is out of vocabulary (id 1)."""

    def __missing__(self, word: bytes) -> int:
        return OOV_ID
