"""One pretraining run (``pretrain``): its text, vocabulary and pipelines (``data``), BERT masking
and T5 span corruption (``masking``), and the pretrained encoder as an artefact that training
starts from (``encoder_artifact``).

It may import errors, config, evaluation, data, layers, models, plots, runs and serving.
"""
