"""Scaled dot-product and multi-head attention: semantics, parity with Keras, mixed precision."""

import keras
import numpy as np
import pytest
from keras import ops

from classifier.layers import MaskedAttention, MultiHeadAttention, scaled_dot_product_attention
from classifier.layers.masks import attention_mask, causal_mask, padding_mask
from tests.layer_checks import run_layer_test

RNG = np.random.default_rng(0)


def _np(x):
    return np.asarray(ops.convert_to_numpy(x))


def _random(*shape):
    return RNG.standard_normal(shape).astype("float32")


def test_sdpa_matches_formula():
    q, k, v = _random(2, 3, 4), _random(2, 5, 4), _random(2, 5, 6)
    out, weights = scaled_dot_product_attention(q, k, v)
    logits = q @ k.transpose(0, 2, 1) / np.sqrt(4)
    expected_w = np.exp(logits - logits.max(-1, keepdims=True))
    expected_w /= expected_w.sum(-1, keepdims=True)
    np.testing.assert_allclose(_np(weights), expected_w, atol=1e-6)
    np.testing.assert_allclose(_np(out), expected_w @ v, atol=1e-5)


def test_weights_sum_to_one_and_are_zero_on_masked_keys():
    ids = np.array([[4, 5, 6, 0, 0], [4, 5, 6, 7, 8]])
    key_mask = _np(padding_mask(ids))
    q, k, v = _random(2, 5, 8), _random(2, 5, 8), _random(2, 5, 8)
    _, weights = scaled_dot_product_attention(q, k, v, attention_mask(None, key_mask))
    weights = _np(weights)
    np.testing.assert_array_equal(weights[0, :, 3:], 0.0)  # exactly zero
    np.testing.assert_allclose(weights.sum(-1), 1.0, atol=1e-6)

    _, causal = scaled_dot_product_attention(q, k, v, causal_mask(5))
    causal = _np(causal)
    np.testing.assert_array_equal(causal[:, np.triu_indices(5, 1)[0], np.triu_indices(5, 1)[1]], 0)
    np.testing.assert_allclose(causal.sum(-1), 1.0, atol=1e-6)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_fully_masked_row_gives_zero_not_nan(dtype):
    q, k, v = (ops.cast(_random(1, 2, 3, 8) * 30.0, dtype) for _ in range(3))
    mask = np.array([[True, True, False], [False, False, False], [True, False, False]])
    out, weights = scaled_dot_product_attention(q, k, v, mask)
    out, weights = _np(ops.cast(out, "float32")), _np(ops.cast(weights, "float32"))
    assert np.all(np.isfinite(out)) and np.all(np.isfinite(weights))
    np.testing.assert_array_equal(out[..., 1, :], 0.0)
    np.testing.assert_array_equal(weights[..., 1, :], 0.0)
    np.testing.assert_array_equal(weights[..., ~mask], 0.0)
    np.testing.assert_allclose(weights[..., [0, 2], :].sum(-1), 1.0, atol=1e-2)


def test_mha_rejects_indivisible_width():
    with pytest.raises(ValueError, match=r"d_model=10.*num_heads=4"):
        MultiHeadAttention(d_model=10, num_heads=4)


def test_mha_layer_checks(tmp_path):
    q, v = _random(2, 3, 8), _random(2, 5, 6)
    mask = np.ones((2, 3, 5), dtype=bool)
    mask[1, :, 3:] = False
    run_layer_test(
        MultiHeadAttention,
        {"d_model": 8, "num_heads": 2, "dropout": 0.1},
        {"query": q, "value": v, "attention_mask": mask},
        call_kwargs={"return_attention_scores": True},
        tmp_path=tmp_path,
        expected_output_shape=(2, 3, 8),
        expected_num_trainable_weights=8,
        expected_num_params=(8 * 8 + 8) + 2 * (6 * 8 + 8) + (8 * 8 + 8),
    )


