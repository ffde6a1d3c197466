"""The encoder-decoder Transformer: shared checks, and learning to reverse sequences."""

import keras
import numpy as np
import pytest
from keras import ops

from classifier.models.transformer import Transformer
from tests.layer_checks import run_model_test

PAD, START = 0, 1


def _small(**overrides):
    kwargs = {
        "num_layers": 1,
        "d_model": 8,
        "num_heads": 2,
        "d_ff": 16,
        "source_vocab_size": 12,
        "target_vocab_size": 13,
        "max_length": 6,
        "dropout": 0.1,
    }
    kwargs.update(overrides)
    return Transformer(**kwargs)


def _reversal_data(rng, n, length=10, vocab=20):
    source = rng.integers(START + 1, vocab, (n, length)).astype("int32")
    target = source[:, ::-1]
    target_in = np.concatenate([np.full((n, 1), START, "int32"), target[:, :-1]], axis=1)
    return source, target_in, target


@pytest.mark.parametrize(
    ("position", "weights"), [("sinusoidal", 46), ("learned", 48 + 4)]
)  # pre-LN: +2 final norms
def test_transformer_checks(tmp_path, position, weights):
    source = np.array([[3, 4, 5, 0, 0], [6, 7, 8, 9, 2]])
    target_in = np.array([[START, 5, 4, 3], [START, 2, 9, 8]])
    target = np.array([[5, 4, 3, 0], [2, 9, 8, 7]])
    model = run_model_test(
        lambda: _small(position=position, norm_first=position == "learned"),
        (source, target_in),
        target,
        tmp_path=tmp_path,
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        expected_num_trainable_weights=weights,
    )
    logits = model((source, target_in))
    assert logits.shape == (2, 4, 13) and logits.dtype == "float32"
    _, self_w, cross_w = model.decode(
        target_in, *model.encode(source), return_attention_scores=True
    )
    assert self_w[0].shape == (2, 2, 4, 4) and cross_w[0].shape == (2, 2, 4, 5)
    np.testing.assert_array_equal(ops.convert_to_numpy(cross_w[0])[0, :, :, 3:], 0.0)


def test_generate_stops_at_end_token():
    model = _small()
    source = np.array([[3, 4, 5, 0, 0]])
    tokens = model.generate(source, start_id=START, max_new_tokens=4)
    assert tokens.shape == (1, 4) and tokens.dtype == np.int32
    first = int(tokens[0, 0])
    ended = model.generate(source, start_id=START, max_new_tokens=4, end_id=first)
    np.testing.assert_array_equal(ended, [[first]])
    with pytest.raises(ValueError, match="max_length=6"):
        model.generate(source, start_id=START, max_new_tokens=7)


@pytest.mark.slow  # it trains (10 s): make test runs it, make check does not
def test_transformer_learns_to_reverse_sequences():
    """Reverse 10-token sequences over a 20-token vocabulary (0 = pad, 1 = start)."""
    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    source, target_in, target = _reversal_data(rng, 4096)
    model = Transformer(
        num_layers=1,
        d_model=32,
        num_heads=4,
        d_ff=64,
        source_vocab_size=20,
        target_vocab_size=20,
        max_length=10,
        dropout=0.1,
    )
    model.compile(
        optimizer=keras.optimizers.Adam(3e-3),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        jit_compile=False,
    )
    model.fit((source, target_in), target, batch_size=64, epochs=4, verbose=0)

    test_source, test_in, test_target = _reversal_data(rng, 256)
    logits = ops.convert_to_numpy(model((test_source, test_in), training=False))
    teacher_forced = float(np.mean(np.argmax(logits, axis=-1) == test_target))
    greedy = float(
        np.mean(model.generate(test_source, start_id=START, max_new_tokens=10) == test_target)
    )
    print(f"reversal token accuracy: teacher-forced {teacher_forced:.4f}, greedy {greedy:.4f}")
    assert teacher_forced >= 0.95
    assert greedy >= 0.95
