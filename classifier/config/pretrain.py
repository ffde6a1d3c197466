"""The ``pretrain`` section of a config: self-pretraining of the encoder (``classify pretrain``).

Pretraining reads the same ``data.*`` keys (vocabulary size, sequence length, truncation, batch
size, the training portion ``data.train_size``) and ``model.*`` sizes as the ``encoder``
variant, so that the encoder it registers can be fine-tuned with ``model.init_from``. This
section holds what only pretraining uses. The vocabulary ends with reserved tokens that no
review can produce (standardization strips brackets): ``[MASK]`` for ``mlm``; ``[START]`` (the
decoder's first input) and one sentinel per corrupted span for ``span``.

Imports nothing heavy: :mod:`classifier.config.schema` validates this section before TensorFlow loads.

Example:
    >>> PretrainConfig().objective, PretrainConfig().registered_model
    ('mlm', 'imdb-encoder')
    >>> reserved_tokens(PretrainConfig(), sequence_length=256)
    ['[MASK]']
    >>> reserved_tokens(PretrainConfig(objective="span"), sequence_length=16)
    ['[START]', '[SPAN_0]']
"""

from __future__ import annotations

from dataclasses import dataclass

from classifier.errors import ConfigError

OBJECTIVES = ("mlm", "span")
IMDB_UNLABELLED_REVIEWS = 50_000
MASK_TOKEN = "[MASK]"  # mlm: the last id of the vocabulary
START_TOKEN = "[START]"  # span: the decoder's first input
SENTINEL = "[SPAN_{}]"  # span: what replaces the i-th dropped span in the encoder's input


@dataclass
class PretrainConfig:
    """How ``classify pretrain`` trains the encoder before any label is seen."""

    objective: str = "mlm"  # mlm (BERT masking) | span (T5 span corruption, encoder-decoder)
    experiment: str = "imdb-pretrain"
    registered_model: str = "imdb-encoder"  # the encoder, alias "newest"
    unlabelled_size: int | None = None  # first reviews of the unsupervised split; None: 50,000
    held_out: int = 1000  # the last of those: masked-token loss and accuracy per epoch only
    epochs: int = 10
    learning_rate: float = 1e-3
    mask_rate: float = 0.15  # mlm: share of each review's tokens to predict (80/10/10 split)
    noise_density: float = 0.15  # span: share of each review's tokens dropped
    mean_span_length: float = 3.0  # span: mean length of a dropped span


def span_count(sequence_length: int, noise_density: float, mean_span_length: float) -> int:
    """Spans dropped from a review of ``sequence_length`` tokens (fewer for shorter reviews).

    Example:
        >>> span_count(256, 0.15, 3.0)
        13
    """
    noise = max(1, round(sequence_length * noise_density))
    return max(1, round(noise / mean_span_length))


def reserved_tokens(cfg: PretrainConfig, sequence_length: int) -> list[str]:
    """The tokens appended to the adapted vocabulary, in id order."""
    if cfg.objective == "mlm":
        return [MASK_TOKEN]
    spans = span_count(sequence_length, cfg.noise_density, cfg.mean_span_length)
    return [START_TOKEN] + [SENTINEL.format(i) for i in range(spans)]


def validate_pretrain(cfg: PretrainConfig, vocab_size: int, sequence_length: int) -> None:
    """Reject values no pretraining could use; each message names the key and the value."""
    if cfg.objective not in OBJECTIVES:
        raise ConfigError(
            f"pretrain.objective={cfg.objective!r} is not one of {', '.join(OBJECTIVES)}"
        )
    for key, value in {
        "pretrain.unlabelled_size": cfg.unlabelled_size,
        "pretrain.held_out": cfg.held_out,
        "pretrain.epochs": cfg.epochs,
        "pretrain.learning_rate": cfg.learning_rate,
        "pretrain.mean_span_length": cfg.mean_span_length,
    }.items():
        if value is not None and value <= 0:
            raise ConfigError(f"{key} must be positive, got {value!r}")
    unlabelled = cfg.unlabelled_size or IMDB_UNLABELLED_REVIEWS
    if cfg.unlabelled_size is not None and cfg.unlabelled_size > IMDB_UNLABELLED_REVIEWS:
        raise ConfigError(
            f"pretrain.unlabelled_size={cfg.unlabelled_size} exceeds the "
            f"{IMDB_UNLABELLED_REVIEWS:,} reviews of the unsupervised split"
        )
    if cfg.held_out >= unlabelled:
        raise ConfigError(
            f"pretrain.held_out={cfg.held_out} leaves no unlabelled review to pretrain on "
            f"(pretrain.unlabelled_size gives {unlabelled:,})"
        )
    for key, value in (
        ("pretrain.mask_rate", cfg.mask_rate),
        ("pretrain.noise_density", cfg.noise_density),
    ):
        if not 0.0 < value < 1.0:
            raise ConfigError(f"{key} must be in (0, 1), got {value!r}")
    reserved = len(reserved_tokens(cfg, sequence_length))
    if vocab_size < reserved + 3:
        raise ConfigError(
            f"data.vocab_size={vocab_size} is too small to pretrain with "
            f"pretrain.objective={cfg.objective}: padding, OOV, {reserved} reserved token(s) and "
            "at least one word"
        )
