"""Original path of the standard's constants (see :mod:`StaICC.standard`).

The original kept its settings in three dictionaries; they are rebuilt here from
:mod:`StaICC.standard` and the bundled dataset constants, so there is one source of
truth.  They are fresh copies: editing them changes nothing in the benchmark.
"""
from typing import Any, Dict, List

from ..standard import *  # noqa: F401,F403
from ..standard import (CALIBRATION_SIZE, DEFAULT_REPEAT_TIMES, DEMONSTRATION_SIZE, ECE_BINS, LCG_INCREMENT,
                        LCG_MODULUS, LCG_MULTIPLIER, ORTHOGONAL_TABLE, SEED, SPLIT_SIZE_OVERRIDES,
                        STRICT_SETTING_WARNING, STRICT_TEMPLATE_WARNING, TAMPERING_WARNING, TEST_SIZE)

#: the original's switch for refusing changed settings; the standard is always strict
STRICT_MODE = True
#: texts longer than this are dropped by a short-text build from source; shorter ones by a long-text build
CUT_BY_LENGTH_REMAIN_SHORT = 1024
CUT_BY_LENGTH_REMAIN_LONG = 8192
FP_LENGTH_WARNING = ("We are spliting the financial_phrasebank with a shorter dataset length. "
                     "The default spliting can't be remained. Be careful.")


def _split(name: str) -> Dict[str, int]:
    calibration, demonstration, test = SPLIT_SIZE_OVERRIDES[name]
    return {"calibration_number": calibration, "demonstration_number": demonstration, "test_number": test}


STANDARD_SETTINGS: Dict[str, Any] = {
    "calibration_number": CALIBRATION_SIZE,
    "demonstration_number": DEMONSTRATION_SIZE,
    "test_number": TEST_SIZE,
    "test_times_for_each_test_sample": DEFAULT_REPEAT_TIMES,
    "cut_by_length_remain_short": CUT_BY_LENGTH_REMAIN_SHORT,
    "cut_by_length_remain_long": CUT_BY_LENGTH_REMAIN_LONG,
    "ece_bins": ECE_BINS,
    "random_seed": SEED,
    "random_A": LCG_MULTIPLIER,
    "random_B": LCG_INCREMENT,
    "random_C": LCG_MODULUS,
    "split_for_FP": _split("financial_phrasebank"),
    "split_for_TEE": _split("tweet_eval_emotion"),
    "L9(3,4)_orthogonal_table": [list(row) for row in ORTHOGONAL_TABLE],
}

WARNING_SETTINGS: Dict[str, str] = {
    "tampering": TAMPERING_WARNING,
    "FP_length_warning": FP_LENGTH_WARNING,
    "basic_dataset_template_protect": STRICT_TEMPLATE_WARNING,
    "strict_mode_protect": STRICT_SETTING_WARNING,
}


def _ppl_icl_instructions() -> Dict[str, List[str]]:
    from ..datasets import dataset_constants, standard_dataset_names
    return {name: list(dataset_constants(name)["ppl_icl_instructions"]) for name in standard_dataset_names()}


def __getattr__(name: str) -> Any:
    """``PPL_ICL_INSTRUCTION_SETTINGS`` reads the dataset constants, so it is built on first use."""
    if name == "PPL_ICL_INSTRUCTION_SETTINGS":
        value = _ppl_icl_instructions()
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> List[str]:
    return sorted(list(globals()) + ["PPL_ICL_INSTRUCTION_SETTINGS"])
