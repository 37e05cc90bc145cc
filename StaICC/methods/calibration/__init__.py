"""Standard calibrations for in-context learning.

Each calibration is trained on an experimentor's calibration set with a
feedforward (an inference function) and then used as the
``calibration_function`` of an inference: ``calibration.inference(label_probs,
full_vocab, hidden)`` returns the calibrated probabilities.

Typical use with the fast scorer::

    exp = bench[i]
    calibration = contextual_calibration(exp.get_label_space())
    calibration.train(exp.prompt_former.write_prompt_from_dataline, scorer, exp.calibration_set(), k=exp.get_k())
    exp.auto_run(forward_inference=scorer.calibrated(calibration.inference), batched_inference=True)

Behaviour follows the standard, with these fixes to the original StaICC:

* ``train`` always restarts: a second call gives exactly what a first
  call on a fresh object gives, instead of accumulating onto the old state.
* kNN distances over the full vocabulary run in NumPy; the sums are
  still sequential in the vectors' element type, so the numbers are unchanged.
* Inputs are validated: a feedforward returning the wrong number of
  probabilities fails with the calibration query's index.

Vectors keep their element type: the prefab kernels return float32 NumPy
arrays, so hidden-state and kNN arithmetic is float32 as in the original;
Python-float vectors are computed in double.
"""
from .base import (DEFAULT_BATCH_SIZE, DEFAULT_CALIBRATION_NUMBER, DEFAULT_DOMAIN_SAMPLE_LENGTH, INITIAL_CONTEXT_MASS,
                   MISSING_CATEGORY_WARNING, batch_calibration, calibration, contextual_calibration, domain_calibration)
from .base import ContextualCalibration, DomainCalibration  # noqa: F401  (by name, not by *)
from .representations import hidden_calibration, knn_prompt, knn_prompt_centroid, knn_prompting
from .bcl import batch_calibration_learnt
from .generative import generative_calibration
from .linc import linc_calibration
from .platt import platt_scaling
from .prior_adaptation import prior_adaptation
from .prototypical import prototypical_calibration
from .supervised import supervised_calibration
from .temperature import temperature_scaling
from .representations import HiddenCalibration, KNNPromptCentroid, KNNPrompting  # noqa: F401  (by name, not by *)

__all__ = ["calibration", "knn_prompt", "contextual_calibration", "domain_calibration", "batch_calibration",
           "hidden_calibration", "knn_prompting", "knn_prompt_centroid", "INITIAL_CONTEXT_MASS",
           "batch_calibration_learnt", "generative_calibration", "linc_calibration", "platt_scaling",
           "prior_adaptation", "prototypical_calibration", "supervised_calibration", "temperature_scaling",
           "DEFAULT_CALIBRATION_NUMBER", "DEFAULT_DOMAIN_SAMPLE_LENGTH", "DEFAULT_BATCH_SIZE", "MISSING_CATEGORY_WARNING"]
