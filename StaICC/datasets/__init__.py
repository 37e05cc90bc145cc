"""Datasets: the bundled standard tables (verified), the Dataset object, the ten loaders.

Modules, by job:

* :mod:`~StaICC.datasets.bundled` — locate, read, hash-check and decode the bundled files;
* :mod:`~StaICC.datasets.tables` — where rows come from (in memory, or a bundled draw);
* :mod:`~StaICC.datasets.dataset` — :class:`Dataset` and :func:`verify_datasets`;
* :mod:`~StaICC.datasets.loaders` — constants, the ten loaders, name resolution.
"""
from .bundled import (DataFileError, _all_constants, _read_data_file, data_path, manifest,  # noqa: F401
                      manifest_sha256, standard_dataset_aliases)
from .dataset import Dataset, Row, basic_datasets_loader, template_of, verify_datasets  # noqa: F401
from .loaders import (STANDARD_LOADERS, agnews, dataset_constants, financial_phrasebank, glue_sst2, hate_speech_18,
                      load_standard_dataset, resolve_dataset, resolve_datasets, rotten_tomatoes, sst5,
                      standard_dataset_names, subjective, trec, tweet_eval_emotion,
                      tweet_eval_hate, un_reducted_agnews, un_reducted_sst5, un_reducted_trec,
                      un_reducted_tweet_eval_emotion)
from .tables import DrawnSlice, DrawnTable, ListTable, bundled_table

__all__ = ["DataFileError", "Dataset", "basic_datasets_loader", "verify_datasets", "template_of", "manifest",
           "manifest_sha256", "data_path", "dataset_constants", "standard_dataset_names", "standard_dataset_aliases",
           "load_standard_dataset", "resolve_dataset", "resolve_datasets", "bundled_table", "ListTable",
           "DrawnTable", "DrawnSlice", "STANDARD_LOADERS", "glue_sst2", "rotten_tomatoes", "financial_phrasebank",
           "sst5", "trec", "agnews", "subjective", "tweet_eval_emotion", "tweet_eval_hate", "hate_speech_18",
           "un_reducted_sst5", "un_reducted_trec", "un_reducted_agnews", "un_reducted_tweet_eval_emotion"]