def test_mha_returns_weights_of_each_head():
    mha = MultiHeadAttention(d_model=8, num_heads=4)
    x = _random(2, 5, 8)
    out, weights = mha(x, x, return_attention_scores=True)
    assert out.shape == (2, 5, 8) and weights.shape == (2, 4, 5, 5)
    assert mha(x, x).shape == (2, 5, 8)
    names = sorted(w.path.split("/")[-2] for w in mha.trainable_weights)
    assert names == sorted(["query"] * 2 + ["key"] * 2 + ["value"] * 2 + ["attention_output"] * 2)


def _copy_to_keras(ours, theirs):
    """Copy our weights into keras.layers.MultiHeadAttention (kernels (d, h, d_k), (h, d_k, d))."""
    h, dk = ours.num_heads, ours.depth
    values = []
    for dense in (ours.query_dense, ours.key_dense, ours.value_dense):
        kernel, bias = (_np(w) for w in dense.weights)
        values += [kernel.reshape(kernel.shape[0], h, dk), bias.reshape(h, dk)]
    kernel, bias = (_np(w) for w in ours.output_dense.weights)
    values += [kernel.reshape(h, dk, kernel.shape[-1]), bias]
    theirs.set_weights(values)


@pytest.mark.parametrize("case", ["no_mask", "padding_mask", "cross_attention"])
def test_mha_parity_with_keras(case):
    d_model, heads = 16, 4
    query = _random(3, 7, d_model)
    if case == "cross_attention":
        value = _random(3, 11, d_model)  # different key length S = 11 vs T = 7
        ids = np.array([[3] * 11, [3] * 6 + [0] * 5, [3] * 2 + [0] * 9])
        mask = _np(attention_mask(None, padding_mask(ids))) & np.ones((1, 7, 1), dtype=bool)
    else:
        value = query
        ids = np.array([[3] * 7, [3] * 4 + [0] * 3, [3] + [0] * 6])
        mask = None
        if case == "padding_mask":
            mask = _np(attention_mask(None, padding_mask(ids))) & np.ones((1, 7, 1), dtype=bool)

    ours = MultiHeadAttention(d_model, heads)
    out, weights = ours(query, value, attention_mask=mask, return_attention_scores=True)
    theirs = keras.layers.MultiHeadAttention(heads, key_dim=d_model // heads)
    theirs(query, value, attention_mask=mask)
    _copy_to_keras(ours, theirs)
    k_out, k_weights = theirs(query, value, attention_mask=mask, return_attention_scores=True)

    out_diff = float(np.max(np.abs(_np(out) - _np(k_out))))
    weight_diff = float(np.max(np.abs(_np(weights) - _np(k_weights))))
    print(f"MHA parity [{case}]: output {out_diff:.2e}, weights {weight_diff:.2e}")
    assert out_diff < 1e-5
    assert weight_diff < 1e-5


def test_mha_causal_matches_explicit_mask():
    mha = MultiHeadAttention(d_model=8, num_heads=2)
    x = _random(2, 5, 8)
    implicit = mha(x, x, use_causal_mask=True)
    explicit = mha(x, x, attention_mask=np.broadcast_to(_np(causal_mask(5)), (2, 5, 5)))
    np.testing.assert_allclose(_np(implicit), _np(explicit), atol=1e-6)


def test_mha_mixed_precision_fully_masked_row_has_no_nan():
    previous = keras.mixed_precision.global_policy()
    keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        mha = MultiHeadAttention(d_model=8, num_heads=2)
        x = _random(2, 4, 8) * 100.0
        ids = np.array([[3, 3, 0, 0], [0, 0, 0, 0]])  # the second sequence is all padding
        pad = padding_mask(ids)
        out, weights = mha(
            x, x, attention_mask=attention_mask(pad, pad), return_attention_scores=True
        )
        assert out.dtype == "float16"
        assert np.all(np.isfinite(_np(ops.cast(out, "float32"))))
        assert np.all(np.isfinite(_np(ops.cast(weights, "float32"))))
        np.testing.assert_array_equal(_np(ops.cast(weights, "float32"))[1], 0.0)
    finally:
        keras.mixed_precision.set_global_policy(previous)


# --- MaskedAttention: keras.layers.Attention with masks applied by arithmetic -----------------


def _attention_pair(**kwargs):
    """A keras.layers.Attention and a MaskedAttention with the same weights."""
    theirs, ours = keras.layers.Attention(**kwargs), MaskedAttention(**kwargs)
    x = _random(1, 2, 4)
    theirs([x, x]), ours([x, x])
    ours.set_weights(theirs.get_weights())
    return theirs, ours


@pytest.mark.parametrize(
    "kwargs, causal",
    [({}, False), ({"use_scale": True}, False), ({"score_mode": "concat"}, False), ({}, True)],
)
def test_masked_attention_equals_keras_attention_with_masks(kwargs, causal):
    import tensorflow as tf  # the backend: gradients of both layers

    theirs, ours = _attention_pair(**kwargs)
    query, value = tf.constant(_random(3, 5, 4)), tf.constant(_random(3, 6, 4))
    query_mask = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0], [1, 0, 0, 0, 0]], dtype=bool)
    value_mask = np.array([[1] * 6, [1, 1, 1, 1, 0, 0], [0] * 6], dtype=bool)  # row 3: all padding
    results = []
    for layer in (theirs, ours):
        with tf.GradientTape() as tape:
            tape.watch([query, value])
            out, weights = layer(
                [query, value],
                mask=[query_mask, value_mask],
                return_attention_scores=True,
                use_causal_mask=causal,
            )
            loss = tf.reduce_sum(out * np.arange(1, 5, dtype="float32"))
        grads = tape.gradient(loss, [query, value, *layer.trainable_weights])
        results.append([_np(out), _np(weights), *(_np(g) for g in grads)])
    for theirs_value, ours_value in zip(*results, strict=True):
        np.testing.assert_array_equal(ours_value, theirs_value)
    out = results[1][0]
    np.testing.assert_array_equal(out[~query_mask], 0.0)  # masked queries: zero output
    assert isinstance(ours, keras.layers.Attention)


