"""Departures from the standard read as words where the numbers are shown: k other than 4, a retriever's settings."""
import warnings

from StaICC import Normal
from StaICC.errors import TamperingWarning
from StaICC.backends.reference_model import lexical_icl
from StaICC.retrieval import retriever_from_name
from StaICC.subbenchmarks.experimentor import in_words


def run(**options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TamperingWarning)
        bench = Normal(datasets=["TREC"], **options)
        bench.limit_test_items(16)
        return bench(lexical_icl)


def test_k_other_than_4_is_a_departure_and_4_is_not():
    two = run(k=2)
    assert two.metadata["standard"] is False
    assert two.metadata["non_standard_settings"]["TREC"][0] == "k = 2 demonstrations per query (the standard's k is 4)"
    assert not any("demonstrations per query" in s for s in run().metadata["non_standard_settings"]["TREC"])
    with warnings.catch_warnings():
        warnings.simplefilter("error", TamperingWarning)  # the original warns nothing for a k: neither do we
        Normal(k=0, datasets=["TREC"])


def test_a_retriever_is_named_in_words_not_as_a_dict():
    settings = run(retriever=retriever_from_name("bm25")).metadata["non_standard_settings"]["TREC"]
    assert settings[0] == ("custom demonstration sampler: the BM25 retriever (k1=1.5, b=0.75, tokenizer=default "
                           "(lowercase \\w+ words), order=ascending, balanced=false, dedup=true)")
    assert not any("{" in s or "'" in s for s in settings)


def test_in_words_flattens_nested_descriptions():
    assert in_words({"retriever": "FixKRetriever", "parameters": {"fix_id_list": [1, 5], "dedup": True}}) == \
        "the FixK retriever (fix_id_list=[1, 5], dedup=true)"
    assert in_words({"embed_fn": "my.embed", "options": {"metric": "cosine"}}) == \
        "embed_fn=my.embed, options={metric=cosine}"
    assert in_words("my own rows") == "my own rows"
