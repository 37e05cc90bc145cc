"""A parsed task resolved against its data: a :class:`~StaICC.datasets.Dataset`, standard or not.

A task whose data is a standard dataset (``data.source = "standard"``) and whose every
given key equals the standard's definition *is* that standard dataset: the same object
the loaders build, so its numbers are the standard's bit for bit and it stays marked
standard.  Each key that differs is listed as a departure and the dataset is marked
non-standard.  Any other source goes through the :mod:`StaICC.custom_datasets` builders,
whose row errors are re-raised naming the task file, the key and the data row.
"""
import copy
import os
from typing import Any, Dict, List, Optional, Tuple

from ..datasets import Dataset
from .errors import TaskError, nearest
from .files import TaskSource
from .schema import TaskConfig
from .splits import FIXED_SPLIT_KEYS, check_one_way, deduplicated_fixed, split_options, split_sizes

#: the template keys, in the standard's order
TEMPLATE_KEYS = ("instruction", "input_text_prefixes", "input_text_affixes", "label_prefix", "label_affix",
                 "query_prefix")
ALTERNATE_KEYS = ("instruction", "input_text_prefixes", "label_prefix", "label_affix")
#: data keys that only a file, records or a HuggingFace source reads
_CUSTOM_DATA_KEYS = ("path", "records", "input_columns", "label_column", "config", "split", "delimiter",
                     "deduplicate")
#: the builder's argument names (how its errors begin) -> the task key they come from
_BUILDER_KEYS = (("split_column", "split.column"), ("split_values", "split.values"), ("id_column", "split.id_column"),
                 ("test_ids", "split.test_ids"), ("alternate_template", "template.alternates"), ("input_text_prefixes", "template.input_text_prefixes"),
                 ("input_text_affixes", "template.input_text_affixes"), ("split_sizes", "split"),
                 ("label_words", "labels.words"), ("input_columns", "data.input_columns"),
                 ("label_column", "data.label_column"), ("instruction", "template.instruction"),
                 ("label_prefix", "template.label_prefix"), ("label_affix", "template.label_affix"),
                 ("query_prefix", "template.query_prefix"), ("delimiter", "data.delimiter"), ("name", "name"))


def infer_source(config: TaskConfig, path: str) -> str:
    data = config.data
    check_one_way(config, path)
    if config.split.files is not None:
        for key in ("path", "records", "dataset"):
            if getattr(data, key) is not None:
                raise TaskError("split.files gives the data, one file per part; leave data.path, data.records and "
                                "data.dataset out", path=path, key=f"data.{key}")
        if data.source not in (None, "csv", "jsonl"):
            raise TaskError("split.files reads CSV or JSON Lines files", path=path, key="data.source")
        return "files"
    if data.source is not None:
        return data.source
    if data.path is not None:
        ending = os.path.splitext(data.path)[1].lower()
        if ending == ".csv" or ending == ".tsv":
            return "csv"
        if ending in (".jsonl", ".json"):
            return "jsonl"
        raise TaskError(f"cannot tell the format of {data.path!r} from its ending; give data.source = csv or jsonl",
                        path=path, key="data.source")
    if data.records is not None:
        return "records"
    if data.dataset is not None:
        from ..datasets import standard_dataset_aliases
        return "standard" if data.dataset in standard_dataset_aliases() else "hf"
    raise TaskError("no data: give data.path (CSV or JSON Lines), data.records, or data.dataset (a standard or a "
                    "HuggingFace dataset)", path=path, key="data")


def resolve_dataset(config: TaskConfig, source: TaskSource) -> Tuple[Dataset, List[str]]:
    """The task's dataset and its departures from the standard (empty: it is a standard dataset)."""
    kind = infer_source(config, source.path)
    if kind == "standard":
        return _standard(config, source.path)
    dataset = _custom(config, source, kind)
    return dataset, list(getattr(dataset, "departures", None) or ["custom dataset"])


