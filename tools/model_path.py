"""The functions a model name passes in ``staicc run``: from ``main`` to the backend made from the name, and
to the model itself (the built-in lexical model's scoring function), read from the live call stack.

    python tools/model_path.py

runs ``staicc run --model reference --datasets TREC --limit 8`` in this process (no file is written) and prints
both call stacks (the package's frames only) and how many distinct functions they hold together.
"""
import contextlib
import io
import os
import sys
import warnings
from typing import Dict, List

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

#: (file ending, function name) where each stack is read: the backend made from the name; the model answering
MOMENTS = {"backend made": ("backends/reference.py", "reference_backend"),
           "model called": ("backends/reference_model.py", "lexical_icl")}


def _package_frames(frame) -> List[str]:
    found = []
    while frame is not None:
        path = frame.f_code.co_filename.replace(os.sep, "/")
        if "/StaICC/" in path:
            found.append(f"{path.split('/StaICC/')[-1]}:{frame.f_code.co_name}")
        frame = frame.f_back
    return found[::-1]


def stacks() -> Dict[str, List[str]]:
    from StaICC.cli import main
    seen: Dict[str, List[str]] = {}

    def profile(frame, event, _arg):
        if event == "call":
            path = frame.f_code.co_filename.replace(os.sep, "/")
            for moment, (ending, name) in MOMENTS.items():
                if moment not in seen and path.endswith(ending) and frame.f_code.co_name == name:
                    seen[moment] = _package_frames(frame)

    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()), \
            contextlib.redirect_stderr(io.StringIO()):
        warnings.simplefilter("ignore")
        sys.setprofile(profile)
        try:
            status = main(["run", "--model", "reference", "--datasets", "TREC", "--limit", "8", "--no-progress"])
        finally:
            sys.setprofile(None)
    if status != 0 or set(seen) != set(MOMENTS):
        raise SystemExit(f"the run did not reach every moment (exit status {status}; seen: {sorted(seen)})")
    return seen


if __name__ == "__main__":
    found = stacks()
    for moment, frames in found.items():
        print(f"{moment}: {len(frames)} functions\n  " + "\n  ".join(frames))
    print(f"distinct functions from main to the backend and to the model: "
          f"{len(dict.fromkeys(f for frames in found.values() for f in frames))}")
