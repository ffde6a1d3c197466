"""Model builders: the classifier of each variant (``classifier``), the full encoder-decoder
Transformer (``transformer``) and the pretraining models (``pretraining``).

It may import errors, config and layers.
"""
