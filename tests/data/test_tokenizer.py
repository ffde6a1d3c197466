"""The TensorFlow-free tokenizer against ``ReviewVectorizer`` on adversarial strings and bytes,
in each standardization: reviews, sentence ends kept (``sentences``), and two-word negations read
as ``not`` as well (``negation_phrases``)."""

from __future__ import annotations

import random
import string
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from classifier.config.negation import reserved_words
from classifier.data.tokenizer import Tokenizer, standardize
from classifier.data.vectorizer import (
    ReviewVectorizer,
    standardize_negation_phrases,
    standardize_review,
    standardize_sentences,
)
from tests.conftest import ROOT

WORDS = [
    "the", "movie", "was", "great", "dont", "miss", "it", "its", "rocknroll", "tis", "lamour",
    "obriens", "br", "a", "b", "c", "d", "e", "f", "x", "y", "unk", "amp", "quot", "i", "1", "000",
    "10", "é", "émigré", "Émigré", "ÉmigrÉ", "ÉMIGRÉ", "σας", "ΣΑΣ", "istanbul", "İstanbul",
    "straße", "strasse", "STRAẞE", "ǆ", "ǅ", "film", "ﬁlm", "café", "cafe\u0301", "CAFE\u0301",
    "naïve", "NAÏVE", "😀", "a😀b", "👍🏽", "a\xa0b", "a\u3000b", "a\u2003b", "a\u200bb",
    "\ufeffthe", "a’b", "“great”", "‘movie’", "—", "…", "a–b", "a…b", "¡hola", "¿que", "«the»",
    "a´b", "hola", "anything", "far", "nowhere", "not", "but", "from", "near",
]  # fmt: skip

CASES = [
    "", " ", "\t\n ", "!!!", "'''", "...?!", string.punctuation, "a" + string.punctuation + "b",
    "[UNK]", "[unk] unk", "<br />", "<br/>", "<BR />", "<Br  / >", "<br\t/>a", "<br\n/>a",
    "<br\x0b/>a", "<br\x0c/>a", "<br\r/>a", "<br\xa0/>b", "<br\u2028/>b", "<br\x85/>b", "<b'r />",
    "<br '/>", "a<br>b", "a<brb", "<<br />>", "a<br /><br />b", "<br\x00/>a",
    "Don't miss it!<br />Great.", "it's rock'n'roll", "'tis", "dont'", "l'amour", "O'Brien's",
    "the\tmovie\nwas\r\ngreat", "a\x0bb\x0cc", "a\x1cb\x1dc\x1ed\x1ff", "a\x85b", "a\xa0b",
    "a\u2028b\u2029c", "a\u3000b", "a\u2003b", "a\u200bb", "\ufeffthe", "a\x00b", "\x00", "a\x7fb",
    "a\x9fb", "a\x80b", "a\x96b\x97c\x91d", "THE MOVIE", "ThE mOvIe", "ÉMIGRÉ émigré Émigré",
    "ΣΑΣ σας", "İstanbul ISTANBUL istanbul", "STRASSE straße STRAẞE", "ǅ ǆ Ǆ", "ﬁlm FILM",
    "café cafe\u0301 CAFE\u0301", "naïve NAÏVE", "😀 😀😀 a😀b A😀B", "👍🏽", "“great” ‘movie’ — …",
    "a–b a…b", "¡hola! ¿que?", "«the»", "a\u00b4b a`b a’b", "\\ a\\b x_y a-b", "1,000 10/10",
    "<i>great</i> &amp;quot;", "the " * 300, ("Great, MOVIE! " * 150) + "<br />the end",
    # Sentence ends: runs, spaces and other characters between marks, breaks beside them.
    "Not bad... at ALL!<br />Great; really", "a . ! ; b?: c", "a.'.b", "a'.'b", "x:)y", ".",
    " . ", "end.<br /><br />Start", "end. <br/> . start", "7.5/10", "a.\xa0.b", "a.\x85!b",
    "a.\u2028?b", "a!\t?\n.b", "<br/>.<br>!", "a.-.b", "a..,..b", "Wow!!!:-) ok?!", "..." * 100,
    # Two-word negations: cased, spaced, split by punctuation, inside other words, repeated.
    "Anything but dull", "FAR  from it", "nowhere\tnear as good", "far, from", "far.from",
    "faraway from", "far fromage", "far_from", "anything-but", "anything but but", "far from far from",
    "far\xa0from", "far\u3000from", "far\x85from", "far<br />from", "far's from", "far 'from",
    "nowhere near near", "not far from", "anything\u0301 but", "café far from",
]  # fmt: skip