# ----------------------------------------------------------------------------
# a standard dataset, as is or changed
# ----------------------------------------------------------------------------
def _standard(config: TaskConfig, path: str) -> Tuple[Dataset, List[str]]:
    from ..datasets import dataset_constants, load_standard_dataset, standard_dataset_aliases, standard_dataset_names
    data = config.data
    for key in _CUSTOM_DATA_KEYS:
        if getattr(data, key) not in (None, False):
            raise TaskError("source=standard reads the bundled rows of a standard dataset; this key is for other "
                            "sources", path=path, key=f"data.{key}")
    wanted = data.dataset if data.dataset is not None else config.name
    if wanted not in standard_dataset_aliases():
        raise TaskError(f"{wanted!r} is not a standard dataset" + nearest(wanted, standard_dataset_names())
                        .replace("valid keys", "the standard datasets are"), path=path, key="data.dataset")
    const = dataset_constants(wanted)
    departures: List[str] = []
    if config.name != const["name"]:
        if config.name.lower() in {a.lower() for a in standard_dataset_aliases()}:
            raise TaskError(f"{config.name!r} names another standard dataset than the data ({const['name']!r})",
                            path=path, key="name")
        departures.append(f"renamed {const['name']} to {config.name}")
    for key in FIXED_SPLIT_KEYS:
        if getattr(config.split, key) is not None:
            raise TaskError("a standard dataset's split is the standard's; a fixed split is for your own data",
                            path=path, key=f"split.{key}")
    sizes = (const["split_sizes"]["calibration"], const["split_sizes"]["demonstration"], const["split_sizes"]["test"])
    given = tuple(getattr(config.split, part) for part in ("calibration", "demonstration", "test"))
    if any(v is not None for v in given) and given != sizes:
        raise TaskError(f"a standard dataset ships only the rows of its standard split {sizes}; give "
                        f"calibration={sizes[0]}, demonstration={sizes[1]}, test={sizes[2]} or no split table",
                        path=path, key="split")
    words = _standard_words(config, const, path, departures)
    template = {key: const[key] for key in TEMPLATE_KEYS}
    for key in TEMPLATE_KEYS:
        value = getattr(config.template, key)
        if value is None:
            continue
        value = list(value) if isinstance(value, tuple) else value
        if key in ("input_text_prefixes", "input_text_affixes") and len(value) != len(const[key]):
            raise TaskError(f"expected {len(const[key])} string(s), one per input column, got {len(value)}",
                            path=path, key=f"template.{key}")
        if value != const[key]:
            departures.append(f"template {key} {value!r} (standard {const[key]!r})")
            template[key] = value
    alternates = _alternates(config, path, template, const["alternate_template"])
    if alternates != const["alternate_template"]:
        departures.append("Template_sens alternates differ from the standard's")
    dataset = load_standard_dataset(const["name"])
    if not departures:
        return dataset, []
    changed = copy.copy(dataset)
    changed.dataset_name = config.name
    changed.label_space = list(words)
    changed.label_mapping = dict(dataset.label_mapping)
    for key in TEMPLATE_KEYS:
        setattr(changed, "_" + key, copy.deepcopy(template[key]))
    changed.alternate_template = alternates
    changed.standard = False
    changed.departures = [f"task: {d}" for d in departures]  # type: ignore[attr-defined]
    return changed, departures


def _standard_words(config: TaskConfig, const: Dict[str, Any], path: str, departures: List[str]) -> List[str]:
    words = config.labels.words
    if words is None:
        return list(const["label_space"])
    if isinstance(words, dict):
        raise TaskError("a standard dataset's label words are a list, one per label id", path=path, key="labels.words")
    words = list(words)
    if len(words) != len(const["label_space"]):
        raise TaskError(f"{const['name']} has {len(const['label_space'])} labels; give one word each, got "
                        f"{len(words)}", path=path, key="labels.words")
    from ..custom_datasets.labels import _check_words
    _wrap(_check_words, path, "labels.words", words, "labels.words")
    if words != const["label_space"]:
        departures.append(f"label words {words} (standard {const['label_space']})")
    return words


