"""What a resumed synthetic stage must share with the run that wrote its journal (``train.synthetic.cli``'s run key)."""

from __future__ import annotations

from train.synthetic.cli import stage_run_key
from train.synthetic.config import AnnotateConfig, TracesConfig

TEACHER = {"model": "teacher", "base_url": "http://a:8000/v1", "temperature": 0.6, "max_tokens": 512}


def test_annotate_keys_its_max_tokens_and_traces_does_not():
    """A traces rerun with a raised cap asks again what the lower cap cut, so its cap is left out of the key; annotate
    drops a cut verdict as verdict_cut and no rerun asks it again, so a raised cap on its folder would leave those
    items dropped as if the new cap had been tried on them: its cap stays in the key (a new --output instead)."""
    annotate = stage_run_key("annotate", AnnotateConfig(teacher=TEACHER), None)
    traces = stage_run_key("traces", TracesConfig(teacher=TEACHER), None)
    assert annotate["teacher"] == {"model": "teacher", "temperature": 0.6, "max_tokens": 512}
    assert traces["teacher"] == {"model": "teacher", "temperature": 0.6}


def test_annotate_seeds_nothing_refuses_a_non_zero_seed_and_resumes_a_folder_keyed_with_one(tmp_path, capsys):
    """annotate never read its seed, yet keyed its folder by it: after a first run, --seed 1 on the same folder was
    exit 2 "holds progress made with other settings (seed: 0 -> 1)". The seed is out of the key (a folder keyed with
    it resumes, asking nothing), and one other than 0 is refused when the config loads, naming what seeds a teacher."""
    import json

    from tests.support.scripted_endpoint import ScriptedEndpoint, chat_completion
    from tests.unit.test_synthetic_stages import _answer_rows
    from train.synthetic.cli import main

    assert "seed" not in stage_run_key("annotate", AnnotateConfig(teacher=TEACHER), None)
    (tmp_path / "answers").mkdir()
    (tmp_path / "answers" / "answers.jsonl").write_text(json.dumps(_answer_rows()[0], ensure_ascii=False) + "\n")
    out = tmp_path / "annotate"
    respond = lambda path, body: (200, chat_completion("[FEEDBACK] Повторов нет. [RESULT] 2 [END]", "teacher"))  # noqa: E731
    with ScriptedEndpoint(respond, model="teacher") as server:
        config = tmp_path / "annotate.yaml"
        config.write_text(json.dumps({"teacher": {"model": "teacher", "base_url": server.base_url},
                                      "criteria": ["repeats"], "backoff_s": 0.0}))
        argv = ["annotate", "--config", str(config), "--input", str(tmp_path / "answers"), "--output", str(out)]
        assert main(argv) == 0
        capsys.readouterr()
        assert main([*argv, "--seed", "1"]) == 2
        assert capsys.readouterr().err.strip().splitlines() == [
            "judge-train data annotate: error: annotate: seed 1 seeds nothing in this stage (no job is assigned or "
            "shuffled): remove `seed` from the config (or set it to 0); a folder run with it resumes as it is. "
            "Leave the teacher unseeded: a seeded teacher answers each re-ask the same way."]
        key_file = out / "run_key.json"
        key = json.loads(key_file.read_text())
        assert "seed" not in key
        key_file.write_text(json.dumps({**key, "seed": 0}))  # as the earlier version keyed it
        assert main(argv) == 0
        assert len(server.requests) == 1
    assert "seed" not in json.loads(key_file.read_text())
    assert json.loads((out / "summary.json").read_text())["kept"] == 1


def test_a_folder_another_stage_wrote_is_refused_before_anything_in_it_changes(tmp_path, capsys):
    """split writes no journal, so its folder held no progress file for an answers run to be compared with: answers
    took the split's folder over, writing its answers.jsonl, dataset/ and summary.json beside the split's train.jsonl
    and validation.jsonl (which traces reads from that folder). A folder whose run.json names another stage is
    refused, naming both, with --overwrite too (it discards this stage's progress only), and nothing in it changes."""
    import json

    from tests.unit.test_synthetic_stages import _annotated
    from train.synthetic.cli import main

    (tmp_path / "annotate").mkdir()
    rows = [_annotated(f"i{k}", "Editing", "repeats") for k in range(4)]
    (tmp_path / "annotate" / "annotate.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    out = tmp_path / "split"
    assert main(["split", "--input", str(tmp_path / "annotate"), "--output", str(out)]) == 0
    before = {path.name: path.read_bytes() for path in out.iterdir() if path.is_file() and path.name != "run.lock"}
    config = tmp_path / "answers.yaml"
    config.write_text(json.dumps({"answer_models": [{"model": "m", "base_url": "http://127.0.0.1:9/v1"}],
                                  "backoff_s": 0.0}))
    capsys.readouterr()
    for extra in ([], ["--overwrite"]):
        argv = ["answers", "--config", str(config), "--input", str(tmp_path / "annotate" / "annotate.jsonl"),
                "--output", str(out), *extra]
        assert main(argv) == 2
        assert capsys.readouterr().err.strip().splitlines()[-1] == (
            f"judge-train data answers: error: {out} holds a `judge-train data split` run (its run.json), not a "
            "`judge-train data answers` one: use a fresh --output (--overwrite discards this command's own progress, "
            "never another command's files)")
        assert {path.name: path.read_bytes() for path in out.iterdir()
                if path.is_file() and path.name != "run.lock"} == before
        assert not (out / "answers.jsonl").exists()
