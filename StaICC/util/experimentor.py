"""Original path of the experimentor (one class here, parameterised by its procedure)."""
from ..experiment import (LabelNoiseProcedure, Procedure, SensitivityProcedure, TemplateProcedure,  # noqa: F401
                          single_experimentor)
