"""Checks of config values that need more than a type and a range: a user's data source keys,
names MLflow would refuse, what ``train.lazy_adam`` leaves out, and what ``model.negation``
needs.
:func:`classifier.config.schema.validate` calls them; each raises
:class:`~classifier.errors.ConfigError` naming the key.

Example:
    >>> check_model_name("train.registered_model", "imdb-sentiment")  # fine: returns None
"""

from __future__ import annotations

import unicodedata
from typing import Any

from classifier.config.negation import reserved_words
from classifier.errors import ConfigError


def check_source(d: Any) -> None:
    """The keys of a user's labelled data (``d``: the ``DataConfig``, which imports this module): only with ``data.source``, fractions that leave
    training rows, names that are not empty."""
    if d.source is None:
        for key in ("validation", "test", "labels", "label_map"):
            if getattr(d, key) is not None:
                raise ConfigError(
                    f"data.{key} is set without data.source; it applies to a labelled file "
                    "or folder (data.source), not to the IMDB data"
                )
    for key in ("source", "validation", "test", "text_field", "label_field", "labels"):
        value = getattr(d, key)
        if value is not None and not value.strip():
            raise ConfigError(f"data.{key} must not be empty")
    if d.label_map is not None:
        parse_label_map(d.label_map)
    if d.extra_label_map is not None:
        if d.extra is None:
            raise ConfigError("data.extra_label_map is set but data.extra is not: set both")
        parse_label_map(d.extra_label_map, "data.extra_label_map")
    if d.phrases and not str(d.source or "").endswith(".txt"):
        raise ConfigError(
            "data.phrases is set but data.source is not a treebank file (.txt of PTB trees); "
            "phrases are the labelled nodes of its trees"
        )
    for key in ("validation_fraction", "test_fraction"):
        if not 0.0 <= getattr(d, key) < 1.0:
            raise ConfigError(f"data.{key} must be in [0, 1), got {getattr(d, key)!r}")
    carved = (d.validation is None) * d.validation_fraction + (d.test is None) * d.test_fraction
    if d.source is not None and carved >= 1.0:
        raise ConfigError(
            f"data.validation_fraction={d.validation_fraction} plus data.test_fraction="
            f"{d.test_fraction} leaves no training rows in data.source"
        )
    if d.source is not None:
        for key in ("validation", "test"):
            fraction = getattr(d, f"{key}_fraction")
            if getattr(d, key) is None and fraction == 0.0:
                raise ConfigError(
                    f"data.{key}_fraction is 0 and data.{key} is not set: a run needs "
                    f"{key} texts; give a file (data.{key}) or a fraction of data.source"
                )


#: In ``data.extra_label_map``, the class of a row that joins training once per class (a
#: target spread evenly over the classes: a neutral phrase that leans no way).
EVERY_CLASS = "*"


def parse_label_map(text: str, key: str = "data.label_map") -> dict[str, str | None]:
    """``data.label_map`` (or another ``key`` of its form) as ``{label read: class name}``;
    None where the label's rows are dropped (``2=``); :data:`EVERY_CLASS` (``2=*``, in
    ``data.extra_label_map`` only) where a row joins training once per class. A ConfigError
    for an entry without ``=``, an empty or repeated label.

    Example:
        >>> parse_label_map("0=negative, 1=negative, 2=, 3=positive, 4=positive")
        {'0': 'negative', '1': 'negative', '2': None, '3': 'positive', '4': 'positive'}
        >>> parse_label_map("0=negative, 2=*, 4=positive", "data.extra_label_map")["2"]
        '*'
    """
    mapping: dict[str, str | None] = {}
    for entry in text.split(","):
        label, equals, name = (part.strip() for part in entry.partition("="))
        problem = (
            f"entry '{entry.strip()}' has no '=' (write label=class, or label= to drop it)"
            if not equals
            else "has an entry without a label" if not label
            else f"maps '{label}' twice" if label in mapping
            else (
                f"maps '{label}' to every class ({EVERY_CLASS}), which only "
                "data.extra_label_map can (training rows that lean no way)"
            ) if name == EVERY_CLASS and key != "data.extra_label_map"
            else ""
        )  # fmt: skip
        if problem:
            raise ConfigError(f"{key}='{text}' {problem}")
        mapping[label] = name or None
    if len({name for name in mapping.values() if name and name != EVERY_CLASS}) < 2:
        raise ConfigError(f"{key}='{text}' leaves fewer than two classes; a classifier needs two")
    return mapping


def check_model_name(key: str, name: str) -> None:
    """Refuse a name MLflow would refuse to register, after training.

    Mirrors ``mlflow.utils.validation._validate_model_name`` (MLflow 3.17) without importing
    MLflow, and refuses what ``models:/NAME@ALIAS`` cannot carry (``?`` starts a query) and
    control characters.
    """
    if not name.strip():
        raise ConfigError(f"{key} must not be empty")
    if any(char in name for char in "/:?"):
        problem = "'/', ':' and '?' are not allowed"
    elif name == "." or name.startswith(".."):
        problem = "it must not be '.' or start with '..'"
    elif any(unicodedata.category(char) == "Cc" for char in name):
        problem = "control characters are not allowed"
    else:
        return
    raise ConfigError(f"{key}={name!r} cannot be an MLflow model name: {problem}")


