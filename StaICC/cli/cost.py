"""``staicc run --dry-run``'s cost estimate: tokens, tokens after prefix sharing, the FLOP bound's time, money.

A dry run counts prompts through the runner without asking anything.  With the ``hf``
backend it also counts the tokens with the model's tokenizer (loaded from the model
folder; the weights are not), as the engine would compute them
(:mod:`StaICC.backends.token_counts`).  ``--price-per-mtok`` gives money (and, for a backend
without a tokenizer here, counts tokens as characters / 4); ``--device-flops`` or
``--device-peak`` gives the FLOP bound's time: (2 · non-embedding parameters · tokens + 2 ·
hidden · vocabulary · read positions) / peak, the parameters read from the model's
config.json.  Every option is checked before anything is planned; the counter itself is the
run's (:func:`StaICC.runs.observer.counting_of`), and this module says what it counted.
"""
import argparse
from typing import Any, Dict, List, Optional, Tuple

from ..runs.config import CostOptions
from .common import ArgumentError

#: dense BF16 tensor-core peaks stated by the vendors (FLOP/s, no sparsity); a run reaches a share of it
DEVICE_PEAKS: Dict[str, Tuple[float, str]] = {
    "a100": (312e12, "NVIDIA A100, dense bf16"),
    "h100": (989e12, "NVIDIA H100 SXM, dense bf16"),
    "h100-pcie": (756e12, "NVIDIA H100 PCIe, dense bf16"),
    "h200": (989e12, "NVIDIA H200, dense bf16"),
    "l4": (121e12, "NVIDIA L4, dense bf16"),
    "l40s": (362e12, "NVIDIA L40S, dense bf16"),
    "mi300x": (1307e12, "AMD MI300X, dense bf16"),
}


def add_cost_arguments(p: Any) -> None:
    p.add_argument("--device-flops", metavar="FLOP/S", help="with --dry-run: the FLOP bound's time on a device of "
                   "this peak, e.g. 400e12 (the hf backend; parameters from the model's config.json)")
    p.add_argument("--device-peak", metavar="NAME", help="with --dry-run: the same for a named device's stated dense "
                   f"bf16 peak: {', '.join(DEVICE_PEAKS)}")
    p.add_argument("--price-per-mtok", metavar="IN[,OUT]", help="with --dry-run: the money, in dollars per million "
                   "input tokens (and output tokens, default the input price), e.g. 0.15,0.60; without a tokenizer "
                   "tokens are counted as characters / 4")


def cost_options(args: argparse.Namespace) -> Optional[CostOptions]:
    """The estimate's options, checked (None: none given); each needs --dry-run."""
    flops, named, price = (getattr(args, name, None) for name in ("device_flops", "device_peak", "price_per_mtok"))
    given = [flag for flag, value in (("--device-flops", flops), ("--device-peak", named),
                                      ("--price-per-mtok", price)) if value is not None]
    if not given:
        return None
    if not getattr(args, "dry_run", False):
        raise ArgumentError(f"{given[0]} estimates what a run would cost; it needs --dry-run")
    if flops is not None and named is not None:
        raise ArgumentError("--device-flops and --device-peak both give the device's peak; give one")
    peak, peak_name = None, ""
    if flops is not None:
        peak = _positive(flops, "--device-flops", "a number of FLOP/s, e.g. 400e12")
        peak_name = f"{peak / 1e12:g} TFLOP/s"
    elif named is not None:
        if named.lower() not in DEVICE_PEAKS:
            from ..validation import did_you_mean
            raise ArgumentError(f"--device-peak: unknown device {named!r}{did_you_mean(named.lower(), list(DEVICE_PEAKS))}"
                                f" (choose from {', '.join(DEVICE_PEAKS)}, or give --device-flops)")
        peak, what = DEVICE_PEAKS[named.lower()]
        peak_name = f"{what}, {peak / 1e12:g} TFLOP/s"
    prices: List[Optional[float]] = [None, None]
    if price is not None:
        parts = price.split(",")
        if len(parts) > 2:
            raise ArgumentError(f"--price-per-mtok is IN or IN,OUT (dollars per million tokens), got {price!r}")
        prices = [_positive(part, "--price-per-mtok", "dollars per million tokens, e.g. 0.15,0.60", zero=True)
                  for part in parts]
        if len(prices) == 1:
            prices.append(prices[0])
    return CostOptions(peak, peak_name, prices[0], prices[1])


