"""Encoder-only IMDB classifiers: one stack builder per ``model.variant``.

Every variant maps token ids (B, T) to class probabilities (B, K), two classes unless
``num_classes`` says more: an embedding, an attention stack, masked global average pooling
(padding does not dilute the mean), dropout and a K-way softmax head. The padding mask (id 0 = padding) is computed once and passed explicitly. Which
builder a variant uses, and everything else about it, is in the registry
(:mod:`classifier.config.variants`).

| variant     | stack                                                                 |
|-------------|-----------------------------------------------------------------------|
| attention   | Embedding, ``keras.layers.Attention`` x2 (as :class:`MaskedAttention`) |
| mha         | Embedding, ``keras.layers.MultiHeadAttention`` x2                      |
| block       | Embedding, one of our EncoderLayer (no position information)          |
| block_pos   | Embedding + learned positions, one EncoderLayer                       |
| encoder     | Embedding + sinusoidal or learned positions, our Encoder (N layers)   |
| bow         | no attention: TF-IDF word 1-2-grams and a linear map (:class:`BagOfNgrams`) |
| nbow        | no attention: NB-weighted binary word 1-3-grams, a linear map (:class:`NaiveBayesNgrams`) |
| nbow_attention | ``nbow``'s logits plus an ``attention`` reader's, trained jointly      |

``bow`` and ``nbow`` are the classical baselines, logistic regressions: their builders return
the K logits and the head only applies the softmax. ``nbow_attention`` fuses ``nbow`` with an
attention reader (the ``attention`` stack has no positions: it weighs words by the company they
keep in the review, not by their order): its log-odds is the sum of the two branches'.

Example:
    >>> from classifier.config.schema import LABELS, ModelConfig
    >>> model = build_classifier(ModelConfig(variant="encoder"), vocab_size=100, sequence_length=8)
    >>> tuple(model(np.array([[5, 7, 2, 0]])).shape)
    (1, 2)
"""

from __future__ import annotations

import keras
import numpy as np  # noqa: F401 - used by the docstring example

from classifier.config import variants
from classifier.config.schema import LABELS, ModelConfig
from classifier.layers import (
    BagOfNgrams,
    ClassNames,
    Encoder,
    EncoderLayer,
    MaskedAttention,
    MaskedGlobalAveragePooling1D,
    NaiveBayesNgrams,
    TokenAndPositionEmbedding,
    attention_mask,
    padding_mask,
)
from classifier.layers.nb_ngrams import class_feature_counts
from classifier.layers.ngrams import document_frequencies

NUM_CLASSES = 2  # IMDB's: negative, positive


def build_classifier(
    cfg: ModelConfig, vocab_size: int, sequence_length: int, num_classes: int = NUM_CLASSES
) -> keras.Model:
    """Build the (uncompiled) classifier of ``cfg.variant`` on token ids of any length T, with
    ``num_classes`` outputs.

    ``sequence_length`` is the longest T (the size of a learned position table); shorter
    batches, such as the length buckets of :func:`classifier.data.batching.vectorize`, run as they are.
    """
    if num_classes < 2:
        raise ValueError(f"a classifier needs at least two classes, got {num_classes}")
    token_ids = keras.Input(shape=(None,), dtype="int64", name="token_ids")
    mask = padding_mask(token_ids)  # (B, T) bool, True = real token
    variant = variants.get(cfg.variant)
    build = variant.build_stack()
    if variant.builds == "logits":
        x = build(cfg, token_ids, mask, vocab_size, sequence_length, num_classes=num_classes)
    else:
        x = build(cfg, token_ids, mask, vocab_size, sequence_length)
    # The head computes in float32 under mixed precision too: float16 probabilities would
    # round to 1 within 5e-4 of it.
    if variant.builds == "logits":  # the softmax alone; calibration scales and shifts it
        head = keras.layers.Dense(
            num_classes,
            "softmax",
            kernel_initializer="identity",
            trainable=False,
            name="head",
            dtype="float32",
        )
    else:
        x = MaskedGlobalAveragePooling1D(name="pool")(x, mask=mask)
        x = keras.layers.Dropout(cfg.dropout, name="head_dropout")(x)
        head = keras.layers.Dense(num_classes, "softmax", name="head", dtype="float32")
    return keras.Model(token_ids, head(x), name=variant.model_name)


