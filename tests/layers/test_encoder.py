"""Encoder layer, TransformerBlock and Encoder: checks, padding invariance, mixed precision."""

import keras
import numpy as np
import pytest
from keras import ops

from classifier.layers import (
    Encoder,
    EncoderLayer,
    MaskedGlobalAveragePooling1D,
    TokenAndPositionEmbedding,
    TransformerBlock,
    padding_mask,
)
from tests.layer_checks import run_layer_test

RNG = np.random.default_rng(0)
D, HEADS, D_FF = 8, 2, 16
# Weights of one encoder layer: attention 4 x (kernel, bias), FFN 2 x (kernel, bias), 2 x LN.
LAYER_WEIGHTS = 8 + 4 + 4
LAYER_PARAMS = 4 * (D * D + D) + (D * D_FF + D_FF) + (D_FF * D + D) + 2 * 2 * D


def _np(x):
    return np.asarray(ops.convert_to_numpy(x))


def _inputs(batch=2, length=5):
    x = RNG.standard_normal((batch, length, D)).astype("float32")
    mask = np.ones((batch, length), dtype=bool)
    mask[0, 3:] = False
    return x, mask


@pytest.mark.parametrize("layer_cls", [EncoderLayer, TransformerBlock])
@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_layer_checks(tmp_path, layer_cls, norm_first):
    x, mask = _inputs()
    run_layer_test(
        layer_cls,
        {"d_model": D, "num_heads": HEADS, "d_ff": D_FF, "dropout": 0.1, "norm_first": norm_first},
        {"x": x, "padding_mask": mask},
        call_kwargs={"return_attention_scores": True},
        tmp_path=tmp_path,
        expected_output_shape=(2, 5, D),
        expected_num_trainable_weights=LAYER_WEIGHTS,
        expected_num_params=LAYER_PARAMS,
    )


@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_checks(tmp_path, norm_first):
    x, mask = _inputs()
    layer = run_layer_test(
        Encoder,
        {
            "num_layers": 2,
            "d_model": D,
            "num_heads": HEADS,
            "d_ff": D_FF,
            "dropout": 0.1,
            "norm_first": norm_first,
        },
        {"x": x, "padding_mask": mask},
        tmp_path=tmp_path,
        expected_output_shape=(2, 5, D),
        expected_num_trainable_weights=2 * LAYER_WEIGHTS + (2 if norm_first else 0),
    )
    out, weights = layer(x, padding_mask=mask, return_attention_scores=True)
    assert len(weights) == 2 and all(w.shape == (2, HEADS, 5, 5) for w in weights)


def test_encoder_validates_sizes():
    with pytest.raises(ValueError, match=r"d_model=10.*num_heads=3"):
        EncoderLayer(d_model=10, num_heads=3, d_ff=8)
    with pytest.raises(ValueError, match="d_model=8"):
        Encoder(1, D, HEADS, D_FF)(np.zeros((1, 3, 6), dtype="float32"))
    x = np.zeros((1, 3, 6), dtype="float32")
    message = r"Layer '{}' expects inputs of width d_model=8, got shape \(1, 3, 6\)\."
    with pytest.raises(ValueError, match=message.format("encoder")):
        Encoder(1, D, HEADS, D_FF, name="encoder")(x)
    with pytest.raises(ValueError, match=message.format("layer")):
        EncoderLayer(D, HEADS, D_FF, name="layer")(x)


def test_attention_rows_sum_to_one_over_real_keys():
    x, mask = _inputs()
    _, weights = TransformerBlock(D, HEADS, D_FF)(
        x, padding_mask=mask, return_attention_scores=True
    )
    weights = _np(weights)  # (B, h, T, T)
    np.testing.assert_array_equal(weights[0, :, :, 3:], 0.0)  # padded keys
    np.testing.assert_array_equal(weights[0, :, 3:, :], 0.0)  # padded queries attend to nothing
    np.testing.assert_allclose(weights[0, :, :3].sum(-1), 1.0, atol=1e-6)
    np.testing.assert_allclose(weights[1].sum(-1), 1.0, atol=1e-6)


@pytest.mark.parametrize("norm_first", [False, True])
def test_appending_padding_changes_nothing(norm_first):
    keras.utils.set_random_seed(1)
    embed = TokenAndPositionEmbedding(20, 16, D, position="sinusoidal")
    encoder = Encoder(2, D, HEADS, D_FF, norm_first=norm_first)
    pool = MaskedGlobalAveragePooling1D()
    ids = np.array([[5, 6, 7, 0, 0], [3, 4, 5, 6, 7]])
    padded = np.pad(ids, ((0, 0), (0, 6)))  # six more padding tokens

    def run(token_ids):
        mask = padding_mask(token_ids)
        out = encoder(embed(token_ids), padding_mask=mask, training=False)
        return _np(out), _np(pool(out, mask=mask))

    out, pooled = run(ids)
    out_padded, pooled_padded = run(padded)
    real = ids != 0
    assert np.max(np.abs(out[real] - out_padded[:, :5][real])) < 1e-5
    assert np.max(np.abs(pooled - pooled_padded)) < 1e-5


def test_implicit_keras_mask_in_functional_model(tmp_path):
    """TokenAndPositionEmbedding(mask_zero) -> TransformerBlock -> pooling, no explicit masks."""
    keras.utils.set_random_seed(2)
    inputs = keras.Input((None,), dtype="int32")
    x = TokenAndPositionEmbedding(20, 16, D)(inputs)
    x = TransformerBlock(D, HEADS, D_FF)(x)
    x = Encoder(1, D, HEADS, D_FF)(x)
    outputs = keras.layers.Dense(1)(MaskedGlobalAveragePooling1D()(x))
    model = keras.Model(inputs, outputs)

    ids = np.array([[5, 6, 7, 0], [3, 4, 5, 6]])
    padded = np.pad(ids, ((0, 0), (0, 5)))
    base = _np(model(ids))
    assert np.max(np.abs(base - _np(model(padded)))) < 1e-5

    path = tmp_path / "classifier.keras"
    model.save(path)
    np.testing.assert_array_equal(_np(keras.saving.load_model(path)(padded)), _np(model(padded)))


def test_encoder_mixed_precision_has_no_nan():
    previous = keras.mixed_precision.global_policy()
    keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        embed = TokenAndPositionEmbedding(20, 8, D, scale=True)
        encoder = Encoder(2, D, HEADS, D_FF)
        ids = np.array([[5, 6, 0, 0], [0, 0, 0, 0]])  # second row: fully masked
        mask = padding_mask(ids)
        out, weights = encoder(embed(ids), padding_mask=mask, return_attention_scores=True)
        assert out.dtype == "float16"
        pooled = MaskedGlobalAveragePooling1D()(out, mask=mask)
        for tensor in [out, pooled, *weights]:
            assert np.all(np.isfinite(_np(ops.cast(tensor, "float32"))))
    finally:
        keras.mixed_precision.set_global_policy(previous)
