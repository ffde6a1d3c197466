"""One training run as a recipe (``train``): data and vectorizer, model and optimizer
(``build``), fit (the bags of n-grams on their features computed once: ``ngram_features``),
then refit on all labelled reviews where configured (``refit``) and finish:
calibrate, evaluate, score the behaviour suite (``behaviour``), save and register
(``finish``); starting from a trained classifier or a
pretrained encoder (``transfer``).

It may import every package below it: errors, config, evaluation, data, layers, models, plots,
runs, serving and pretraining (for a pretrained encoder to start from).
"""
