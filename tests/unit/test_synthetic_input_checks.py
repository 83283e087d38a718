"""The synthetic stages refuse bad input by name before any request: the annotate stage's task fields and criteria
filter, the split stage's rows by file and line, and stage 1's Zero-Shot default (the dedup stage's own input checks
are in test_synthetic_dedup.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from judge import RecordError, load_taxonomy
from train.synthetic.config import AnnotateConfig, InstructionsConfig, SplitConfig, load_config

REPO = Path(__file__).resolve().parents[2]


def _answer(**fields) -> dict:
    return {"id": "ans-1", "instruction": "Исправьте ошибки: «Я пошол домой.»", "answer": "Я пошёл домой.",
            "task_type": "Editing", "task_subtype": "", "task_subsubtype": "", **fields}


def _write_jsonl(path: Path, lines: list[dict | None]) -> Path:
    path.write_text("".join("\n" if row is None else json.dumps(row, ensure_ascii=False) + "\n" for row in lines), encoding="utf-8")
    return path


# ----------------------------------------------------------------------------------------------------- annotate


@pytest.mark.parametrize("field", ["task_type", "task_subtype", "task_subsubtype"])
def test_annotate_refuses_a_non_string_task_field_by_file_line_and_field(tmp_path, field):
    """``task_subtype: 3`` was an AttributeError traceback from the taxonomy lookup; now a RecordError naming the
    file, the row (line 3, after a blank line) and the field, before any request. ``task_type`` is checked by
    ``require_fields`` first, with its own wording."""
    from train.synthetic.annotate import annotation_items, run_annotate

    inputs = _write_jsonl(tmp_path / "answers.jsonl", [_answer(id="ans-0"), None, _answer(**{field: 3})])
    config = AnnotateConfig(teacher={"model": "t", "base_url": "http://127.0.0.1:9/v1"}, max_retries=0)
    with pytest.raises(RecordError) as err:
        run_annotate(config, inputs, tmp_path / "out")
    assert str(err.value) == f"{inputs}: line 3: field {field!r}: an integer, not a string"
    with pytest.raises(RecordError) as err:
        annotation_items([_answer(**{field: 3})], config, source="answers.jsonl")
    assert str(err.value) == f"answers.jsonl: row 0: field {field!r}: an integer, not a string"


def test_annotate_names_the_line_of_an_answer_whose_task_is_not_a_leaf():
    """The taxonomy's refusal names the row's index in the file, not its position in the list."""
    from train.synthetic.annotate import annotation_items

    config = AnnotateConfig(teacher={"model": "t"})
    with pytest.raises(RecordError, match=r"^answers.jsonl: row 4: field 'task_type': "):
        annotation_items([_answer(id="a"), _answer(id="b", task_type="No such task")], config, "answers.jsonl", [0, 4])


def test_annotate_refuses_criteria_that_are_not_base_criterion_ids():
    """An unknown id in ``criteria`` selected nothing, and the stage finished with 0 items; a variant id
    (``<base>__2``) is no base id either. Both are named; the known base id is not."""
    taxonomy = load_taxonomy()
    base = next(iter(taxonomy.criteria.values())).base_id
    variant = next(cid for cid in taxonomy.criteria if "__" in cid)
    AnnotateConfig(teacher={"model": "t"}, criteria=[base, "repeats"]).check_runnable()
    with pytest.raises(ValueError) as err:
        AnnotateConfig(teacher={"model": "t"}, criteria=[base, "no_such_criterion", variant]).check_runnable()
    assert str(err.value).startswith(f"annotate: criteria ['no_such_criterion', {variant!r}] are not base criterion ids")


def test_the_annotate_cli_refuses_an_unknown_criterion_before_claiming_its_folder(tmp_path, capsys):
    from train.synthetic.cli import main

    inputs = _write_jsonl(tmp_path / "answers.jsonl", [_answer()])
    config = tmp_path / "annotate.yaml"
    config.write_text("teacher: {model: t, base_url: 'http://127.0.0.1:9/v1'}\ncriteria: [no_such_criterion]\n")
    out = tmp_path / "out"
    assert main(["annotate", "--config", str(config), "--input", str(inputs), "--output", str(out)]) != 0
    assert "no_such_criterion" in capsys.readouterr().err and not out.exists()


# ----------------------------------------------------------------------------------------------------- split


def _annotated(instruction_id: str, **fields) -> dict:
    crit = load_taxonomy().criteria["repeats"]
    return {
        "id": f"{instruction_id}:repeats", "instruction_id": instruction_id, "instruction": f"Задание {instruction_id}",
        "reference_answer": "", "answer": "Ответ", "criteria_name": crit.name["ru"], "rubrics": crit.rubric("ru"),
        "criteria_score": 1.0, "expert_scores": [1.0], "expert_feedback": ["Норм."], "task_type": "Editing",
        "task_subtype": "", "task_subsubtype": "", "difficulty": "easy", "domain": "", "model_id": "m",
        "criterion_id": "repeats", **fields,
    }  # fmt: skip


def test_split_names_a_bad_row_by_its_file_and_line(tmp_path):
    """A bad row at the split stage was "annotate: row 1" (its position, and no file); the other stages name the
    file and the line. Line 3 here, after a blank line, as the record loader names it."""
    from train.synthetic.splitting import run_split, split_records

    path = _write_jsonl(tmp_path / "annotate.jsonl", [_annotated("i0"), None, _annotated("i1", expert_scores="1")])
    with pytest.raises(RecordError) as err:
        run_split(SplitConfig(), path, tmp_path / "out")
    assert str(err.value) == f"{path}: line 3: field 'expert_scores': must be a list of numbers, got a string"
    (tmp_path / "folder").mkdir()
    _write_jsonl(tmp_path / "folder" / "annotate.jsonl", [None, _annotated("i1", expert_scores="1")])
    with pytest.raises(RecordError, match=r"folder: line 2: field 'expert_scores'"):
        run_split(SplitConfig(), tmp_path / "folder", tmp_path / "out2")
    with pytest.raises(RecordError, match=r"^annotate: row 0: field 'expert_scores'"):  # rows built in code
        split_records([_annotated("i1", expert_scores="1")], SplitConfig())


# ----------------------------------------------------------------------------------------------------- instructions


def test_stage_1_skips_the_zero_shot_task_types_by_default():
    """The paper generated no instruction for the Zero-Shot task types (arXiv 2505.24616v3, Section 3.1, footnote 16)
    and the split stage drops every one: by default, and in the shipped YAML, stage 1 asks for none (336 of the 450
    (leaf, complexity level) pairs are left); ``skip_zero_shot: false`` asks for all 450."""
    from judge import load_split_spec
    from train.synthetic.generation import generation_jobs

    generators = [{"model": "g"}]
    assert InstructionsConfig().skip_zero_shot is True
    shipped = load_config(InstructionsConfig, REPO / "configs" / "data" / "instructions.yaml")
    assert shipped.skip_zero_shot is True
    jobs = generation_jobs(InstructionsConfig(generators=generators))
    held_out = load_split_spec().task_types
    assert len(jobs) == 336 and not {payload["task"].task_type for _, payload in jobs} & held_out
    assert len(generation_jobs(InstructionsConfig(generators=generators, skip_zero_shot=False))) == 450


def test_the_shipped_configs_ask_generators_and_answer_models_in_equal_shares():
    """arXiv 2505.24616v3, Section 3.1: the instructions were "generated ... by DeepSeek-V3 ..., OpenAI GPT-4o and
    o3-mini in equal shares", those that "contained more than 5% non-Russian tokens" removed, and the answers
    "generated by 15 open-source LLMs in equal shares". The shipped stage-1 YAML lists three generator endpoints
    (placeholders to point at your three models) of one share each and keeps the 0.05 bound; an endpoint without a
    share (every answer model in the shipped stage-3 YAML) has one share, so a pool is drawn from in equal shares."""
    from train.synthetic.config import AnswersConfig, EndpointConfig

    shipped = load_config(InstructionsConfig, REPO / "configs" / "data" / "instructions.yaml")
    assert [generator["share"] for generator in shipped.generators] == [1.0, 1.0, 1.0]
    assert shipped.max_non_russian == 0.05
    answers = load_config(AnswersConfig, REPO / "configs" / "data" / "answers.yaml")
    assert [EndpointConfig(**model).share for model in answers.answer_models] == [1.0, 1.0]


def test_stage_1_holds_out_the_task_types_of_the_run_s_split_file(tmp_path, capsys):
    """The split stage holds out the task types of its ``split_file``; stage 1 held out the packaged split's whatever
    the run's split was, and refused ``split_file`` in its YAML as an unknown key. With a split holding out only
    Code modification, stage 1 asks for Informal setting (held out by the packaged split) and none for Code
    modification. A split file that does not load is refused before the output folder is made, naming the setting."""
    from train.synthetic.cli import main
    from train.synthetic.generation import generation_jobs

    split = tmp_path / "split.yaml"
    split.write_text("task_types: [Code modification]\ncriteria: []\n", encoding="utf-8")
    generators = [{"model": "g"}]
    every_type = {task.task_type for task in load_taxonomy().tasks if task.complexity}
    config = load_config(InstructionsConfig, _write_yaml(tmp_path / "instructions.yaml", generators, split))
    assert config.split_file == str(split)
    asked = {payload["task"].task_type for _, payload in generation_jobs(config)}
    assert every_type - asked == {"Code modification"} and "Informal setting" in asked
    # skip_zero_shot false holds nothing out, whichever split is named
    assert {p["task"].task_type for _, p in generation_jobs(InstructionsConfig(
        generators=generators, split_file=str(split), skip_zero_shot=False))} == every_type  # fmt: skip

    typo = tmp_path / "typo.yaml"
    typo.write_text("task_type: []\ncriteria: []\n", encoding="utf-8")
    for bad, named in ((tmp_path / "missing.yaml", "not found"), (typo, "unknown keys ['task_type']")):
        out = tmp_path / f"out-{bad.stem}"
        argv = ["instructions", "--config", str(_write_yaml(tmp_path / "run.yaml", generators, bad)), "--output", str(out)]
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert "error: instructions: split_file: " in err and str(bad) in err and named in err, err
        assert "Traceback" not in err and not out.exists()


def _write_yaml(path: Path, generators: list, split: Path) -> Path:
    """A stage-1 config (JSON is YAML) with these generators and ``split`` as its split file."""
    path.write_text(json.dumps({"generators": generators, "split_file": str(split)}), encoding="utf-8")
    return path


def test_annotate_reads_a_blank_subtype_as_unknown_and_names_the_field_at_fault():
    """A blank task_subtype is narrowed by the sub-subtype given (``Taxonomy.leaf``, the rule the labelled sets share);
    an unknown subtype was reported as field 'task_type'. The Informative translation leaf lists its criteria in
    taxonomy order, one item each."""
    from train.synthetic.annotate import annotation_items

    config = AnnotateConfig(teacher={"model": "t"})
    translation = "Translation, English-Russian language pair"
    items = annotation_items([_answer(task_type=translation, task_subsubtype="Informative translation")], config)
    (leaf,) = [t for t in load_taxonomy().tasks if t.subsubtype == "Informative translation"]
    assert [record["criterion_id"] for _, record in items] == list(leaf.criteria)
    with pytest.raises(RecordError) as err:
        annotation_items([_answer(task_type="Literary text", task_subtype="Nope")], config, "answers.jsonl")
    assert str(err.value) == ("answers.jsonl: row 0: field 'task_subtype': task type 'Literary text' has no subtype "
                              "'Nope'; options: ['Drama', 'Fragment', 'Poetry', 'Prose']")


# ----------------------------------------------------------------------------------------------------- endpoints


@pytest.mark.parametrize(
    ("teacher", "message"),
    [
        # a misspelt key was a TypeError traceback from EndpointConfig(**teacher)
        ("{model: t, max_token: 4096}",
         "traces: teacher: unknown keys ['max_token'] for an endpoint; 'max_token': did you mean 'max_tokens'?"),
        # a word where a number goes was a TypeError from the bound check (4096 > 'lots')
        ("{model: t, max_tokens: lots}", "traces: teacher: max_tokens: expected an integer, got 'lots'"),
        ("{model: t, extra_body: 3}", "traces: teacher: extra_body: expected a mapping, got an integer"),
        # merged over the request by the SDK: the wire said 4096 while the rows and the oversize bound said 1024
        ("{model: t, extra_body: {max_tokens: 4096}}",
         "traces: teacher: extra_body: 'max_tokens' is a field the client sets itself (model, messages, max_tokens, "
         "temperature) or one that changes the reply's shape (stream): set it as the endpoint's own key, or leave it "
         "out"),
    ],
)
def test_a_bad_endpoint_mapping_is_one_line_naming_its_setting(tmp_path, capsys, teacher, message):
    """The teacher's mapping is checked as the config's own keys are, when the config loads: an unknown key with
    its likely meaning, a value of the wrong type by its key; the CLI says it in one line and claims no folder."""
    from train.synthetic.cli import main
    from train.synthetic.config import TracesConfig

    config = tmp_path / "traces.yaml"
    config.write_text(f"teacher: {teacher}\n", encoding="utf-8")
    message = f"{config}: {message}"  # the file that gave the mapping, as a top-level key is named by it
    with pytest.raises(ValueError) as refused:
        load_config(TracesConfig, config)
    assert str(refused.value) == message
    inputs = _write_jsonl(tmp_path / "items.jsonl", [_answer()])
    out = tmp_path / "out"
    assert main(["traces", "--config", str(config), "--input", str(inputs), "--output", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines()[-1] == f"judge-train data traces: error: {message}" and "Traceback" not in err
    assert not out.exists()


def test_a_bad_endpoint_mapping_given_as_a_flag_is_named_as_the_command_lines(tmp_path):
    """A mapping a flag gives over the file's is named as the command line's, not the file's."""
    from train.synthetic.config import TracesConfig

    config = tmp_path / "traces.yaml"
    config.write_text("teacher: {model: t}\n", encoding="utf-8")
    with pytest.raises(ValueError) as refused:
        load_config(TracesConfig, config, {"teacher": '{"model": "t", "max_token": 4096}'})
    assert str(refused.value) == ("command line: traces: teacher: unknown keys ['max_token'] for an endpoint; "
                                  "'max_token': did you mean 'max_tokens'?")