def _alternates(config: TaskConfig, path: str, template: Dict[str, Any],
                standard: Optional[Dict[str, list]]) -> Optional[Dict[str, list]]:
    """The Template_sens options: the task's, else the standard's with option 0 set to the task's template."""
    from ..custom_datasets.builder import _check_alternate_template
    given = {key: getattr(config.template.alternates, key) for key in ALTERNATE_KEYS}
    if all(v is None for v in given.values()):
        if standard is None:
            return None
        alternates = copy.deepcopy(standard)
        for key in ALTERNATE_KEYS:
            alternates[key][0] = copy.deepcopy(template[key])
        return alternates
    missing = [key for key, value in given.items() if value is None]
    if missing:
        raise TaskError(f"Template_sens needs all four option lists; missing {', '.join(missing)}", path=path,
                        key="template.alternates." + missing[0])
    plain = {key: [list(o) if isinstance(o, tuple) else o for o in value] for key, value in given.items()}
    return _wrap(_check_alternate_template, path, "template.alternates", plain, template,
                 len(template["input_text_prefixes"]))


def _wrap(function: Any, path: str, key: str, *args: Any) -> Any:
    try:
        return function(*args)
    except (TypeError, ValueError) as exc:
        raise TaskError(str(exc), path=path, key=key) from None


# ----------------------------------------------------------------------------
# your own data, through the custom_datasets builders
# ----------------------------------------------------------------------------
def _custom(config: TaskConfig, source: TaskSource, kind: str) -> Dataset:
    from ..custom_datasets import CustomDatasetError, from_csv, from_files, from_hf, from_jsonl, from_records
    path, data = source.path, config.data
    options = _builder_options(config, path, kind)
    try:
        if kind == "files":
            files = {part: _data_file(file, source, f"split.files.{part}") for part, file in config.split.files.items()}
            dataset = from_files(files, delimiter=data.delimiter or ",", **options)
        elif kind in ("csv", "jsonl"):
            if data.path is None:
                raise TaskError(f"source={kind} reads a file: give its path", path=path, key="data.path")
            file = _data_file(data.path, source, "data.path")
            if kind == "csv":
                dataset = from_csv(file, delimiter=data.delimiter or ",", **options)
            else:
                dataset = from_jsonl(file, **options)
        elif kind == "records":
            if data.records is None:
                raise TaskError("source=records needs the rows inline", path=path, key="data.records")
            dataset = from_records(data.records, **options)
        else:
            if data.dataset is None or data.split is None:
                key = "data.dataset" if data.dataset is None else "data.split"
                raise TaskError("source=hf needs data.dataset (a HuggingFace name) and data.split", path=path, key=key)
            dataset = from_hf(data.dataset, split=data.split, config=data.config, **options)
    except CustomDatasetError as exc:
        where = str(exc)[:-len(exc.reason) - 2] if str(exc).endswith(exc.reason) else None
        raise TaskError(exc.reason, path=path, key=_key_of(exc.reason, "data"), row=where) from None
    except (TypeError, ValueError) as exc:
        if isinstance(exc, TaskError):
            raise
        raise TaskError(str(exc), path=path, key=_key_of(str(exc), "data")) from None
    except ImportError as exc:
        raise TaskError(str(exc).splitlines()[0], path=path, key="data.dataset") from None
    if data.deduplicate:
        dataset = _deduplicated(dataset, config, path)
    return dataset


def _data_file(name: str, source: TaskSource, key: str) -> str:
    """A data file named in the task file: relative to the task file's folder; it must exist."""
    file = name if os.path.isabs(name) else os.path.join(source.directory, name)
    if not os.path.isfile(file):
        raise TaskError(f"no such data file {file!r}", path=source.path, key=key)
    return file


def _key_of(message: str, default: str) -> str:
    for argument, key in _BUILDER_KEYS:
        if message.startswith(argument):
            return key
    return default


