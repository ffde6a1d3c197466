"""The variant registry: one entry per ``model.variant``; everything else asks it.

An entry knows its kind (an attention reader, a bag of n-grams, or both: :data:`KINDS`), its
builder (see :mod:`classifier.models.classifier`), which layer's attention
``classify explain`` shows, the config keys the variant uses (for sweep labels and the key
params of ``classify compare``) and its position signal. ``config`` validates
``model.variant`` against :func:`names`. Adding a variant is one :func:`register` call here
plus its builder.

This module imports no Keras: builders are named as ``"module:function"`` and imported when a
model is built, so that a config can be checked in milliseconds.

Example:
    >>> get("encoder").explained_layer
    'encoder'
    >>> [name for name in names() if get(name).has_bag]
    ['bow', 'nbow', 'nbow_attention']
    >>> "bogus" in names()
    False
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

#: Config keys that size a model, with the short names ``classify compare`` shows.
SIZE_KEYS = (
    ("model.embed_dim", "d"),
    ("model.num_heads", "h"),
    ("model.ff_dim", "ff"),
    ("model.num_layers", "L"),
)
CLASSIFIER_PREFIX = "imdb_"  # a classifier model is named imdb_<variant>
#: What a variant's classifier is (:attr:`Variant.kind`): an attention reader of the token ids,
#: a bag of n-grams (layer ``bag``) and its softmax head, or the two added (``nbow_attention``).
KINDS = ("reader", "bag", "bag+reader")
#: How each kind is explained (:attr:`Variant.explains`).
_EXPLAINS = {
    "reader": "attention",
    "bag": "contributions",
    "bag+reader": "contributions+attention",
}

#: A builder maps ``(ModelConfig, token_ids, mask, vocab_size, sequence_length)`` to the hidden
#: sequence (B, T, d) that is pooled into the head.
Builder = Callable[..., Any]


@dataclass(frozen=True)
class Variant:
    """One classifier variant.

    Attributes:
        name: the ``model.variant`` value.
        builder: the stack builder, or ``"module:function"`` naming it (imported when used).
        explained_layer: name of the layer whose attention weights ``classify explain`` shows;
            it must accept ``return_attention_scores=True``. A layer that returns a list of
            weights (a stack) is explained by its last entry.
        explained_as: that attention in words, for captions; ``{last}`` is replaced by the
            number of attention layers in it.
        keys: the ``model.*`` config keys the variant uses (besides ``model.variant``).
        position: its fixed position signal (``"none"``, ``"learned"``), or ``None`` when
            ``model.position`` chooses it.
        kind: ``"reader"``: an attention stack reads the token ids; ``"bag"``: a bag of
            n-grams, layer ``bag``, and its head alone (``bow``, ``nbow``); ``"bag+reader"``:
            a bag whose logits an attention reader's are added to (layers
            ``attention_logits`` and ``fused_logits``: ``nbow_attention``). What is known of a
            bag is known from this, never from layer names (the n-gram path:
            :mod:`classifier.training.ngram_features`).
        prepare: ``"module:function"`` called as ``prepare(classifier, train_batches,
            vocabulary)`` after
            the classifier is built and before it trains (``bow``: the idf weights), or None.
    """

    name: str
    builder: Builder | str
    explained_layer: str
    explained_as: str
    keys: tuple[str, ...]
    position: str | None = None
    kind: str = "reader"
    prepare: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"variant {self.name!r}: kind {self.kind!r} is not one of {KINDS}")

    @property
    def has_bag(self) -> bool:
        """Whether its classifier holds a bag of n-grams (layer ``bag``)."""
        return self.kind != "reader"

    @property
    def builds(self) -> str:
        """``"stack"``: the builder returns the hidden sequence (B, T, d), pooled into a trained
        ``Dense(K, softmax)`` head; ``"logits"`` (a bag): it returns the K logits (B, K) and the
        head only applies the softmax (and, once calibrated, the temperature and offset)."""
        return "logits" if self.has_bag else "stack"

    @property
    def explains(self) -> str:
        """``"attention"`` (the explained layer's attention weights), ``"contributions"`` (a
        linear model: weight times feature value, per word) or ``"contributions+attention"``
        (a fused model: its n-gram branch's contributions, and its attention branch's
        attention)."""
        return _EXPLAINS[self.kind]

    def build_stack(self) -> Builder:
        """The builder function (imported on first use when named as a string)."""
        return _function(self.builder)

    def prepare_function(self) -> Callable[..., None] | None:
        """The ``prepare`` function, or None."""
        return _function(self.prepare) if self.prepare else None

    @property
    def model_name(self) -> str:
        """The name of this variant's classifier model, e.g. ``imdb_encoder``."""
        return f"{CLASSIFIER_PREFIX}{self.name}"