def test_an_endpoint_number_written_with_an_exponent_is_sent_as_a_number(tmp_path):
    """PyYAML reads ``temperature: 6e-1`` (no dot) as the text '6e-1', which went to the server as text; the
    endpoint reads it as the number YAML 1.2 reads, as the config's own numbers are."""
    from train.synthetic.config import EndpointConfig, TracesConfig, stage_endpoints

    config = tmp_path / "traces.yaml"
    config.write_text("teacher: {model: t, temperature: 6e-1, max_tokens: 4096}\n", encoding="utf-8")
    (teacher,) = stage_endpoints(load_config(TracesConfig, config))
    assert (teacher.temperature, teacher.max_tokens) == (0.6, 4096)
    assert EndpointConfig(model="t", temperature="6e-1").temperature == 0.6


def test_an_endpoint_list_item_that_is_no_mapping_is_named_by_its_place(tmp_path):
    """``generators: [gpt-4o]`` (a name where a mapping goes) was a TypeError from ``EndpointConfig(**'gpt-4o')``."""
    config = tmp_path / "instructions.yaml"
    config.write_text("generators: [{model: a}, gpt-4o]\n", encoding="utf-8")
    with pytest.raises(ValueError) as refused:
        load_config(InstructionsConfig, config)
    assert str(refused.value) == (f"{config}: instructions: generators[1]: expected a mapping of endpoint settings "
                                  "(model: ..., base_url: ...), got 'gpt-4o'")


