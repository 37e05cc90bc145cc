"""Original path of the metric functions (see :mod:`StaICC.metrics`)."""
from ..metrics import *  # noqa: F401,F403
from ..metrics import (accuracy, argmax, argmin, averaged_truelabel_likelihood, bias_distribution,  # noqa: F401
                       bias_entropy, consistency, entropy, expected_calibration_error_1, is_probability_matrix,
                       is_probability_vector, linear_regression, macro_F1, post_bias_distribution,
                       post_bias_dl_div, softmax)
