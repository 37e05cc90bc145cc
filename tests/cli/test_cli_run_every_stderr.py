"""``staicc run``'s table gives ± for every metric: accuracy's analytic, the others' a fixed-seed bootstrap over
test items, checked against an independent bootstrap of the records written beside it."""
import json
import math
import statistics

import pytest

from run_fixtures import run_cli

pytest.importorskip("numpy")  # the bootstrap's vectorised form; without NumPy only accuracy gets a ±


def _rows(text, title):
    table = text.split(title, 1)[1].split("\n\n", 1)[0].splitlines()
    header = table[2].split()
    return header, {line.split()[0]: line for line in table if line.split()[:1] and not line.startswith("-")}


def _softmax(row):
    top = max(row)
    exps = [math.exp(v - top) for v in row]
    total = math.fsum(exps)
    return [e / total for e in exps]


def test_every_metric_cell_has_a_standard_error_and_the_likelihoods_is_a_bootstrap(tmp_path, capsys):
    from StaICC.stats.bootstrap import DEFAULT_SEED
    from StaICC.stats.items import draw_resamples
    from StaICC.stats.run_errors import RUN_RESAMPLES
    out = tmp_path / "run"
    text = run_cli(["run", "--datasets", "TREC", "rotten_tomatoes", "--benchmarks", "Normal,Template_sens", "--limit",
                    "60", "--no-progress", "--log-samples", "--output-dir", str(out)], capsys)
    header, rows = _rows(text, "Normal (k=4")
    for dataset in ("TREC", "rotten_tomatoes", "Averaged"):
        assert rows[dataset].count("±") == len(header) - 1, rows[dataset]  # every metric column
    assert _rows(text, "Template_sens (k=4")[1]["TREC"].count("±") == 1
    assert "of every other metric: the standard deviation of a 200-resample bootstrap" in text
    records = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    column = header.index("averaged_truelabel_likelihood")
    for dataset in ("TREC", "rotten_tomatoes"):
        per_item = {}
        for r in records:
            if r["benchmark"] == "Normal" and r["dataset"] == dataset:  # the reference model's scores: softmaxed
                per_item.setdefault(r["test_index"], []).append(_softmax(r["prediction"])[r["label"]])
        items = sorted(per_item)
        draws = draw_resamples(len(items), RUN_RESAMPLES, DEFAULT_SEED, "Normal", dataset)
        values = [math.fsum(v for i in draw for v in per_item[items[i]]) / sum(len(per_item[items[i]]) for i in draw)
                  for draw in draws]
        cell = rows[dataset].split()[1 + 3 * column - 3:][:3]
        assert cell[1] == "±"
        assert abs(float(cell[2]) - statistics.stdev(values)) <= 0.00006, (dataset, cell, statistics.stdev(values))
