"""The references of the SST-5 table: TF-IDF logistic regression (scikit-learn) and fastText,
measured as ``configs/sweeps/sst5.yaml`` measures the variants.

Same splits as ``classify train`` makes them (:func:`classifier.data.labelled.plan_splits`):
90% of ``train.csv`` trains, the other 10% (stratified, fixed seed) chooses the settings, and
``dev.csv`` is scored once per seed with the chosen ones (accuracy and macro-F1, scikit-learn's).
Three seeds; the training time is that of the final fit. fastText comes from PyPI
(``fasttext-wheel``), in this benchmark only, never a dependency of the package.

Usage:
    pip install fasttext-wheel   # once, in the project's .venv
    python benchmarks/sst5_baselines.py [--data ../shared/data/sst5]
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import tempfile
import time
from pathlib import Path

from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import accuracy_score, f1_score

from classifier.config.schema import DataConfig
from classifier.data.labelled import plan_splits

LABELS = "very negative,negative,neutral,positive,very positive"
SEEDS = (1, 2, 3)


def splits(folder: Path) -> tuple[dict[str, tuple[list[str], list[int]]], tuple[str, ...]]:
    cfg = DataConfig(source=str(folder / "train.csv"), test=str(folder / "dev.csv"), labels=LABELS)
    plan = plan_splits(cfg)
    out = {}
    for name in ("train", "validation", "test"):
        pairs = list(plan.examples(name))
        out[name] = ([text for text, _ in pairs], [label for _, label in pairs])
    return out, plan.labels


def tfidf_lr(data, seed: int) -> dict:
    """TF-IDF word 1-2-grams (sublinear tf) and a logistic regression, C chosen on validation."""
    (train, y), (val, y_val), (dev, y_dev) = data["train"], data["validation"], data["test"]
    best = None
    for c in (0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0):
        vectorizer = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, min_df=1)
        model = LogisticRegression(C=c, max_iter=2000, random_state=seed)
        model.fit(vectorizer.fit_transform(train), y)
        accuracy = accuracy_score(y_val, model.predict(vectorizer.transform(val)))
        if best is None or accuracy > best[0]:
            best = (accuracy, c)
    started = time.perf_counter()
    vectorizer = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, min_df=1)
    model = LogisticRegression(C=best[1], max_iter=2000, random_state=seed)
    model.fit(vectorizer.fit_transform(train), y)
    seconds = time.perf_counter() - started
    predicted = model.predict(vectorizer.transform(dev))
    return _scores(y_dev, predicted, seconds, f"C={best[1]:g}", best[0])


def _fasttext_file(texts: list[str], labels: list[int], workdir: Path) -> Path:
    """The training texts in fastText's format: ``__label__K word word ...`` per line."""
    path = workdir / "train.txt"
    lines = (
        f"__label__{label} {' '.join(text.split())}\n"
        for text, label in zip(texts, labels, strict=True)
    )
    path.write_text("".join(lines))
    return path


def _fasttext_predict(model, texts: list[str]) -> list[int]:
    labels, _ = model.predict([" ".join(text.split()) for text in texts])
    return [int(label[0].removeprefix("__label__")) for label in labels]


def fasttext_runs(data, seed: int, workdir: Path) -> dict:
    """fastText supervised: epochs, word n-grams and learning rate chosen on validation."""
    import fasttext

    (train, y), (val, y_val), (dev, y_dev) = data["train"], data["validation"], data["test"]
    path = _fasttext_file(train, y, workdir)

    def fit(epoch: int, ngrams: int, lr: float):
        return fasttext.train_supervised(
            str(path), epoch=epoch, wordNgrams=ngrams, lr=lr, dim=50, seed=seed, thread=2, verbose=0
        )

    best = None
    for epoch, ngrams, lr in itertools.product((5, 10, 25), (1, 2, 3), (0.1, 0.5)):
        accuracy = accuracy_score(y_val, _fasttext_predict(fit(epoch, ngrams, lr), val))
        if best is None or accuracy > best[0]:
            best = (accuracy, (epoch, ngrams, lr))
    started = time.perf_counter()
    model = fit(*best[1])
    seconds = time.perf_counter() - started
    epoch, ngrams, lr = best[1]
    setting = f"epoch={epoch} wordNgrams={ngrams} lr={lr}"
    return _scores(y_dev, _fasttext_predict(model, dev), seconds, setting, best[0])


def fasttext_fixed(data, seed: int, workdir: Path) -> dict:
    """fastText with the settings of STACK.md's reference (wordNgrams 3, 5 epochs, its default
    dim 100 and lr 0.1): nothing chosen."""
    import fasttext

    (train, y), (val, y_val), (dev, y_dev) = data["train"], data["validation"], data["test"]
    path = _fasttext_file(train, y, workdir)
    started = time.perf_counter()
    model = fasttext.train_supervised(
        str(path), epoch=5, wordNgrams=3, seed=seed, thread=2, verbose=0
    )
    seconds = time.perf_counter() - started
    validation = accuracy_score(y_val, _fasttext_predict(model, val))
    setting = "epoch=5 wordNgrams=3 (fixed)"
    return _scores(y_dev, _fasttext_predict(model, dev), seconds, setting, validation)


def _scores(truth, predicted, seconds: float, setting: str, validation: float) -> dict:
    return {
        "accuracy": accuracy_score(truth, predicted),
        "macro_f1": f1_score(truth, predicted, average="macro"),
        "seconds": seconds,
        "setting": setting,
        "validation": validation,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="../shared/data/sst5", type=Path)
    parser.add_argument("--quick", action="store_true", help="one seed instead of three")
    args = parser.parse_args()
    seeds = SEEDS[:1] if args.quick else SEEDS
    data, _ = splits(args.data)
    rows = []
    with tempfile.TemporaryDirectory() as workdir:
        for name, run in (
            ("TF-IDF 1-2-grams + logistic regression", tfidf_lr),
            ("fastText (dim 50)", lambda d, s: fasttext_runs(d, s, Path(workdir))),
            ("fastText (dim 100)", lambda d, s: fasttext_fixed(d, s, Path(workdir))),
        ):
            results = [run(data, seed) for seed in seeds]
            rows.append((name, results))
    print("| model | chosen on validation | val acc | dev acc | dev macro-F1 | train time (s) |")
    print("|---|---|---:|---:|---:|---:|")
    for name, results in rows:
        acc = [r["accuracy"] for r in results]
        f1 = [r["macro_f1"] for r in results]
        settings = sorted({r["setting"] for r in results})
        print(
            f"| {name} | {'; '.join(settings)} | {statistics.mean(r['validation'] for r in results):.4f} "
            f"| {_spread(acc)} | {_spread(f1)} "
            f"| {statistics.median(r['seconds'] for r in results):.1f} |"
        )


def _spread(values: list[float]) -> str:
    """``mean ± std`` over seeds; one seed (``--quick``) has no spread to show."""
    mean = f"{statistics.mean(values):.4f}"
    return f"{mean} ± {statistics.pstdev(values):.4f}" if len(values) > 1 else mean


if __name__ == "__main__":
    main()
