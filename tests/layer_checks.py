"""One shared set of checks that every layer (and the Transformer model) goes through.

``run_layer_test`` follows keras-hub's ``TestCase.run_layer_test``: for a layer class, its
constructor arguments and example inputs it checks

- the constructor arguments all appear in ``get_config()``, and ``from_config(get_config())``
  gives the same config and, with the same weights, the same outputs;
- Keras (de)serialization (``serialize_keras_object`` / ``deserialize_keras_object``);
- the number of trainable and non-trainable weights (and optionally of parameters);
- eager output shape, and a symbolic (``keras.Input``) call with the same shape;
- a small functional model containing the layer: its config round trip, one ``fit`` step on one
  batch with a finite loss, and a ``.keras`` save and load (``safe_mode=True``) with identical
  outputs after reloading.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import keras
import numpy as np

__all__ = ["run_layer_test", "run_model_test"]


def _first(output: Any) -> Any:
    """The main output of a layer that may also return attention weights."""
    return output[0] if isinstance(output, (tuple, list)) else output


def _to_numpy(x: Any) -> np.ndarray:
    return np.asarray(keras.ops.convert_to_numpy(x))


def _takes_training(layer: keras.layers.Layer) -> bool:
    return "training" in inspect.signature(layer.call).parameters


def _call(layer: Any, inputs: Mapping[str, Any], call_kwargs: Mapping[str, Any]) -> Any:
    """Call ``layer`` with the first input positional and the others as keywords."""
    names = list(inputs)
    kwargs = {name: inputs[name] for name in names[1:]}
    kwargs.update(call_kwargs)
    if _takes_training(layer):
        kwargs.setdefault("training", False)
    return layer(inputs[names[0]], **kwargs)


def _check_config_has_init_args(layer_cls: type, config: Mapping[str, Any]) -> None:
    params = inspect.signature(layer_cls.__init__).parameters
    names = [
        name
        for name, p in params.items()
        if name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]
    missing = [name for name in names if name not in config]
    assert not missing, f"{layer_cls.__name__}.get_config() lacks constructor args {missing}"


def _assert_same(a: Any, b: Any, atol: float = 0.0, what: str = "outputs") -> None:
    for x, y in zip(keras.tree.flatten(a), keras.tree.flatten(b), strict=True):
        np.testing.assert_allclose(_to_numpy(x), _to_numpy(y), rtol=0, atol=atol, err_msg=what)


def run_layer_test(
    layer_cls: type[keras.layers.Layer],
    init_kwargs: Mapping[str, Any],
    input_data: Any,
    *,
    tmp_path: Path,
    call_kwargs: Mapping[str, Any] | None = None,
    expected_output_shape: tuple[int, ...] | None = None,
    expected_num_trainable_weights: int = 0,
    expected_num_non_trainable_weights: int = 0,
    expected_num_params: int | None = None,
    run_training: bool = True,
    run_saving: bool = True,
) -> keras.layers.Layer:
    """Run the shared checks on ``layer_cls(**init_kwargs)``; return the built layer.

    Args:
        layer_cls: the layer class.
        init_kwargs: constructor arguments.
        input_data: one array (the first call argument), or a dict ``{call_arg_name: array}``
            whose first entry is passed positionally and the rest as keywords (e.g.
            ``{"query": q, "value": v, "attention_mask": m}``). Arrays have a batch axis.
        tmp_path: directory for the ``.keras`` file.
        call_kwargs: non-tensor call arguments (e.g. ``return_attention_scores=True``).
        expected_output_shape: shape of the (first) eager output.
        expected_num_trainable_weights: number of trainable weight tensors.
        expected_num_non_trainable_weights: number of non-trainable weight tensors.
        expected_num_params: total number of trainable scalars, if given.
        run_training: run the one-step ``fit`` check.
        run_saving: run the ``.keras`` save/load check.
    """
    inputs = dict(input_data) if isinstance(input_data, Mapping) else {"inputs": input_data}
    inputs = {name: np.asarray(value) for name, value in inputs.items()}
    call_kwargs = dict(call_kwargs or {})

    # Eager call, shapes and weight counts.
    layer = layer_cls(**init_kwargs)
    output = _call(layer, inputs, call_kwargs)
    main = _first(output)
    if expected_output_shape is not None:
        assert tuple(main.shape) == tuple(expected_output_shape), main.shape
    assert len(layer.trainable_weights) == expected_num_trainable_weights, [
        w.path for w in layer.trainable_weights
    ]
    assert len(layer.non_trainable_weights) == expected_num_non_trainable_weights
    if expected_num_params is not None:
        assert layer.count_params() == expected_num_params, layer.count_params()
    if _takes_training(layer):  # The training path runs too (dropout active).
        training_out = _first(_call(layer, inputs, {**call_kwargs, "training": True}))
        assert tuple(training_out.shape) == tuple(main.shape)
        assert np.all(np.isfinite(_to_numpy(training_out)))

    # Config round trip: same config, and same outputs with the same weights.
    config = layer.get_config()
    _check_config_has_init_args(layer_cls, config)
    revived = layer_cls.from_config(config)
    assert revived.get_config() == config
    _call(revived, inputs, call_kwargs)
    revived.set_weights(layer.get_weights())
    _assert_same(output, _call(revived, inputs, call_kwargs), what="from_config outputs")

    # Keras serialization round trip (registered name, nested sublayer configs).
    serialized = keras.saving.serialize_keras_object(layer)
    assert serialized["registered_name"] == f"classifier>{layer_cls.__name__}"
    deserialized = keras.saving.deserialize_keras_object(serialized)
    assert type(deserialized) is layer_cls
    assert deserialized.get_config() == config

    # Symbolic call in a small functional model: inputs -> layer -> Dense(1).
    symbolic = {
        name: keras.Input(shape=value.shape[1:], dtype=str(value.dtype), name=name)
        for name, value in inputs.items()
    }
    model_layer = layer_cls(**init_kwargs)
    symbolic_out = _first(_call(model_layer, symbolic, call_kwargs))
    assert tuple(symbolic_out.shape[1:]) == tuple(main.shape[1:]), symbolic_out.shape
    head = keras.layers.Dense(1, name="head")(symbolic_out)
    model = keras.Model(list(symbolic.values()), head, name="layer_check_model")
    x = list(inputs.values())
    reference = _to_numpy(model(x, training=False))
    assert np.all(np.isfinite(reference))

    revived_model = keras.Model.from_config(model.get_config())
    revived_model.set_weights(model.get_weights())
    _assert_same(reference, revived_model(x, training=False), what="model from_config outputs")

    if run_training:
        # SGD: the one-step check needs a valid update, and it traces 3x faster than Adam.
        model.compile(optimizer="sgd", loss="mse", jit_compile=False)
        y = np.zeros(reference.shape, dtype="float32")
        history = model.fit(x, y, batch_size=len(y), epochs=1, verbose=0)
        assert np.isfinite(history.history["loss"][0])
        reference = _to_numpy(model(x, training=False))

    if run_saving:
        path = Path(tmp_path) / f"{layer_cls.__name__}.keras"
        model.save(path)
        loaded = keras.saving.load_model(path)  # safe_mode=True (the default)
        _assert_same(reference, loaded(x, training=False), what=".keras reload outputs")
        loaded_layer = loaded.get_layer(model_layer.name)
        assert type(loaded_layer) is layer_cls
        assert loaded_layer.get_config() == model_layer.get_config()
    return layer


def run_model_test(
    model_fn: Callable[[], keras.Model],
    x: Any,
    y: Any,
    *,
    tmp_path: Path,
    loss: Any = "sparse_categorical_crossentropy",
    expected_num_trainable_weights: int | None = None,
) -> keras.Model:
    """The same checks for a subclassed model: config, weights, one fit step, ``.keras`` reload.

    Args:
        model_fn: builds a fresh, uncompiled model.
        x: one batch of model inputs (any structure the model takes as its first argument).
        y: matching targets.
        tmp_path: directory for the ``.keras`` file.
        loss: loss for the fit step.
        expected_num_trainable_weights: number of trainable weight tensors, if given.
    """
    model = model_fn()
    reference = _to_numpy(model(x, training=False))
    if expected_num_trainable_weights is not None:
        assert len(model.trainable_weights) == expected_num_trainable_weights, len(
            model.trainable_weights
        )
    config = model.get_config()
    _check_config_has_init_args(type(model), config)
    revived = type(model).from_config(config)
    assert revived.get_config() == config
    revived(x, training=False)
    revived.set_weights(model.get_weights())
    _assert_same(reference, revived(x, training=False), what="from_config outputs")

    model.compile(optimizer="sgd", loss=loss, jit_compile=False)
    history = model.fit(x, y, batch_size=len(y), epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"][0])
    reference = _to_numpy(model(x, training=False))

    path = Path(tmp_path) / f"{type(model).__name__}.keras"
    model.save(path)
    loaded = keras.saving.load_model(path)
    assert type(loaded) is type(model)
    _assert_same(reference, loaded(x, training=False), what=".keras reload outputs")
    return model
