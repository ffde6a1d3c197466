"""The masked-language-model head and model: loss at the chosen positions only, tied projection."""

from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf
from keras import ops

from classifier.config.schema import load_config
from classifier.layers import MaskedLMHead
from classifier.models.pretraining import MaskedLanguageModel
from classifier.pretraining.pretrain import new_pretraining_model
from tests.layer_checks import run_layer_test, run_model_test

V, D = 40, 8


def head_inputs(seed: int = 0):
    rng = np.random.default_rng(seed)
    return {
        "hidden": rng.standard_normal((2, 6, D)).astype("float32"),
        "positions": np.array([[1, 4, 0], [2, 0, 0]], "int32"),  # slots 3 and 2+ unused
        "embeddings": rng.standard_normal((V, D)).astype("float32"),
    }


def test_masked_lm_head(tmp_path):
    # The embeddings are not batched: no one-step fit of a model that takes them as an input.
    run_layer_test(
        MaskedLMHead,
        {"vocab_size": V, "d_model": D, "activation": "gelu"},
        head_inputs(),
        tmp_path=tmp_path,
        expected_output_shape=(2, 3, V),
        expected_num_trainable_weights=5,  # transform kernel and bias, norm gain and offset, bias
        expected_num_params=D * D + D + 2 * D + V,  # no (V, d) kernel: the projection is tied
        run_training=False,
    )


def test_the_loss_sees_the_chosen_positions_only():
    cfg = load_config(None, ["data.vocab_size=40", "model.embed_dim=8"])
    loss = new_pretraining_model(cfg).loss  # the loss pretraining uses
    head = MaskedLMHead(V, D)
    inputs = head_inputs()
    labels = np.array([[3, 7, 0], [5, 0, 0]])
    weights = np.array([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]], "float32")

    def loss_of(hidden, labels=labels):
        logits = head(hidden, inputs["positions"], inputs["embeddings"])
        return float(loss(labels, logits, sample_weight=weights)), logits

    reference, logits = loss_of(inputs["hidden"])
    # The mean cross-entropy over the three chosen tokens, nothing else.
    log_probabilities = np.asarray(tf.nn.log_softmax(logits))
    chosen = [(0, 0, 3), (0, 1, 7), (1, 0, 5)]
    expected = -np.mean([log_probabilities[b, p, label] for b, p, label in chosen])
    assert reference == pytest.approx(expected, abs=1e-5)

    unchosen = inputs["hidden"].copy()
    unchosen[0, 3] += 10.0  # row 0 predicts positions 1 and 4 (and 0 in an unused slot)
    unchosen[1, 5] -= 10.0
    assert loss_of(unchosen)[0] == reference
    other_labels = labels.copy()
    other_labels[0, 2] = 9  # an unused slot
    assert loss_of(inputs["hidden"], other_labels)[0] == reference
    chosen_changed = inputs["hidden"].copy()
    chosen_changed[0, 4] += 1.0
    assert loss_of(chosen_changed)[0] != reference


def tiny_mlm() -> MaskedLanguageModel:
    return MaskedLanguageModel(V, 12, D, 2, 16, 1, dropout=0.0, position="learned")


def test_the_output_projection_is_the_token_embedding(tmp_path):
    x = (np.array([[5, 9, 3, 0], [4, 2, 7, 6]]), np.array([[1, 0], [2, 3]]))
    y = np.array([[9, 0], [7, 6]])
    model = run_model_test(
        tiny_mlm,
        x,
        y,
        tmp_path=tmp_path,
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    table = model.encoder.get_layer("embedding").token_embedding.embeddings
    assert model.output_embeddings is table
    assert [w.path for w in model.weights if tuple(w.shape) == (V, D)] == [table.path]
    # Its gradient comes from the output too: a token that never appears as input still moves.
    before = ops.convert_to_numpy(table).copy()
    model.compile(optimizer=keras.optimizers.SGD(0.5), loss=model.loss)
    model.fit(x, np.array([[33, 0], [33, 33]]), batch_size=2, verbose=0)
    assert not np.allclose(ops.convert_to_numpy(table)[33], before[33])

    path = tmp_path / "tied.keras"
    model.save(path)
    loaded = keras.models.load_model(path, safe_mode=True)
    assert (
        loaded.output_embeddings is loaded.encoder.get_layer("embedding").token_embedding.embeddings
    )
    assert len([w for w in loaded.weights if tuple(w.shape) == (V, D)]) == 1
