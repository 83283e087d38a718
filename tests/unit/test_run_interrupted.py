"""Ctrl+C during `judge-eval run`: one line and exit code 130, not a KeyboardInterrupt traceback; the rows already
journaled are kept, and a rerun asks only for the rest.

``asyncio.run`` cancels the judging tasks and re-raises Ctrl+C as ``KeyboardInterrupt``, which reached the console
as a traceback and a death by SIGINT. Here the signal is real: the scripted judge sends SIGINT to this process
while it is asked its fourth question (one request at a time, so three rows are journaled by then), the order made
by the request itself, not by a clock.
"""

from __future__ import annotations

import json
import os
import signal

import pytest

import judge
from eval.cli import main
from tests.support.eval_cli import sample_by_split
from tests.unit.test_eval_cli import ScriptedServer, _ids, _run_args


class CtrlCAt(ScriptedServer):
    """A scripted judge that presses Ctrl+C on this process when its ``at``-th chat request arrives (then answers it,
    too late: the run is being cancelled)."""

    def __init__(self, at: int):
        super().__init__()
        self.at, self.asked = at, 0
        # The pressed request's answer may meet a connection the cancelled run closed: the server's own broken pipe,
        # kept off stderr (stderr is judge-eval's one line).
        self._server.handle_error = lambda request, client_address: None

    def _respond(self, path, body):
        if path == "/v1/chat/completions":
            with self.lock:
                self.asked += 1
                press = self.asked == self.at
            if press:
                os.kill(os.getpid(), signal.SIGINT)
        return super()._respond(path, body)


def test_ctrl_c_during_a_run_is_one_line_exit_130_and_keeps_the_rows(tmp_path, capsys, python_sigint_handler):
    """The twelve sample records, one request at a time; SIGINT at the fourth: exit 130, the one line, the first
    three records' rows on disk. The rerun (no signal) asks the nine others, the fourth among them, and the run is
    whole."""
    records = sample_by_split()
    data = tmp_path / "records.jsonl"
    judge.write_jsonl(records, data)
    out = tmp_path / "run"
    ids = [r.id for r in records]
    with CtrlCAt(at=4) as server:
        capsys.readouterr()
        try:
            code = main(_run_args(server.base_url, data, out, "--concurrency", "1"))
        except KeyboardInterrupt:
            pytest.fail("Ctrl+C escaped judge-eval's main as a traceback")
        err = capsys.readouterr().err
        assert code == 130
        assert err == "judge-eval run: interrupted; the rows written are kept, a rerun resumes\n"
        assert server.asked == 4
        assert _ids(out / "predictions.jsonl") == ids[:3]
    with CtrlCAt(at=0) as rerun:
        assert main(_run_args(rerun.base_url, data, out, "--concurrency", "1")) == 0
        assert rerun.asked == 9
    assert sorted(_ids(out / "predictions.jsonl")) == sorted(ids)


def test_ctrl_c_before_the_first_row_claims_no_rows_kept(tmp_path, capsys, python_sigint_handler):
    """Ctrl+C while the first question is asked: no row was journaled, so the folder this launch made is left as it
    was found (absent), and the one line claims no rows kept and no resume (there is nothing to resume from)."""
    records = sample_by_split()
    data = tmp_path / "records.jsonl"
    judge.write_jsonl(records, data)
    out = tmp_path / "runs" / "run"
    with CtrlCAt(at=1) as server:
        capsys.readouterr()
        code = main(_run_args(server.base_url, data, out, "--concurrency", "1"))
        err = capsys.readouterr().err
    assert (code, err, server.asked) == (130, "judge-eval run: interrupted\n", 1)
    assert not (tmp_path / "runs").exists()


def test_ctrl_c_names_the_rows_kept_in_an_out_the_config_file_gave(tmp_path, capsys, python_sigint_handler):
    """--out unset on the command line, out: in the --config YAML: the Ctrl+C line reads the resolved folder, so the
    rows journaled there before the stop are said to be kept (read from the flags, it said nothing was kept)."""
    records = sample_by_split()
    data = tmp_path / "records.jsonl"
    judge.write_jsonl(records, data)
    out = tmp_path / "run"
    config = tmp_path / "run.yaml"
    config.write_text(f"out: {out}\n", encoding="utf-8")
    with CtrlCAt(at=4) as server:
        capsys.readouterr()
        code = main(["run", "--config", str(config), "--judge", server.base_url, "--data", str(data), "--max-tokens",
                     "32", "--no-progress", "--backoff-s", "0.01", "--concurrency", "1"])  # _run_args' but --out
        err = capsys.readouterr().err
    assert (code, err) == (130, "judge-eval run: interrupted; the rows written are kept, a rerun resumes\n")
    assert _ids(out / "predictions.jsonl") == [r.id for r in records][:3]


def test_ctrl_c_before_the_first_row_of_an_overwrite_claims_no_rows_kept(tmp_path, capsys, python_sigint_handler):
    """--overwrite empties the earlier run's predictions before its judge is asked: stopped at its first question,
    the folder is still there but holds no row, so the line claims none kept."""
    records = sample_by_split()
    data = tmp_path / "records.jsonl"
    judge.write_jsonl(records, data)
    out = tmp_path / "run"
    with CtrlCAt(at=3) as server:
        assert main(_run_args(server.base_url, data, out, "--concurrency", "1")) == 130
    assert len(_ids(out / "predictions.jsonl")) == 2
    with CtrlCAt(at=1) as server:
        capsys.readouterr()
        code = main(_run_args(server.base_url, data, out, "--concurrency", "1", "--overwrite"))
        err = capsys.readouterr().err
    assert (code, err, server.asked) == (130, "judge-eval run: interrupted\n", 1)
    assert not (out / "predictions.jsonl").is_file() or not (out / "predictions.jsonl").stat().st_size


def test_ctrl_c_before_the_first_row_of_a_pairwise_overwrite_claims_no_rows_kept(tmp_path, capsys,
                                                                               python_sigint_handler):
    """A scored pairwise run holds pairwise_pairs.jsonl, score's per-pair verdicts: --overwrite discards it with the
    judgments it was computed from, so Ctrl+C at the overwrite's first question finds no row in the folder and the
    line claims none kept (a pairwise_pairs.jsonl left in place would read as rows kept, of a run no longer there)."""
    data = tmp_path / "pairs.jsonl"
    data.write_text("".join(json.dumps({"id": f"p{k}", "instruction": "q", "answer_1": f"a{k}", "answer_2": "b",
                                        "rubrics": "-1, 0, 1"}) + "\n" for k in range(2)), encoding="utf-8")
    out = tmp_path / "run"
    with CtrlCAt(at=0) as server:
        assert main(_run_args(server.base_url, data, out, "--concurrency", "1")) == 0
    assert main(["score", "--predictions", str(out), "--n-boot", "10"]) == 0
    assert (out / "pairwise_pairs.jsonl").is_file()
    with CtrlCAt(at=1) as server:
        capsys.readouterr()
        code = main(_run_args(server.base_url, data, out, "--concurrency", "1", "--overwrite"))
        err = capsys.readouterr().err
    assert (code, err, server.asked) == (130, "judge-eval run: interrupted\n", 1)
    assert not (out / "pairwise_pairs.jsonl").exists()