# Invalid UTF-8 as TFDS or a file can hold it: lone continuation bytes, cut sequences, overlong
# forms, encoded surrogates, code points above U+10FFFF, and bytes split by an apostrophe.
BYTE_CASES = [
    b"a\x85b", b"\xff\xfe", b"a\xc2", b"\xc2\x85", b"\xe2\xc2\x85b", b"a\xc1\x85b",
    b"a\xe0\x82\x85b", b"\xed\xa0\x80 the", b"a\xf4\x90\x80\x80b", b"THE\xffMOVIE", b"\xc2'\x85",
    b"<br\xff/>", b"\xe2\x80", b"\xe2\x80\xa8", b"\xe2\x80'\xa8x", b"\x80\x80", b"<BR\xc2\x85/>x",
    b"caf\xc3\xa9 CAF\xc3\x89 caf\xe9",
]  # fmt: skip

PIECES = [
    "a", "B", "the", "MOVIE", "é", "É", "Σ", "σ", "ß", "'", "’", "<br />", "<BR/>", "<br", "/>",
    "<", ">", " ", "  ", "\t", "\n", "\r", "\x0b", "\x0c", "\x1c", "\x1f", "\x00", "\x7f", "\x85",
    "\x9f", "\xa0", "\u2028", "\u2029", "\u3000", "\u0301", "😀", ".", ",", "!", "-", "…", "“",
    "?", ";", ":", "...", "far", "FROM", "anything", "but", "nowhere", "near", "_",
]  # fmt: skip
BYTE_PIECES = [b"a", b"B", b" ", b"'", b"<br", b"/>", b"\xc2", b"\xe2", b"\x80", b"\x85", b"\xa8"]
BYTE_PIECES += [b"\xff", b"\xc3", b"\x89", b"\x00", b"\t", b".", b"!", b";", b"?:"]
BYTE_PIECES += [b"far", b"from", b"anything ", b"but "]


def fuzz() -> tuple[list[str], list[bytes]]:
    """Seeded random strings and byte strings built from the tricky pieces above."""
    rng = random.Random(0)
    texts = ["".join(rng.choices(PIECES, k=rng.randint(0, 40))) for _ in range(400)]
    data = [b"".join(rng.choices(BYTE_PIECES, k=rng.randint(0, 40))) for _ in range(300)]
    return texts, data


FUZZ_TEXTS, FUZZ_BYTES = fuzz()
ALL_TEXTS = CASES + FUZZ_TEXTS
ALL_BYTES = BYTE_CASES + FUZZ_BYTES + [text.encode() for text in ALL_TEXTS]


#: The standardizations: what each keeps (sentences, negation_phrases) and TensorFlow's function.
MODES = {
    "reviews": ((False, False), standardize_review),
    "sentences": ((True, False), standardize_sentences),
    "negation_phrases": ((True, True), standardize_negation_phrases),
}


def vectorizer(sequence_length: int, truncate: str, mode: str = "reviews") -> ReviewVectorizer:
    """A vectorizer of WORDS; with sentences, the reserved words first, as ``adapt`` puts them."""
    words = WORDS
    (sentences, phrases), _ = MODES[mode]
    if sentences:
        words = reserved_words() + [word for word in WORDS if word not in reserved_words()]
    return ReviewVectorizer(
        len(words) + 2, sequence_length, truncate, words, sentences, negation_phrases=phrases
    )


def tokenizer_for(reference: ReviewVectorizer) -> Tokenizer:
    """The tokenizer of ``reference``'s vocabulary and settings."""
    return Tokenizer(
        reference.get_vocabulary(),
        reference.sequence_length,
        reference.truncate,
        reference.sentences,
        negation_phrases=reference.negation_phrases,
    )


