"""What a model's predictions are worth: accuracy, F1, ROC-AUC and ECE (``metrics``) and
calibration by temperature and offset (``calibration``), in NumPy.

It imports nothing else of the package.
"""