def test_masked_attention_ignores_what_the_mask_hides():
    layer = MaskedAttention()
    x = _random(1, 4, 8)
    changed = x.copy()
    changed[0, 2:] = 100.0  # the padded positions hold garbage
    mask = np.array([[True, True, False, False]])
    out, noisy = (_np(layer([v, v], mask=[mask, mask])) for v in (x, changed))
    np.testing.assert_allclose(noisy[0, :2], out[0, :2], atol=1e-6)
    np.testing.assert_array_equal(noisy[0, 2:], 0.0)


def test_masked_attention_saves_and_loads(tmp_path):
    tokens = keras.Input(shape=(None, 4))
    mask = keras.Input(shape=(None,), dtype="bool")
    out = MaskedAttention(use_scale=True, name="att")([tokens, tokens], mask=[mask, mask])
    model = keras.Model([tokens, mask], out)
    x, m = _random(2, 5, 4), np.array([[1, 1, 1, 0, 0], [1] * 5], dtype=bool)
    path = tmp_path / "attention.keras"
    model.save(path)
    loaded = keras.saving.load_model(path, safe_mode=True)
    assert type(loaded.get_layer("att")) is MaskedAttention
    assert loaded.get_layer("att").get_config() == model.get_layer("att").get_config()
    np.testing.assert_array_equal(_np(loaded([x, m])), _np(model([x, m])))


def test_masked_attention_rejects_masks_as_keras_does():
    x = _random(1, 3, 4)
    mask = np.array([[True, True, False]])
    for bad in (mask, [mask]):
        with pytest.raises(ValueError, match="mask"):
            MaskedAttention()([x, x], mask=bad)
    out = MaskedAttention()([x, x, x], mask=[mask, mask, mask])  # a key mask is allowed, unused
    np.testing.assert_array_equal(_np(out)[0, 2], 0.0)
