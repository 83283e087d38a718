"""What judge-serve refuses before any engine starts, and the names its refusals give: a ``--dtype`` vLLM refuses, a
model folder with no weights, an inline ``/v1/judge`` body's fields as the body sent them; with them two messages of
the shared plumbing (a hub id that cannot be downloaded, a control character in JSON) kept to one line of plain
words."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import re
import socket
from pathlib import Path

import pytest

import serve.cli as serve_cli
import serve.config
import serve.layout
from judge.checkpoints import CheckpointNotFound, resolve_checkpoint
from judge.plumbing.json_reading import unreadable_json
from serve.config import ServeConfig
from serve.launch import engine_specs
from serve.layout import LayoutError, resolve_layout
from serve.schema import RequestError, parse_judge_request
from tests.support.fixtures_serve import RELEASED_R_ID

CAUSAL = {"architectures": ["Qwen2ForCausalLM"]}
CLASSIFIER = {"architectures": ["Qwen2ForSequenceClassification"], "num_labels": 1, "problem_type": "regression"}


def _folder(path: Path, config: dict, *weights: str) -> Path:
    """A checkpoint folder holding ``config.json`` and, empty, the named weight files."""
    path.mkdir(parents=True)
    (path / "config.json").write_text(json.dumps(config), encoding="utf-8")
    for name in weights:
        (path / name).write_bytes(b"")
    return path


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# ------------------------------------------------------------------------------------------------ --dtype


def test_a_dtype_vllm_refuses_is_named_with_the_choices(tmp_path, capsys):
    """--dtype float64 started an engine that exited half a minute later with vLLM's usage text: now exit 2 at once,
    naming the flag and what vLLM takes. Every value vLLM takes still passes."""
    folder = _folder(tmp_path / "ckpt", CAUSAL, "model.safetensors")
    assert serve_cli.main(["--model", str(folder), "--dtype", "float64", "--print-config"]) == 2
    assert capsys.readouterr().err == ("judge-serve: error: dtype (--dtype): 'float64' is not one of auto, half, "
                                       "float16, bfloat16, float, float32 (vLLM's --dtype)\n")
    for dtype in ("auto", "half", "float16", "bfloat16", "float", "float32"):
        assert ServeConfig(model="m", dtype=dtype).validate().dtype == dtype


def test_the_dtypes_are_those_of_the_installed_vllm():
    """VLLM_DTYPES is vLLM's own list (``ModelDType`` in ``vllm/config/model.py``), read without importing vLLM."""
    spec = importlib.util.find_spec("vllm")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("vLLM is not installed")
    text = (Path(list(spec.submodule_search_locations)[0]) / "config" / "model.py").read_text(encoding="utf-8")
    found = re.search(r"^ModelDType = Literal\[(.*?)\]", text, re.MULTILINE)
    assert found, "vllm/config/model.py defines no ModelDType"
    assert tuple(re.findall(r'"([^"]+)"', found.group(1))) == serve.config.VLLM_DTYPES


# ------------------------------------------------------------------------------------------------ --port


def test_the_port_bound_before_the_engines_is_kept_from_a_second_judge_serve():
    """The address judge-serve binds before its engines start is its own from then on. Bound with SO_REUSEADDR and
    not listened on, it was not: a second judge-serve on the same --port, started before the first one served
    (imports, create_app), bound it too, started its engines, then failed in uvicorn's listen with a traceback and
    exit 1. The second is refused at once (PortInUse: exit 2, before any engine), and the first takes connections."""
    first = serve_cli.bind_listening_socket("127.0.0.1", 0)
    try:
        port = first.getsockname()[1]
        with pytest.raises(serve_cli.PortInUse, match=rf"^port {port} on 127\.0\.0\.1 is already in use"):
            serve_cli.bind_listening_socket("127.0.0.1", port).close()
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            pass  # queued in the first one's backlog until uvicorn serves it
    finally:
        first.close()


# ------------------------------------------------------------------------------------------------ weights


