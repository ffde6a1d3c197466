"""The host side of ``experiments/gpu_pretrain.py``: TensorFlow and MLflow, which the GPU
machine lacks.

``prepare OUT``: the pretraining text of ``configs/pretrain.yaml`` (49,000 unlabelled reviews +
the 15,000 of the training portion; the last 1,000 unlabelled ones held out), its vocabulary
adapted by :func:`classifier.pretraining.data.pretrain_vectorizer` as ``classify pretrain`` does,
and the labelled splits (train 15,000, validation 10,000, test 25,000), all as token ids in
``OUT/ids.npz`` plus ``OUT/vocabulary.txt``: what ``gpu_pretrain.py run`` reads.

``export RESULTS WEIGHTS IDS_DIR``: the encoder that ``run`` pretrained, logged as ``classify
pretrain`` logs one (experiment ``imdb-pretrain``, registered ``imdb-encoder``, alias
``newest``), so that ``classify train`` fine-tunes from it here
(``experiments/sweeps/pretraining-gpu.yaml``).

Usage::

    TFDS_DATA_DIR=../shared/tensorflow_datasets python experiments/gpu_pretrain_host.py prepare .gpu
    python experiments/gpu_pretrain_host.py export results.json encoder.weights.h5 .gpu
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
from gpu_pretrain import model_config


def prepare(out: Path, config: str) -> None:
    """Token ids of every split, with the pretraining vocabulary (TensorFlow side)."""
    from classifier.config.schema import load_config
    from classifier.data.pipeline import load_raw_splits
    from classifier.pretraining.data import load_texts, pretrain_vectorizer

    cfg = load_config(config)
    texts = load_texts(cfg)
    vectorizer = pretrain_vectorizer(cfg, texts.train)
    raw = load_raw_splits(cfg.data)
    sources = {
        "pretrain": texts.train.map(lambda text: (text, -1)),
        "held_out": texts.held_out.map(lambda text: (text, -1)),
        "train": raw.train,
        "validation": raw.validation,
        "test": raw.test,
    }
    arrays = {}
    for name, dataset in sources.items():
        ids, labels = [], []
        for text, label in dataset.batch(1024):
            batch = vectorizer(text).numpy()
            ids.extend(row[row != 0] for row in batch)
            labels.append(label.numpy())
        arrays[f"{name}_tokens"] = np.concatenate(ids).astype(np.uint16)
        arrays[f"{name}_lengths"] = np.array([len(row) for row in ids], np.int32)
        arrays[f"{name}_labels"] = np.concatenate(labels).astype(np.int8)
        print(f"{name}: {len(ids):,} reviews, {arrays[f'{name}_tokens'].size:,} tokens")
    out.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(out / "ids.npz", **arrays)
    (out / "vocabulary.txt").write_text("\n".join(vectorizer.get_vocabulary()), "utf-8")


def export(results_path: Path, weights: Path, ids_dir: Path) -> None:
    """Log the GPU-pretrained encoder as ``classify pretrain`` logs one (TensorFlow side): an
    ``imdb-pretrain`` run with the per-epoch metrics and the ``encoder/`` folder, registered as
    ``imdb-encoder`` (alias ``newest``), so that ``model.init_from`` fine-tunes from it here."""
    import tempfile

    import mlflow

    from classifier.models.pretraining import build_encoder
    from classifier.pretraining.encoder_artifact import ENCODER_DIR, register_encoder, write_encoder
    from classifier.pretraining.pretrain import ENCODER_KEYS
    from classifier.runs.tracking import configure_tracking, ensure_experiment, git_commit

    results = json.loads(results_path.read_text("utf-8"))
    settings = results["args"]
    sizes = model_config(argparse.Namespace(**settings), 0.1)
    vocabulary = (ids_dir / "vocabulary.txt").read_text("utf-8").split("\n")
    encoder = build_encoder(sizes, len(vocabulary), settings["sequence_length"])
    encoder.load_weights(weights)
    configure_tracking()
    ensure_experiment("imdb-pretrain")
    with mlflow.start_run(run_name="pretrain-mlm-gpu") as run:
        mlflow.set_tags({"device": "GPU", "backend": "jax", "git_commit": git_commit()})
        mlflow.log_params({f"gpu_pretrain.{key}": value for key, value in settings.items()})
        for row in results["pretrain"]:
            metrics = {key: value for key, value in row.items() if key not in ("epoch", "seconds")}
            mlflow.log_metrics({**metrics, "epoch_time_s": row["seconds"]}, step=row["epoch"])
        info = {
            "objective": "mlm",
            "epochs": len(results["pretrain"]),
            "vocab_size": len(vocabulary),
            "sequence_length": settings["sequence_length"],
            "truncate": "tail",
            "train_size": len(np.load(ids_dir / "ids.npz")["train_lengths"]),
            "model": {key: getattr(sizes, key) for key in ENCODER_KEYS},
            "run_id": run.info.run_id,
            "trained_by": "experiments/gpu_pretrain.py (Keras JAX backend, GPU)",
        }
        with tempfile.TemporaryDirectory() as folder:
            written = write_encoder(encoder, vocabulary, Path(folder) / ENCODER_DIR, info)
            mlflow.log_artifacts(str(written), ENCODER_DIR)
        version = register_encoder(run.info.run_id, "imdb-encoder")
    print(f"run {run.info.run_id}: encoder imdb-encoder v{version.version}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    prep = sub.add_parser("prepare", help="token ids of every split (TensorFlow)")
    prep.add_argument("out", type=Path)
    prep.add_argument("--config", default="configs/pretrain.yaml")
    put = sub.add_parser("export", help="log and register the encoder (TensorFlow, MLflow)")
    put.add_argument("results", type=Path)
    put.add_argument("weights", type=Path)
    put.add_argument("ids", type=Path, help="the prepare folder (its vocabulary.txt)")
    args = parser.parse_args()
    if args.command == "prepare":
        prepare(args.out, args.config)
    else:
        export(args.results, args.weights, args.ids)


if __name__ == "__main__":
    main()
