"""Model builders: the classifier of each variant (``classifier``), the full encoder-decoder
Transformer (``transformer``), the pretraining models (``pretraining``), the model that gives
a classifier's attention weights (``explained``) and the optimizer runs train with
(``optimizers``).

It may import errors, config and layers.
"""
