"""Real learning on real data (marker ``large``): the smoke config on a few thousand reviews."""

from __future__ import annotations

import pytest
from mlflow.tracking import MlflowClient

pytestmark = pytest.mark.large


def test_smoke_config_learns_imdb(smoke_run):
    uri, result = smoke_run
    run = MlflowClient(tracking_uri=uri).get_run(result.run_id)
    assert run.data.params["data.train_reviews"] == "4000"
    assert run.data.params["data.test_reviews"] == "2000"
    assert result.test_metrics["test_accuracy"] > 0.70
    assert result.test_metrics["test_roc_auc"] > 0.75
