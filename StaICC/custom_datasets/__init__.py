"""Custom classification datasets: your own data through the standard's machinery.

Build a :class:`StaICC.datasets.Dataset` from a list of records (dicts), a JSON Lines
file, a CSV file or a HuggingFace ``datasets`` object, then pass it to any
sub-benchmark, alone or beside the standard ten::

    from StaICC import Normal
    from StaICC.custom_datasets import from_csv

    mine = from_csv("reviews.csv", name="my_reviews", input_columns="text", label_column="label")
    Normal(datasets=["GLUE-SST2", mine])(my_inference)

The split (calibration, demonstration, test), the demonstration sampler, the prompt
writer, the metrics and every diagnosis are the standard's; only the rows, the label
words, the template and the split sizes are yours.  Results that involve a custom
dataset are marked non-standard (``result.metadata["standard"] is False``).

Bad data is refused with :class:`CustomDatasetError` (a ``ValueError``) naming the
file, the row (1-based line number in files, 0-based index for records and HuggingFace
rows) and the column.  Only the standard library is used; ``datasets`` is imported
only when :func:`from_hf` is given a dataset *name* to load.

The split is drawn by the standard's generator, or fixed by the data: a split column
(``split_column=``), the ids of the test rows (``id_column=``, ``test_ids=``) or one file
per part (:func:`from_files`); see :mod:`.split_parts`.

The package is split by job: :mod:`.readers` (the four input forms), :mod:`.builder`
(the checks and the builder they share, split sizes, template defaults),
:mod:`.split_parts` and :mod:`.split_files` (fixed splits),
:mod:`.labels` (raw label values to label words and ids) and :mod:`.errors`.  Every
name stays importable from ``StaICC.custom_datasets``.
"""
# the public names of the single module ``StaICC/custom_datasets.py`` this package replaced stay importable here;
# a private helper is imported from the module that defines it
from .builder import MIN_ECE_PREDICTIONS, MIN_ROWS, Columns, default_input_text_prefixes, default_split_sizes  # noqa: F401
from .errors import CustomDatasetError
from .labels import LabelWords  # noqa: F401
from .readers import from_csv, from_hf, from_jsonl, from_records
from .split_files import from_files
from .split_parts import DEFAULT_SPLIT_VALUES

__all__ = ["CustomDatasetError", "from_records", "from_jsonl", "from_csv", "from_hf", "from_files",
           "DEFAULT_SPLIT_VALUES", "default_split_sizes",
           "default_input_text_prefixes", "MIN_ROWS", "MIN_ECE_PREDICTIONS"]