def mismatches(expected, actual, inputs) -> list:
    """The inputs whose row differs, with both rows: an empty list when all agree."""
    return [(text, e, a) for text, e, a in zip(inputs, expected, actual, strict=True) if e != a]


@pytest.mark.parametrize("mode", MODES)
def test_standardize_gives_the_bytes_of_tensorflow(mode):
    (sentences, phrases), tensorflow = MODES[mode]
    for inputs in (ALL_TEXTS, ALL_BYTES):
        expected = tensorflow(tf.constant(inputs)).numpy().tolist()
        actual = [standardize(text, sentences, phrases) for text in inputs]
        assert mismatches(expected, actual, inputs) == []


@pytest.mark.parametrize("mode", MODES)
def test_words_are_those_tensorflow_splits(mode):
    tokenizer = tokenizer_for(vectorizer(8, "tail", mode))
    for inputs in (ALL_TEXTS, ALL_BYTES):
        split = tf.strings.split(MODES[mode][1](tf.constant(inputs))).to_list()
        expected = [[word.decode("utf-8", "replace") for word in row] for row in split]
        assert mismatches(expected, [tokenizer.words(text) for text in inputs], inputs) == []


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("truncate", ["tail", "head"])
@pytest.mark.parametrize("sequence_length", [1, 5, 64])
def test_every_id_equals_review_vectorizer(truncate, sequence_length, mode):
    reference = vectorizer(sequence_length, truncate, mode)
    tokenizer = tokenizer_for(reference)
    for inputs in (ALL_TEXTS, ALL_BYTES):
        expected = reference(tf.constant(inputs)).numpy()
        actual = tokenizer.encode(inputs)
        assert actual.shape == expected.shape and actual.dtype == np.int64
        assert mismatches(expected.tolist(), actual.tolist(), inputs) == []


@pytest.mark.parametrize(
    ("truncate", "kept"), [("tail", ["d", "e", "f"]), ("head", ["a", "b", "c"])]
)
def test_long_reviews_keep_the_configured_end(truncate, kept):
    tokenizer = Tokenizer(vectorizer(3, truncate).get_vocabulary(), 3, truncate)
    ids = tokenizer.encode(["A b, c; d e f.", "e", "", "!!"])
    assert [tokenizer.vocabulary[i] for i in ids[0]] == kept
    assert ids[1:].tolist() == [[tokenizer.vocabulary.index("e"), 0, 0], [0, 0, 0], [0, 0, 0]]


def test_sentence_ends_are_one_dot_each_commas_one_comma_and_other_punctuation_goes():
    text = "Not bad... at ALL!<br />Great; really?! Don't: (sigh) <br/><br/>.end, , so,"
    ends = b"not bad . at all . great . really . dont .  sigh    . end , so , "
    assert standardize(text, sentences=True) == ends
    assert standardize(text) == b"not bad    at all  great  really   dont   sigh     end    so "
    tokenizer = tokenizer_for(vectorizer(18, "head", "sentences"))
    assert tokenizer.words(text) == [word.decode() for word in ends.split()]
    assert tokenizer.kept_words("a. b! c") == ["a", ".", "b", ".", "c"]
    vocabulary = tokenizer.vocabulary
    assert vocabulary[2:5] == [".", ",", "not"] and vocabulary.index("dont") == 15
    great = vocabulary.index("great")
    ids = [4, 1, 2, 1, 1, 2, great, 2, 1, 2, 15, 2, 1, 2, 1, 3, 1, 3]
    assert tokenizer.encode([text]).tolist() == [ids]


def test_two_word_negations_read_their_second_word_as_not_in_its_place():
    text = "Anything but dull, FAR  from it; far, from. Faraway from nowhere near-perfect"
    read = "anything not dull , far  not it . far , from . faraway from nowhere not perfect"
    assert standardize(text, True, negation_phrases=True) == read.encode()
    assert (
        standardize(text, True)
        == read.replace("not", "but", 1)
        .replace("far  not", "far  from")
        .replace("nowhere not", "nowhere near")
        .encode()
    )
    tokenizer = tokenizer_for(vectorizer(18, "head", "negation_phrases"))
    assert tokenizer.words(text) == read.split()
    typed = tokenizer.kept_words(text, as_typed=True)
    assert [(a, b) for a, b in zip(typed, tokenizer.kept_words(text), strict=True) if a != b] == [
        ("but", "not"),
        ("from", "not"),
        ("near", "not"),
    ]
    not_id = tokenizer.vocabulary.index("not")
    assert tokenizer.encode(["far from"]).tolist()[0][:2] == [
        tokenizer.vocabulary.index("far"),
        not_id,
    ]


