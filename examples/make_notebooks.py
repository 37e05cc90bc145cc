"""Write the example notebooks (without outputs) from the cells below; the tests execute them.

    python examples/make_notebooks.py
"""
import os

import nbformat

HERE = os.path.dirname(os.path.abspath(__file__))

NOTEBOOKS = {
    "quick_start.ipynb": [
        ("markdown", "# Quick start\n\nEvaluate an inference function on the StaICC standard. A result shows as "
                     "a table, with any non-standard setting stated above it."),
        ("code", "from StaICC import Normal\nfrom StaICC.backends.reference_model import lexical_icl\n\n"
                 "def my_inference(prompt, label_space):\n"
                 "    # a real model scores each label after the prompt; the built-in lexical learner stands in\n"
                 "    return lexical_icl(prompt, label_space)"),
        ("code", "benchmark = Normal(datasets=[\"rotten_tomatoes\", \"TREC\"])\n"
                 "print(benchmark[0].prompt_set()[0])"),
        ("code", "result = benchmark(my_inference)\nresult"),
    ],
    "preentered_predictions.ipynb": [
        ("markdown", "# Preentered predictions\n\nScore the prompts anywhere (a cluster, an API), then hand the "
                     "predictions back: one list per dataset, aligned with `prompt_set()`."),
        ("code", "from StaICC import Normal\nfrom StaICC.backends.reference_model import lexical_icl\n\n"
                 "benchmark = Normal(datasets=[\"rotten_tomatoes\", \"TREC\"])\n"
                 "prompts = {e.dataset_name: (e.prompt_set(), e.get_label_space()) for e in benchmark}\n"
                 "{name: len(p) for name, (p, _) in prompts.items()}"),
        ("code", "# elsewhere: any model; here the built-in one\n"
                 "predictions = {name: [lexical_icl(p, labels) for p in ps] for name, (ps, labels) in prompts.items()}"),
        ("code", "offline = benchmark(preentered_predictions=predictions)\n"
                 "assert offline == benchmark(lexical_icl)\noffline"),
    ],
    "compare_and_report.ipynb": [
        ("markdown", "# Compare two runs and report\n\nTwo runs on the same prompts (the built-in model and "
                     "chance), compared paired with bootstrap intervals over test items, and the HTML report, shown "
                     "here and saved as a file."),
        ("code", "import subprocess, sys, tempfile, os\nroot = tempfile.mkdtemp()\n"
                 "for name, model in ((\"lexical\", \"reference\"), (\"chance\", \"uniform\")):\n"
                 "    subprocess.run([sys.executable, \"-m\", \"StaICC\", \"run\", \"--model\", model, \"--datasets\", "
                 "\"TREC\", \"rotten_tomatoes\",\n"
                 "                    \"--log-samples\", \"--no-progress\", \"--output-dir\", os.path.join(root, name)],\n"
                 "                   check=True, stdout=subprocess.DEVNULL)"),
        ("code", "from StaICC.report import load_run\nfrom StaICC.stats import compare_runs\n"
                 "a, b = load_run(os.path.join(root, \"lexical\")), load_run(os.path.join(root, \"chance\"))\n"
                 "comparison = compare_runs(a, b, resamples=200)\ncomparison"),
        ("markdown", "The whole report in one line: `html_report` takes run directories (or loaded runs), computes "
                     "the intervals and differences as `staicc report --html` does, and shows the page here. Click a "
                     "section's title to open it."),
        ("code", "from StaICC.report import html_report\nreport = html_report(a, b, resamples=200)\nreport"),
        ("code", "written = report.save(os.path.join(root, \"report.html\"))  # the page and its figures (PNG, SVG)\n"
                 "print(\"wrote\", written[0], \"and\", len(written) - 1, \"figure files\")"),
    ],
}


def main() -> None:
    for name, cells in NOTEBOOKS.items():
        notebook = nbformat.v4.new_notebook()
        notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
        notebook.cells = [nbformat.v4.new_markdown_cell(text) if kind == "markdown" else nbformat.v4.new_code_cell(text)
                          for kind, text in cells]
        for number, cell in enumerate(notebook.cells):  # fixed ids: writing the notebooks again changes nothing
            cell.id = f"{os.path.splitext(name)[0].replace('_', '-')}-{number}"
        nbformat.write(notebook, os.path.join(HERE, name))
        print("wrote", name)


if __name__ == "__main__":
    main()