def test_a_folder_without_weights_is_refused_before_any_engine(tmp_path, capsys, monkeypatch):
    """A folder holding config.json but no weights started an engine that died ~50 s later with a traceback: now
    exit 2 at once, naming the folder, with no log folder made and the port let go."""
    monkeypatch.setattr(serve_cli, "check_installed_vllm", lambda: None)  # whichever vLLM this machine has
    folder, logs, port = _folder(tmp_path / "ckpt", CAUSAL), tmp_path / "logs", _free_port()
    assert serve_cli.main(["--model", str(folder), "--port", str(port), "--log-dir", str(logs)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"judge-serve: error: model: {folder} holds no weights (*.safetensors, *.bin, *.pt, "
                          "*.index.json), so the generator engine would have nothing to load;"), err
    assert err.count("\n") == 1 and not logs.exists()
    with socket.socket() as again:  # the listening socket was closed
        # SO_REUSEADDR: a bind still fails while anything listens on the port (what is checked), but not because
        # another process's connection took the freed port as its local one meanwhile (the other xdist worker's)
        again.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        again.bind(("127.0.0.1", port))


def test_a_regression_export_whose_generator_has_no_weights_names_that_folder(tmp_path, capsys, monkeypatch):
    """The pooling engine's folder has weights, the generating one's (generator/) none: the refusal names generator/."""
    monkeypatch.setattr(serve_cli, "check_installed_vllm", lambda: None)
    root = _folder(tmp_path / "export", CLASSIFIER, "model.safetensors")
    _folder(root / "generator", CAUSAL)
    assert serve_cli.main(["--model", str(root), "--port", str(_free_port())]) == 2
    assert capsys.readouterr().err.startswith(f"judge-serve: error: model: {root / 'generator'} holds no weights")


@pytest.mark.parametrize("generator_given", [False, True])
def test_a_generating_model_without_a_tokenizer_is_refused_naming_its_folder(tmp_path, capsys, monkeypatch,
                                                                             generator_given):
    """The generating engine detokenizes what it writes with its own folder's tokenizer: a regression export's
    generator/ (or a --generator-model) without tokenizer files would start on a one-token tokenizer and every
    rationale come back as that token. Refused at start, naming the folder and the engine; the export's own
    tokenizer (the root's) does not stand in for it."""
    monkeypatch.setattr(serve_cli, "check_installed_vllm", lambda: None)
    root = _folder(tmp_path / "export", CLASSIFIER, "model.safetensors", "tokenizer.json")
    (root / "chat_template.jinja").write_text("{{ messages }}")  # the root's own tokenizer is whole
    generator = _folder(tmp_path / "elsewhere" if generator_given else root / "generator", CAUSAL, "model.safetensors")
    argv = ["--model", str(root), "--port", str(_free_port())]
    assert serve_cli.main(argv + (["--generator-model", str(generator)] if generator_given else [])) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"judge-serve: error: model: {generator} holds no tokenizer (tokenizer.json,"), err
    assert "the generator engine" in err and err.count("\n") == 1


@pytest.mark.parametrize("weights", ["model.safetensors", "pytorch_model.bin", "model.pt",
                                     "model.safetensors.index.json"])
def test_each_kind_of_weights_file_is_enough(tmp_path, weights):
    """save_pretrained's single files, PyTorch files and a sharded index each count as weights."""
    serve.layout.require_weights(_folder(tmp_path / "ckpt", CAUSAL, weights), "generator")
    with pytest.raises(LayoutError, match="holds no weights"):
        serve.layout.require_weights(_folder(tmp_path / "bare", CAUSAL, "tokenizer.json"), "generator")