def embed(cfg: ModelConfig, token_ids, vocab_size: int, sequence_length: int, position=None):
    embedding = TokenAndPositionEmbedding(
        vocab_size,
        sequence_length,
        cfg.embed_dim,
        position=position,
        scale=cfg.scale_embeddings,
        mask_zero=False,  # the mask travels explicitly
        name="embedding",
    )
    return embedding(token_ids)


def attention_stack(cfg, token_ids, mask, vocab_size, sequence_length):
    """``keras.layers.Attention`` twice, as :class:`MaskedAttention` (one head, no weights)."""
    x = embed(cfg, token_ids, vocab_size, sequence_length)
    for i in range(2):
        x = MaskedAttention(name=f"attention_{i}")([x, x], mask=[mask, mask])
    return x


def mha_stack(cfg, token_ids, mask, vocab_size, sequence_length):
    """``keras.layers.MultiHeadAttention`` twice (no residuals or feed-forward)."""
    x = embed(cfg, token_ids, vocab_size, sequence_length)
    pairs = attention_mask(mask, mask)  # (B, T, T)
    for i in range(2):
        x = keras.layers.MultiHeadAttention(
            cfg.num_heads, cfg.embed_dim // cfg.num_heads, dropout=cfg.dropout, name=f"mha_{i}"
        )(x, x, attention_mask=pairs)
    return x


def block_stack(cfg, token_ids, mask, vocab_size, sequence_length, position=None):
    """One :class:`EncoderLayer`: the keras-io IMDB example's transformer block, masked."""
    x = embed(cfg, token_ids, vocab_size, sequence_length, position=position)
    block = EncoderLayer(
        cfg.embed_dim,
        cfg.num_heads,
        cfg.ff_dim,
        dropout=cfg.dropout,
        norm_first=cfg.norm_first,
        name="transformer_block",
    )
    return block(x, padding_mask=mask)


def block_pos_stack(cfg, token_ids, mask, vocab_size, sequence_length):
    """Learned positions, then one :class:`EncoderLayer`."""
    return block_stack(cfg, token_ids, mask, vocab_size, sequence_length, position="learned")


def encoder_stack(cfg, token_ids, mask, vocab_size, sequence_length):
    """``model.position`` positions, then our :class:`Encoder` of ``model.num_layers``."""
    x = embed(cfg, token_ids, vocab_size, sequence_length, position=cfg.position)
    encoder = Encoder(
        cfg.num_layers,
        cfg.embed_dim,
        cfg.num_heads,
        cfg.ff_dim,
        dropout=cfg.dropout,
        norm_first=cfg.norm_first,
        name="encoder",
    )
    return encoder(x, padding_mask=mask)


def bag_of_ngrams(cfg, token_ids, mask, vocab_size, sequence_length, num_classes=NUM_CLASSES):
    """The ``bow`` baseline's logits: TF-IDF word 1-2-grams times a weight matrix (in float32
    under mixed precision too: a review's TF-IDF norm can pass float16's 65,504)."""
    bag = BagOfNgrams(
        vocab_size, cfg.ngram_buckets, num_classes, l2=cfg.l2, name="bag", dtype="float32"
    )
    return bag(token_ids)


def set_document_frequencies(classifier: keras.Model, batches, vocabulary=()) -> None:
    """Set the ``bow`` idf weights from the training reviews: ``(token_ids, label)`` batches
    (its words, ``vocabulary``, are not needed)."""
    bag = classifier.get_layer("bag")
    ids = (token_ids for token_ids, _ in batches)
    bag.set_idf(*document_frequencies(ids, bag.vocab_size, bag.buckets))


