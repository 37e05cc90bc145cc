"""Every public name of the original StaICC 0.1.1 exists here (modules, functions, classes, methods).

The names were listed from the original wheel's modules and classes with ``dir()`` and are
recorded below; the original package is not needed to run these tests.  Behaviour tests
compare the original's helper functions with values the original returned for the same
inputs (recorded as literals).
"""
import importlib
import math
import warnings

import pytest

BENCHMARK_MEMBERS = (
    '__call__', '__getitem__', '__len__', 'auto_run', 'get_experiment_data', 'get_experimentors',
    'get_label_spaces_for_experimentors', 're_initialize',
)
TRIPLET_BIAS_MEMBERS = (
    '__call__', 'auto_run',
)
SAMPLER_MEMBERS = (
    '__getitem__', '__len__', 'get_sampled_indexes',
)
PROMPT_WRITTER_MEMBERS = (
    'cancel_noisy_channel', 'change_input_text_affixes', 'change_input_text_prefixes', 'change_instruction',
    'change_label_affix', 'change_label_prefix', 'change_label_space', 'change_query_prefix', 'example',
    'get_config_dict', 'get_label_space', 'replace_space_to_label', 'reset', 'set_config_dict',
    'set_label_wrong_rate', 'use_noisy_channel', 'write_prompt', 'write_prompt_from_dataline',
)
TRIPLET_DATASET_MEMBERS = (
    'change_input_text_affixes_triple', 'change_input_text_prefixes_triple', 'change_instruction_triple',
    'change_label_affix_triple', 'change_label_prefix_triple', 'change_label_space_triple',
    'change_query_prefix_triple', 'get_alternate_template', 'get_dataset_name',
    'get_default_ground_truth_label', 'get_default_ground_truth_label_index', 'get_label_space',
)
SENSITIVITY_EXPERIMENTOR_MEMBERS = (
    '__call__', '__len__', 'add_metric', 'auto_run', 'calibration_set', 'demonstration_set', 'get_k',
    'get_label_space', 'get_prompt_writter_from_dataline', 'get_repeat_times', 'inference_run', 'prompt_set',
    'reset_demonstration_sampler', 'set_demonstration_sampler', 'set_in_domain_mode', 'set_k',
    'set_out_of_domain_mode', 'test_set',
)
EXPERIMENTOR_MEMBERS = (
    '__call__', '__len__', 'add_metric', 'auto_run', 'calibration_set', 'demonstration_set', 'get_k',
    'get_label_space', 'get_prompt_writter_from_dataline', 'get_repeat_times', 'prompt_set',
    'reset_demonstration_sampler', 'set_demonstration_sampler', 'set_in_domain_mode', 'set_k',
    'set_out_of_domain_mode', 'test_set',
)
LOADER_MEMBERS = (
    '__getitem__', '__len__', 'change_input_text_affixes', 'change_input_text_prefixes', 'change_instruction',
    'change_label_affix', 'change_label_prefix', 'change_label_space', 'change_query_prefix', 'cut_by_index',
    'find_index_from_label', 'full_label_token', 'get_alternate_template', 'get_dataset', 'get_dataset_name',
    'get_input_element_numbers', 'get_input_text', 'get_input_text_affixes', 'get_input_text_prefixes',
    'get_instruction', 'get_label', 'get_label_affix', 'get_label_prefix', 'get_label_space',
    'get_query_prefix', 'get_total_length_of_one_data', 'label_index_to_text', 'reduct_label_token',
    'rename_dataset', 'split',
)
STABLE_RANDOM_MEMBERS = (
    'get_float', 'get_int_from_range', 'sample_index_set', 'sample_n_elements_from_list',
    'sample_one_element_from_list', 'shuffle_list',
)
SA_ICL_MEMBERS = (
    'inference_interface', 'set_TopK_to_demonstration',
)
CALIBRATION_MEMBERS = (
    '__call__', 'inference', 'train',
)

