"""What a model's predictions are worth: accuracy, F1 (per class and macro), ROC-AUC and log
loss from scikit-learn, and the expected calibration error and temperature fits of our own
(``metrics``); calibration by temperature and offset, folded into a model's head
(``calibration``); a model's function traced once per model, which prediction uses too
(``traced``); the behaviour suite, template sentences per capability with gold labels, and
accuracy per group (``behaviour``, its two parts' words and templates in ``behaviour_parts``).

It imports nothing else of the package.
"""
