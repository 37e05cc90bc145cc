"""Every refusal of the package is a StaICCError that also is the built-in callers catch.

tools/refusals_codemod.py rewrites ``raise ValueError(...)`` into ``raise InvalidValueError(...)`` (and so on
for each built-in in ``StaICC.errors.STAND_INS``); its ``--check`` lists every built-in raise left outside its
short allow-list.  A new ``raise ValueError`` in the package fails here: raise the stand-in instead (or run
``python tools/refusals_codemod.py``), or add the exception to ``ALLOWED`` with its reason.
"""
import shutil

import pytest
from conftest import REPO_ROOT, load_script

from StaICC.errors import STAND_INS, InvalidValueError, StaICCError, error_name


@pytest.fixture(scope="module")
def codemod():
    return load_script("tools/refusals_codemod.py")


def _package(tmp_path, files):
    """A throwaway repository root: the real StaICC/errors.py and the given modules."""
    (tmp_path / "StaICC" / "pkg").mkdir(parents=True)
    shutil.copy(REPO_ROOT / "StaICC" / "errors.py", tmp_path / "StaICC" / "errors.py")
    for name, text in files.items():
        (tmp_path / "StaICC" / name).write_text(text, encoding="utf-8")
    return tmp_path


def test_the_package_raises_no_builtin_outside_the_allow_list(codemod):
    left = codemod.check(REPO_ROOT)
    assert not left, "built-in raises in the package; raise the StaICC.errors stand-in (run python " \
                     "tools/refusals_codemod.py) or add the reason to ALLOWED:\n" + \
                     "\n".join(f"{r.path}:{r.line}: raise {r.builtin}" for r in left)


def test_every_allowed_exception_is_still_needed(codemod):
    raises = [r for file in codemod.package_files(REPO_ROOT)
              for r in codemod.builtin_raises(codemod._relative(file, REPO_ROOT),
                                              codemod.ast.parse(file.read_text(encoding="utf-8")))]
    used = {r.allowed_by() for r in raises} | {rule for rule in codemod.ALLOWED if rule.paths == codemod.BELOW_ERRORS}
    assert set(codemod.ALLOWED) - used == set(), "an ALLOWED entry matches no raise: remove it"


def test_each_stand_in_is_a_staicc_error_and_its_builtin():
    for builtin, stand_in in STAND_INS.items():
        error = stand_in("x")
        assert isinstance(error, builtin) and isinstance(error, StaICCError)
        assert str(error) == str(builtin("x")) and error_name(error) == builtin.__name__
    assert error_name(StaICCError("x")) == "StaICCError" and error_name(KeyError("x")) == "KeyError"


def test_the_check_fails_on_an_added_builtin_raise_and_the_rewrite_fixes_it(codemod, tmp_path, capsys):
    root = _package(tmp_path, {"pkg/mod.py": 'def f(x):\n    raise ValueError(f"x is {x}")\n'})
    assert codemod.main(["--check", "--root", str(root)]) == 1
    assert "StaICC/pkg/mod.py:2: raise ValueError (use InvalidValueError" in capsys.readouterr().out
    assert codemod.main(["--root", str(root)]) == 0
    assert (root / "StaICC" / "pkg" / "mod.py").read_text() == \
        'from ..errors import InvalidValueError\n\ndef f(x):\n    raise InvalidValueError(f"x is {x}")\n'
    assert codemod.main(["--check", "--root", str(root)]) == 0


def test_the_rewrite_changes_only_class_names_and_is_idempotent(codemod, tmp_path):
    source = ('"""Doc."""\nimport os\n\nfrom ..errors import warn\nfrom .other import Mine\n\n\n'
              'def f(x):\n    try:\n        os.stat(x)\n    except OSError as exc:\n'
              '        raise TypeError(f"é {type(exc).__name__}: {x!r}") from None\n'
              '    except KeyError:\n        raise\n'
              '    if type(x).__name__ == "int":\n        raise Mine("kept")\n'
              '    raise KeyError("ValueError stays in the message")\n')
    root = _package(tmp_path, {"pkg/mod.py": source})
    codemod.apply(root)
    once = (root / "StaICC" / "pkg" / "mod.py").read_text()
    assert once == source.replace(
        "from ..errors import warn", "from ..errors import InvalidTypeError, UnknownNameError, error_name, warn").replace(
        "raise TypeError(f\"é {type(exc).__name__}", "raise InvalidTypeError(f\"é {error_name(exc)}").replace(
        'raise KeyError("ValueError', 'raise UnknownNameError("ValueError')
    codemod.apply(root)
    assert (root / "StaICC" / "pkg" / "mod.py").read_text() == once


def test_continuation_lines_aligned_with_the_message_move_with_the_name(codemod, tmp_path):
    source = ('"""Doc."""\nfrom ..errors import warn\n\n\ndef f(x):\n'
              '    raise ValueError(f"x is {x}; "\n'
              '                     "give another")\n'
              '    raise TypeError("""two\n'
              '                    lines""")\n')
    root = _package(tmp_path, {"pkg/mod.py": source})
    codemod.apply(root)
    assert (root / "StaICC" / "pkg" / "mod.py").read_text() == source.replace(
        "from ..errors import warn", "from ..errors import InvalidTypeError, InvalidValueError, warn").replace(
        'raise ValueError(f"x is {x}; "\n                     ', 'raise InvalidValueError(f"x is {x}; "\n' + " " * 28).replace(
        'raise TypeError("""two', 'raise InvalidTypeError("""two')


def test_the_original_api_keeps_its_builtin_types(codemod, tmp_path):
    source = 'def f():\n    raise ValueError("Invalid number of demonstrations.")\n'
    (tmp_path / "StaICC" / "legacy").mkdir(parents=True)
    root = _package(tmp_path, {"legacy/mod.py": source})
    codemod.apply(root)
    assert (root / "StaICC" / "legacy" / "mod.py").read_text() == source and codemod.check(root) == []


def test_callers_that_catch_the_builtin_still_catch_a_refusal():
    from StaICC.validation import check_int
    with pytest.raises(ValueError, match="k must be >= 0") as info:
        check_int(-1, "k", minimum=0)
    assert isinstance(info.value, InvalidValueError)
