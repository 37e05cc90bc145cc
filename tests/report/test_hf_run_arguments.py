"""hf model arguments a new user trips on: device=cuda without CUDA, a folder that is not a model, threads=."""
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from backend_helpers import save_tiny  # noqa: E402
from StaICC.cli import main  # noqa: E402


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return save_tiny(str(tmp_path_factory.mktemp("tiny")))


@pytest.mark.skipif(torch.cuda.is_available(), reason="a CUDA device is present")
def test_cuda_without_cuda_is_one_line(model_dir, capsys):
    assert main(["run", "--model", "hf", "--model-args", f"pretrained={model_dir},device=cuda", "--datasets", "0"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "device=cuda" in err and "sees no CUDA device" in err


def test_a_folder_that_is_not_a_model_is_one_line(tmp_path, capsys):
    assert main(["run", "--model", "hf", "--model-args", f"pretrained={tmp_path}", "--datasets", "0"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "has no config.json" in err


def test_threads_sets_torch_threads(model_dir, capsys):
    before = torch.get_num_threads()
    try:
        assert main(["run", "--model", "hf", "--model-args", f"pretrained={model_dir},threads=1", "--datasets", "0",
                     "--limit", "10", "--no-progress"]) == 0
        assert torch.get_num_threads() == 1
        assert main(["run", "--model", "hf", "--model-args", f"pretrained={model_dir},threads=0",
                     "--datasets", "0"]) == 2
    finally:
        torch.set_num_threads(before)
