"""``staicc run`` prints ± the standard error of accuracy in its table, as lm-eval prints ± stderr."""
import json
import math
import statistics

from run_fixtures import run_cli


def test_the_run_table_gives_accuracy_with_its_standard_error_over_test_items(tmp_path, capsys):
    out = tmp_path / "run"
    text = run_cli(["run", "--datasets", "TREC", "rotten_tomatoes", "--limit", "60", "--no-progress",
                    "--log-samples", "--output-dir", str(out)], capsys)
    records = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    rows = {line.split()[0]: line for line in text.splitlines() if line.split()[:1] in
            (["TREC"], ["rotten_tomatoes"], ["Averaged"])}
    errors = {}
    for dataset in ("TREC", "rotten_tomatoes"):
        items = {}
        for record in records:
            if record["dataset"] == dataset:
                items.setdefault(record["test_index"], []).append(record["predicted"] == record["label"])
        means = [sum(v) / len(v) for v in items.values()]
        errors[dataset] = statistics.stdev(means) / math.sqrt(len(means))
        accuracy = sum(means) / len(means)
        assert f"{accuracy:.4f} ± {errors[dataset]:.4f}" in rows[dataset]
    averaged = math.sqrt(errors["TREC"] ** 2 + errors["rotten_tomatoes"] ** 2) / 2
    assert f" ± {averaged:.4f}" in rows["Averaged"]
    assert "± standard error of accuracy over test items (analytic" in text
    assert not any(line != line.rstrip() for line in text.splitlines())
