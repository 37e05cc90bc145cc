"""The tiny preset of ``benchmarks/make_random_model.py``: the size its help states, and a chat template with which
every chat option of the hf backend runs."""
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from conftest import load_script  # noqa: E402
from run_fixtures import run_cli  # noqa: E402


def make_random_model():
    return load_script("benchmarks/make_random_model.py")


@pytest.fixture(scope="module")
def preset(tmp_path_factory):
    script = make_random_model()
    out = str(tmp_path_factory.mktemp("tiny-preset"))
    return script, out, script.make_model("tiny", out, script.demonstration_texts())


def test_the_tiny_preset_weighs_what_its_help_says(preset):
    script, _, parameters = preset
    assert f"{parameters / 1e6:.1f} M" == script.SIZES["tiny"] == "0.3 M"


@pytest.mark.parametrize("arguments, departure", [
    ("chat=true", "chat template (chat=true) in scoring=last_token"),
    ("apply_chat_template=true,system_instruction=Answer in one word.", "chat template (chat=true)"),
    ("chat=true,fewshot_as_multiturn=true", "demonstrations as chat turns (fewshot_as_multiturn=true)"),
    ("chat=true,scoring=generate,max_new_tokens=2", "generative answers (scoring=generate)"),
])
def test_every_chat_option_runs_on_the_tiny_preset(preset, capsys, arguments, departure):
    _, out, _ = preset
    printed = run_cli(["run", "--model", "hf", "--model-args", f"pretrained={out},{arguments}", "--benchmarks",
                       "Normal", "--datasets", "SST5", "--limit", "10"], capsys)
    assert departure in printed and "Averaged" in printed