def nb_ngrams(cfg, token_ids, mask, vocab_size, sequence_length, num_classes=NUM_CLASSES):
    """The ``nbow`` baseline's logits: binary word 1-to-``model.ngram_order``-grams scaled by
    their Naive-Bayes log-count ratios (one-vs-rest for more than two classes), L2-normalised,
    times a weight matrix (float32)."""
    bag = NaiveBayesNgrams(
        vocab_size,
        cfg.ngram_buckets,
        num_classes,
        order=cfg.ngram_order,
        l2=cfg.l2,
        negation=cfg.negation,
        contrast=cfg.contrast,
        negation_words=cfg.negation_words,
        short_length=cfg.short_length,
        letters=cfg.letters,
        letter_weight=cfg.letter_weight,
        own_negated_letters=cfg.own_negated_letters,
        concessive=cfg.concessive,
        sentences_as_reviews=cfg.sentences_as_reviews,
        opening_contrast=cfg.opening_contrast,
        max_length=sequence_length,
        name="bag",
        dtype="float32",
    )
    return bag(token_ids)


#: How many words of a review (its first ones) the attention branch of ``nbow_attention`` reads:
#: the n-gram branch reads whole reviews, and attention's cost grows with the square of it.
READER_LENGTH = 512


def nb_ngrams_and_attention(
    cfg, token_ids, mask, vocab_size, sequence_length, num_classes=NUM_CLASSES
):
    """The ``nbow_attention`` variant's logits: the sum of two branches' logits, trained
    jointly. The n-gram branch is ``nbow``'s (layer ``bag``: whole reviews); the attention branch
    is the ``attention`` variant's stack over the first :data:`READER_LENGTH` words, pooled, to K
    logits (layer ``attention_logits``). So each fused logit (and, for two classes, the fused
    log-odds of positive) is the n-gram branch's plus the attention branch's."""
    ngram_logits = nb_ngrams(cfg, token_ids, mask, vocab_size, sequence_length, num_classes)
    read = token_ids[:, :READER_LENGTH]
    read_mask = padding_mask(read)
    x = attention_stack(cfg, read, read_mask, vocab_size, min(sequence_length, READER_LENGTH))
    x = MaskedGlobalAveragePooling1D(name="pool")(x, mask=read_mask)
    x = keras.layers.Dropout(cfg.dropout, name="reader_dropout")(x)
    attention_logits = keras.layers.Dense(num_classes, name="attention_logits", dtype="float32")(x)
    return keras.layers.Add(name="fused_logits", dtype="float32")([ngram_logits, attention_logits])


def set_log_count_ratios(classifier: keras.Model, batches, vocabulary=()) -> None:
    """Set the ``nbow`` log-count ratios from the training reviews: ``(token_ids, label)``
    batches (the labels of the reviews it trains on, never validation or test ones); a bag
    that reads letters first takes them from the ``vocabulary`` (the vectorizer's words)."""
    bag = classifier.get_layer("bag")
    bag.set_letters(vocabulary)
    counts = class_feature_counts(
        batches, bag.vocab_size, bag.buckets, bag.order, bag.outputs, entries=bag.entries,
        features=bag.feature_count,
    )  # fmt: skip
    bag.set_ratios(*counts)


def build_end_to_end(
    vectorizer: keras.layers.Layer,
    classifier: keras.Model,
    labels: tuple[str, ...] = LABELS,
) -> keras.Model:
    """Raw review strings (B,) to probabilities (B, K): the vectorizer, then the classifier.

    Class names other than IMDB's (``negative``, ``positive``) travel in a :class:`ClassNames`
    layer at the end; an IMDB model is built as before they did.
    """
    texts = keras.Input(shape=(), dtype="string", name="review")
    probabilities = classifier(vectorizer(texts))
    if tuple(labels) != LABELS:
        probabilities = ClassNames(labels, name="class_names")(probabilities)
    return keras.Model(texts, probabilities, name="imdb_sentiment")
