"""The comparison table: grouping, labels, key params and formats; ``classify compare`` errors."""

from __future__ import annotations

import json

import pytest

from classifier.sweeps.compare import (
    ComparisonRow,
    against_baseline,
    group_key,
    group_labels,
    key_params,
)
from classifier.sweeps.table import format_comparison
from tests.sweep_helpers import invoke


def test_compare_errors_are_one_line(store):
    both = invoke("compare", "--sweep", "abc", "--experiment", "x")
    assert both.exit_code == 2
    assert both.output == "classify: error: give --experiment or --sweep, not both\n"
    missing = invoke("compare", "--sweep", "0123456789abcdef0123456789abcdef")
    assert missing.exit_code == 2 and missing.output.startswith("classify: error: no run ")
    unknown = invoke("compare", "--experiment", "no-such-experiment")
    assert unknown.exit_code == 2
    assert unknown.output == (f"classify: error: no experiment 'no-such-experiment' in {store}\n")


# --------------------------------------------------------------------------- pure functions


def test_group_labels_name_what_tells_groups_apart():
    base = {"model.variant": "encoder", "model.position": "sinusoidal", "model.num_layers": "2"}
    keys = [
        group_key(base),
        group_key({**base, "model.position": "learned"}),
        group_key({**base, "model.variant": "mha"}),
        group_key({**base, "train.seed": "7"}),  # the seed does not make a group
    ]
    labels = group_labels(keys)
    assert labels[keys[0]] == "encoder (position=sinusoidal)"
    assert labels[keys[1]] == "encoder (position=learned)"
    assert labels[keys[2]] == "mha"
    assert keys[3] == keys[0]


def test_key_params_per_variant():
    params = {
        "model.embed_dim": "32",
        "model.num_heads": "4",
        "model.ff_dim": "64",
        "model.num_layers": "2",
        "model.position": "learned",
        "model.norm_first": "True",
    }
    assert key_params({**params, "model.variant": "attention"}) == "d=32 pos=none"
    assert key_params({**params, "model.variant": "mha"}) == "d=32 h=4 pos=none"
    assert (
        key_params({**params, "model.variant": "block_pos"}) == "d=32 h=4 ff=64 pos=learned pre-LN"
    )
    assert key_params({**params, "model.variant": "encoder"}) == (
        "d=32 h=4 ff=64 L=2 pos=learned pre-LN"
    )


def test_formats_of_one_row():
    row = ComparisonRow(
        variant="encoder (position=learned)",
        seeds=[3],
        key_params="d=16 h=2 ff=64 L=2 pos=learned",
        best_val_accuracy=0.87654,
        test_accuracy_mean=0.87123,
        test_accuracy_std=0.0,
        epochs=7.0,
        train_time_s=512.34,
        parameters=171234,
        test_ece=0.01234,
        run_ids=["r1"],
    )
    table = format_comparison([row], "table").splitlines()
    assert table[1].split("  ")[0] == "encoder (position=learned)"
    assert "0.8765" in table[1] and "171,234" in table[1]
    assert "0.8712  " in table[1] and "±" not in table[1]  # one seed: no spread to show
    assert format_comparison([row], "markdown").splitlines()[2] == (
        "| encoder (position=learned) | 3 | d=16 h=2 ff=64 L=2 pos=learned | 0.8765 | "
        "0.8712 |  |  | 0.0123 | 7.0 | 512.3 | 171,234 |"
    )
    assert format_comparison([row], "csv").splitlines()[1] == (
        "encoder (position=learned),3,d=16 h=2 ff=64 L=2 pos=learned,0.87654,0.87123,0.0,,,,"
        "0.01234,7.0,512.34,171234"
    )
    # Runs that logged macro-F1 (since own data came): mean ± std over several seeds.
    row.test_macro_f1_mean, row.test_macro_f1_std = 0.412345, 0.0051
    assert "| 0.8712 | 0.4123 |  | 0.0123 |" in format_comparison([row], "markdown")
    row.seeds, row.test_accuracy_std = [3, 4], 0.00012
    assert (
        "| 3,4 | d=16 h=2 ff=64 L=2 pos=learned | 0.8765 | 0.8712 ± 0.0001 | 0.4123 ± 0.0051 |"
        in (format_comparison([row], "markdown"))
    )
    row.seeds, row.test_accuracy_std = [3], 0.0
    assert ",0.87123,0.0,0.412345,0.0051,,0.01234," in format_comparison([row], "csv")
    assert json.loads(format_comparison([row], "json"))[0]["test_macro_f1_mean"] == 0.412345
    row.test_macro_f1_mean = row.test_macro_f1_std = float("nan")
    assert json.loads(format_comparison([row], "json"))[0]["test_accuracy_std"] == 0.0
    assert json.loads(format_comparison([row], "json"))[0]["test_ece"] == 0.01234
    # Runs from before ECE was logged: empty cells and null, never NaN (which is not JSON).
    row.test_ece = float("nan")
    assert "| 0.8712 |  |  |  | 7.0 |" in format_comparison([row], "markdown")
    assert ",0.0,,,,,7.0," in format_comparison([row], "csv")
    assert json.loads(format_comparison([row], "json"))[0]["test_macro_f1_mean"] is None
    assert json.loads(format_comparison([row], "json"))[0]["test_ece"] is None
    with pytest.raises(ValueError, match="unknown format 'xml'"):
        format_comparison([row], "xml")


def test_every_row_is_measured_against_the_bow_baseline_chosen_on_validation():
    def row(variant, val, test):
        return ComparisonRow(variant, [1], "", val, test, 0.0, 1.0, 1.0, None)

    rows = [
        row("attention", 0.88, 0.878),
        row("bow (l2=1e-06)", 0.910, 0.904),
        row("bow (l2=0.0001)", 0.892, 0.906),  # a better test accuracy must not choose it
    ]
    against_baseline(rows)
    assert [round(r.vs_baseline, 6) for r in rows] == [-2.6, 0.0, 0.2]
    assert "| -2.60 |" in format_comparison(rows[:1], "markdown")
    # The strongest bag of n-grams by validation accuracy is the reference, bow or nbow:
    rows.append(row("nbow", 0.913, 0.905))
    against_baseline(rows)
    assert [round(r.vs_baseline, 6) for r in rows] == [-2.7, -0.1, 0.1, 0.0]
    alone = [row("mha", 0.87, 0.87)]
    against_baseline(alone)  # no bow row: no difference, an empty cell
    assert json.loads(format_comparison(alone, "json"))[0]["test_accuracy_vs_bow"] is None


def test_key_params_of_bow_and_of_a_refit_run():
    assert key_params({"model.variant": "bow", "model.embed_dim": "16"}) == "pos=none"
    assert key_params({"model.variant": "mha", "model.embed_dim": "16", "train.refit": "True"}) == (
        "d=16 pos=none refit"
    )
