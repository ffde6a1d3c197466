"""The pretrained encoder as an artefact: written and registered by ``classify pretrain``, read
by ``model.init_from`` when the ``encoder`` variant is fine-tuned.

A pretraining run logs the folder ``encoder/``: ``encoder.keras`` (token ids in, hidden states
out: the ``embedding`` and ``encoder`` layers of the ``encoder`` variant), ``vocabulary.txt``
(one token per line by id, ``''`` and ``[UNK]`` first, the reserved tokens last) and
``encoder.json`` (what made it). The run is registered as ``pretrain.registered_model``
(``imdb-encoder``) with the alias ``newest``. ``model.init_from`` names it as
``models:/NAME@ALIAS``, ``models:/NAME/VERSION``, ``runs:/RUN_ID`` (its ``encoder/``),
``runs:/RUN_ID/PATH`` or a local folder; the encoder is loaded with ``safe_mode`` on, its
sizes are checked against the config, and its vocabulary replaces the classifier's own. A
``data.train_size`` below the one it was pretrained with is refused too: the validation
reviews start there, and the encoder has read their text.

Example (a store with a pretrained encoder)::

    encoder = load_encoder("models:/imdb-encoder@newest")
    check_sizes(encoder, cfg)  # ConfigError: model.embed_dim=32 but the encoder from ... has 16
    encoder.copy_into(classifier)  # its embedding and encoder weights
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import keras
import mlflow
from mlflow.exceptions import MlflowException
from mlflow.tracking import MlflowClient

import classifier.layers  # noqa: F401 - registers the custom layers the saved encoder names
from classifier.config.negation import SENTENCE_END
from classifier.config.schema import Config, DataConfig
from classifier.data.vectorizer import ReviewVectorizer
from classifier.errors import ConfigError, ModelError, first_line
from classifier.layers import Encoder, TokenAndPositionEmbedding
from classifier.runs.tracking import MODEL_ALIAS, configure_tracking, tracking_uri, version_of_run

ENCODER_DIR = "encoder"
ENCODER_FILE = "encoder.keras"
VOCABULARY_FILE = "vocabulary.txt"
INFO_FILE = "encoder.json"
INIT_FROM_TAG = "init_from_run"  # on a fine-tuned run: the pretraining run of its encoder
COPIED_LAYERS = ("embedding", "encoder")


@dataclass
class PretrainedEncoder:
    """A loaded pretrained encoder, its vocabulary, and where it came from."""

    source: str  # the model.init_from value
    model: keras.Model
    vocabulary: list[str]  # by id: '' (padding), '[UNK]', the words, the reserved tokens
    run_id: str | None = None
    info: dict = field(default_factory=dict)  # encoder.json: how it was pretrained

    def vectorizer(self, data: DataConfig) -> ReviewVectorizer:
        """The classifier's vectorizer with this vocabulary (nothing is adapted)."""
        return ReviewVectorizer.for_data(data, self.vocabulary[2:])

    def copy_into(self, model: keras.Model) -> None:
        """Set the ``embedding`` and ``encoder`` weights of a classifier to this encoder's."""
        for name in COPIED_LAYERS:
            model.get_layer(name).set_weights(self.model.get_layer(name).get_weights())

    def log_lineage(self) -> None:
        """Tag the active run with the pretraining run of this encoder, when known."""
        if self.run_id:
            mlflow.set_tag(INIT_FROM_TAG, self.run_id)


