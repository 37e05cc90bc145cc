"""The reproductions of the audit of method files, exports and their read-back, redaction, YAML and links:
rows that ``security_reproductions.py`` adds to its table (``register``), so that one script replays every
audit.  Each row ends in one line (or a correct result) within its bound."""
import hashlib
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CANARY = "sk-canary-9a8b7c6d5e4f"
_RUN = {}


def register(scenario, cli, one_line):
    """Add this audit's rows to the table of ``security_reproductions.py``."""
    def row(name, bound):
        return scenario(name, bound)

    def line(code, _out, err):
        return one_line(code, err)

    def a_run(directory):
        """A logged run of the built-in model, made once and copied for each row that edits one."""
        if "path" not in _RUN or not os.path.isdir(_RUN["path"]):
            _RUN["path"] = str(Path(directory).parent / "staicc-repro-shared-run")
            shutil.rmtree(_RUN["path"], ignore_errors=True)
            cli("run", "--datasets", "0", "--limit", "8", "--no-progress", "--log-samples", "--output-dir", _RUN["path"])
        target = Path(directory) / "run"
        shutil.copytree(_RUN["path"], target)
        return target

    @row("redact_text on 1 MB of ('!=' + 'b' * 98), 'key=a&', 'k=http://h/v?api_key=...&'", "< 0.2 s each (was 27 s)")
    def _redact():
        from StaICC.backends.secrets import redact_text
        times = []
        for unit in ("!=" + "b" * 98, "key=a&", "k=http://h/v?api_key=0123456789&"):
            text = (unit * ((1 << 20) // len(unit) + 1))[:1 << 20]
            started = time.process_time()
            redact_text(text)
            times.append(time.process_time() - started)
        return "CPU seconds: " + ", ".join(f"{t:.3f}" for t in times)

    @row("a 487-byte YAML alias bomb (8 levels), tasks validate", "one line at its key, < 2 s (was killed at 300 s)")
    def _bomb(directory):
        text, previous = 'a: &a ["x","x","x","x","x","x","x","x","x"]\n', "a"
        for name in "bcdefghi":
            text += f"{name}: &{name} [" + ",".join(["*" + previous] * 9) + "]\n"
            previous = name
        path = Path(directory) / "bomb.yaml"
        path.write_text(text + "name: bomb\n")
        return f"{len(text)} bytes: " + line(*cli("tasks", "validate", str(path), timeout=300))

    @row("task files: a key twice (JSON, YAML); sys.exit(3) in a Python asset", "one line each (were accepted; exit 3)")
    def _task_files(directory):
        outcomes = []
        for name, text in (("twice.json", '{"name": "a", "name": "b"}'), ("twice.yaml", "name: a\nname: b\n"),
                           ("exits.py", "import sys\nsys.exit(3)\n")):
            (Path(directory) / name).write_text(text)
            outcomes.append(line(*cli("tasks", "validate", str(Path(directory) / name))))
        return " | ".join(outcomes)

    def method_run(directory, body, *extra):
        path = Path(directory) / "mine.py"
        path.write_text(body)
        return cli("run", "--methods", f"vanilla,{path}", "--datasets", "0", "--limit", "8", "--no-progress",
                   "--output-dir", str(Path(directory) / "out"), *extra)

    body = "def train(d, a):\n    pass\ndef apply(s, a):\n    return a['labels']\n"

    @row("method file NAME='..'", "one line, exit 2 (was: vanilla's results.json overwritten, exit 0)")
    def _dots(directory):
        return line(*method_run(directory, "NAME = '..'\n" + body))

    @row("method file: SystemExit(0) at import; in train()", "one line each, non-zero (was exit 0, no output)")
    def _exits(directory):
        first = line(*method_run(directory, "raise SystemExit(0)\n" + body))
        second = line(*method_run(directory, "def train(d, a):\n    raise SystemExit(0)\n"
                                             "def apply(s, a):\n    return a['labels']\n"))
        return f"{first} | {second}"

    @row("method file PARAMETERS: not JSON; a key, a URL password, ?token=", "one line; secrets in no file")
    def _parameters(directory):
        first = line(*method_run(directory, "PARAMETERS = {'f': object()}\n" + body))
        code, out, err = method_run(directory, f"PARAMETERS = {{'api_key': {CANARY!r}, 'url': "
                                               f"'http://u:{CANARY}@h/v1?token={CANARY}'}}\n" + body)
        leaks = [p.name for p in Path(directory).rglob("*.json") if CANARY.encode() in p.read_bytes()]
        return f"{first} | exit {code}; files holding a secret: {leaks or 'none'}"

    @row("--method-args calibration_number=10000000000", "one line before any prompt (was 2.9 GB, MemoryError)")
    def _calibration(directory):
        return line(*cli("run", "--methods", "contextual", "--method-args", "calibration_number=10000000000",
                         "--datasets", "0", "--limit", "8", "--no-progress", "--output-dir", str(Path(directory) / "o")))

    def eee(directory, run):
        out = Path(directory) / "eee"
        cli("export", str(run), "--format", "eee", "-o", str(out), "--no-intervals")
        return out, next(out.rglob("*-*-*-*-*.json"))

    @row("EEE read-back: a result path index of 10**8 and 10**12", "one line each, < 5 s (was 87 s and 2 GB; unbounded)")
    def _index(directory):
        outcomes = []
        for index in (10 ** 8, 10 ** 12):
            out, aggregate = eee(directory, a_run(directory))
            document = json.loads(aggregate.read_text())
            details = document["evaluation_results"][0]["score_details"]["details"]
            details["path"] = json.dumps(json.loads(details["path"]) + [index])
            aggregate.write_text(json.dumps(document))
            outcomes.append(line(*cli("report", str(out))))
            shutil.rmtree(Path(directory) / "run")
            shutil.rmtree(out)
        return " | ".join(outcomes)

    def edited_samples(run, edit):
        lines = [json.loads(x) for x in (run / "samples.jsonl").read_text().splitlines()]
        edit(lines)
        text = "".join(json.dumps(x) + "\n" for x in lines)
        (run / "samples.jsonl").write_text(text)
        columns = json.loads((run / "samples.columns.json").read_text())
        columns["samples_sha256"] = hashlib.sha256(text.encode()).hexdigest()
        (run / "samples.columns.json").write_text(json.dumps(columns))

    @row("its own EEE export of a 2.4 MB answer, read back", "read back (was 'line longer than 4 MiB')")
    def _long_answer(directory):
        run = a_run(directory)
        edited_samples(run, lambda lines: lines[0].update(text="positive " + "é\"" * 1_200_000))
        os.remove(run / "samples.columns.json")
        out, _aggregate = eee(directory, run)
        return line(*cli("report", str(out)))

    @row("export of a copied samples.jsonl (prediction 'evil') with a matching columns file",
         "one line (was exported, exit 0)")
    def _evil(directory):
        run = a_run(directory)
        edited_samples(run, lambda lines: lines[2].update(prediction="evil"))
        return line(*cli("export", str(run), "--format", "eee", "-o", str(Path(directory) / "o"), "--no-intervals"))

    def renamed(directory, *names):
        run = a_run(directory)
        document = json.loads((run / "results.json").read_text())
        divided = document["benchmarks"]["Normal"]["results"]["Divided results"]
        body = divided.pop(next(iter(divided)))
        divided.update(dict.fromkeys(names, body))
        document.pop("samples", None)
        (run / "results.json").write_text(json.dumps(document))
        return run

    @row("lm-eval export of datasets 'ab-c' and 'AB_C'; hf of a dataset named 'average' and ''",
         "one line each (were merged, duplicated, mislabelled; exit 0)")
    def _names(directory):
        outcomes = [line(*cli("export", str(renamed(directory, "ab-c", "AB_C")), "--format", "lm-eval", "-o",
                              str(Path(directory) / "o")))]
        for name in ("average", ""):
            shutil.rmtree(Path(directory) / "run")
            outcomes.append(line(*cli("export", str(renamed(directory, "kept", name)), "--format", "hf",
                                      "--hf-dataset", "o/d", "-o", str(Path(directory) / "o"))))
        return " | ".join(outcomes)

    @row("export into an output folder with links planted at .eval_results, data, the model folder",
         "links replaced; nothing written through them (were followed)")
    def _folder_links(directory):
        run, victim, out = a_run(directory), Path(directory) / "victim", Path(directory) / "out"
        victim.mkdir()
        (out / "data" / "staicc").mkdir(parents=True)
        os.symlink(victim, out / ".eval_results")
        os.symlink(victim, out / "data" / "staicc" / "reference")
        codes = [cli("export", str(run), "--format", form, "--hf-dataset", "o/d", "-o", str(out), "--no-intervals")[0]
                 for form in ("hf", "eee")]
        return f"exits {codes}; files in the links' target: {len(list(victim.iterdir()))}"

    @row("a hard link at the cache's -wal name, run --methods and --lite", "one line each; the target untouched")
    def _hard_wal(directory):
        from StaICC.cache import PredictionCache
        outcomes = []
        for extra in (["--limit", "8", "--methods", "vanilla,batch"], ["--lite-items", "8"]):
            cache, victim = Path(directory) / f"c{len(outcomes)}.sqlite", Path(directory) / f"v{len(outcomes)}"
            victim.write_bytes(b"precious")
            PredictionCache(str(cache)).close()
            os.link(victim, str(cache) + "-wal")
            outcomes.append(line(*cli("run", "--datasets", "0", "--no-progress", "--cache", str(cache), *extra,
                                      "--output-dir", str(Path(directory) / f"o{len(outcomes)}"))))
            outcomes[-1] += f" (target {'untouched' if victim.read_bytes() == b'precious' else 'WRITTEN'})"
        return " | ".join(outcomes)

    @row("--datasets 'name=http://h/x.csv?api_key=KEY' error line", "KEY not printed (was printed)")
    def _name_url():
        code, out, err = cli("run", "--datasets", f"mine=http://h/x.csv?api_key={CANARY}", "--limit", "8")
        return f"exit {code}; key printed: {CANARY in out + err}"

    @row("export: RLIMIT_FSIZE (SIGXFSZ), a 10^400 value, a 400-character model name, --resamples 10**10",
         "one line each or written (were tracebacks)")
    def _export_errors(directory):
        run = a_run(directory)

        def limited():
            resource.setrlimit(resource.RLIMIT_FSIZE, (2000, 2000))
        done = subprocess.run([sys.executable, "-m", "StaICC", "export", str(run), "--format", "eee", "-o",
                               str(Path(directory) / "o1"), "--no-intervals"], capture_output=True, text=True,
                              preexec_fn=limited, env=dict(os.environ, PYTHONPATH=str(ROOT)))
        outcomes = [one_line(done.returncode, done.stderr)]
        text = (run / "results.json").read_text().replace('"accuracy": 0', '"accuracy": 1' + "0" * 400 + ", \"x\": 0", 1)
        (run / "results.json").write_text(text)
        outcomes.append(line(*cli("export", str(run), "--format", "lm-eval", "-o", str(Path(directory) / "o2"))))
        shutil.rmtree(run)
        run = a_run(directory)
        outcomes.append(line(*cli("export", str(run), "--format", "eee", "-o", str(Path(directory) / "o3"),
                                  "--no-intervals", "--model-id", "org/" + "m" * 400)))
        outcomes.append(line(*cli("export", str(run), "--format", "eee", "-o", str(Path(directory) / "o4"),
                                  "--resamples", "10000000000")))
        return " | ".join(outcomes)

    @row("an openai echo with every text offset 0", "one line (was scored [0.5, 0.5])")
    def _zero_offsets():
        sys.path.insert(0, str(ROOT / "tests"))
        from backend_helpers import ScriptedServer
        from StaICC.backends.registry import make_backend
        from StaICC.requests import Request

        def echo(body):
            text = body["prompt"]
            return {"model": "m", "choices": [{"text": text + "!", "logprobs": {
                "tokens": ["", text, "!"], "token_logprobs": [None, -1.0, -0.1], "text_offset": [0, 0, 0]}}]}
        with ScriptedServer([(200, echo, 0)]) as server:
            backend = make_backend("openai", base_url=server.base_url, model="m", concurrency="1", retries="0")
            try:
                return f"scored {backend.score([Request('Review: good. Sentiment:', ('negative', 'positive'))])}"
            except Exception as exc:  # the refusal expected
                return f"{type(exc).__name__}: {str(exc)[:110]}"
