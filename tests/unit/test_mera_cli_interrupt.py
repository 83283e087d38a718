"""``judge-eval mera`` stopped with Ctrl+C: one line and exit 130 (as ``judge-eval run``), the answers kept."""

from __future__ import annotations

import json
import os
import signal

from eval.mera import cli
from tests.support.mera_humaneval import SAMPLE
from tests.support.scripted_endpoint import ScriptedEndpoint
from tests.unit.test_mera_rutie import completion_body


def test_ctrl_c_mid_run_is_one_line_exit_130_and_keeps_the_answers(tmp_path, capsys, python_sigint_handler):
    """A real SIGINT while the second task is being answered: the first task's generation stays saved for the
    rerun, and the command says so in one line with exit 130. It ended in a KeyboardInterrupt traceback."""
    def respond(path, body):
        if "def strlen(" in body["prompt"]:  # the second task: the user presses Ctrl+C while it is answered
            os.kill(os.getpid(), signal.SIGINT)
        return 200, completion_body(body["model"], ["\n    return None\n"], prompt_tokens=10)

    out = tmp_path / "run"
    with ScriptedEndpoint(respond) as endpoint:
        code = cli.main(["ruhumaneval", "--endpoint", endpoint.base_url, "--model", "scripted", "--data", str(SAMPLE),
                         "--out", str(out), "--limit", "4", "--n", "1", "--k", "1", "--concurrency", "1",
                         "--max-retries", "0"])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 130
    assert f"judge-eval mera ruhumaneval: interrupted; the answers saved so far in {out} are kept" in err, err
    assert "Traceback" not in err
    saved = [json.loads(line)["task_id"] for line in (out / cli.GENERATIONS_FILE).read_text().splitlines()]
    assert saved[0] == "0" and len(saved) < 4  # the run stopped: the last tasks were never asked
    assert not (out / cli.METRICS_FILE).exists()