def test_non_ascii_case_and_unicode_spaces_are_kept():
    tokenizer = Tokenizer(vectorizer(8, "tail").get_vocabulary(), 8)
    words = tokenizer.words("ÉMIGRÉ ΣΑΣ a\xa0b x\x1cy A\x85B")
    assert words == ["ÉmigrÉ", "ΣΑΣ", "a\xa0b", "x", "y", "a", "b"]  # not "émigré", "σασ"
    expected = [tokenizer.vocabulary.index(word) for word in ("ÉmigrÉ", "ΣΑΣ", "a\xa0b")]
    assert tokenizer.encode(["ÉMIGRÉ ΣΑΣ a\xa0b"])[0, :3].tolist() == expected


def test_str_and_its_utf8_bytes_give_the_same_ids():
    tokenizer = Tokenizer(vectorizer(16, "head").get_vocabulary(), 16, "head")
    as_bytes = [text.encode("utf-8") for text in ALL_TEXTS]
    np.testing.assert_array_equal(tokenizer.encode(ALL_TEXTS), tokenizer.encode(as_bytes))


def test_a_lone_surrogate_is_refused_as_tensorflow_refuses_it():
    with pytest.raises(ValueError):
        tf.constant(["a\ud800b"])
    with pytest.raises(ValueError):
        Tokenizer(["", "[UNK]"], 4).encode(["a\ud800b"])


def test_empty_batch():
    ids = Tokenizer(["", "[UNK]", "a"], 4).encode([])
    assert ids.shape == (0, 4) and ids.dtype == np.int64


@pytest.mark.parametrize(
    ("vocabulary", "sequence_length", "truncate", "message"),
    [
        (["[UNK]", "a"], 4, "tail", "must start with"),
        (["", "[UNK]", "a"], 4, "middle", "truncate"),
        (["", "[UNK]", "a"], 0, "tail", "at least 1"),
        (["", "[UNK]", "a", "b", "a"], 4, "tail", "repeats 1 token"),
    ],
)
def test_bad_arguments_are_refused(vocabulary, sequence_length, truncate, message):
    with pytest.raises(ValueError, match=message):
        Tokenizer(vocabulary, sequence_length, truncate)


def test_negation_phrases_need_sentences():
    message = "negation_phrases standardizes sentences: set sentences too"
    with pytest.raises(ValueError, match=message):
        Tokenizer(["", "[UNK]", "a"], 4, negation_phrases=True)
    with pytest.raises(ValueError, match=message):
        ReviewVectorizer(10, 4, vocabulary=["a"], negation_phrases=True)


@pytest.mark.parametrize("mode", MODES)
def test_from_file_reads_the_vocabulary_training_writes(tmp_path, mode):
    (sentences, phrases), _ = MODES[mode]
    reference = vectorizer(12, "tail", mode)
    path = tmp_path / "vocabulary.txt"
    path.write_text("\n".join(reference.get_vocabulary()), encoding="utf-8")  # as train.py
    tokenizer = Tokenizer.from_file(path, 12, sentences=sentences, negation_phrases=phrases)
    assert tokenizer.vocabulary == reference.get_vocabulary() and tokenizer.sentences is sentences
    assert tokenizer.negation_phrases is phrases
    expected = reference(tf.constant(CASES)).numpy()
    np.testing.assert_array_equal(tokenizer.encode(CASES), expected)


def test_importing_the_tokenizer_imports_neither_tensorflow_nor_keras():
    heavy = ("tensorflow", "keras", "tensorflow_datasets", "mlflow")
    code = (
        "import sys, classifier.data.tokenizer\n"
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {heavy!r}))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "[]"
