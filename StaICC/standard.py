"""Constants of the StaICC 0.1.1 standard, in one place.

Everything a reviewer needs to check against STANDARD.md lives here: the
generator's constants, the split sizes, the repeat counts, the orthogonal
table of Template_sens and the exact warning texts.  Per-dataset strings
(templates, label words) live in ``data/datasets.json``, which
``tools/freeze_data.py`` copies from the specification.
"""
from typing import Dict, List, Tuple

# --- the stable random generator: a 32-bit LCG ------------------------------
SEED = 42
LCG_MULTIPLIER = 1664525
LCG_INCREMENT = 1013904223
LCG_MODULUS = 2 ** 32

# --- triplet split sizes (calibration, demonstration, test) -----------------
CALIBRATION_SIZE = 1024
DEMONSTRATION_SIZE = 4096
TEST_SIZE = 512
#: per-dataset overrides of (calibration, demonstration, test)
SPLIT_SIZE_OVERRIDES: Dict[str, Tuple[int, int, int]] = {
    "financial_phrasebank": (1024, 512, 512),
    "tweet_eval_emotion": (1024, 3192, 512),
}
TEMPLATE_SENS_TEST_SIZE = 100

# --- experiments: k, repeats, diagnosis sizes ------------------------------
DEFAULT_K = 4
DEFAULT_REPEAT_TIMES = 2
DEMO_SENS_REPEAT_TIMES = 8
DEMO_SENS_TEST_SIZE = TEST_SIZE * DEFAULT_REPEAT_TIMES // DEMO_SENS_REPEAT_TIMES  # 128
DOMAIN_QUERY_LENGTH = 128
GLER_INTERPOLATIONS = 5
ECE_BINS = 10
CONSISTENCY_LOOP_LENGTH = 100

#: L9(3^4) orthogonal table; columns follow TEMPLATE_KEYS.
ORTHOGONAL_TABLE: Tuple[Tuple[int, int, int, int], ...] = (
    (0, 0, 0, 0), (0, 1, 1, 1), (0, 2, 2, 2),
    (1, 0, 1, 2), (1, 1, 2, 0), (1, 2, 0, 1),
    (2, 0, 2, 1), (2, 1, 0, 2), (2, 2, 1, 0),
)
TEMPLATE_KEYS: Tuple[str, ...] = ("instruction", "input_text_prefixes", "label_prefix", "label_affix")

# --- base template defaults --------------------------------------------------
BASE_TEMPLATE = {
    "instruction": "",
    "input_text_prefixes": ["Input: "],
    "input_text_affixes": [" "],
    "label_prefix": "Label: ",
    "label_affix": "\n",
    "query_prefix": "",
}
#: the template attributes a dataset defines and the prompt writer copies, in config-dict order
TEMPLATE_FIELDS: Tuple[str, ...] = ("instruction", "input_text_prefixes", "input_text_affixes",
                                    "label_prefix", "label_affix", "query_prefix")
NOISY_CHANNEL_LABEL_AFFIX = " "
NOISY_CHANNEL_LAST_INPUT_AFFIX = "\n"

# --- warning texts, exactly as the standard prints them ----------------------
TAMPERING_WARNING = ("You are editing the standard settings of StaICC. You should not use the "
                     "result after editing as any baselines. Be careful.")
STRICT_TEMPLATE_WARNING = ("You are editing the basic dataset template in the strict mode. Canceled.\n "
                           "If you want to edit the prompt template, please edit the "
                           "dataset_interface.prompt_writter.")
STRICT_SETTING_WARNING = "The setting can't be changed in the strict mode. Return to default."
NOT_APPLICABLE_WARNING = "Not applicable on this dataset."
WRONG_LABEL_COUNT_WARNING = "The number of wrong labels is not an integer."

DEFAULT_NORMAL_METRICS: List[str] = [
    "accuracy", "averaged_truelabel_likelihood", "macro_F1", "expected_calibration_error_1",
]


def standard_split_sizes(dataset_name: str) -> Tuple[int, int, int]:
    """(calibration, demonstration, test) sizes of the standard split of a dataset."""
    return SPLIT_SIZE_OVERRIDES.get(dataset_name, (CALIBRATION_SIZE, DEMONSTRATION_SIZE, TEST_SIZE))