def _positive(text: str, flag: str, expected: str, zero: bool = False) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ArgumentError(f"{flag} must be {expected}; got {text!r}") from None
    if not (value >= 0 if zero else value > 0) or value != value or value == float("inf"):
        raise ArgumentError(f"{flag} must be {expected}; got {text!r}")
    return value


def check_cost_backend(model: str, options: Optional[CostOptions]) -> None:
    """The FLOP bound needs the model's shape: only the hf backend reads it (from config.json)."""
    from ..backends.registry import backends_with, capabilities
    if options is not None and options.peak is not None and not capabilities(model).token_counting:
        able = " or ".join(f"--model {name}" for name in backends_with("token_counting"))
        raise ArgumentError(f"--device-flops / --device-peak: the FLOP bound needs the model's parameters, which the "
                            f"{model} backend does not give; use it with {able}")


def cost_lines(count: Any, shape: Any, options: Optional[CostOptions]) -> List[str]:
    """What the estimate says, one line each."""
    lines = [f"tokens ({count.method}): {count.tokens:,} given"
             + (f", {count.shared:,} after prefix sharing" if count.shared is not None else
                ", after prefix sharing: needs the model's tokenizer")
             + f"; {count.reads:,} read positions; {count.calls:,} backend calls"]
    if count.generates:
        lines.append(f"generation: at most {count.output_tokens:,} new tokens (the generation limit per prompt, an "
                     "upper bound)")
    if options is not None and options.peak is not None and shape is not None:
        tokens = (count.shared if count.shared is not None else count.tokens) + count.output_tokens
        seconds = shape.flops(tokens, count.reads) / options.peak
        lines.append(f"FLOP bound on {options.peak_name}: {duration(seconds)} (2 x {shape.nonembedding:,} non-embedding "
                     f"parameters x {tokens:,} tokens + 2 x {shape.hidden} x {shape.vocab:,} vocabulary x "
                     f"{count.reads:,} read positions; a run takes longer)")
    if options is not None and options.price_input is not None:
        money_in = count.tokens * options.price_input / 1e6
        money_out = count.output_tokens * options.price_output / 1e6  # type: ignore[operator]
        bound = " at most" if count.generates else ""
        lines.append(f"money: ${money_in + money_out:,.2f}{bound} (${money_in:,.2f} for {count.tokens:,} input tokens "
                     f"at ${options.price_input:g}/M, ${money_out:,.2f} for{bound} {count.output_tokens:,} output "
                     f"tokens at ${options.price_output:g}/M{'' if count.exact else '; tokens approximated'})")
    return lines


def duration(seconds: float) -> str:
    """Seconds as people read them: 2 significant digits below a second, minutes and hours beside long ones."""
    if seconds < 1:
        return f"{seconds:.2g} s"
    text = f"{seconds:,.0f} s" if seconds >= 100 else f"{seconds:.1f} s"
    if seconds >= 3600:
        return f"{text} ({seconds / 3600:.1f} h)"
    return f"{text} ({seconds / 60:.1f} min)" if seconds >= 120 else text


def usage_line(usage: Dict[str, Any]) -> str:
    """What a run's model computed, in the dry run's words, so that the two can be set side by side."""
    line = f"tokens computed: {usage['tokens']:,} given, {usage['tokens_after_sharing']:,} after prefix sharing"
    if "reads" in usage:
        line += f"; {usage['reads']:,} read positions"
    if "forward_calls" in usage:
        line += f"; {usage['forward_calls']:,} forward passes"
    return line + " (staicc run --dry-run estimates these before a run)"