ORIGINAL_NAMES = {
    'StaICC': {
        'Contextual_bias': BENCHMARK_MEMBERS,
        'Demo_sens': BENCHMARK_MEMBERS,
        'Domain_bias': BENCHMARK_MEMBERS,
        'GLER': BENCHMARK_MEMBERS,
        'Normal': BENCHMARK_MEMBERS,
        'Post_bias': BENCHMARK_MEMBERS,
        'Template_sens': BENCHMARK_MEMBERS,
        'Triplet_bias': TRIPLET_BIAS_MEMBERS,
    },
    'StaICC.normal': {
        'Normal': BENCHMARK_MEMBERS,
        'ORIGINAL_DATA_LOADER_NORMAL': None,
    },
    'StaICC.diagnosis': {
        'Contextual_bias': BENCHMARK_MEMBERS,
        'Demo_sens': BENCHMARK_MEMBERS,
        'Domain_bias': BENCHMARK_MEMBERS,
        'GLER': BENCHMARK_MEMBERS,
        'Post_bias': BENCHMARK_MEMBERS,
        'Template_sens': BENCHMARK_MEMBERS,
        'Triplet_bias': TRIPLET_BIAS_MEMBERS,
    },
    'StaICC.util': {
    },
    'StaICC.util.configs': {
        'PPL_ICL_INSTRUCTION_SETTINGS': None,
        'STANDARD_SETTINGS': None,
        'STRICT_MODE': None,
        'WARNING_SETTINGS': None,
    },
    'StaICC.util.dataset_interface': {
        'demonstration_sampler': SAMPLER_MEMBERS,
        'prompt_writter': PROMPT_WRITTER_MEMBERS,
        'triplet_dataset': TRIPLET_DATASET_MEMBERS,
    },
    'StaICC.util.experimentor': {
        'GLER_experimentor': SENSITIVITY_EXPERIMENTOR_MEMBERS,
        'demonstration_sensitivity_experimentor': SENSITIVITY_EXPERIMENTOR_MEMBERS,
        'post_bias_experimentor': EXPERIMENTOR_MEMBERS,
        'prior_bias_experimentor': EXPERIMENTOR_MEMBERS,
        'sensitivity_experimentor': SENSITIVITY_EXPERIMENTOR_MEMBERS,
        'single_experimentor': EXPERIMENTOR_MEMBERS,
        'template_sensitivity_experimentor': SENSITIVITY_EXPERIMENTOR_MEMBERS,
    },
    'StaICC.util.functional': {
        'L2_dist': None,
        'accuracy': None,
        'argmax': None,
        'argmin': None,
        'averaged_truelabel_likelihood': None,
        'bias_mean_entropy_metric': None,
        'bias_mean_metric': None,
        'compress_logits_prediction_to_onehot': None,
        'consistency': None,
        'entropy': None,
        'exp_to_list': None,
        'expected_calibration_error_1': None,
        'extend_onehot_prediction_to_logits': None,
        'kl_divergence': None,
        'linear_regression': None,
        'linspace': None,
        'macro_F1': None,
        'post_bias_dis_metric': None,
        'post_bias_dl_metric': None,
        'probability_matrix_check': None,
        'probability_vector_check': None,
        'single_consistency': None,
        'softmax': None,
        'two_dimensional_list_mean': None,
        'unique_check': None,
    },
    'StaICC.util.hgf_dataset_loader': {
        'agnews': LOADER_MEMBERS,
        'basic_datasets_loader': LOADER_MEMBERS,
        'financial_phrasebank': LOADER_MEMBERS,
        'glue_sst2': LOADER_MEMBERS,
        'hate_speech_18': LOADER_MEMBERS,
        'rotten_tomatoes': LOADER_MEMBERS,
        'sst5': LOADER_MEMBERS,
        'subjective': LOADER_MEMBERS,
        'trec': LOADER_MEMBERS,
        'tweet_eval_emotion': LOADER_MEMBERS,
        'tweet_eval_hate': LOADER_MEMBERS,
        'un_reducted_agnews': LOADER_MEMBERS,
        'un_reducted_sst5': LOADER_MEMBERS,
        'un_reducted_trec': LOADER_MEMBERS,
        'un_reducted_tweet_eval_emotion': LOADER_MEMBERS,
    },
    'StaICC.util.stable_random': {
        'stable_random': STABLE_RANDOM_MEMBERS,
    },
    'StaICC.cached_dataset': {
    },
    'StaICC.prefabricate_inference': {
    },
    'StaICC.prefabricate_inference.model_kernel': {
        'batched_ICL_inference_with_torch_Causal_LM': None,
        'inference_standard_template': None,
        'noisy_channel_ICL_inference_with_torch_Causal_LM': None,
        'standard_ICL_inference_with_API_call': None,
        'standard_ICL_inference_with_torch_Causal_LM': None,
    },
    'StaICC.prefabricate_inference.prompt_template_edit': {
        'PPL_ICL': None,
        'SA_ICL': SA_ICL_MEMBERS,
    },
    'StaICC.prefabricate_inference.standard_calibration': {
        'batch_calibration': None,
        'calibration': CALIBRATION_MEMBERS,
        'contextual_calibration': CALIBRATION_MEMBERS,
        'domain_calibration': CALIBRATION_MEMBERS,
        'hidden_calibration': CALIBRATION_MEMBERS,
        'knn_prompt': CALIBRATION_MEMBERS,
        'knn_prompt_centroid': CALIBRATION_MEMBERS,
    },
}

