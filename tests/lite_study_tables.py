"""Reading the coverage study's committed raw outputs (``benchmarks/results/lite_coverage_*.txt``): the tests that
hold the package's admission and proxy claims to them parse their side-by-side tables one way."""
from pathlib import Path


def proxy_cells(path: Path, fraction: float, widths: bool = False) -> dict:
    """(proxy, sub-benchmark, metric, row) -> (coverage, worst model's coverage) with the proxy at ``fraction``, in
    percent, from each proxy's side-by-side table (columns from the right: width ratio, median half-width, worst,
    coverage, then the plain cell's median half-width, worst, coverage); ``widths``: (the plain, the proxy's median
    half-width)."""
    cells, proxy = {}, None
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("without and with the proxy '"):
            proxy = line.split("'")[1]
        elif line.strip() == "" or line.startswith("median width ratio"):
            proxy = None if line.strip() == "" else proxy
        elif proxy and line.startswith("  0.") and float(line.split()[0]) == fraction:
            words = line.split()
            metric = " ".join(words[2:-7])
            row = "averaged" if metric.endswith(" (averaged)") else "dataset"
            cells[(proxy, words[1], metric.replace(" (averaged)", ""), row)] = (
                (float(words[-5]), float(words[-2])) if widths else (float(words[-4].rstrip("%")),
                                                                     float(words[-3].rstrip("%"))))
    return cells
