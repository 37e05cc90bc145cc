"""The grammar of prompt formats Format_spread samples from (after FormatSpread, Sclar et al. 2023).

A format is five independent choices, each an index into a tuple below:

- **field names** of the input and label fields: the dataset's own ("review" /
  "sentiment"), "Input" / "Label", "Text" / "Answer", "Sentence" / "Category";
- **casing** of the field names: as written, lower, UPPER, Title;
- **separator** between a field name and its content: ": ", ":: ", " - ", ":\\n";
- **spacing** between fields / between demonstrations: (" ", "\\n"), ("\\n", "\\n"),
  ("\\n", "\\n\\n"), (" ", " | ");
- **label wrapping** of every label word: none, [label], (label), "label".

All 4^5 = 1024 formats say the same thing; FormatSpread shows accuracy moving by tens
of points between such formats.  A dataset with several input fields numbers the
generic names ("Input 1", "Input 2").  The dataset's own template is format ``None``.
"""
import itertools
import random
from typing import Any, Dict, List, Optional, Tuple

from ..errors import InvalidValueError

FIELD_NAMES: Tuple[Optional[Tuple[str, str]], ...] = (None, ("Input", "Label"), ("Text", "Answer"),
                                                      ("Sentence", "Category"))
CASINGS: Tuple[str, ...] = ("as-is", "lower", "upper", "title")
SEPARATORS: Tuple[str, ...] = (": ", ":: ", " - ", ":\n")
SPACINGS: Tuple[Tuple[str, str], ...] = ((" ", "\n"), ("\n", "\n"), ("\n", "\n\n"), (" ", " | "))
WRAPPINGS: Tuple[Tuple[str, str], ...] = (("", ""), ("[", "]"), ("(", ")"), ('"', '"'))
GRAMMAR = (FIELD_NAMES, CASINGS, SEPARATORS, SPACINGS, WRAPPINGS)
#: the number of formats of the grammar, the one spelled like the standard's templates excluded
FORMAT_GRAMMAR_SIZE = len(FIELD_NAMES) * len(CASINGS) * len(SEPARATORS) * len(SPACINGS) * len(WRAPPINGS) - 1
#: the grammar's spelling of the standard templates (own names, as written, ": ", (" ", "\n"), unwrapped)
STANDARD_LIKE = (0, 0, 0, 0, 0)

Format = Tuple[int, int, int, int, int]


def sample_formats(count: int, seed: int) -> List[Format]:
    """``count`` distinct formats drawn by ``random.Random(seed)`` from the grammar, the standard-like one excluded."""
    every = [f for f in itertools.product(*(range(len(choices)) for choices in GRAMMAR)) if f != STANDARD_LIKE]
    if not 0 <= count <= len(every):
        raise InvalidValueError(f"the format grammar has {len(every)} formats besides the standard one, asked for {count}")
    return random.Random(seed).sample(every, count)


def describe_format(fmt: Optional[Format]) -> str:
    """A short readable name, e.g. ``Input/Label, upper, ' - ', '\\n'/'\\n\\n', [label]``."""
    if fmt is None:
        return "dataset template"
    names, casing, separator, spacing, wrapping = fmt
    field = "own names" if FIELD_NAMES[names] is None else "/".join(FIELD_NAMES[names])
    inner, outer = SPACINGS[spacing]
    left, right = WRAPPINGS[wrapping]
    return f"{field}, {CASINGS[casing]}, {SEPARATORS[separator]!r}, {inner!r}/{outer!r}, {left}label{right}"


def _field_name(prefix: str) -> str:
    """The name in a dataset prefix such as "review: " ("review")."""
    return prefix.strip().rstrip(":").strip()


def _cased(name: str, casing: str) -> str:
    if casing == "lower":
        return name.lower()
    if casing == "upper":
        return name.upper()
    if casing == "title":
        return name.title()
    return name


def format_template(dataset: Any, fmt: Optional[Format]) -> Dict[str, Any]:
    """Template fields (for the prompt writer's ``apply_template``) writing ``dataset`` in format ``fmt``.

    ``None`` is the dataset's own template (no field changed).  The instruction and the
    query prefix stay the dataset's.
    """
    if fmt is None:
        return {}
    names, casing, separator, spacing, wrapping = fmt
    own = dataset.default_template()
    inputs = len(own["input_text_prefixes"])
    if FIELD_NAMES[names] is None:
        input_names = [_field_name(p) for p in own["input_text_prefixes"]]
        label_name = _field_name(own["label_prefix"])
    else:
        generic, label_name = FIELD_NAMES[names]
        input_names = [generic] if inputs == 1 else [f"{generic} {i + 1}" for i in range(inputs)]
    sep = SEPARATORS[separator]
    inner, outer = SPACINGS[spacing]
    left, right = WRAPPINGS[wrapping]

    def prefix(name: str) -> str:
        return _cased(name, CASINGS[casing]) + sep if name else ""

    return {"input_text_prefixes": [prefix(n) for n in input_names], "input_text_affixes": [inner] * inputs,
            "label_prefix": prefix(label_name), "label_affix": outer,
            "label_space": [f"{left}{word}{right}" for word in dataset.label_space]}