_CALIBRATION = "StaICC.prefabricate_inference.standard_calibration"


def _module(name):
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        raise AssertionError(f"the original module {name} cannot be imported: {exc}") from exc


MODULE_NAMES = [(m, n) for m, names in ORIGINAL_NAMES.items() for n in names] + [(m, None) for m in ORIGINAL_NAMES]
CLASSES = [(m, n) for m, names in ORIGINAL_NAMES.items() for n, members in names.items() if members is not None]


@pytest.mark.parametrize("module_name, name", MODULE_NAMES, ids=[f"{m}.{n}" if n else m for m, n in MODULE_NAMES])
def test_original_name_exists(module_name, name):
    module = _module(module_name)
    if name is None:
        return
    assert hasattr(module, name), f"{module_name}.{name} is missing"


_instances = {}


def _members_of(module_name, name):
    """Where to look for members: the class, and for the dataset loaders (factories) one loaded dataset."""
    obj = getattr(_module(module_name), name)
    places = [obj]
    if module_name.endswith("hgf_dataset_loader") and name != "basic_datasets_loader":
        if name not in _instances:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                _instances[name] = obj()
        places.append(_instances[name])
    return places


@pytest.mark.parametrize("module_name, name", CLASSES, ids=[f"{m}.{n}" for m, n in CLASSES])
def test_original_class_members_exist(module_name, name):
    if module_name == _CALIBRATION:
        pytest.importorskip("numpy")
    places = _members_of(module_name, name)
    missing = [m for m in ORIGINAL_NAMES[module_name][name] if not any(hasattr(p, m) for p in places)]
    assert missing == [], f"{module_name}.{name} lacks {missing}"


# -- behaviour of the original helpers: values the original returned for these inputs -------------
from StaICC.util import functional as F  # noqa: E402

