"""The final run after ``cache merge`` asks nothing, so it imports no torch and loads no weights.

Tested by the modules the final run's process imported: a fresh interpreter runs ``staicc run`` on
the merged cache with the model's default device (its call size is known only once a model loads)
and reports whether torch is in ``sys.modules``; the shards before it load the model.
"""
import os
import subprocess
import sys

import pytest

pytest.importorskip("torch", reason='the [hf] extra is not installed (pip install "StaICC[hf]")')
pytest.importorskip("transformers", reason='the [hf] extra is not installed (pip install "StaICC[hf]")')

from backend_helpers import save_tiny  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

_CHILD = """
import contextlib, io, json, sys
from StaICC.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    status = main(sys.argv[1:])
print(json.dumps({"status": status, "torch": "torch" in sys.modules, "transformers": "transformers" in sys.modules}))
"""


def _run(argv):
    done = subprocess.run([sys.executable, "-c", _CHILD, *argv], capture_output=True, text=True, cwd=ROOT,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    return __import__("json").loads(done.stdout.strip().splitlines()[-1])


def test_the_final_run_after_a_merge_imports_no_torch(tmp_path):
    model = save_tiny(str(tmp_path / "tiny"))
    run = ["run", "--model", "hf", "--model-args", f"pretrained={model}", "--benchmarks", "Normal",
           "--datasets", "0", "--limit", "6", "--no-progress"]
    caches = [str(tmp_path / f"shard{i}.sqlite") for i in range(2)]
    shards = [_run([*run, "--shard", f"{i}/2", "--cache", caches[i]]) for i in range(2)]
    assert all(s["status"] == 0 and s["torch"] for s in shards), shards  # the shards load the model
    merged = str(tmp_path / "merged.sqlite")
    done = subprocess.run([sys.executable, "-m", "StaICC", "cache", "merge", merged, *caches],
                          capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr
    final = _run([*run, "--cache", merged, "--output-dir", str(tmp_path / "final")])
    assert final == {"status": 0, "torch": False, "transformers": False}
    written = (tmp_path / "final" / "results.json").read_text()
    assert '"answers_from_cache"' in written  # the run's numerics record names the cache's settings instead
