"""Decoder layer and Decoder: checks, causality, cross-attention masking, mixed precision."""

import keras
import numpy as np
import pytest
from keras import ops

from classifier.layers import Decoder, DecoderLayer, TokenAndPositionEmbedding, padding_mask
from tests.layer_checks import run_layer_test

RNG = np.random.default_rng(0)
D, HEADS, D_FF = 8, 2, 16
# Self- and cross-attention 2 x 8, FFN 4, three LayerNorms 3 x 2.
LAYER_WEIGHTS = 8 + 8 + 4 + 6


def _np(x):
    return np.asarray(ops.convert_to_numpy(x))


def _inputs():
    dec = RNG.standard_normal((2, 4, D)).astype("float32")
    enc = RNG.standard_normal((2, 6, D)).astype("float32")
    dec_mask = np.array([[1, 1, 1, 0], [1, 1, 1, 1]], dtype=bool)
    enc_mask = np.array([[1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1]], dtype=bool)
    return dec, enc, dec_mask, enc_mask


@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_layer_checks(tmp_path, norm_first):
    dec, enc, dec_mask, enc_mask = _inputs()
    run_layer_test(
        DecoderLayer,
        {"d_model": D, "num_heads": HEADS, "d_ff": D_FF, "dropout": 0.1, "norm_first": norm_first},
        {
            "decoder_sequence": dec,
            "encoder_sequence": enc,
            "decoder_padding_mask": dec_mask,
            "encoder_padding_mask": enc_mask,
        },
        call_kwargs={"return_attention_scores": True},
        tmp_path=tmp_path,
        expected_output_shape=(2, 4, D),
        expected_num_trainable_weights=LAYER_WEIGHTS,
    )


def test_decoder_checks(tmp_path):
    dec, enc, _, enc_mask = _inputs()
    layer = run_layer_test(
        Decoder,
        {"num_layers": 2, "d_model": D, "num_heads": HEADS, "d_ff": D_FF, "norm_first": True},
        {"decoder_sequence": dec, "encoder_sequence": enc, "encoder_padding_mask": enc_mask},
        tmp_path=tmp_path,
        expected_output_shape=(2, 4, D),
        expected_num_trainable_weights=2 * LAYER_WEIGHTS + 2,
    )
    out, self_w, cross_w = layer(
        dec, enc, encoder_padding_mask=enc_mask, return_attention_scores=True
    )
    assert len(self_w) == len(cross_w) == 2
    assert all(w.shape == (2, HEADS, 4, 4) for w in self_w)
    assert all(w.shape == (2, HEADS, 4, 6) for w in cross_w)
    for w in self_w:  # causal: no weight above the diagonal
        assert np.all(_np(w)[..., np.triu_indices(4, 1)[0], np.triu_indices(4, 1)[1]] == 0.0)
    for w in cross_w:  # padded source positions get exactly zero weight
        w = _np(w)
        np.testing.assert_array_equal(w[0, :, :, 4:], 0.0)
        np.testing.assert_allclose(w.sum(-1), 1.0, atol=1e-6)


def test_decoder_validates_width():
    dec = np.zeros((1, 3, 6), dtype="float32")
    enc = np.zeros((1, 4, 6), dtype="float32")  # any encoder width is accepted
    message = r"Layer '{}' expects decoder inputs of width d_model=8, got shape \(1, 3, 6\)\."
    with pytest.raises(ValueError, match=message.format("decoder")):
        Decoder(1, D, HEADS, D_FF, name="decoder")(dec, enc)
    with pytest.raises(ValueError, match=message.format("layer")):
        DecoderLayer(D, HEADS, D_FF, name="layer")(dec, enc)
    out = DecoderLayer(D, HEADS, D_FF)(np.ones((1, 3, D), dtype="float32"), enc)
    assert out.shape == (1, 3, D)


@pytest.mark.parametrize("norm_first", [False, True])
def test_future_tokens_do_not_change_the_past(norm_first):
    keras.utils.set_random_seed(3)
    embed = TokenAndPositionEmbedding(30, 10, D, position="learned")
    decoder = Decoder(2, D, HEADS, D_FF, norm_first=norm_first)
    enc = RNG.standard_normal((2, 6, D)).astype("float32")
    target = RNG.integers(1, 30, (2, 8))
    t = 4
    changed = target.copy()
    changed[:, t + 1 :] = RNG.integers(1, 30, (2, 8 - t - 1))
    out = _np(decoder(embed(target), enc))
    out_changed = _np(decoder(embed(changed), enc))
    assert np.max(np.abs(out[:, : t + 1] - out_changed[:, : t + 1])) < 1e-6
    assert np.max(np.abs(out[:, t + 1 :] - out_changed[:, t + 1 :])) > 1e-3


def test_decoder_uses_implicit_masks():
    embed = TokenAndPositionEmbedding(30, 10, D)
    decoder = DecoderLayer(D, HEADS, D_FF)
    source = np.array([[4, 5, 0, 0]])
    enc = embed(source)  # carries the source padding mask
    dec = embed(np.array([[1, 6, 7]]))
    implicit = decoder(dec, enc, return_attention_scores=True)
    explicit = decoder(
        dec, enc, encoder_padding_mask=padding_mask(source), return_attention_scores=True
    )
    for a, b in zip(implicit, explicit, strict=True):
        np.testing.assert_allclose(_np(a), _np(b), atol=1e-6)
    np.testing.assert_array_equal(_np(implicit[2])[..., 2:], 0.0)


def test_decoder_mixed_precision_has_no_nan():
    previous = keras.mixed_precision.global_policy()
    keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        decoder = Decoder(1, D, HEADS, D_FF)
        dec = RNG.standard_normal((2, 3, D)).astype("float32") * 50
        enc = RNG.standard_normal((2, 5, D)).astype("float32") * 50
        enc_mask = np.array([[1, 1, 0, 0, 0], [0, 0, 0, 0, 0]], dtype=bool)
        dec_mask = np.array([[1, 1, 1], [0, 0, 0]], dtype=bool)
        out, self_w, cross_w = decoder(
            dec,
            enc,
            decoder_padding_mask=dec_mask,
            encoder_padding_mask=enc_mask,
            return_attention_scores=True,
        )
        assert out.dtype == "float16"
        for tensor in [out, *self_w, *cross_w]:
            assert np.all(np.isfinite(_np(ops.cast(tensor, "float32"))))
    finally:
        keras.mixed_precision.set_global_policy(previous)