ORIGINAL_RESULTS = [
    ("L2_dist", ([0, 0], [3, 4]), 5.0),
    ("L2_dist", ([0.1, 0.2, 0.3], [0.3, 0.2, 0.1]), 0.282842712474619),
    ("L2_dist", ([], []), 0.0),
    ("compress_logits_prediction_to_onehot", ([[0.1, 0.9], [2, 1], [1, 1]],), [1, 0, 0]),
    ("exp_to_list", ([0, 1, 2],), [1.0, 2.718281828459045, 7.38905609893065]),
    ("exp_to_list", ((0.5,),), [1.6487212707001282]),
    ("extend_onehot_prediction_to_logits", ([0, 2, 1],), [[1, 0, 0], [0, 0, 1], [0, 1, 0]]),
    ("extend_onehot_prediction_to_logits", ([0, 0],), [[1], [1]]),
    ("kl_divergence", ([0.5, 0.5], [0.25, 0.75]), 0.14384103622589042),
    ("kl_divergence", ([0.1, 0.2, 0.7], [0.3, 0.3, 0.4]), 0.20077680106635193),
    ("kl_divergence", ([1, 3], [1, 1]), 3.295836866004329),
    ("kl_divergence", ([], []), 0),
    ("linspace", (0, 1, 5), [0.0, 0.25, 0.5, 0.75, 1.0]),
    ("linspace", (0, 1, 11), [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]),
    ("linspace", (0.1, 0.7, 7), [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7]),
    ("linspace", (0, 10, 4), [0.0, 3.3333333333333335, 6.666666666666667, 10.0]),
    ("linspace", (1, 0, 3), [1.0, 0.5, 0.0]),
    ("probability_vector_check", ([0.5, 0.5],), True),
    ("probability_vector_check", ([0.1, 0.2],), False),
    ("probability_vector_check", ([1.5, -0.5],), False),
    ("probability_vector_check", ([],), False),
    ("probability_matrix_check", ([[0.5, 0.5], [1, 0]],), True),
    ("probability_matrix_check", ([[0.5, 0.5], [1, 1]],), False),
    ("probability_matrix_check", ([],), True),
    ("single_consistency", ([1, 1, 2],), 0.6666666666666666),
    ("single_consistency", ([0, 1, 2, 3],), 0.25),
    ("single_consistency", (["a", "a"],), 1.0),
    ("two_dimensional_list_mean", ([[1, 2], [3, 4]],), [2.0, 3.0]),
    ("two_dimensional_list_mean", ([[1, 2], [3]],), [2.0, 1.0]),
    ("two_dimensional_list_mean", ([[0.1, 0.2], [0.2, 0.3], [0.3, 0.4]],), [0.20000000000000004, 0.3]),
    ("unique_check", ([1, 2, 3],), True),
    ("unique_check", ([1, 2, 1],), False),
    ("unique_check", ("abca",), False),
    ("bias_mean_metric", ([0, 1], [[0.2, 0.8], [0.4, 0.6]]), [0.30000000000000004, 0.7]),
    ("bias_mean_entropy_metric", ([0, 1], [[0.2, 0.8], [0.4, 0.6]]), 0.6108643020548935),
    ("bias_mean_entropy_metric", ([0, 1], [[2, 8], [4, 6]]), 0.09009476776617596),
    ("bias_mean_entropy_metric", (None, [[0.2, 0.8], [0.4, 0.6]]), 0.6108643020548935),
    ("post_bias_dis_metric", ([0, 1], [[0.2, 0.8], [0.4, 0.6]]), [-0.19999999999999996, 0.19999999999999996]),
    ("post_bias_dis_metric", ([0, 1, 1], [[0.2, 0.8], [0.4, 0.6]]), [-0.03333333333333327, 0.033333333333333326]),
    ("post_bias_dl_metric", ([0, 1], [[0.2, 0.8], [0.4, 0.6]]), 0.08228287850505184),
    ("entropy", ([0, 1],), -0.0),
    ("entropy", ([1, 2],), 0.5822031088882179),
    ("entropy", ([0.1, 0.2, 0.7],), 0.8018185525433373),
    ("softmax", ([1, 2, 3],), [0.09003057317038046, 0.24472847105479764, 0.6652409557748218]),
    ("softmax", ([1e308] * 3,), [1 / 3] * 3),
    ("argmax", ([1, 3, 3],), 1),
    ("argmin", ([1, 0, 0],), 1),
    ("linear_regression", ([1, 2, 3], [2, 4, 6]), (2.0, 0.0)),
]

