"""The example notebooks run end to end, and a result displays as a table in them."""
import os

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _execute(name: str):
    notebook = nbformat.read(os.path.join(ROOT, "examples", name), as_version=4)
    env_path = os.environ.get("PYTHONPATH", "")
    os.environ["PYTHONPATH"] = ROOT + (os.pathsep + env_path if env_path else "")
    try:
        nbclient.NotebookClient(notebook, timeout=600, kernel_name="python3",
                                resources={"metadata": {"path": ROOT}}).execute()
    finally:
        os.environ["PYTHONPATH"] = env_path
    return notebook


def _result(cell) -> dict:
    """The cell's displayed value (its execute_result), whatever it printed or warned before."""
    return next(o for o in cell.outputs if o["output_type"] == "execute_result")


def _last_output(notebook) -> dict:
    return _result([c for c in notebook.cells if c.cell_type == "code"][-1])


@pytest.mark.parametrize("name", ["quick_start.ipynb", "preentered_predictions.ipynb"])
def test_result_displays_as_a_table(name):
    notebook = _execute(name)
    data = _last_output(notebook)["data"]
    if name == "quick_start.ipynb":  # a notebook's stderr is no terminal, but the run draws its bar there
        cell = [c for c in notebook.cells if c.cell_type == "code"][-1]
        assert any(o["output_type"] == "stream" and o["name"] == "stderr" for o in cell.outputs)
    assert "<table>" in data["text/html"] and "<td>TREC</td>" in data["text/html"]
    assert "| dataset | Accuracy |" in data["text/markdown"]


def test_compare_and_report_notebook():
    notebook = _execute("compare_and_report.ipynb")
    code = [c for c in notebook.cells if c.cell_type == "code"]
    comparison = _result(code[1])["data"]
    assert "McNemar exact" in comparison["text/markdown"] and "<table>" in comparison["text/html"]
    assert 'class="sig worse" style="font-weight:bold;color:#b00"' in comparison["text/html"]  # red, in any notebook
    report = _result(code[2])["data"]["text/html"]  # the report inline: styles scoped to it, every figure in it
    assert report.startswith('<div class="staicc-report"><style>') and "<html" not in report
    # a forest plot, reliability and coverage curves, and (no bias diagnosis ran) each run's mean prediction
    assert report.count('src="data:image/png;base64,') == 3 + 2 and "Reliability: one panel per dataset" in report
    assert any("wrote" in o.get("text", "") and "figure files" in o.get("text", "") for o in code[3].outputs)
