"""Transfer: ``model.init_from`` naming a trained classifier, so that a run on a new data set
starts from what was learnt on another (IMDB's reviews, say) instead of from scratch.

What fits is copied: every layer of the new classifier whose name and weight shapes match a
layer of the trained one (the embedding, the attention and encoder stacks), except the head,
which is new (its classes are the new data's). The n-gram layer ``bag`` of ``bow`` and ``nbow``
is copied where its outputs match too (the same number of classes); its idf or NB ratios are
then learnt again from the new training texts. The new run reads texts with the trained
model's vocabulary, so that each copied embedding row means the same word: ``data.vocab_size``
must be the trained model's. A pretrained encoder (``classify pretrain``) is the other kind of
``model.init_from`` (:mod:`classifier.pretraining.encoder_artifact`); :func:`starting_point`
tells them apart.

Example (a store with a registered IMDB model of the same sizes)::

    start = starting_point(load_config("configs/variants/nbow_attention.yaml", [
        "data.source=../shared/data/sst5/train.csv", "model.init_from=models:/imdb-attention@newest"]))
    start.copied  # ['embedding']
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import keras
import mlflow
from mlflow.exceptions import MlflowException
from mlflow.tracking import MlflowClient

from classifier.config.schema import Config, DataConfig
from classifier.data.vectorizer import ReviewVectorizer
from classifier.errors import ConfigError, ModelError, first_line
from classifier.pretraining.encoder_artifact import (
    ENCODER_DIR,
    ENCODER_FILE,
    INIT_FROM_TAG,
    PretrainedEncoder,
    pretrained_encoder,
)
from classifier.serving.keras_engine import classifier_of, vectorizer_of
from classifier.serving.registry import load_model
from classifier.serving.versions import registered_version

#: Layers that are never copied: they map to the classes, which are the new data's.
NEW_LAYERS = ("head", "attention_logits")
COPIED_PARAM = "model.init_from_layers"  # the layers a run copied, comma-separated


@dataclass
class TrainedClassifier:
    """A trained classifier to start from: its token-ids classifier and vocabulary."""

    source: str  # the model.init_from value
    classifier: keras.Model
    vocabulary: list[str]  # by id: '' (padding), '[UNK]', the words
    run_id: str | None = None
    copied: list[str] = field(default_factory=list)

    def vectorizer(self, data: DataConfig) -> ReviewVectorizer:
        """The new classifier's vectorizer with the trained model's vocabulary."""
        return ReviewVectorizer.for_data(data, self.vocabulary[2:])

    def copy_into(self, model: keras.Model) -> None:
        """Copy every layer of the trained classifier that fits ``model`` (same name, same
        weight shapes), the head excepted.

        Raises:
            ConfigError: no layer fits (the sizes differ: the message names the first).
        """
        trained = {layer.name: layer for layer in self.classifier.layers}
        self.copied, misfits = [], []
        for layer in model.layers:
            source = trained.get(layer.name)
            if layer.name in NEW_LAYERS or source is None or not layer.weights:
                continue
            ours = [tuple(w.shape) for w in layer.weights]
            theirs = [tuple(w.shape) for w in source.weights]
            if ours == theirs:
                layer.set_weights(source.get_weights())
                self.copied.append(layer.name)
            else:
                misfits.append(f"{layer.name} {ours} against {theirs}")
        if not self.copied:
            why = f": {misfits[0]}" if misfits else " (no layer of the same name)"
            raise ConfigError(
                f"model.init_from={self.source}: none of its layers fits this model's{why}; "
                "use the model.* sizes it was trained with"
            )

    def log_lineage(self) -> None:
        """Tag the active run with the run it started from, and log the layers copied."""
        if self.run_id:
            mlflow.set_tag(INIT_FROM_TAG, self.run_id)
        mlflow.log_param(COPIED_PARAM, ",".join(self.copied))


def starting_point(cfg: Config) -> PretrainedEncoder | TrainedClassifier | None:
    """What ``model.init_from`` names, loaded and checked: a pretrained encoder (an
    ``encoder/`` folder, ``classify pretrain``'s) or a trained classifier; None without it.

    Raises:
        ModelError: nothing loadable there. ConfigError: sizes that differ.
    """
    source = cfg.model.init_from
    if not source:
        return None
    if _is_encoder(source):
        if cfg.model.variant != "encoder":
            raise ConfigError(
                f"model.init_from={source} is a pretrained encoder: it starts variant "
                f"encoder, not model.variant={cfg.model.variant!r}"
            )
        return pretrained_encoder(cfg)
    model = load_model(source)
    vectorizer = vectorizer_of(model)
    if vectorizer.vocab_size != cfg.data.vocab_size:
        raise ConfigError(
            f"data.vocab_size={cfg.data.vocab_size} but the model from {source} has "
            f"{vectorizer.vocab_size} (its vocabulary and embedding are reused)"
        )
    if getattr(vectorizer, "sentences", False) != cfg.data.sentences:
        raise ConfigError(
            f"data.sentences={str(cfg.data.sentences).lower()} but the model from {source} was "
            f"trained with {str(not cfg.data.sentences).lower()} (its vocabulary is reused)"
        )
    version = registered_version(source) if source.startswith("models:") else None
    run_id = version.run_id if version is not None else _run_of(source)
    return TrainedClassifier(source, classifier_of(model), vectorizer.get_vocabulary(), run_id)


def _is_encoder(source: str) -> bool:
    """Whether ``source`` holds a pretrained encoder (else it is taken as a classifier)."""
    path = Path(source).expanduser()
    if path.exists():
        return path.name == ENCODER_FILE or (path / ENCODER_FILE).is_file()
    if not source.startswith(("models:", "runs:")):
        return False  # load_model names what is wrong
    if source.startswith("runs:"):
        run_id, _, artifact_path = source.removeprefix("runs:/").strip("/").partition("/")
        if artifact_path:
            return artifact_path.strip("/").split("/")[0] == ENCODER_DIR
    else:
        try:
            version = registered_version(source)
        except ModelError:
            return False  # load_model says it in one line
        if version is None:
            return False
        run_id = version.run_id
    try:
        names = {info.path for info in MlflowClient().list_artifacts(run_id)}
    except MlflowException as error:
        raise ModelError(f"model.init_from={source}: {first_line(error)}") from None
    return ENCODER_DIR in names


def _run_of(source: str) -> str | None:
    """The run of a ``runs:/`` URI (None for a local file)."""
    if source.startswith("runs:"):
        return source.removeprefix("runs:/").strip("/").split("/")[0]
    return None
