"""The one Newton solver of the calibrations' convex fits (the affine ones of :mod:`.labelled`, :mod:`.anchors`).

Each of those fits minimises a smooth convex objective of a parameter vector θ (a multinomial
log-likelihood whose logits are linear in θ, plus an L2 pull).  :func:`newton_minimize` takes
the objective and its derivatives as functions and owns the loop: a Newton step, Armijo
backtracking (halve the step until the objective falls by at least 1e-4 of what the gradient
promises), and the stopping rules.  It is deterministic (a fixed start, at most ``steps``
steps), so two routes that give a fit the same numbers get the same parameters to the last bit.
"""
from typing import Any, Callable, Tuple

from ...extras import require

NEWTON_STEPS = 100
#: Armijo's constant: the accepted step lowers the objective by at least this share of gradient · step
SUFFICIENT_DECREASE = 1e-4
#: a step halved below this rate is given up: no step lowers the objective, the minimum to float precision
SMALLEST_RATE = 1e-8
#: the fit has converged when a step moves no parameter by more than this
TOLERANCE = 1e-10
#: a Newton decrement g·H⁻¹g below this ends the fit with the full step, untested: the objective would fall by
#: half of it, a change its floating-point value can hardly show (Armijo's test then fails by rounding alone and
#: halves the rate down to :data:`SMALLEST_RATE`, some 27 evaluations for nothing); this close to the minimum of
#: these smooth convex objectives Newton's convergence is quadratic, so what is left after the step is of the
#: order of its square, and the next step would be below :data:`TOLERANCE`
NEWTON_REGIME = 1e-12

#: ``evaluate(θ) -> (value, kept)``: the objective at θ and what the derivatives at θ reuse (its logits)
Evaluate = Callable[[Any], Tuple[float, Any]]
#: ``derivatives(θ, kept) -> (gradient, hessian)`` at θ, ``kept`` being what ``evaluate(θ)`` returned beside the value
Derivatives = Callable[[Any, Any], Tuple[Any, Any]]


def newton_minimize(evaluate: Evaluate, derivatives: Derivatives, start: Any, steps: int = NEWTON_STEPS) -> Any:
    """argmin_θ of a convex objective, by damped Newton steps from ``start`` with Armijo backtracking.

    Each step solves H s = g and tries θ − r·s for r = 1, ½, ¼ … until the objective falls by at least
    :data:`SUFFICIENT_DECREASE` · r · g·s; the last accepted trial's ``kept`` is handed to the next
    step's ``derivatives``, so nothing is computed twice.  Stops after ``steps`` steps, when g·s is
    below :data:`NEWTON_REGIME` (that full step taken, untested), when no rate above
    :data:`SMALLEST_RATE` lowers the objective, or when a step moves no parameter by more than
    :data:`TOLERANCE`.
    """
    np = require("numpy", "StaICC calibrations")
    theta = start
    current, kept = evaluate(theta)
    for _ in range(steps):
        gradient, hessian = derivatives(theta, kept)
        step = np.linalg.solve(hessian, gradient)
        decrease = float(gradient @ step)
        if decrease < NEWTON_REGIME:
            return theta - step  # the last step: what is left after it is of the order of its square
        rate = 1.0
        while rate > SMALLEST_RATE:
            trial = theta - rate * step
            value, trial_kept = evaluate(trial)
            if value <= current - SUFFICIENT_DECREASE * rate * decrease:
                break
            rate /= 2
        else:
            break  # no step lowers the objective: the minimum to float precision
        theta, current, kept = trial, value, trial_kept
        if float(np.abs(rate * step).max()) < TOLERANCE:
            break
    return theta