#: ``mlflow.utils.validation.MAX_EXPERIMENT_NAME_LENGTH``.
MAX_EXPERIMENT_NAME = 500


def check_experiment_name(key: str, name: str) -> None:
    """Refuse an empty experiment name, or one longer than MLflow takes."""
    if not name.strip():
        raise ConfigError(f"{key} must not be empty")
    if len(name) > MAX_EXPERIMENT_NAME:
        raise ConfigError(
            f"{key} is {len(name)} characters long; MLflow takes at most {MAX_EXPERIMENT_NAME}"
        )


def check_negation(d: Any, m: Any) -> None:
    """``model.negation`` and ``model.contrast`` (``m``: the ``ModelConfig``) weigh the n-grams of
    ``nbow`` and ``nbow_attention`` by where they stand in a sentence, which needs the sentence
    ends and scope words that ``data.sentences`` (``d``: the ``DataConfig``) keeps."""
    if d.negation_phrases and not d.sentences:
        raise ConfigError(
            "data.negation_phrases reads 'far from' as 'far not' in the standardization that "
            "data.sentences=true chooses: set it too"
        )
    if not 0.0 <= m.negation <= 1.0:
        raise ConfigError(f"model.negation must be in [0, 1], got {m.negation!r}")
    if not 0.0 < m.contrast <= 1.0:
        raise ConfigError(f"model.contrast must be in (0, 1], got {m.contrast!r}")
    reserved = len(reserved_words())
    if d.sentences and d.vocab_size < reserved + 3:
        raise ConfigError(
            f"data.vocab_size must be at least {reserved + 3} with data.sentences (padding, "
            f"OOV, {reserved} punctuation and scope words, one word), got {d.vocab_size}"
        )
    for key in ("negation_words", "short_length", "letters"):
        if getattr(m, key) < 0:
            raise ConfigError(f"model.{key} must not be negative, got {getattr(m, key)}")
    if m.letters and not m.short_length:
        raise ConfigError("model.letters are read in sentences: set model.short_length too")
    if m.letter_weight <= 0 or (m.letter_weight != 1 and not m.letters):
        raise ConfigError(
            f"model.letter_weight weighs letter n-grams: above 0, with model.letters set; got "
            f"{m.letter_weight!r}"
        )
    if not m.own_negated_letters and not (m.letters and m.negation > 0):
        raise ConfigError(
            "model.own_negated_letters=false is of negated letter n-grams: set model.letters "
            "and model.negation too"
        )
    if m.concessive and m.contrast == 1.0:
        raise ConfigError(
            "model.concessive weighs a conceded clause as model.contrast weighs the words before "
            "'but': set model.contrast below 1 too"
        )
    if m.opening_contrast and m.contrast == 1.0:
        raise ConfigError(
            "model.opening_contrast weighs the sentence before an opening 'But' as model.contrast "
            "weighs the words before 'but': set model.contrast below 1 too"
        )
    if m.sentences_as_reviews and not m.short_length:
        raise ConfigError(
            "model.sentences_as_reviews reads a sentence's n-grams in the reviews' block as well "
            "as its own: set model.short_length too"
        )
    if m.short_length and m.variant not in ("nbow", "nbow_attention"):
        raise ConfigError(
            "model.short_length reads sentences in a block of nbow's and nbow_attention's "
            f"n-grams; model.variant={m.variant!r} has none (set it to 0)"
        )
    if m.negation == 0.0 and m.contrast == 1.0:
        return
    if m.variant not in ("nbow", "nbow_attention"):
        raise ConfigError(
            "model.negation and model.contrast weigh the n-grams of nbow and nbow_attention; "
            f"model.variant={m.variant!r} has none (set them to 0 and 1)"
        )
    if not d.sentences:
        raise ConfigError(
            "model.negation and model.contrast need the sentence ends and scope words that "
            "data.sentences=true keeps"
        )


def check_lazy_adam(t: Any, bag_of_ngrams: bool) -> None:
    """``train.lazy_adam`` (``t``: the ``TrainConfig``) on a bag of n-grams is plain Adam on the
    batch's rows: no weight decay, no clipping, no loss scaling (mixed precision). Other
    variants ignore it."""
    if t.lazy_adam and bag_of_ngrams and (t.weight_decay or t.clipnorm or t.mixed_precision):
        raise ConfigError(
            "train.lazy_adam updates the rows of each batch's n-grams with plain Adam: "
            "set train.weight_decay=0, train.clipnorm=null and train.mixed_precision=false, "
            "or train.lazy_adam=false"
        )
