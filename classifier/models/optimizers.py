"""The optimizer that training runs compile their models with (:func:`classifier.training.build.optimizer`).

It lives with the models because a saved ``model.keras`` names it: the classifier inside keeps
the compile config of its training, and loading the file compiles it again, so every process
that loads a model (serving, explain, a resumed run) must know the class.
"""

from __future__ import annotations

import keras
import tensorflow as tf


@keras.saving.register_keras_serializable(package="classifier")
class FusedAdam(keras.optimizers.Adam):
    """Keras' Adam, whose update for a dense gradient is TensorFlow's fused kernel
    (``ResourceApplyAdam``): the same formula in one pass over a weight and its two moments,
    where Keras' update takes about ten. ``nbow``'s 4.2 million kernel rows take 5.5 ms a step
    instead of 17 to 19 (2 cores). A sparse gradient, AMSGrad, or a weight that is not a plain
    TensorFlow variable go Keras' way.

    Example:
        >>> w = keras.Variable([1.0, 2.0])
        >>> _ = FusedAdam(0.1).apply([tf.constant([1.0, -1.0])], [w])
        >>> [round(float(x), 4) for x in w.numpy()]  # each moves lr against its gradient's sign
        [0.9, 2.1]
    """

    def update_step(self, gradient, variable, learning_rate):
        if self.amsgrad or isinstance(gradient, tf.IndexedSlices):
            return super().update_step(gradient, variable, learning_rate)
        if not isinstance(variable, tf.Variable):
            return super().update_step(gradient, variable, learning_rate)
        index = self._get_variable_index(variable)
        m, v = self._momentums[index].value, self._velocities[index].value
        dtype = variable.dtype
        step = tf.cast(self.iterations + 1, dtype)
        beta_1, beta_2 = tf.cast(self.beta_1, dtype), tf.cast(self.beta_2, dtype)
        tf.raw_ops.ResourceApplyAdam(
            var=variable.handle,
            m=m.handle,
            v=v.handle,
            beta1_power=tf.pow(beta_1, step),
            beta2_power=tf.pow(beta_2, step),
            lr=tf.cast(learning_rate, dtype),
            beta1=beta_1,
            beta2=beta_2,
            epsilon=tf.cast(self.epsilon, dtype),
            grad=tf.cast(gradient, dtype),
        )

    def apply_to_rows(self, table, ids, row_gradients, l2: float = 0.0, counted=None) -> None:
        """One Adam step on the rows ``ids`` of ``table`` alone ("lazy" Adam, as TensorFlow
        Addons' ``LazyAdam``): those rows and their two moments move, every other row and its
        moments stay as they are, where Keras' Adam decays every moment and moves every row at
        every step. ``row_gradients`` (N, columns) holds the gradient of each of the N ids;
        an id given more than once gets the sum of its gradients. ``l2`` adds the gradient of
        an L2 penalty ``l2 * sum(row ** 2)`` on those rows alone (a penalty on the whole table
        would move every row). ``counted``: only the first ``counted`` ids count, the rest are
        padding (a batch padded to a shape XLA has compiled) and move no row, whatever id they
        hold. The step's count is the optimizer's: call this before ``apply_gradients`` of the
        step's other variables, which counts the step.

        A table of a million rows takes the batch's few thousand: what makes ``bow``'s epochs
        short (``train.lazy_adam``, :class:`~classifier.training.ngram_features.NgramView`).
        Traceable by XLA (``jit_compile``): no ``tf.unique``, the duplicates summed into a
        table-sized buffer and the same new row written once per occurrence.

        Example:
            >>> table = keras.Variable([[1.0], [2.0], [3.0]])
            >>> adam = FusedAdam(0.1)
            >>> adam.build([table])
            >>> adam.apply_to_rows(table, tf.constant([2, 0, 2]), tf.constant([[1.0], [-1.0], [1.0]]))
            >>> [round(float(x), 4) for x in table.numpy()[:, 0]]  # row 1 untouched
            [1.1, 2.0, 2.9]
        """
        if self.amsgrad:
            raise ValueError("apply_to_rows has no AMSGrad")
        variable = table.value if hasattr(table, "value") else table
        index = self._get_variable_index(table)
        m, v = self._momentums[index].value, self._velocities[index].value
        dtype = variable.dtype
        rows = tf.shape(variable, out_type=ids.dtype)[0]
        slots = tf.shape(ids, out_type=ids.dtype)[0]
        counted = slots if counted is None else tf.cast(counted, ids.dtype)
        counts = tf.cast(tf.range(slots) < counted, dtype)
        # Each row's summed gradient and its number of counted slots, in one table-sized pass.
        both = tf.concat([tf.cast(row_gradients, dtype) * counts[:, None], counts[:, None]], 1)
        summed = tf.gather(tf.math.unsorted_segment_sum(both, ids, rows), ids)
        moved = summed[:, -1:] > 0  # the slot's row is counted somewhere in the batch
        weights = tf.gather(variable, ids)
        gradient = summed[:, :-1] + tf.cast(2.0 * l2, dtype) * weights
        step = tf.cast(self.iterations + 1, dtype)
        beta_1, beta_2 = tf.cast(self.beta_1, dtype), tf.cast(self.beta_2, dtype)
        new_m = beta_1 * tf.gather(m, ids) + (1.0 - beta_1) * gradient
        new_v = beta_2 * tf.gather(v, ids) + (1.0 - beta_2) * tf.square(gradient)
        alpha = (
            tf.cast(self.learning_rate, dtype) * tf.sqrt(1.0 - beta_2**step) / (1.0 - beta_1**step)
        )
        new_weights = weights - alpha * new_m / (tf.sqrt(new_v) + tf.cast(self.epsilon, dtype))
        at = ids[:, None]  # every slot of a row writes the same values
        m.scatter_nd_update(at, tf.where(moved, new_m, tf.gather(m, ids)))
        v.scatter_nd_update(at, tf.where(moved, new_v, tf.gather(v, ids)))
        variable.scatter_nd_update(at, tf.where(moved, new_weights, weights))
