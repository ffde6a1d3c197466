"""What a bundle holds for ``classify explain``, read without TensorFlow: the weights of a bag of
n-grams with a NumPy twin of its features, and a second LiteRT model giving the attention.

:func:`classifier.serving.bundle.write_bundle` writes them beside the classifier
at training time, and ``bundle.json`` describes them under ``"explain"``:

| file             | for                     | what                                            |
|------------------|-------------------------|-------------------------------------------------|
| ``ngrams.npz``   | ``bow``, ``nbow``,      | the bag's per-feature scale (idf or NB ratios), |
|                  | ``nbow_attention``      | kernel and bias, and the head's kernel and bias |
| ``attention.tflite`` | the attention variants | token ids (1, T) to the explained layer's     |
|                  |                         | weights (1, h, T, S), and for ``nbow_attention`` |
|                  |                         | its attention branch's logits (1, K)            |

A bag's exact word contributions need its feature ids and their normalised values
(:meth:`NgramWeights.feature_values`), computed here as
:class:`classifier.layers.ngrams.BagOfNgrams` computes them with ``keras.ops``
(``tests/serving/test_explain_parts.py`` checks the two agree). The explanation itself is
:mod:`classifier.explain`'s; this module only reads what it needs. A bundle written before
these parts existed has no ``"explain"`` entry: :func:`load_explain_parts` gives ``None`` and
``classify explain`` loads the Keras model instead.

Example (a run's bundle)::

    parts = load_explain_parts(load_bundle("bundle"))
    parts.ngrams.feature_values(np.array([[12, 845, 7]]))  # (features (1, 5), values (1, 5))
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from classifier.config.negation import concession_ids, scope_ids
from classifier.errors import ModelError, first_line
from classifier.serving.interpreters import without_delegate_note
from classifier.serving.litert_engine import read_checked

NGRAMS_FILE = "ngrams.npz"
ATTENTION_FILE = "attention.tflite"
#: The arrays of ``ngrams.npz``.
NGRAM_ARRAYS = ("scale", "kernel", "bias", "head_kernel", "head_bias")


def ngram_features(token_ids: np.ndarray, vocab_size: int, buckets: int, order: int = 2):
    """NumPy twin of :func:`classifier.layers.ngrams.ngram_features`: (B, T) ids to (B, F)
    feature ids, the T unigrams, then the hashed n-grams of each order up to ``order``.

    Example:
        >>> ngram_features(np.array([[3, 4, 3, 0]]), 10, 16).tolist()
        [[3, 4, 3, 0, 12, 21, 0]]
    """
    ids = np.asarray(token_ids, dtype=np.int64)
    parts, code, real = [ids], ids, ids > 0
    for n in range(2, order + 1):
        code = code[:, :-1] * vocab_size + ids[:, n - 1 :]
        real = real[:, :-1] & (ids[:, n - 1 :] > 0)
        parts.append(np.where(real, vocab_size + np.mod(code, buckets), 0))
    return np.concatenate(parts, axis=1)


def scope_of(
    token_ids: np.ndarray,
    words: int = 0,
    commas: bool = True,
    concessive: bool = False,
    opening: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """``(negated (B, T) bool, before_contrast (B, T) bool)``: the NumPy twin of
    :func:`classifier.layers.negation_scope.negation_scope`.

    Example (ids 2 ``.``, 3 ``,``, 4 ``not``, 33 ``but``; 40, 41, 42 other words):
        >>> negated, before = scope_of(np.array([[40, 4, 41, 42, 3, 41, 2, 41, 3, 33, 42]]))
        >>> negated.astype(int).tolist(), before.astype(int).tolist()
        ([[0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0]], [[0, 0, 0, 0, 0, 0, 0, 1, 1, 0, 0]])
    """
    ids, where = np.asarray(token_ids), scope_ids()
    position = np.broadcast_to(np.arange(ids.shape[1]), ids.shape)
    negation = (ids >= where.negations[0]) & (ids < where.negations[1])
    contrast = (ids >= where.contrasts[0]) & (ids < where.contrasts[1])
    end = ids == where.end
    last_negation = np.maximum.accumulate(np.where(negation, position, -1), axis=1)
    stop = end | contrast | ((ids == where.comma) if commas else False)
    last_stop = np.maximum.accumulate(np.where(stop, position, -1), axis=1)
    far = ids.shape[1] + 1

    def next_of(flags):  # the first position at or after each where ``flags`` holds
        return np.minimum.accumulate(np.where(flags, position, far)[:, ::-1], axis=1)[:, ::-1]

    after = np.pad(next_of(contrast), ((0, 0), (0, 1)), constant_values=far)[:, 1:]
    negated = (last_negation > last_stop) & ~negation
    if words:
        negated &= position - last_negation <= words
    next_end = next_of(end)
    before = after < next_end
    if concessive or opening:  # where a sentence's first word stands
        first = np.pad(ids, ((0, 0), (1, 0)), constant_values=where.end)[:, :-1] == where.end
    if concessive:
        concession = np.isin(ids, concession_ids()) & first
        start = np.maximum.accumulate(np.where(concession, position, -1), axis=1)
        breaks = end | (ids == where.comma)
        last_break = np.maximum.accumulate(np.where(breaks, position, -1), axis=1)
        before |= (start > last_break) & (position > start)
    if opening:
        followed = np.pad(contrast & first, ((0, 0), (0, 1)))[:, 1:]
        before |= (next_of(end & followed) == next_end) & (next_end < far) & ~end
    return negated, before


@dataclass(frozen=True)
class NgramWeights:
    """A bag of n-grams (layer ``bag``) and the head after it, as NumPy arrays.

    Attributes:
        vocab_size, buckets, order: the bag's feature numbering.
        scale_name: ``idf`` (``bow``) or ``ratio`` (the NB-scaled bags).
        scale: (F,) or, one per output, (F, outputs).
        kernel, bias: the bag's linear map, (F, outputs) and (outputs,).
        head_kernel, head_bias: the head's (outputs, K) and (K,), the temperature included.
        negation, contrast: how negated n-grams and those before a contrast word count
            (:class:`~classifier.layers.nb_ngrams.NaiveBayesNgrams`; 0 and 1: as any other).
        negation_words: the most words a negation's scope holds (0: to its clause's end).
        short_length, letters, letter_ids: a sentence's own block of features, and its words'
            letter n-grams (:class:`~classifier.layers.nb_ngrams.NaiveBayesNgrams`; 0 and 0:
            none), the table of them (vocab_size, letters) where ``letters``.
        letter_weight: what a letter n-gram counts against a word n-gram's 1.
        own_negated_letters: whether a negated letter n-gram adds a feature of its own.
        concessive: whether a clause conceded by a sentence's opening "although" stands before
            a contrast (:func:`scope_of`).
        sentences_as_reviews: whether a sentence's n-grams count in the reviews' block as well.
        opening_contrast: whether a sentence whose next one opens with a contrast word stands
            before a contrast (:func:`scope_of`).
    """

    vocab_size: int
    buckets: int
    order: int
    scale_name: str
    scale: np.ndarray
    kernel: np.ndarray
    bias: np.ndarray
    head_kernel: np.ndarray
    head_bias: np.ndarray
    negation: float = 0.0
    contrast: float = 1.0
    negation_words: int = 0
    short_length: int = 0
    letters: int = 0
    letter_ids: np.ndarray | None = None
    letter_weight: float = 1.0
    own_negated_letters: bool = True
    concessive: bool = False
    sentences_as_reviews: bool = False
    opening_contrast: bool = False

    @property
    def reads_scope(self) -> bool:
        """As :attr:`classifier.layers.nb_ngrams.NaiveBayesNgrams.reads_scope`."""
        return self.negation > 0 or self.contrast != 1

    def features(self, token_ids: np.ndarray) -> np.ndarray:
        """(B, F) feature ids in order of position (:func:`ngram_features`, then with
        ``letters`` a sentence's letter n-grams, then with ``sentences_as_reviews`` a sentence's
        n-grams again, in the reviews' block); with ``negation``, then each negated one's own
        feature (0 elsewhere); a sentence's in its block."""
        plain, negated, _, lettered, block = self._by_position(token_ids)
        placed = self._placed(plain, block)
        if self.negation > 0:
            own = self._placed(self._own(plain), block)
            placed = np.concatenate([placed, np.where(self._owned(negated, lettered), own, 0)], 1)
        return placed

    def _owned(self, negated: np.ndarray, lettered: np.ndarray) -> np.ndarray:
        """As :meth:`classifier.layers.nb_ngrams.NaiveBayesNgrams._owned`."""
        return (negated > 0) & ((lettered == 0) | self.own_negated_letters)

    def feature_values(self, token_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(features (B, F), values (B, F) or (B, F, outputs))``: sorted feature ids and
        their normalised scaled values, 0 for repeats and padding (the twin of
        :meth:`classifier.layers.ngrams.BagOfNgrams.feature_values`, in float32 as it is)."""
        plain, negated, before, lettered, block = self._by_position(token_ids)
        if not self.reads_scope and not self.short_length:
            features, sign, weight = np.sort(plain, axis=-1), 1.0, 1.0
        else:
            step = 8 if self.letter_weight != 1 else 4  # the keys' bits, as the Keras layer's
            flags = before + (lettered * 4 if step == 8 else 0)
            keys = np.where(plain > 0, self._placed(plain, block) * step + negated * 2 + flags, 0)
            if self.negation > 0:
                own = self._placed(self._own(plain), block) * step + flags
                keys = np.concatenate([keys, np.where(self._owned(negated, lettered), own, 0)], 1)
            keys = np.sort(keys, axis=-1)
            features = keys // step
            sign = np.where((keys // 2) % 2 > 0, np.float32(-self.negation), np.float32(1))
            weight = np.where(keys % 2 > 0, np.float32(self.contrast), np.float32(1))
            if step == 8:
                letter = np.where((keys // 4) % 2 > 0, np.float32(self.letter_weight), 1)
                weight = weight * letter.astype(np.float32)
        previous = np.pad(features[:, :-1], ((0, 0), (1, 0)))
        present = ((features != previous) & (features > 0)).astype(np.float32) * sign * weight
        scales = self.scale[features]
        if self.scale.ndim == 2:
            present = present[..., None]
        values = present * scales
        norm = np.sqrt(np.sum(np.square(values), axis=1, keepdims=True))
        return features, values / np.maximum(norm, np.float32(1e-12))

    def _by_position(self, token_ids: np.ndarray):
        """As :meth:`classifier.layers.nb_ngrams.NaiveBayesNgrams._by_position`: the features by
        position within their block, their negated, before-contrast and letter flags (int64),
        and where each is in the sentences' block (B, F)."""
        ids = np.asarray(token_ids, dtype=np.int64)
        words = ngram_features(ids, self.vocab_size, self.buckets, self.order)
        sentence = (ids > 0).sum(axis=1, keepdims=True) < self.short_length
        if self.reads_scope:
            negated, before = scope_of(
                ids, self.negation_words, concessive=self.concessive, opening=self.opening_contrast
            )
            as_review = negated.astype(np.int64) * int(self.negation > 0)
            if self.short_length:
                negated = np.where(sentence, scope_of(ids, commas=False)[0], negated)
            negated = negated.astype(np.int64) * int(self.negation > 0)
            before = before.astype(np.int64)
        else:
            negated = before = as_review = np.zeros_like(ids)
        flags = [
            np.concatenate([f[:, n:] for n in range(self.order)], axis=1) for f in (negated, before)
        ]
        plain, words_before = words, flags[1]
        lettered = np.zeros_like(plain)
        if self.letters:
            grams = self.letter_ids[ids[:, : self.short_length]].astype(np.int64)  # (B, S, G)
            grams = np.where(sentence[:, :, None], grams, 0)
            for i, flag in enumerate((negated, before)):
                spread = np.broadcast_to(flag[:, : self.short_length, None], grams.shape)
                flags[i] = np.concatenate([flags[i], spread.reshape(len(ids), -1)], axis=1)
            plain = np.concatenate([plain, grams.reshape(len(ids), -1)], axis=1)
            lettered = np.concatenate([lettered, np.ones_like(grams.reshape(len(ids), -1))], axis=1)
        block = np.broadcast_to(sentence, plain.shape)
        if self.sentences_as_reviews:  # a sentence's n-grams again, in the reviews' block
            plain = np.concatenate([plain, np.where(sentence, words, 0)], axis=1)
            as_review = np.concatenate([as_review[:, n:] for n in range(self.order)], axis=1)
            flags[0] = np.concatenate([flags[0], as_review], axis=1)  # the clause's scope
            flags[1] = np.concatenate([flags[1], words_before], axis=1)
            lettered = np.concatenate([lettered, np.zeros_like(words)], axis=1)
            block = np.concatenate([block, np.zeros(words.shape, bool)], axis=1)
        negated, before, lettered = (np.where(plain > 0, f, 0) for f in (*flags, lettered))
        return plain, negated, before, lettered, block

    def _placed(self, features: np.ndarray, block: np.ndarray) -> np.ndarray:
        """As :meth:`classifier.layers.nb_ngrams.NaiveBayesNgrams._placed`."""
        if not self.short_length:
            return features
        return np.where(block & (features > 0), features + self.vocab_size + self.buckets, features)

    def _own(self, features: np.ndarray) -> np.ndarray:
        """As :meth:`classifier.layers.nb_ngrams.NaiveBayesNgrams._own`."""
        slot = np.where(
            features < self.vocab_size, features * 31 + 17, (features - self.vocab_size) * 31 + 29
        )
        return self.vocab_size + np.mod(slot, self.buckets)


class AttentionOutputs:
    """The attention LiteRT model of a bundle: one review's token ids to the explained layer's
    weights, and a fused model's attention-branch logits.

    Example (a bundle of an attention model)::

        weights, branch = load_explain_parts(bundle).attention(np.array([12, 845, 7]))
        weights.shape, branch  # (2, 3, 3), None
    """

    def __init__(self, model_content: bytes):
        from ai_edge_litert.interpreter import Interpreter

        self._interpreter = Interpreter(model_content=model_content)
        (inputs,) = self._interpreter.get_input_details()
        self._input = inputs["index"]
        outputs = {
            len(d["shape_signature"]): d["index"] for d in self._interpreter.get_output_details()
        }
        self._weights, self._branch = outputs.get(4), outputs.get(2)
        if self._weights is None:
            raise ValueError("no output of rank 4 (the attention weights)")

    def __call__(self, token_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """``(weights (h, T, S), branch logits (K,) or None)`` of one review's ids (T,)."""
        ids = np.ascontiguousarray(np.asarray(token_ids, dtype=np.int64)[None, :])
        self._interpreter.resize_tensor_input(self._input, ids.shape, strict=False)
        without_delegate_note(self._interpreter.allocate_tensors)
        self._interpreter.set_tensor(self._input, ids)
        self._interpreter.invoke()
        weights = self._interpreter.get_tensor(self._weights)[0].copy()
        if self._branch is None:
            return weights, None
        return weights, self._interpreter.get_tensor(self._branch)[0].copy()


@dataclass(frozen=True)
class ExplainParts:
    """What ``bundle.json``'s ``"explain"`` entry and its files give.

    Attributes:
        explains: ``contributions``, ``attention`` or ``contributions+attention`` (the
            variant's :attr:`~classifier.config.variants.Variant.explains`).
        layer: the explained layer in words, for the caption.
        ngrams: the bag's weights (n-gram models), else None.
        attention: the attention model (attention models), else None.
    """

    explains: str
    layer: str
    ngrams: NgramWeights | None
    attention: AttentionOutputs | None


def has_explain_parts(bundle) -> bool:
    """Whether a loaded bundle (:class:`~classifier.serving.litert_engine.BundleModel`) was
    written with what ``classify explain`` reads."""
    return bool(bundle.info.explain)


def load_explain_parts(bundle) -> ExplainParts:
    """Read and check the explain parts of a loaded bundle.

    Raises:
        ModelError: one line: the bundle has none (written before they existed), a file is
            missing or changed since it was written, or unreadable.
    """
    entry, folder = bundle.info.explain, Path(bundle.folder)
    shown = f"model bundle {folder}"
    if not entry:
        raise ModelError(
            f"{shown}: written before bundles held what explain needs (explain its run's "
            "model.keras, or its models:/ URI, instead)"
        )
    ngrams = attention = None
    try:
        if "ngrams" in entry:
            described = entry["ngrams"]
            content = read_checked(folder, NGRAMS_FILE, bundle.info.files, shown)
            with np.load(io.BytesIO(content), allow_pickle=False) as arrays:
                loaded = {name: arrays[name] for name in NGRAM_ARRAYS}
                if "letter_ids" in arrays:  # a bag that reads its sentences' letters
                    loaded["letter_ids"] = arrays["letter_ids"]
            ngrams = NgramWeights(
                vocab_size=int(described["vocab_size"]),
                buckets=int(described["buckets"]),
                order=int(described["order"]),
                scale_name=str(described["scale_name"]),
                negation=float(described.get("negation", 0.0)),
                contrast=float(described.get("contrast", 1.0)),
                negation_words=int(described.get("negation_words", 0)),
                short_length=int(described.get("short_length", 0)),
                letters=int(described.get("letters", 0)),
                letter_weight=float(described.get("letter_weight", 1.0)),
                own_negated_letters=bool(described.get("own_negated_letters", True)),
                sentences_as_reviews=bool(described.get("sentences_as_reviews", False)),
                concessive=bool(described.get("concessive", False)),
                opening_contrast=bool(described.get("opening_contrast", False)),
                **loaded,
            )
        if "attention" in entry:
            attention = AttentionOutputs(
                read_checked(folder, ATTENTION_FILE, bundle.info.files, shown)
            )
        return ExplainParts(str(entry["explains"]), str(entry["layer"]), ngrams, attention)
    except (KeyError, TypeError, ValueError, RuntimeError, OSError) as error:
        raise ModelError(f"{shown}: bad explain parts ({first_line(error)})") from None