# ----------------------------------------------------------------------------------------------------- a later stage's rows


def _later_stage_rows() -> dict[str, dict]:
    """One row of each stage output that carries a stage's marks, as the stages write them."""
    from tests.unit.test_synthetic_stages import _annotated, _answer_rows

    annotated = {**_annotated("ins-1", "Editing", "repeats"), "answer_id": "ans-1", "teacher": "teacher"}
    return {"answers": _answer_rows()[0], "annotate": annotated,
            "traces": {**annotated, "id": "ans-1:repeats#0", "item_id": "ans-1:repeats", "reasoning": "Повторов нет.",
                       "reasoning_score": 1}}


@pytest.mark.parametrize("stage, given, reads", [
    ("dedup", "answers", "instructions"), ("dedup", "annotate", "instructions"),
    ("answers", "answers", "dedup"), ("answers", "annotate", "dedup"), ("answers", "traces", "dedup"),
    ("annotate", "annotate", "answers"), ("annotate", "traces", "answers"),
    ("split", "traces", "annotate"),
])
def test_a_stage_given_a_later_stages_output_says_so_and_exits_2(tmp_path, capsys, stage, given, reads):
    """answers given annotate.jsonl asked its answer models once per verdict row (each holds an id and the
    instruction), and annotate given its own output annotated every verdict again: the rows hold every field the stage
    requires. A row carrying the fields only a later stage writes is refused by file and line, naming both stages,
    before any request (the endpoints are unreachable: a request would have been exit 4)."""
    from train.synthetic.cli import main

    source = _write_jsonl(tmp_path / f"{given}.jsonl", [_later_stage_rows()[given]])
    endpoint = {"model": "m", "base_url": "http://127.0.0.1:9/v1"}
    config = {"dedup": {"reference": str(REPO / "judge" / "data" / "sample.jsonl")},
              "answers": {"answer_models": [endpoint], "backoff_s": 0.0},
              "annotate": {"teacher": endpoint, "backoff_s": 0.0}, "split": {}}[stage]
    path = tmp_path / "config.yaml"
    path.write_text(json.dumps(config))
    assert main([stage, "--config", str(path), "--input", str(source), "--output", str(tmp_path / "out")]) == 2
    marks = {"answers": "answer, instruction_id and model_id", "annotate": "criteria_score, teacher and answer_id",
             "traces": "reasoning, reasoning_score and item_id"}[given]
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"judge-train data {stage}: error: {source}: line 1: a row of the {given} stage's output (it holds {marks}): "
        f"the {stage} stage reads the {reads} stage's output")


@pytest.mark.parametrize("key", ["model", "messages", "max_tokens", "temperature", "stream"])
def test_an_extra_body_key_the_client_sets_is_refused_by_the_endpoint(key):
    """``extra_body`` is merged over the request body: its ``max_tokens`` (or ``model``, ``temperature``,
    ``messages``) replaced the endpoint's on the wire while the rows named the endpoint's model and the client bounded
    the answer by the endpoint's ``max_tokens`` (a 40-character answer under 4096 tokens refused as oversized); its
    ``stream`` made every reply an event stream the client cannot read. Refused when the endpoint is built."""
    from train.synthetic.config import EndpointConfig

    with pytest.raises(ValueError) as refused:
        EndpointConfig(model="t", max_tokens=2, extra_body={"top_p": 0.9, key: 1})
    assert str(refused.value).startswith(f"endpoint t: extra_body: {key!r} is a field the client sets itself")
    assert EndpointConfig(model="t", extra_body={"top_p": 0.9, "seed": 3}).extra_body == {"top_p": 0.9, "seed": 3}