def _builder_options(config: TaskConfig, path: str, kind: str) -> Dict[str, Any]:
    from ..datasets import standard_dataset_aliases
    if config.name.lower() in {a.lower() for a in standard_dataset_aliases()}:
        raise TaskError(f"{config.name!r} is a standard dataset's name; a task on other data needs its own name so "
                        "that its results cannot pass for the standard's", path=path, key="name")
    for key in ("input_columns", "label_column"):
        if getattr(config.data, key) is None:
            raise TaskError(f"source={kind} needs the {key.replace('_', ' ')}", path=path, key=f"data.{key}")
    if config.data.delimiter is not None and kind not in ("csv", "files"):
        raise TaskError("only a CSV source has a delimiter", path=path, key="data.delimiter")
    words = config.labels.words
    options: Dict[str, Any] = {"name": config.name, "input_columns": list(config.data.input_columns),
                               "label_column": config.data.label_column,
                               "label_words": list(words) if isinstance(words, tuple) else words}
    for key in TEMPLATE_KEYS:
        value = getattr(config.template, key)
        if value is not None:
            options[key] = list(value) if isinstance(value, tuple) else value
    given = {key: getattr(config.template.alternates, key) for key in ALTERNATE_KEYS}
    if any(v is not None for v in given.values()):
        missing = [key for key, value in given.items() if value is None]
        if missing:
            raise TaskError(f"Template_sens needs all four option lists; missing {', '.join(missing)}", path=path,
                            key="template.alternates." + missing[0])
        options["alternate_template"] = {key: [list(o) if isinstance(o, tuple) else o for o in value]
                                         for key, value in given.items()}
    options.update(split_options(config, path))
    sizes = split_sizes(config, path)
    if sizes is not None and not config.data.deduplicate:
        options["split_sizes"] = sizes
    return options


def _deduplicated(dataset: Dataset, config: TaskConfig, path: str) -> Dataset:
    """The dataset without rows whose inputs repeat an earlier row's, split sizes recomputed for the rest."""
    from ..custom_datasets import MIN_ROWS, default_split_sizes
    if dataset.fixed_split is not None:
        return deduplicated_fixed(dataset)
    seen, rows = set(), []
    for inputs, raw in dataset.table:
        key = tuple(inputs)
        if key not in seen:
            seen.add(key)
            rows.append((list(inputs), raw))
    if len(rows) < MIN_ROWS:
        raise TaskError(f"only {len(rows)} distinct rows remain after de-duplication; a task needs {MIN_ROWS}",
                        path=path, key="data.deduplicate")
    sizes = split_sizes(config, path) or default_split_sizes(len(rows))
    if sum(sizes) > len(rows):
        raise TaskError(f"split sizes {sizes} need {sum(sizes)} rows; {len(rows)} distinct rows remain after "
                        "de-duplication", path=path, key="split")
    kept = dataset.with_rows(rows, dataset.name)
    kept.split_sizes = tuple(sizes)
    kept.deduplicated = len(dataset) - len(rows)  # type: ignore[attr-defined]
    return kept


def describe_dataset(dataset: Dataset) -> Dict[str, Any]:
    """What a task resolved to: rows, label words and counts, split sizes, template (for validate and provenance)."""
    counts: Dict[str, int] = dict.fromkeys(dataset.label_space, 0)
    from ..datasets import ListTable
    held = isinstance(dataset.table, ListTable)  # a bundled standard table serves only its drawn rows
    if held:
        for i in range(len(dataset)):
            counts[dataset.get_label(i)] += 1
    out: Dict[str, Any] = {"name": dataset.name, "rows": len(dataset), "label_words": list(dataset.label_space),
                           "split_sizes": list(dataset.split_sizes) if dataset.split_sizes else None,
                           "template": dataset.default_template(), "standard": dataset.standard,
                           "alternate_template": dataset.get_alternate_template()}
    if held:
        out["label_counts"] = counts
        out["content_sha256"] = dataset.content_sha256()
    if getattr(dataset, "deduplicated", None) is not None:
        out["rows_dropped_as_duplicates"] = dataset.deduplicated  # type: ignore[attr-defined]
    fixed = dataset.fixed_split
    if fixed is not None:
        out["fixed_split"] = {"how": fixed.how, "test_rows": fixed.test_row_names(), "sha256": fixed.digest(dataset)}
    return out