def test_a_sharded_folder_missing_a_shard_its_index_names_is_refused_naming_it(tmp_path):
    """A copy or download cut short: the index names two shards, the folder holds one. vLLM refused it half a
    minute later in its own log only ("Weight files referenced in index but missing"), judge-serve saying "exited
    with code 1 while starting"; now the refusal names the shard, before any engine starts."""
    root = _folder(tmp_path / "ckpt", CAUSAL, "model-00001-of-00002.safetensors")
    (root / "model.safetensors.index.json").write_text(json.dumps({"weight_map": {
        "a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors"}}))
    with pytest.raises(LayoutError) as err:
        serve.layout.require_weights(root, "generator")
    assert str(err.value) == (f"model: {root}: its weights index names model-00002-of-00002.safetensors, not in the "
                              "folder, so the generator engine could not load it; copy the missing shards (a download "
                              "or copy cut short), or pass a complete folder")
    (root / "model-00002-of-00002.safetensors").write_bytes(b"")
    serve.layout.require_weights(root, "generator")
    # a repository that ships both formats, downloaded without its .bin files: the engine loads the safetensors and
    # ignores the .bin index, which names files not there (review)
    (root / "pytorch_model.bin.index.json").write_text(json.dumps({"weight_map": {"a": "pytorch_model-1.bin"}}))
    serve.layout.require_weights(root, "generator")
    bins = _folder(tmp_path / "bins", CAUSAL, "pytorch_model-1.bin")
    (bins / "pytorch_model.bin.index.json").write_text(json.dumps({"weight_map": {
        "a": "pytorch_model-1.bin", "b": "pytorch_model-2.bin"}}))
    with pytest.raises(LayoutError, match="its weights index names pytorch_model-2.bin, not in the folder"):
        serve.layout.require_weights(bins, "generator")


