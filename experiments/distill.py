"""The 50,000 unlabelled reviews another way: an encoder taught by a stronger model's labels.

Self-pretraining (``classify pretrain``) did not lift the 16-wide ``encoder`` on these cores
(README "Self-pretraining against bow"). This measures a cheaper use of the unlabelled reviews:
a teacher (a finished ``classify train`` run, typically ``bow`` without refit, which never saw
the validation reviews) gives each unlabelled review its calibrated P(positive), and the
student (the ``encoder`` variant of ``--config``, built by the same builder, vocabulary adapted
on the training portion as ``classify train`` adapts it) trains on the 15,000 training reviews
with their labels plus the unlabelled ones with the teacher's probabilities as soft labels
(cross-entropy against [1 - p, p]). The epoch count is chosen on the validation reviews
(early stopping, best weights kept), then the test reviews are scored once; with
``--refit-epochs`` it trains on every labelled review for that many epochs instead.

It prints the teacher's validation accuracy, a line per student epoch, and a table row.

Usage::

    classify train --config configs/variants/bow.yaml --set train.refit=false \\
        --set train.seed=1 --set experiment=imdb-distill          # the teacher
    TFDS_DATA_DIR=../shared/tensorflow_datasets python experiments/distill.py \\
        runs:/TEACHER_RUN_ID/model.keras --seed 1
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def soft_labels(labels: np.ndarray) -> np.ndarray:
    """Class probabilities [P(negative), P(positive)] from P(positive) (or 0/1 labels).

    >>> soft_labels(np.array([1.0, 0.25])).tolist()
    [[0.0, 1.0], [0.75, 0.25]]
    """
    positive = labels.astype("float32")
    return np.stack([1.0 - positive, positive], axis=1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("teacher", help="the teacher model: a .keras file or an MLflow URI")
    parser.add_argument("--config", default="configs/variants/encoder.yaml")
    parser.add_argument("--set", action="append", default=[], help="KEY=VALUE, as classify's")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--unlabelled", type=int, default=50000, help="how many to label")
    parser.add_argument(
        "--refit-epochs",
        type=int,
        help="refit: train on the training and validation reviews (and the unlabelled ones) "
        "for this many epochs, as train.refit does; the teacher should be a refit run too",
    )
    args = parser.parse_args()
    from classifier.cli.startup import import_tensorflow

    import_tensorflow()  # without its C++ start-up lines
    import keras
    import tensorflow as tf

    from classifier.config.schema import load_config
    from classifier.data.pipeline import (
        build_vectorizer,
        load_raw_splits,
        load_unsupervised,
        vectorize,
    )
    from classifier.models.classifier import build_classifier
    from classifier.runs.lifecycle import quiet_libraries
    from classifier.serving.predict import predict_texts
    from classifier.serving.registry import load_model
    from classifier.training.build import optimizer

    quiet_libraries()
    cfg = load_config(args.config, args.set)
    keras.utils.set_random_seed(args.seed)
    raw = load_raw_splits(cfg.data)

    def arrays(dataset) -> tuple[list[str], np.ndarray]:
        pairs = [(t.decode("utf-8"), label) for t, label in dataset.as_numpy_iterator()]
        return [t for t, _ in pairs], np.array([label for _, label in pairs])

    train_texts, train_labels = arrays(raw.train)
    val_texts, val_labels = arrays(raw.validation)
    test_texts, test_labels = arrays(raw.test)
    unlabelled = [
        t.decode("utf-8")
        for t in load_unsupervised(cfg.data).take(args.unlabelled).as_numpy_iterator()
    ]

    tick = time.perf_counter()
    teacher = load_model(args.teacher)
    teacher_val = np.array(predict_texts(teacher, val_texts))
    # --unlabelled 0: the same student on the labelled reviews alone (the control)
    taught = np.array(predict_texts(teacher, unlabelled) if unlabelled else [], "float32")
    seen = " (a refit teacher trained on them)" if args.refit_epochs else ""
    print(
        f"teacher {args.teacher}: validation accuracy "
        f"{np.mean((teacher_val > 0.5) == val_labels):.4f}{seen}; {len(unlabelled):,} unlabelled "
        f"reviews labelled, mean P(positive) {taught.mean() if unlabelled else 0:.3f}, "
        f"{time.perf_counter() - tick:.0f}s",
        flush=True,
    )

    labelled = raw.train
    if args.refit_epochs:  # as train.refit: every labelled review, nothing left to validate on
        labelled = raw.train.concatenate(raw.validation)
        train_texts, train_labels = (
            train_texts + val_texts,
            np.concatenate([train_labels, val_labels]),
        )
    texts = np.array(train_texts + unlabelled, dtype=object)
    targets = np.concatenate([soft_labels(train_labels), soft_labels(taught)])
    order = np.random.default_rng(args.seed).permutation(len(texts))

    vectorizer = build_vectorizer(cfg.data, labelled)  # as classify train: labelled text only

    def pipeline(texts, targets, seed=None):
        dataset = tf.data.Dataset.from_tensor_slices((list(texts), targets))
        return vectorize(dataset, vectorizer, cfg.data.batch_size, seed, bucket_by_length=True)

    train = pipeline(texts[order], targets[order], seed=args.seed)
    # A refit has nothing to validate on (and vectorize counts its batches at once).
    validation = None if args.refit_epochs else pipeline(val_texts, soft_labels(val_labels))
    test = pipeline(test_texts, soft_labels(test_labels))

    model = build_classifier(cfg.model, cfg.data.vocab_size, cfg.data.sequence_length)
    model.compile(
        optimizer=optimizer(cfg.train),
        loss="categorical_crossentropy",
        metrics=[keras.metrics.CategoricalAccuracy(name="accuracy")],
    )
    stop = keras.callbacks.EarlyStopping(
        "val_accuracy",
        patience=cfg.train.early_stopping_patience,
        mode="max",
        restore_best_weights=True,
    )

    class Line(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            self.tick = time.perf_counter()

        def on_epoch_end(self, epoch, logs=None):
            val = f"  val acc {logs['val_accuracy']:.4f}" if "val_accuracy" in logs else ""
            print(
                f"epoch {epoch + 1:2d}  loss {logs['loss']:.4f}{val}  "
                f"{time.perf_counter() - self.tick:.0f}s",
                flush=True,
            )

    history = model.fit(
        train,
        validation_data=validation,
        epochs=args.refit_epochs or cfg.train.epochs,
        callbacks=[Line()] if args.refit_epochs else [stop, Line()],
        shuffle=False,  # the pipeline shuffles
        verbose=0,
    )
    scores = history.history.get("val_accuracy", [])
    best = int(np.argmax(scores)) if scores else args.refit_epochs - 1
    _, test_accuracy = model.evaluate(test, verbose=0)
    print("| teacher | seed | unlabelled | val acc per epoch | best epoch | test acc |")
    print("|---|---:|---:|---|---:|---:|")
    curve = ", ".join(f"{s:.4f}" for s in scores)
    print(
        f"| {args.teacher} | {args.seed} | {len(unlabelled):,} | {curve} | {best + 1} | "
        f"{test_accuracy:.4f} |"
    )


if __name__ == "__main__":
    main()
