"""MLflow runs and their lifecycle: the tracking store and its paths (``tracking``,
``store_paths``), heartbeats and claims (``leases``), stop signals (``interrupts``), servers
that go away and come back (``outages``), mixed precision and the device (``precision``),
resuming from the newest whole checkpoint (``resume``), a run's data as MLflow datasets
(``datasets``), progress within long steps on one terminal line (``live``), and the one
lifecycle that training and pretraining share (``lifecycle``: claim, start with a heartbeat,
log the inputs, checkpoint each epoch, mark KILLED on a stop).

It may import :mod:`classifier.errors`, :mod:`classifier.config`, :mod:`classifier.evaluation`,
:mod:`classifier.data`, :mod:`classifier.layers`, :mod:`classifier.models` and
:mod:`classifier.plots`.
"""
