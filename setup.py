"""Packaging for StaICC. The core has no dependencies; extras are optional."""
import re
import subprocess
from pathlib import Path

from setuptools import find_packages, setup
from setuptools.command.build_py import build_py


HERE = Path(__file__).parent
VERSION = re.search(r'^__version__ = "([^"]+)"', (HERE / "StaICC" / "version.py").read_text(), re.M).group(1)
#: the transformers releases the [hf] extra allows: from the oldest CI tests to below the first it has not tested
TRANSFORMERS_OLDEST, TRANSFORMERS_NEWEST, TRANSFORMERS_BEYOND = "4.57.6", "5.24.0", "5.25"



class build_py_with_commit(build_py):
    """Also writes the checkout's git commit into the built package (``StaICC/BUILD_COMMIT``), so that a
    run's provenance names the code it ran after ``pip install .`` as it does from a checkout."""

    def run(self) -> None:
        super().run()
        try:
            commit = subprocess.run(["git", "-C", str(HERE), "rev-parse", "HEAD"], capture_output=True, text=True,
                                    timeout=5).stdout.strip()
            dirty = subprocess.run(["git", "-C", str(HERE), "status", "--porcelain", "--untracked-files=no"],
                                   capture_output=True, text=True, timeout=5).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return
        if re.fullmatch(r"[0-9a-f]{40}", commit):
            target = Path(self.build_lib) / "StaICC" / "BUILD_COMMIT"
            target.write_text(commit + ("-dirty" if dirty else "") + "\n", encoding="ascii")


setup(
    name="StaICC",
    cmdclass={"build_py": build_py_with_commit},
    version=VERSION,
    description="Standardized benchmark for in-context-learning classification (StaICC standard, stdlib-only core)",
    long_description=(HERE / "README.md").read_text(encoding="utf-8"),
    long_description_content_type="text/markdown",
    license="Apache-2.0",
    packages=find_packages(include=["StaICC", "StaICC.*"]),
    package_data={"StaICC.data": ["*.jsonl.gz", "*.json"]},
    include_package_data=True,
    python_requires=">=3.9",
    install_requires=[],
    extras_require={
        # transformers: the range CI tests at both ends (.ci/run: the newest with the whole suite, the oldest
        # with the hf tests); a release outside it is refused rather than trusted. torch below the first release
        # CI has not run (2.13 is the newest tested; the GPU figures used 2.11), NumPy below its next major.
        "hf": ["torch>=2.1,<2.14", f"transformers>={TRANSFORMERS_OLDEST},<{TRANSFORMERS_BEYOND}", "numpy<3"],
        "vllm": ["vllm"],
        "ray": ["ray"],
        "plot": ["matplotlib"],
        "stats": ["numpy<3"],  # lite runs' estimates and the vectorised bootstrap
        "rich": ["rich"],
        "progress": ["tqdm"],
        "embeddings": ["sentence-transformers"],
        "source": ["datasets"],
        "tasks": ["tomli>=1.1; python_version < '3.11'", "pyyaml"],
        "test": ["pytest", "hypothesis", "numpy", "scipy", "scikit-learn", "matplotlib",
                 "tomli>=1.1; python_version < '3.11'", "pyyaml", "nbclient", "nbformat", "ipykernel", "jsonschema"],
    },
    entry_points={"console_scripts": ["staicc=StaICC.cli:main"]},
    classifiers=[
        "Programming Language :: Python :: 3",
        "License :: OSI Approved :: Apache Software License",
        "Topic :: Scientific/Engineering :: Artificial Intelligence",
    ],
)
