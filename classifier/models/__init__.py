"""Model builders: the full encoder-decoder Transformer (and the classifiers)."""