ORIGINAL_ERRORS = [
    ("L2_dist", ([1, 2], [1]), ValueError, "The length of x and y should be the same"),
    ("kl_divergence", ([0.5], [0.5, 0.5]), ValueError, "The length of x and y should be the same"),
    ("kl_divergence", ([0, 1], [0.5, 0.5]), ValueError, "math domain error"),
    ("kl_divergence", ([0.5, 0.5], [0, 1]), ZeroDivisionError, ""),
    ("linspace", (0, 1, 1), ValueError, "num should be greater than 1"),
    ("linspace", (0, 1, 2.5), TypeError, ""),
    ("exp_to_list", ([1000],), OverflowError, ""),
    ("single_consistency", ([],), ValueError, ""),
    ("two_dimensional_list_mean", ([[1], [3, 4]],), IndexError, ""),
    ("two_dimensional_list_mean", ([],), IndexError, ""),
    ("unique_check", ([[1], [1]],), TypeError, "unhashable"),
    ("compress_logits_prediction_to_onehot", ([],), IndexError, ""),
    ("extend_onehot_prediction_to_logits", ([],), IndexError, ""),
    ("entropy", ([],), ValueError, ""),
    ("softmax", ([],), ValueError, ""),
]


@pytest.mark.parametrize("name, args, expected", ORIGINAL_RESULTS,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(ORIGINAL_RESULTS)])
def test_functional_helpers_give_the_original_results(name, args, expected):
    result = getattr(F, name)(*args)
    assert result == expected and type(result) is type(expected)
    if isinstance(expected, float) and expected == 0:
        assert math.copysign(1, result) == math.copysign(1, expected)


@pytest.mark.parametrize("name, args, error, text", ORIGINAL_ERRORS,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(ORIGINAL_ERRORS)])
def test_functional_helpers_raise_like_the_original(name, args, error, text):
    with pytest.raises(error, match=text or None):
        getattr(F, name)(*args)


def test_original_bias_metric_names_work_in_a_metrics_dict():
    from StaICC import Contextual_bias, Post_bias

    def model(prompt, label_space):
        return [0.25, 0.75] if len(prompt) % 2 else [0.5, 0.5]

    contextual = Contextual_bias(datasets=["rotten_tomatoes"],
                                 metrics={"entropy": F.bias_mean_entropy_metric, "distribution": F.bias_mean_metric})
    default = Contextual_bias(datasets=["rotten_tomatoes"])
    assert contextual(model)["Divided results"] == default(model)["Divided results"]
    post = Post_bias(datasets=["rotten_tomatoes"],
                     metrics={"DL div.": F.post_bias_dl_metric, "distribution": F.post_bias_dis_metric})
    assert post(model)["Divided results"] == Post_bias(datasets=["rotten_tomatoes"])(model)["Divided results"]


def test_configs_dictionaries():
    from StaICC.util import configs
    assert configs.STANDARD_SETTINGS["random_A"] == 1664525 and configs.STANDARD_SETTINGS["random_C"] == 2 ** 32
    assert configs.STANDARD_SETTINGS["split_for_FP"] == {"calibration_number": 1024, "demonstration_number": 512,
                                                         "test_number": 512}
    assert configs.STANDARD_SETTINGS["split_for_TEE"]["demonstration_number"] == 3192
    assert configs.STANDARD_SETTINGS["L9(3,4)_orthogonal_table"][3] == [1, 0, 1, 2]
    assert configs.STANDARD_SETTINGS["cut_by_length_remain_short"] == 1024
    assert configs.WARNING_SETTINGS["strict_mode_protect"] == (
        "The setting can't be changed in the strict mode. Return to default.")
    instructions = configs.PPL_ICL_INSTRUCTION_SETTINGS
    assert list(instructions)[:2] == ["GLUE-SST2", "rotten_tomatoes"] and len(instructions) == 10
    assert instructions["TREC"][0] == "What is the topic of the question? "
    assert all(len(v) == 5 for v in instructions.values())
    assert configs.STRICT_MODE is True


