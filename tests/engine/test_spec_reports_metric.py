"""reports_metric reads the spec table (compounds through their parts), for checks made before a run."""
from StaICC.spec import SPECS, reports_metric

ECE = "expected_calibration_error_1"


def test_reports_metric_follows_the_table():
    assert {name for name in SPECS if reports_metric(name, ECE)} == {"Normal", "GLER", "GLER_corrected"}
    assert reports_metric("Triplet_bias", "bias_entropy")  # through its contextual and domain parts
    assert reports_metric("Triplet_bias", "post_bias_dl_div")
    assert not reports_metric("Template_sens", ECE)
    assert not reports_metric("NoSuchBenchmark", ECE)