def write_encoder(encoder: keras.Model, vocabulary: list[str], folder: Path, info: dict) -> Path:
    """Write ``encoder.keras``, ``vocabulary.txt`` and ``encoder.json`` into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    encoder.save(folder / ENCODER_FILE)
    (folder / VOCABULARY_FILE).write_bytes("\n".join(vocabulary).encode("utf-8"))
    (folder / INFO_FILE).write_text(json.dumps(info, indent=2, sort_keys=True))
    return folder


def register_encoder(run_id: str, name: str):
    """Register the run's ``encoder/`` as a new version of ``name`` (unless the run registered
    one before a kill) and move ``newest`` to it."""
    client = MlflowClient()
    version = version_of_run(name, run_id)
    if version is not None:
        client.set_registered_model_alias(name, MODEL_ALIAS, version.version)
        return version
    if not client.search_registered_models(filter_string=f"name = '{name}'"):
        try:
            client.create_registered_model(name)
        except MlflowException as error:  # another process registered it meanwhile
            if error.error_code != "RESOURCE_ALREADY_EXISTS":
                raise
    source = f"{client.get_run(run_id).info.artifact_uri}/{ENCODER_DIR}"
    version = client.create_model_version(name, source=source, run_id=run_id)
    client.set_registered_model_alias(name, MODEL_ALIAS, version.version)
    return version


def pretrained_encoder(cfg: Config) -> PretrainedEncoder | None:
    """The encoder ``model.init_from`` names, loaded and checked against ``cfg``; or None."""
    if not cfg.model.init_from:
        return None
    encoder = load_encoder(cfg.model.init_from)
    check_sizes(encoder, cfg)
    return encoder


def load_encoder(source: str) -> PretrainedEncoder:
    """Find, download and load a pretrained encoder (see the module docstring for ``source``).

    Raises:
        ModelError: one line naming ``model.init_from`` and what is wrong.
    """
    shown = f"model.init_from={source}"
    with tempfile.TemporaryDirectory(prefix="classify-encoder-") as workdir:
        folder, run_id = _fetch(source, Path(workdir), shown)
        if folder.is_file():
            folder = folder.parent
        if not (folder / ENCODER_FILE).is_file() or not (folder / VOCABULARY_FILE).is_file():
            raise ModelError(
                f"{shown}: no {ENCODER_FILE} with its {VOCABULARY_FILE} there (an encoder/ "
                "folder that classify pretrain logs)"
            )
        try:
            model = keras.models.load_model(folder / ENCODER_FILE, safe_mode=True)
        except Exception as error:  # noqa: BLE001 - Keras raises many kinds for a bad file
            raise ModelError(f"{shown}: not a loadable Keras model ({first_line(error)})") from None
        vocabulary = (folder / VOCABULARY_FILE).read_bytes().decode("utf-8").split("\n")
        info_file = folder / INFO_FILE
        info = json.loads(info_file.read_text("utf-8")) if info_file.is_file() else {}
    layers = {layer.name: layer for layer in getattr(model, "layers", [])}
    if not (
        isinstance(layers.get("embedding"), TokenAndPositionEmbedding)
        and isinstance(layers.get("encoder"), Encoder)
    ):
        raise ModelError(f"{shown}: not a pretrained encoder (no embedding and encoder layers)")
    return PretrainedEncoder(source, model, vocabulary, run_id, info)


def check_sizes(encoder: PretrainedEncoder, cfg: Config) -> None:
    """Refuse a config whose sizes differ from the encoder's, naming the key and both values.

    Raises:
        ConfigError: e.g. ``model.embed_dim=32 but the encoder from models:/... has 16``.
    """
    embedding = encoder.model.get_layer("embedding")
    stack = encoder.model.get_layer("encoder")
    m, d = cfg.model, cfg.data
    pairs = [
        ("data.vocab_size", d.vocab_size, embedding.vocab_size),
        ("model.embed_dim", m.embed_dim, embedding.d_model),
        ("model.position", m.position, embedding.position),
        ("model.scale_embeddings", m.scale_embeddings, embedding.scale),
        ("model.num_layers", m.num_layers, stack.num_layers),
        ("model.num_heads", m.num_heads, stack.num_heads),
        ("model.ff_dim", m.ff_dim, stack.d_ff),
        ("model.norm_first", m.norm_first, stack.norm_first),
    ]
    if embedding.position == "learned":  # the position table has one row per position
        pairs.append(("data.sequence_length", d.sequence_length, embedding.max_length))
    for key, ours, theirs in pairs:
        if ours != theirs:
            raise ConfigError(f"{key}={ours} but the encoder from {encoder.source} has {theirs}")
    read = encoder.info.get("train_size")  # the training reviews whose text it read
    if read is not None and d.train_size < read:  # validation starts at train_size
        raise ConfigError(
            f"data.train_size={d.train_size} but the encoder from {encoder.source} has read the "
            f"text of the first {read} training reviews: validation reviews among them"
        )
    if len(encoder.vocabulary) > d.vocab_size:
        raise ConfigError(
            f"data.vocab_size={d.vocab_size} but the vocabulary of the encoder from "
            f"{encoder.source} has {len(encoder.vocabulary)} tokens"
        )
    # A vocabulary built with data.sentences holds "." (id 2); standardization strips it else.
    built_with = encoder.vocabulary[2:3] == [SENTENCE_END]
    if built_with != d.sentences:
        raise ConfigError(
            f"data.sentences={str(d.sentences).lower()} but the encoder from {encoder.source} "
            f"was pretrained with {str(built_with).lower()} (its vocabulary is reused)"
        )


def _fetch(source: str, workdir: Path, shown: str) -> tuple[Path, str | None]:
    """Download (or find) the encoder folder; return it and the run that logged it."""
    path = Path(source).expanduser()
    if path.exists():
        return path, None
    if not source.startswith(("models:/", "runs:/")):
        raise ModelError(f"{shown}: no such file, and not an MLflow URI (models:/..., runs:/...)")
    store = configure_tracking()
    try:
        if source.startswith("runs:/"):
            run_id, _, artifact_path = source.removeprefix("runs:/").strip("/").partition("/")
        else:
            run_id, artifact_path = _registered_run(source.removeprefix("models:/"), shown), ""
        local = mlflow.artifacts.download_artifacts(
            run_id=run_id, artifact_path=artifact_path or ENCODER_DIR, dst_path=str(workdir)
        )
    except (MlflowException, OSError) as error:
        raise ModelError(f"{shown}: cannot get it from {store} ({first_line(error)})") from None
    return Path(local), run_id


def _registered_run(body: str, shown: str) -> str:
    """The run of ``NAME@ALIAS``, ``NAME/VERSION`` or ``NAME@latest`` (the highest version)."""
    client = MlflowClient()
    name, _, version = body.partition("/")
    name, _, alias = name.partition("@")
    versions = client.search_model_versions(f"name = '{name}'")
    if not versions:
        raise ModelError(
            f"{shown}: no registered model {name!r} in {tracking_uri()}; classify pretrain "
            "registers one"
        )
    if alias.lower() == "latest" or version.lower() == "latest":
        return max(versions, key=lambda v: int(v.version)).run_id
    if version:
        matches = [v for v in versions if str(v.version) == version]
        if not matches:
            raise ModelError(f"{shown}: {name} has no version {version}")
        return matches[0].run_id
    try:
        return client.get_model_version_by_alias(name, alias or MODEL_ALIAS).run_id
    except MlflowException:
        raise ModelError(f"{shown}: {name} has no alias {alias!r}") from None