def test_a_released_regression_judge_from_the_hub_cache_passes(tmp_path, monkeypatch, released_hub_cache):
    """The released -r layout (docs/released-pollux.md) served by hub id: both derived views hold weights."""
    monkeypatch.setenv("HF_HUB_CACHE", str(released_hub_cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    layout = resolve_layout(RELEASED_R_ID, derived_cache_dir=tmp_path / "views")
    specs = engine_specs(ServeConfig(model=RELEASED_R_ID), layout)
    assert [spec.role for spec in specs] == ["generator", "pooler"]
    for spec in specs:
        serve.layout.require_weights(spec.model_dir, spec.role)


# ------------------------------------------------------------------------------------------------ one-line messages


def test_a_failed_download_is_named_in_one_line(tmp_path, monkeypatch):
    """huggingface_hub's error runs over two lines (cause, then advice); the refusal keeps its first, in one line."""
    import huggingface_hub
    from huggingface_hub.errors import LocalEntryNotFoundError

    asked: list[tuple[str, dict]] = []

    def snapshot_download(repo_id, **kwargs):
        asked.append((repo_id, kwargs))
        if kwargs.get("local_files_only"):
            raise LocalEntryNotFoundError("not in the cache")
        raise OSError("Got: ConnectError: [Errno -2] Name or service not known\nAn error happened while trying ...")

    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(huggingface_hub, "snapshot_download", snapshot_download)
    with pytest.raises(CheckpointNotFound) as refused:
        resolve_checkpoint("nobody-here/no-model")
    message = str(refused.value)
    assert "\n" not in message
    assert "downloading it failed (OSError: Got: ConnectError: [Errno -2] Name or service not known). " in message
    # the cache first, then the download, both into the cache HF_HUB_CACHE names
    cache = {"cache_dir": str(tmp_path / "cache"), "repo_type": "model"}
    assert asked == [("nobody-here/no-model", {**cache, "local_files_only": True}), ("nobody-here/no-model", cache)]


def test_a_control_character_is_named_without_a_doubled_word():
    """Python's message for a control character already ends in "at": it was read "at at column 9"."""
    try:
        json.loads('{"a": "x\ty"}')  # the tab is the 9th character
    except json.JSONDecodeError as err:
        assert unreadable_json(err) == "invalid JSON (Invalid control character at column 9)"
        assert unreadable_json(err, whole_file=True) == "invalid JSON (Invalid control character at line 1, column 9)"
    else:
        pytest.fail("json.loads took a raw tab inside a string")


# ------------------------------------------------------------------------------------------------ inline /v1/judge


def _refusal(body: dict) -> RequestError:
    with pytest.raises(RequestError) as refused:
        parse_judge_request(body)
    return refused.value


@pytest.mark.parametrize(("body", "param", "message"), [
    ({"instruction": "q", "criteria": ["x"]}, "answer", "answer: required field is missing"),
    ({"instruction": "q", "answer": " ", "criteria": ["x"]}, "answer", "answer: must not be empty"),
    ({"instruction": "q", "answer": "a", "criteria": []}, "criteria",
     "criteria: must not be empty (leave it out to use the task type's criteria)"),
    ({"instruction": "q", "answer": "a"}, "criteria",
     "criteria: required unless task_type names a task whose criteria set to use"),
    ({"items": [{"instruction": "q", "criteria": ["x"]}]}, "items[0].answer", "items[0].answer: required field is missing"),
])  # fmt: skip
def test_an_inline_body_is_refused_naming_its_fields_as_sent(body, param, message):
    """An inline body (the item's fields at the top level) has no items[0]: its errors name ``answer``; a body
    with ``items`` keeps ``items[0].answer``."""
    refused = _refusal(body)
    assert (refused.param, refused.message) == (param, message)


@pytest.mark.parametrize(("body", "param", "message"), [
    ({"items": [5]}, "items[0]", "items[0]: must be an object, got an integer 5"),
    ({"items": "x"}, "items", "items: must be a list, got a string 'x'"),
    ({"instruction": True, "answer": "a", "criteria": ["x"]}, "instruction", "instruction: must be a string, got true"),
    ({"instruction": "q", "answer": "a", "criteria": ["x"], "max_tokens": 1.5}, "max_tokens",
     "max_tokens: must be an integer, got a number 1.5"),
    ({"instruction": "q", "answer": "a", "criteria": ["x"], "max_tokens": "9" * 60}, "max_tokens",
     "max_tokens: must be an integer, got a string '" + "9" * 36 + "..."),
    ({"instruction": "q", "answer": "a", "criteria": ["x"], "temperature": [0]}, "temperature",
     "temperature: must be a number, got a list"),
])  # fmt: skip
def test_a_field_of_another_json_kind_is_named_in_json_words(body, param, message):
    """pydantic's own message named Python's classes ("Input should be a valid dictionary or instance of
    JudgeItem"); the refusal says the JSON kind the field must be and what came, a long value cut with a mark."""
    refused = _refusal(body)
    assert (refused.param, refused.message) == (param, message)


@pytest.mark.parametrize(("body", "param", "message"), [
    # the mapping's own key "str", under the mapping's branch, whose error is about that key's value
    ({"instruction": "q", "answer": "a", "criteria": [{"name": "x", "rubrics": {"str": 5, "1": "ok"}}]},
     "criteria[0].rubrics.str", "criteria[0].rubrics.str: must be a string, got an integer 5"),
    # "name" is what is missing, from the object that holds the key "CustomCriterion" (that key was named missing)
    ({"instruction": "q", "answer": "a", "criteria": [{"CustomCriterion": "x"}]}, "criteria[0].name",
     "criteria[0].name: required field is missing"),
    ({"instruction": "q", "answer": "a", "criteria": {"list[union[str,CustomCriterion]]": 1}}, "criteria",
     "criteria: must be a list, got an object"),
    ({"instruction": "q", "answer": "a", "criteria": ["x"], "str": 1}, "str", "str: unknown field"),
])  # fmt: skip
def test_a_clients_key_named_like_a_union_branch_is_told_from_the_branch(body, param, message):
    """pydantic's error locations hold union branch names (``str``, ``CustomCriterion``); a client's key of the same
    name was taken for the field. The error's input (the value it is about) tells which reading is meant."""
    refused = _refusal(body)
    assert (refused.param, refused.message) == (param, message)


@pytest.mark.parametrize(("body", "where"), [
    ({"items": [{"instruction": "q", "answer": "a", "criteria": [{"name": "x", "rubrics": {"0": "a", "1": 5}}]}]},
     "items[0].criteria[0].rubrics.1"),
    ({"instruction": "q", "answer": "a", "criteria": [{"name": "x", "rubrics": {"0": "a", "1": 5}}]},
     "criteria[0].rubrics.1"),
])  # fmt: skip
def test_a_rubric_mapping_with_a_value_that_is_no_string_names_that_value(body, where):
    """Rubrics are a string or a mapping of score to text: a mapping is meant as the mapping, so its bad value is
    named, not the mapping as "must be a string, got an object" (the string branch's error)."""
    refused = _refusal(body)
    assert (refused.param, refused.message) == (where, f"{where}: must be a string, got an integer 5")


RUBRICS_KIND = "must be a string (rubric text) or an object (each level's text), got"


@pytest.mark.parametrize(("body", "message"), [
    ({"items": [{"instruction": "q", "answer": "a", "criteria": [{"name": "x", "rubrics": 5}]}]},
     f"items[0].criteria[0].rubrics: {RUBRICS_KIND} an integer 5"),
    ({"instruction": "q", "answer": "a", "criteria": [{"name": "x", "rubrics": 5}]},
     f"criteria[0].rubrics: {RUBRICS_KIND} an integer 5"),
    ({"instruction": "q", "answer": "a", "criteria": [{"name": "x", "rubrics": ["0: no", "1: yes"]}]},
     f"criteria[0].rubrics: {RUBRICS_KIND} a list"),
])  # fmt: skip
def test_rubrics_of_another_json_kind_are_told_both_kinds_they_may_be(body, message):
    """Rubrics are a string or a mapping of level to text: a value of neither kind was told "must be a string" (the
    first branch's words), as if a mapping were refused too."""
    refused = _refusal(body)
    assert (refused.param, refused.message) == (message.split(":")[0], message)


def test_the_judge_names_an_inline_bodys_criterion_and_item_as_sent(qwen_tokenizer):
    """Judge.check (and run, which checks first) name an inline body's criterion ``criteria[0]`` and the item as a
    whole ``body``, where a body with ``items`` gets ``items[0].criteria[0]`` / ``items[0]``."""
    from serve.judging import Judge, JudgeSettings

    settings = JudgeSettings(model_name="m", kind="seq2seq", engine_models={"generator": "m"}, max_model_len=64,
                             max_tokens=16, temperature=0.0, score_logprobs=True, lenient=False, constrained=False,
                             feedback_max_chars=0, max_judgments=512)
    judge_ = Judge(settings, qwen_tokenizer, generator=None, pooler=None, limit=asyncio.Semaphore(1))
    unknown = {"instruction": "q", "answer": "a", "criteria": ["Нет такого критерия"]}
    for body, where in ((unknown, "criteria[0]"), ({"items": [unknown]}, "items[0].criteria[0]")):
        with pytest.raises(RequestError) as refused:
            judge_.check(parse_judge_request(body))
        assert refused.value.param == where and refused.value.message.startswith(f"{where}: "), refused.value.message
        with pytest.raises(RequestError) as refused:
            asyncio.run(judge_.run(parse_judge_request(body)))
        assert refused.value.param == where
    long = {"instruction": "q" * 10000, "answer": "a", "criteria": ["x"]}  # past 48 tokens of at most 128 characters
    for body, where in ((long, "body"), ({"items": [long]}, "items[0]")):
        with pytest.raises(RequestError) as refused:
            judge_.check(parse_judge_request(body))
        assert refused.value.param == where and refused.value.message.startswith(f"{where}: 10001 characters"), \
            refused.value.message


def test_a_tensor_parallel_size_the_heads_do_not_split_is_refused_before_any_engine(tmp_path, capsys, monkeypatch):
    """T-lite's 28 attention heads (4 key/value) over 8 GPUs: vLLM refused it only once the engine started, with a
    traceback; judge-serve now says so at once (exit 2), naming the sizes that split them (1, 2 or 4: 4 divides both,
    8 neither). The same size given in engine_args is vLLM's to check: no refusal of judge-serve's own then."""
    monkeypatch.setattr(serve_cli, "check_installed_vllm", lambda: None)
    folder = _folder(tmp_path / "ckpt", {**CAUSAL, "num_attention_heads": 28, "num_key_value_heads": 4},
                     "model.safetensors")
    assert serve_cli.main(["--model", str(folder), "--port", str(_free_port()), "--tensor-parallel-size", "8"]) == 2
    assert capsys.readouterr().err == (
        f"judge-serve: error: tensor_parallel_size 8: vLLM cannot split {folder}'s 28 attention heads "
        f"(4 key/value heads; {folder / 'config.json'}) over 8 GPUs, and its engine would stop at its start; give "
        "--tensor-parallel-size 1, 2 or 4\n")
    config = ServeConfig(model=str(folder), tensor_parallel_size=8, engine_args=["--tensor-parallel-size=4"])
    serve_cli.refuse_unsplittable_heads(str(folder), config)  # vLLM's to check: engine_args come last
    serve_cli.refuse_unsplittable_heads(str(folder), ServeConfig(model=str(folder), tensor_parallel_size=4))


@pytest.mark.parametrize("engine_args", [["--tensor-parallel-size=4"], ["--tensor-parallel-size", "4"],
                                         ["--tensor_parallel_size", "4"], ["-tp", "4"], ["-tp=4"]])
def test_a_size_in_engine_args_in_any_of_vllms_spellings_is_vllms_to_check(tmp_path, engine_args):
    """vLLM reads ``--tensor_parallel_size`` as ``--tensor-parallel-size`` (and ``-tp`` too): given in engine_args,
    which come last, it is the size the engines use, so judge-serve's own (8, which 28 heads do not split over) is
    not the one refused. serve.sbatch asks the same function, so both check one size."""
    folder = _folder(tmp_path / "ckpt", {**CAUSAL, "num_attention_heads": 28, "num_key_value_heads": 4},
                     "model.safetensors")
    config = ServeConfig(model=str(folder), tensor_parallel_size=8, engine_args=["--seed", "0", *engine_args])
    assert serve_cli.engines_tensor_parallel_size(config) is None
    serve_cli.refuse_unsplittable_heads(str(folder), config)
    mine = ServeConfig(model=str(folder), tensor_parallel_size=8, engine_args=["--seed", "0"])
    assert serve_cli.engines_tensor_parallel_size(mine) == 8
    with pytest.raises(LayoutError, match=r"^tensor_parallel_size 8: vLLM cannot split "):
        serve_cli.refuse_unsplittable_heads(str(folder), mine)


def test_a_regression_exports_generator_given_as_the_judge_is_refused_naming_the_export(tmp_path):
    """export/generator/ (the folder the card's plain-vLLM line serves) given as the judge: it writes the rationale
    alone, no ``[RESULT]``, so served as a seq2seq judge every verdict of a whole run failed ``no_result``. judge-serve
    and judge-eval (both ask ``judge_kind``) refuse it, naming the export to give instead."""
    from judge.checkpoints import judge_kind, write_manifest

    root = _folder(tmp_path / "export", CLASSIFIER, "model.safetensors")
    write_manifest(root, "regression", generator="generator", score_head="score")
    generator = _folder(root / "generator", CAUSAL, "model.safetensors")
    with pytest.raises(ValueError, match="regression judge's generating model") as err:
        judge_kind(generator)
    assert f"pass {root}" in str(err.value)
    with pytest.raises(LayoutError, match=f"pass {re.escape(str(root))}"):
        resolve_layout(generator)
    assert judge_kind(root) == "regression"
    # a causal folder of its own in an export's generator/ place, or beside a seq2seq export, is still a judge
    seq2seq = _folder(tmp_path / "s2s" / "export", CAUSAL, "model.safetensors")
    write_manifest(seq2seq, "seq2seq", generator=".")
    assert judge_kind(_folder(seq2seq / "generator", CAUSAL, "model.safetensors")) == "seq2seq"


def test_a_regression_exports_generator_kept_elsewhere_by_a_symlink_is_refused_too(tmp_path):
    """export/generator -> another disk's folder (the layout the regression fixture builds): the folder as given sits
    in the export, whose manifest names it, so it is refused as the generating model even though it resolves
    elsewhere."""
    from judge.checkpoints import judge_kind, write_manifest

    root = _folder(tmp_path / "export", CLASSIFIER, "model.safetensors")
    write_manifest(root, "regression", generator="generator", score_head="score")
    elsewhere = _folder(tmp_path / "disk2" / "gen", CAUSAL, "model.safetensors")
    (root / "generator").symlink_to(elsewhere)
    with pytest.raises(ValueError, match="regression judge's generating model") as err:
        judge_kind(root / "generator")
    assert f"pass {root}" in str(err.value)
    assert judge_kind(elsewhere) == "seq2seq"  # the same folder given by its own path belongs to no export
