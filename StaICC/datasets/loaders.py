"""The ten standard datasets: their constants, loaders and name resolution.

The per-dataset constants (templates, label words, split sizes) come from the bundled,
verified ``datasets.json``; the rows from the bundled draw (default) or, with
``from_cache=False``, from the HuggingFace source.
"""
from typing import Any, Dict, Iterable, List, Optional

from ..errors import InvalidTypeError, InvalidValueError, MissingExtraError
from ..rng import StableRandom
from ..standard import SEED
from ..validation import check_int
from .bundled import Row, _all_constants
from .dataset import Dataset
from .tables import ListTable, bundled_table


def standard_dataset_names() -> List[str]:
    """The ten standard datasets, in benchmark order."""
    return [entry["name"] for entry in _all_constants()]


def dataset_constants(name: str) -> Dict[str, Any]:
    """Per-dataset constants of the standard (templates, label words, sizes), a deep copy."""
    for entry in _all_constants():
        if entry["name"] == name or entry["loader"] == name:
            import copy
            return copy.deepcopy(entry)
    from ..validation import did_you_mean
    names = standard_dataset_names()
    raise InvalidValueError(f"unknown dataset {name!r}; the standard datasets are {', '.join(names)}"
                            f"{did_you_mean(name, names)}")


def load_standard_dataset(name: str, from_cache: bool = True, long_text_classification: bool = False) -> Dataset:
    """One of the ten standard datasets, from the bundled rows (default) or built from source."""
    const = dataset_constants(name)
    table = bundled_table(const["name"]) if from_cache else _build_from_source(const, long_text_classification)
    sizes = const["split_sizes"]
    return Dataset(
        const["name"], table, const["label_space"],
        instruction=const["instruction"], input_text_prefixes=const["input_text_prefixes"],
        input_text_affixes=const["input_text_affixes"], label_prefix=const["label_prefix"],
        label_affix=const["label_affix"], query_prefix=const["query_prefix"],
        label_mapping={int(k): v for k, v in const["label_mapping"].items()},
        ground_truth_label_space=const["ground_truth_label_space"],
        reduced_label_space=const["reduced_label_space"],
        alternate_template=const["alternate_template"],
        split_sizes=(sizes["calibration"], sizes["demonstration"], sizes["test"]), standard=True)


def _build_from_source(const: Dict[str, Any], long_text_classification: bool) -> ListTable:
    """The table from its HuggingFace source (non-default path).

    Rows of the source splits in order, kept when their total input length is at most 1024
    characters (at least 8192 with ``long_text_classification``), then shuffled by
    ``index_set(N, N)`` of a fresh standard stream.
    """
    try:
        import datasets as hf_datasets  # optional extra
    except ImportError as exc:
        raise MissingExtraError("building a standard dataset from source needs the `datasets` package: "
                                "pip install 'StaICC[source]'") from exc
    source = const["hf_source"]
    rows: List[Row] = []
    for split in source["splits"]:
        part = hf_datasets.load_dataset(source["path"], source["config"], split=split)
        rows.extend(([r[const["text_field"]]], int(r[const["label_field"]])) for r in part)
    if long_text_classification:
        rows = [r for r in rows if sum(len(t) for t in r[0]) >= 8192]
    else:
        rows = [r for r in rows if sum(len(t) for t in r[0]) <= 1024]
    order = StableRandom(SEED).index_set(len(rows), len(rows))
    return ListTable([rows[i] for i in order])


def _make_loader(loader_name: str, dataset_name: str, full_labels: bool = False) -> type:
    """A class whose construction returns the standard dataset (the original's loader classes).

    ``full_labels`` gives the variant with the ground-truth label words, which the
    benchmarks never use; it switches the label words and warns like ``full_label_token``.
    """
    def __new__(cls, from_cache: bool = True, long_text_classification: bool = False) -> Dataset:  # noqa: ARG001  (the original's class-call signature)
        dataset = load_standard_dataset(dataset_name, from_cache, long_text_classification)
        if full_labels:
            dataset.full_label_token()
        return dataset
    doc = f"{dataset_name!r} with its ground-truth label words." if full_labels else \
        f"Loader of the standard dataset {dataset_name!r}."
    return type(loader_name, (), {"__new__": __new__, "dataset_name": dataset_name, "__doc__": doc})


glue_sst2 = _make_loader("glue_sst2", "GLUE-SST2")
rotten_tomatoes = _make_loader("rotten_tomatoes", "rotten_tomatoes")
financial_phrasebank = _make_loader("financial_phrasebank", "financial_phrasebank")
sst5 = _make_loader("sst5", "SST5")
trec = _make_loader("trec", "TREC")
agnews = _make_loader("agnews", "AGNews")
subjective = _make_loader("subjective", "Subjective")
tweet_eval_emotion = _make_loader("tweet_eval_emotion", "tweet_eval_emotion")
tweet_eval_hate = _make_loader("tweet_eval_hate", "tweet_eval_hate")
hate_speech_18 = _make_loader("hate_speech_18", "hate_speech_18")

un_reducted_sst5 = _make_loader("un_reducted_sst5", "SST5", full_labels=True)
un_reducted_trec = _make_loader("un_reducted_trec", "TREC", full_labels=True)
un_reducted_agnews = _make_loader("un_reducted_agnews", "AGNews", full_labels=True)
un_reducted_tweet_eval_emotion = _make_loader("un_reducted_tweet_eval_emotion", "tweet_eval_emotion", full_labels=True)

STANDARD_LOADERS = [glue_sst2, rotten_tomatoes, financial_phrasebank, sst5, trec, agnews,
                    subjective, tweet_eval_emotion, tweet_eval_hate, hate_speech_18]


def resolve_dataset(spec: Any) -> Dataset:
    """A Dataset from a name, a benchmark index, a loader class or a Dataset (validated)."""
    if isinstance(spec, Dataset):
        return spec
    if isinstance(spec, int):  # bool included: check_int refuses it
        names = standard_dataset_names()
        try:
            index = check_int(spec, "dataset index", minimum=0, maximum=len(names) - 1)
        except TypeError:
            raise InvalidTypeError(f"expected a dataset name, index, loader or Dataset, got {spec!r}") from None
        except ValueError:
            raise InvalidValueError(f"dataset index {spec} out of range: the standard has {len(names)} datasets "
                                    f"(0..{len(names) - 1})") from None
        return load_standard_dataset(names[index])
    if isinstance(spec, str):
        return load_standard_dataset(spec)
    if isinstance(spec, type) or callable(spec):
        made = spec()
        if not isinstance(made, Dataset):
            raise InvalidTypeError(f"dataset loader {spec!r} returned {type(made).__name__}, expected a Dataset")
        return made
    raise InvalidTypeError(f"expected a dataset name, index, loader or Dataset, got {type(spec).__name__}")


def resolve_datasets(specs: Optional[Iterable[Any]]) -> List[Dataset]:
    if specs is None:
        return [loader() for loader in STANDARD_LOADERS]
    if isinstance(specs, (str, Dataset)) or not isinstance(specs, Iterable):
        specs = [specs]
    resolved = [resolve_dataset(s) for s in specs]
    if not resolved:
        raise InvalidValueError("a benchmark needs at least one dataset")
    return resolved
