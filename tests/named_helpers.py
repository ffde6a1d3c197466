"""A tiny TFDS data set of three classes that the tests prepare: ``tiny_reviews`` (features
``review`` and ``stars``, splits ``train`` and ``test``), read by name as ``tfds:tiny_reviews``."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import tensorflow_datasets as tfds

from tests.labelled_helpers import CLASS_WORDS, labelled_rows

#: The ClassLabel's names, in TFDS's order (not sorted: the order a run must keep).
STARS = ["bad", "okay", "good"]
SIZES = {"train": 300, "test": 60}


class TinyReviews(tfds.core.GeneratorBasedBuilder):
    """Texts of :func:`tests.labelled_helpers.labelled_rows` with their class as ``stars``."""

    VERSION = tfds.core.Version("1.0.0")

    def _info(self) -> tfds.core.DatasetInfo:
        return self.dataset_info_from_configs(
            features=tfds.features.FeaturesDict(
                {
                    "review": tfds.features.Text(),
                    "stars": tfds.features.ClassLabel(names=STARS),
                    "votes": tfds.features.Scalar(dtype=np.int64),
                }
            )
        )

    def _split_generators(self, dl_manager):
        return {name: self._generate_examples(name) for name in SIZES}

    def _generate_examples(self, split: str):
        rows = labelled_rows(SIZES[split], seed=0 if split == "train" else 9)
        for index, (text, label) in enumerate(rows):
            yield index, {"review": text, "stars": label, "votes": index}


def prepare_tiny_reviews(data_dir: Path) -> Path:
    """Prepare ``tiny_reviews`` in ``data_dir`` (once) and return ``data_dir``."""
    assert set(STARS) == set(CLASS_WORDS)
    if not (data_dir / "tiny_reviews").exists():
        TinyReviews(data_dir=str(data_dir)).download_and_prepare()
    return data_dir