def test_stable_random_original_method_names():
    from StaICC.util.stable_random import stable_random
    r = stable_random()
    # the original's draws for these calls, in this order, from a fresh stream
    assert r.get_float() == 0.2523451747838408
    assert r.get_int_from_range(0, 10) == 0
    assert r.sample_one_element_from_list([5, 6, 7]) == 6
    assert r.sample_n_elements_from_list(list(range(10)), 3) == [2, 4, 0]
    assert r.sample_index_set(3, 10) == [4, 1, 8]
    assert r.sample_n_elements_from_list([1, 2], 3, True) == [2, 2, 1]
    assert r.sample_index_set(4, 3, True) == [1, 2, 1, 0]
    items = [1, 2, 3, 4]
    assert r.shuffle_list(items) == [1, 4, 3, 2] and items == [1, 2, 3, 4]
    with pytest.raises(ValueError, match="n should be less than the length of the list"):
        r.sample_n_elements_from_list([1, 2], 3)


def _model(prompt, label_space):
    return [len(prompt) % 7 + 0.5, len(prompt) % 5 + 0.25]


@pytest.mark.parametrize("bench_name, class_name, options", [
    ("GLER", "GLER_experimentor", {}),
    ("Template_sens", "template_sensitivity_experimentor", {}),
    ("Demo_sens", "demonstration_sensitivity_experimentor", {}),
    ("Contextual_bias", "prior_bias_experimentor", {}),
    ("Domain_bias", "prior_bias_experimentor", {"bias_type": "domain"}),
    ("Post_bias", "post_bias_experimentor", {}),
])
def test_original_experimentor_classes_equal_the_benchmarks(bench_name, class_name, options):
    import StaICC
    from StaICC.util import experimentor
    from StaICC.util.hgf_dataset_loader import rotten_tomatoes
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # default settings: no tampering warning
        expected = getattr(StaICC, bench_name)(datasets=["rotten_tomatoes"])(_model)["Divided results"]["rotten_tomatoes"]
        exp = getattr(experimentor, class_name)(original_dataset=rotten_tomatoes(), **options)
        assert exp.auto_run(_model) == (expected, True)


def test_gler_experimentor_inference_run_returns_the_pass_results():
    from StaICC.util.experimentor import GLER_experimentor
    from StaICC.util.hgf_dataset_loader import rotten_tomatoes
    passes = GLER_experimentor(original_dataset=rotten_tomatoes()).inference_run(_model)
    assert len(passes) == 5
    # the original's first pass for this model
    assert passes[0] == {"accuracy": 0.513671875, "averaged_truelabel_likelihood": 0.5140799470843046,
                         "macro_F1": 0.48232007406565214, "expected_calibration_error_1": 0.3198033950178252}
    summary = GLER_experimentor(original_dataset=rotten_tomatoes()).auto_run(_model)[0]
    assert [summary[str(i)] for i in range(5)] == passes


# -- the package imports lazily but every name stays reachable ---------------------------------------
def _fresh_python(code):
    import subprocess
    import sys
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_import_staicc_loads_only_the_package_and_the_standard_library():
    loaded = _fresh_python("import sys; before = set(sys.modules); import StaICC; "
                           "print(sorted(m for m in set(sys.modules) - before))")
    assert loaded == "['StaICC']"


def test_lazy_names_resolve_like_eager_imports():
    out = _fresh_python(
        "import StaICC\n"
        "names = StaICC.__all__\n"
        "assert set(names) <= set(dir(StaICC)), set(names) - set(dir(StaICC))\n"
        "ns = {}\n"
        "exec('from StaICC import *', ns)\n"
        "assert all(n in ns for n in names if n != '__version__')\n"
        "from StaICC.benchmark import Normal\n"
        "assert StaICC.Normal is Normal\n"
        "assert StaICC.util.functional.bias_mean_metric is StaICC.util.functional.bias_distribution\n"
        "assert StaICC.normal.Normal is Normal and StaICC.diagnosis.GLER is StaICC.GLER\n"
        "assert {'util', 'normal', 'diagnosis'} <= set(dir(StaICC))\n"
        "assert {'functional', 'configs', 'stable_random'} <= set(dir(StaICC.util))\n"
        "try:\n"
        "    StaICC.no_such_name\n"
        "except AttributeError as exc:\n"
        "    print(exc)\n")
    assert out == "module 'StaICC' has no attribute 'no_such_name'"
