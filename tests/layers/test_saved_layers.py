"""Models saved in Keras format by earlier code still load and give the same outputs.

``data/saved_layers.keras`` holds one small functional model with an ``EncoderLayer``, a
``TransformerBlock``, an ``Encoder``, a ``DecoderLayer`` and a ``Decoder`` (post-LN and pre-LN
both appear; see :func:`build_model`), every weight set to a fixed random value, layer-norm
gains and offsets included, so that a norm applied in another place or a weight loaded into
another sublayer changes the outputs. ``saved_layers.npz`` holds its inputs, the outputs it gave
and the paths of its weights. Both were written by the layers of commit 34a28fb, before the
encoder and the decoder shared one residual sublayer function. A ``.keras`` file stores weights
under the attribute names of the sublayers, and a weight's ``path`` follows the sublayers'
``name``: renaming, adding or removing a sublayer breaks these tests.

Do not regenerate the files to make a test pass: they are the record of the old behaviour.
``python -m tests.layers.test_saved_layers`` rewrites them (for a deliberate format change).
"""

from __future__ import annotations

import warnings
import zipfile
from pathlib import Path

import keras
import numpy as np

from classifier.layers import Decoder, DecoderLayer, Encoder, EncoderLayer, TransformerBlock

DATA = Path(__file__).parent / "data"
MODEL_PATH = DATA / "saved_layers.keras"
ARRAYS_PATH = DATA / "saved_layers.npz"
D, HEADS, D_FF, SOURCE, TARGET = 4, 2, 8, 5, 3
LAYER_TYPES = {
    "encoder_layer": EncoderLayer,
    "transformer_block": TransformerBlock,
    "encoder": Encoder,
    "decoder_layer": DecoderLayer,
    "decoder": Decoder,
}


def build_model() -> keras.Model:
    """The functional model of the saved file (freshly initialised weights).

    Post-LN and pre-LN both appear for the encoder and the decoder layer: an ``EncoderLayer``
    (post), a ``TransformerBlock`` (pre), an ``Encoder`` of two pre-LN layers and a final norm,
    a ``DecoderLayer`` (post) and a ``Decoder`` of one pre-LN layer and a final norm.
    """
    source = keras.Input((SOURCE, D), name="source")
    source_mask = keras.Input((SOURCE,), dtype="bool", name="source_mask")
    target = keras.Input((TARGET, D), name="target")
    target_mask = keras.Input((TARGET,), dtype="bool", name="target_mask")
    common = {"d_model": D, "num_heads": HEADS, "d_ff": D_FF, "dropout": 0.1}
    masks = {"decoder_padding_mask": target_mask, "encoder_padding_mask": source_mask}
    outputs = {}
    layer = EncoderLayer(**common, name="encoder_layer")
    outputs["encoder_layer"], outputs["encoder_layer_weights"] = layer(
        source, padding_mask=source_mask, return_attention_scores=True
    )
    block = TransformerBlock(**common, norm_first=True, name="transformer_block")
    outputs["transformer_block"] = block(source, padding_mask=source_mask)
    encoder = Encoder(2, **common, norm_first=True, name="encoder")
    outputs["encoder"] = encoded = encoder(source, padding_mask=source_mask)
    layer = DecoderLayer(**common, name="decoder_layer")
    (
        outputs["decoder_layer"],
        outputs["decoder_layer_self_weights"],
        outputs["decoder_layer_cross_weights"],
    ) = layer(target, encoded, **masks, return_attention_scores=True)
    decoder = Decoder(1, **common, norm_first=True, name="decoder")
    outputs["decoder"] = decoder(target, encoded, **masks)
    return keras.Model([source, source_mask, target, target_mask], outputs, name="saved_layers")


def _inputs(rng: np.random.Generator) -> dict[str, np.ndarray]:
    source_mask = np.ones((2, SOURCE), dtype=bool)
    source_mask[0, 3:] = False
    target_mask = np.ones((2, TARGET), dtype=bool)
    target_mask[1, 2:] = False
    return {
        "source": rng.standard_normal((2, SOURCE, D)).astype("float32"),
        "source_mask": source_mask,
        "target": rng.standard_normal((2, TARGET, D)).astype("float32"),
        "target_mask": target_mask,
    }


def _outputs(model: keras.Model, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    result = model(inputs, training=False)
    return {name: np.asarray(keras.ops.convert_to_numpy(value)) for name, value in result.items()}


def _deflate(path: Path) -> None:
    """Re-pack a ``.keras`` archive (Keras stores it uncompressed) with deflate; same members."""
    with zipfile.ZipFile(path) as archive:
        members = [(info, archive.read(info)) for info in archive.infolist()]
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        for info, data in members:
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, data)


def write_fixture() -> None:
    """Save the model with fixed weights, its inputs, outputs and weight paths under data/."""
    rng = np.random.default_rng(20240607)
    model = build_model()
    # Around 1 for layer-norm gains, around 0 elsewhere.
    model.set_weights(
        [
            (rng.normal(0.0, 0.5, w.shape) + w.path.endswith("gamma")).astype("float32")
            for w in model.weights
        ]
    )
    inputs = _inputs(rng)
    DATA.mkdir(exist_ok=True)
    model.save(MODEL_PATH)
    _deflate(MODEL_PATH)
    np.savez_compressed(
        ARRAYS_PATH,
        weight_paths=np.array([w.path for w in model.weights]),
        **{f"input/{k}": v for k, v in inputs.items()},
        **{f"output/{k}": v for k, v in _outputs(model, inputs).items()},
    )


def _stored() -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], list[str]]:
    with np.load(ARRAYS_PATH) as arrays:
        inputs = {k.split("/", 1)[1]: arrays[k] for k in arrays.files if k.startswith("input/")}
        outputs = {k.split("/", 1)[1]: arrays[k] for k in arrays.files if k.startswith("output/")}
        return inputs, outputs, [str(p) for p in arrays["weight_paths"]]


def test_new_layers_keep_the_saved_weight_paths():
    """The same layers built now have the weights, by path and in order, that were saved."""
    _, _, paths = _stored()
    assert [w.path for w in build_model().weights] == paths


def test_model_saved_before_loads_with_identical_outputs():
    inputs, expected, paths = _stored()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = keras.saving.load_model(MODEL_PATH, safe_mode=True)
    # Keras warns (and goes on) when saved variables find no place in the rebuilt layers.
    assert not [str(w.message) for w in caught if issubclass(w.category, UserWarning)]
    assert [w.path for w in model.weights] == paths
    for name, layer_type in LAYER_TYPES.items():
        assert type(model.get_layer(name)) is layer_type, name
    actual = _outputs(model, inputs)
    assert sorted(actual) == sorted(expected)
    for name in expected:
        # Bit-identical on the machine that wrote the file; the tolerance only absorbs float
        # rounding of another CPU's kernels (up to 1.1e-6 measured on an AVX512-FP16/AMX Xeon,
        # in `encoder`). A weight in the wrong sublayer, or a norm moved, changes these O(1)
        # outputs by far more: one layer-norm gain reset to ones moves them by 0.06 or more.
        np.testing.assert_allclose(actual[name], expected[name], rtol=0, atol=1e-5, err_msg=name)


if __name__ == "__main__":
    write_fixture()
    print(f"wrote {MODEL_PATH} ({MODEL_PATH.stat().st_size} bytes) and {ARRAYS_PATH}")
