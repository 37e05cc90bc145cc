"""Hypothesis strategies shared by the command-line property tests (import after ``importorskip("hypothesis")``)."""
from hypothesis import strategies as st

#: argument values a user might type, odd ones included
VALUES = st.one_of(
    st.text(max_size=12),
    st.integers(min_value=-(2 ** 40), max_value=2 ** 40).map(str),
    st.sampled_from(["all", "Normal", "GLER,Post_bias", "Triplet_bias", "reference", "uniform", "hf", "openai",
                     "bm25", "fixk:fix_id_list=1", "random:seed=3", "zero", "a=1", "model=x,base_url=", "0", "-1",
                     "1e9", "nan", "\u00b2", "/proc/x", ""]))