def used_params(flat: Mapping[str, Any], pretraining: bool = False) -> dict[str, Any]:
    """The params a run logs, from its flattened config: the experiment and every ``data.*`` and
    ``train.*`` key, ``model.variant`` and the model keys that variant uses, and ``pretrain.*``
    only when pretraining (an encoder: the ``encoder`` variant's keys). Other keys change nothing
    in the run and would only be noise in the runs table; the whole config is logged beside
    them as ``config.yaml``.

    Example:
        >>> sorted(used_params({"model.variant": "bow", "model.l2": 0.1, "model.dropout": 0.1,
        ...                     "train.seed": 1, "pretrain.epochs": 10}))
        ['model.l2', 'model.variant', 'train.seed']
    """
    variant = "encoder" if pretraining else str(flat.get("model.variant"))
    model_keys = {"model.variant", *get(variant).keys} if variant in _VARIANTS else set(flat)
    if flat.get("model.init_from") is not None:  # transfer: any variant may start from a model
        model_keys.add("model.init_from")
    sections = ("experiment", "data.", "train.", *(("pretrain.",) if pretraining else ()))
    # IMDB's keys, or those of a labelled file (data.source): the other source ignores them.
    unused = IMDB_KEYS if flat.get("data.source") is not None else SOURCE_KEYS
    return {
        key: value
        for key, value in flat.items()
        if (key.startswith(sections) or key in model_keys) and key not in unused
    }


#: The data keys only the IMDB data reads, and those only a labelled file or folder reads.
IMDB_KEYS = frozenset(
    f"data.{key}" for key in ("data_dir", "download", "train_size", "val_size", "test_size")
)
SOURCE_KEYS = frozenset(
    f"data.{key}"
    for key in (
        "source",
        "validation",
        "test",
        "validation_fraction",
        "test_fraction",
        "text_field",
        "label_field",
        "labels",
    )
)


def _function(named: Callable | str) -> Callable:
    if callable(named):
        return named
    module, _, function = named.partition(":")
    return getattr(importlib.import_module(module), function)


_VARIANTS: dict[str, Variant] = {}


def register(variant: Variant) -> Variant:
    """Add a variant (or replace the one of the same name); return it."""
    _VARIANTS[variant.name] = variant
    return variant


def unregister(name: str) -> None:
    """Remove a variant (tests add throwaway ones)."""
    _VARIANTS.pop(name, None)


def names() -> tuple[str, ...]:
    """The registered variant names, in registration order."""
    return tuple(_VARIANTS)


def get(name: str) -> Variant:
    """The variant called ``name``.

    Raises:
        KeyError: no such variant (``config.validate`` turns this into a one-line error).
    """
    return _VARIANTS[name]


def variant_of_model(model_name: str) -> Variant | None:
    """The variant whose classifier is named ``model_name`` (``imdb_<variant>``), if any.

    Example:
        >>> variant_of_model("imdb_mha").name
        'mha'
    """
    if not model_name.startswith(CLASSIFIER_PREFIX):
        return None
    return _VARIANTS.get(model_name.removeprefix(CLASSIFIER_PREFIX))


_SHARED = ("model.embed_dim", "model.dropout", "model.scale_embeddings")
_BLOCK = (*_SHARED, "model.num_heads", "model.ff_dim", "model.norm_first")
_BUILDERS = "classifier.models.classifier"

register(
    Variant(
        "attention",
        f"{_BUILDERS}:attention_stack",
        explained_layer="attention_1",
        explained_as="Attention layer 2 of 2",
        keys=_SHARED,
        position="none",
    )
)
register(
    Variant(
        "mha",
        f"{_BUILDERS}:mha_stack",
        explained_layer="mha_1",
        explained_as="MultiHeadAttention layer 2 of 2",
        keys=(*_SHARED, "model.num_heads"),
        position="none",
    )
)
register(
    Variant(
        "block",
        f"{_BUILDERS}:block_stack",
        explained_layer="transformer_block",
        explained_as="the transformer block",
        keys=_BLOCK,
        position="none",
    )
)
register(
    Variant(
        "block_pos",
        f"{_BUILDERS}:block_pos_stack",
        explained_layer="transformer_block",
        explained_as="the transformer block",
        keys=_BLOCK,
        position="learned",
    )
)
register(
    Variant(
        "encoder",
        f"{_BUILDERS}:encoder_stack",
        explained_layer="encoder",
        explained_as="encoder layer {last} of {last}",
        keys=(*_BLOCK, "model.num_layers", "model.position", "model.init_from"),
    )
)
register(
    Variant(
        "bow",
        f"{_BUILDERS}:bag_of_ngrams",
        explained_layer="bag",
        explained_as="the bag of word 1-2-grams",
        keys=("model.ngram_buckets", "model.l2"),
        position="none",
        kind="bag",
        prepare=f"{_BUILDERS}:set_document_frequencies",
    )
)
#: The model keys of the NB-weighted bags.
NBOW_KEYS = (
    "model.ngram_buckets",
    "model.ngram_order",
    "model.l2",
    "model.negation",
    "model.contrast",
    "model.negation_words",
    "model.short_length",
    "model.letters",
    "model.letter_weight",
    "model.own_negated_letters",
    "model.concessive",
    "model.sentences_as_reviews",
    "model.opening_contrast",
)
register(
    Variant(
        "nbow",
        f"{_BUILDERS}:nb_ngrams",
        explained_layer="bag",
        explained_as="the NB-weighted bag of word n-grams",
        keys=NBOW_KEYS,
        position="none",
        kind="bag",
        prepare=f"{_BUILDERS}:set_log_count_ratios",
    )
)
register(
    Variant(
        "nbow_attention",
        f"{_BUILDERS}:nb_ngrams_and_attention",
        explained_layer="attention_1",
        explained_as="the attention branch's layer 2 of 2",
        keys=(*NBOW_KEYS, *_SHARED),
        position="none",
        kind="bag+reader",
        prepare=f"{_BUILDERS}:set_log_count_ratios",
    )
)
