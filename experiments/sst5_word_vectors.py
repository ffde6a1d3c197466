"""Do word vectors learnt on IMDB's reviews lift the SST-5 attention reader towards 0.43? A probe
for issue #41, before any vectors step is built into the product.

The reader is the ``attention`` variant, 64 wide, on SST-5 as ``configs/sweeps/sst5.yaml``
trains it (90% of ``train.csv``, the epoch chosen on the other 10% with early stopping,
``dev.csv`` scored once), with its own vocabulary (SST-5's training sentences). Its token
embedding starts either at random (as ``classify train`` does) or from 64-dimensional PPMI-SVD
word vectors counted over IMDB's 25,000 labelled training reviews, its 50,000 unlabelled ones and
SST-5's training sentences (never IMDB's test split nor ``dev.csv``; window 5, the code of
``experiments/fusion_probe.py``), and is trained further. Dev accuracy and macro-F1 per seed.

Usage:
    TFDS_DATA_DIR=../shared/tensorflow_datasets python experiments/sst5_word_vectors.py
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "experiments"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--seeds", default="1,2,3")
    args = parser.parse_args()
    from classifier.cli.startup import import_tensorflow

    import_tensorflow()
    import keras
    import numpy as np
    from fusion_probe import arrays, ppmi_vectors
    from sklearn.metrics import accuracy_score, f1_score

    from classifier.config.schema import load_config
    from classifier.data.pipeline import (
        ReviewVectorizer,
        build_vectorizer,
        load_raw_splits,
        load_unsupervised,
        make_datasets,
    )
    from classifier.training.build import new_model

    sets = [
        "model.variant=attention",
        f"model.embed_dim={args.dim}",
        "model.init_from=null",
        "train.learning_rate=0.001",
        "train.epochs=20",
        "train.refit=false",
    ]
    base = load_config(str(ROOT / "configs" / "sst5.yaml"), sets)
    raw = load_raw_splits(base.data)
    vectorizer = build_vectorizer(base.data, raw.train)
    sentences, _ = arrays(raw.train)
    imdb = load_config(None)
    imdb_raw = load_raw_splits(imdb.data)
    reviews = [*arrays(imdb_raw.train)[0], *arrays(imdb_raw.validation)[0]]
    reviews += list(load_unsupervised(imdb.data).as_numpy_iterator())
    whole = ReviewVectorizer(
        base.data.vocab_size, 2500, "tail", vectorizer.get_vocabulary()[2:]
    )  # every word of a review counts, not the last 64
    start = time.time()
    vectors = ppmi_vectors(whole, [*reviews, *sentences], args.dim, seed=0)
    print(
        f"PPMI-SVD vectors over {len(reviews) + len(sentences):,} texts: {time.time() - start:.0f} s"
    )
    truth = np.concatenate(
        [labels.numpy() for _, labels in make_datasets(base.data, raw, vectorizer).test]
    )
    rows = {"random": [], "IMDB vectors": []}
    for seed in [int(s) for s in args.seeds.split(",")]:
        cfg = load_config(str(ROOT / "configs" / "sst5.yaml"), [*sets, f"train.seed={seed}"])
        for name in rows:
            keras.utils.set_random_seed(seed)
            data = make_datasets(cfg.data, raw, vectorizer, seed=seed)
            model = new_model(cfg, data.train, None, len(raw.labels))
            if name == "IMDB vectors":
                model.get_layer("embedding").token_embedding.embeddings.assign(vectors)
            stop = keras.callbacks.EarlyStopping(
                "val_accuracy", patience=3, mode="max", restore_best_weights=True
            )
            model.fit(data.train, validation_data=data.validation, epochs=20, callbacks=[stop],
                      verbose=0)  # fmt: skip
            predicted = np.argmax(model.predict(data.test, verbose=0), axis=1)
            accuracy = accuracy_score(truth, predicted)
            rows[name].append((accuracy, f1_score(truth, predicted, average="macro")))
            print(f"seed {seed}, {name}: dev accuracy {accuracy:.4f}", flush=True)
    print()
    print(f"| embedding ({args.dim} wide) | dev acc | dev macro-F1 |")
    print("|---|---:|---:|")
    for name, results in rows.items():
        acc, f1 = [r[0] for r in results], [r[1] for r in results]
        print(
            f"| {name} | {statistics.mean(acc):.4f} ± {statistics.pstdev(acc):.4f} "
            f"| {statistics.mean(f1):.4f} ± {statistics.pstdev(f1):.4f} |"
        )


if __name__ == "__main__":
    main()
