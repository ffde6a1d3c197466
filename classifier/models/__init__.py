"""Model builders: the classifier of each variant (``classifier``), the full encoder-decoder
Transformer (``transformer``), the pretraining models (``pretraining``) and the model that gives
a classifier's attention weights (``explained``).

It may import errors, config and layers.
"""
