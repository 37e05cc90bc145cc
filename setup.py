"""Packaging for StaICC. The core has no dependencies; extras are optional."""
import re
from pathlib import Path

from setuptools import find_packages, setup

HERE = Path(__file__).parent
VERSION = re.search(r'^__version__ = "([^"]+)"', (HERE / "StaICC" / "version.py").read_text(), re.M).group(1)

setup(
    name="StaICC",
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
        "hf": ["torch>=2.1", "transformers>=4.43", "numpy"],
        "vllm": ["vllm"],
        "ray": ["ray"],
        "plot": ["matplotlib"],
        "rich": ["rich"],
        "progress": ["tqdm"],
        "embeddings": ["sentence-transformers"],
        "source": ["datasets"],
        "tasks": ["tomli>=1.1; python_version < '3.11'", "pyyaml"],
        "test": ["pytest", "hypothesis", "numpy", "scipy", "matplotlib", "tomli>=1.1; python_version < '3.11'",
                 "pyyaml"],
    },
    entry_points={"console_scripts": ["staicc=StaICC.cli:main"]},
    classifiers=[
        "Programming Language :: Python :: 3",
        "License :: OSI Approved :: Apache Software License",
        "Topic :: Scientific/Engineering :: Artificial Intelligence",
    ],
)
