"""Evaluate your own CSV data with the StaICC machinery (split, sampler, prompts, metrics, diagnoses).

    python examples/custom_csv.py [path/to/file.csv]

Uses the synthetic sample ``examples/data/sentiment.csv`` (600 rows, made by
``examples/data/make_sample.py``) and the built-in dependency-free reference model
``StaICC.backends.reference_model.lexical_icl``; replace it with your model's
``f(prompt, label_space) -> probabilities``.  Custom data is never a standard baseline:
every result carries ``metadata["standard"] == False``.
"""
import os
import sys
import time
import warnings

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from StaICC import Demo_sens, Normal, Template_sens  # noqa: E402
from StaICC.custom_datasets import from_csv, from_jsonl  # noqa: E402
from StaICC.errors import TamperingWarning  # noqa: E402
from StaICC.backends.reference_model import lexical_icl  # noqa: E402
from StaICC.report import format_table  # noqa: E402

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")

# Template_sens varies 4 template parts over 3 options each (L9 orthogonal table);
# option 0 of every part must be the dataset's default template.
ALTERNATE_TEMPLATE = {
    "instruction": ["", "Classify the sentiment of the review. ",
                    "Is the following movie review positive, neutral or negative? "],
    "input_text_prefixes": [["review: "], ["text: "], ["Review: "]],
    "label_prefix": ["sentiment: ", "label: ", "Sentiment: "],
    "label_affix": ["\n", " ", "\t"],
}


def main(path: str) -> None:
    started = time.perf_counter()
    reviews = from_csv(path, name="my_reviews", input_columns="text", label_column="label",
                       input_text_prefixes=["review: "], label_prefix="sentiment: ",
                       alternate_template=ALTERNATE_TEMPLATE)
    c, d, t = reviews.split_sizes
    print(f"{reviews!r} from {reviews.source}")
    print(f"split (default rule): calibration {c}, demonstration {d}, test {t}\n")

    normal = Normal(datasets=[reviews])
    print("One prompt (k = 4):")
    print(normal[0].prompt_set()[0] + "|<- the model predicts here\n")

    result = normal(lexical_icl)
    print(format_table(result, "Normal (lexical_icl)"))
    print(f"metadata: standard={result.metadata['standard']}, "
          f"non_standard_settings={result.metadata['non_standard_settings']}\n")

    # Beside a standard dataset: the averages mix standard and custom data, so the run is non-standard.
    both = Normal(datasets=["rotten_tomatoes", reviews])(lexical_icl)
    print(format_table(both, "Normal, a standard dataset beside the custom one"))
    print()

    sens = Template_sens(datasets=[reviews])(lexical_icl)
    print(format_table(sens, f"Template_sens: prediction consistency over 9 templates "
                             f"({len(Template_sens(datasets=[reviews])[0].test_set())} test items)"))
    print()
    demo = Demo_sens(datasets=[reviews])(lexical_icl)
    print(format_table(demo, f"Demo_sens: consistency over 8 demonstration sets "
                             f"({len(Demo_sens(datasets=[reviews])[0].test_set())} test items)"))
    print()

    # Two input columns (premise / hypothesis) from JSON Lines, integer labels named by label_words.
    nli = from_jsonl(os.path.join(DATA, "nli.jsonl"), name="my_nli", input_columns=["premise", "hypothesis"],
                     label_column="label", label_words=["entailment", "neutral", "contradiction"],
                     label_prefix="relation: ")
    nli_result = Normal(datasets=[nli])(lexical_icl)
    print("A two-input prompt (default prefixes from the column names):")
    print(Normal(datasets=[nli])[0].prompt_set()[0] + "|\n")
    print(format_table(nli_result, "Normal on the JSONL NLI sample"))
    print(f"\ndone in {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    warnings.simplefilter("ignore", TamperingWarning)
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(DATA, "sentiment.csv"))
