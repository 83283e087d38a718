"""judge-eval rank: POLLUX's answer.py -> score.py -> metrics.py against stand-in candidate and judge servers.

The tests of this subject that start heavy components (an engine, judge-serve, a Slurm cluster, a
browser, training or the sandbox); the others are tests/unit/test_eval_ranking.py.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path


from eval.cli import main
from tests.support.scripted_endpoint import ScriptedEndpoint, chat_completion
from tests.support.eval_ranking import CASES, FULLNESS, LITERACY, SAFE, rank_argv, tagged_verdict


def test_checkpoint_candidate_is_served_then_stopped(tiny_causal_dir, data: Path, tmp_path: Path,
                                                     tmp_path_factory) -> None:
    """`--model CHECKPOINT` serves the tiny model with vLLM for the answers, stops it, and judges what it said."""
    import psutil

    from tests.support.fixtures_models import FAST_ENGINE_ENV, TEST_KV_CACHE, copy_of

    # A copy of its own: the session folder is shared by both workers, so a server another worker starts on it
    # would read below as this run's leftover.
    tiny_causal_dir = copy_of(tiny_causal_dir, tmp_path_factory.mktemp("own-judge") / tiny_causal_dir.name)

    fixed = {SAFE: 0, LITERACY: 2, FULLNESS: 3}

    class AnyAnswerJudge(ScriptedEndpoint):
        def __init__(self):
            super().__init__(self._respond, model="pollux-judge-7b")

        def _respond(self, path: str, body: dict):
            if path != "/v1/chat/completions":
                return 404, {"detail": "Not Found"}
            criterion = body["messages"][0]["content"].split("### Критерий оценки:\n")[1].split("\n\n")[0]
            return 200, chat_completion(tagged_verdict(fixed[criterion]), body["model"])

    out = tmp_path / "bench"
    before = {p.pid for p in psutil.process_iter()}
    with AnyAnswerJudge() as judge:
        # Held to a word by vLLM's structured outputs: free, the tiny model may write whitespace alone, an answer
        # the judge is never asked about, and the comparison below would hold for no answer at all.
        code = main(rank_argv(str(tiny_causal_dir), judge.base_url, data, out, "--max-tokens", "8",
                                "--extra-body", json.dumps({"structured_outputs": {"regex": "[a-z]{2,8}"}}),
                                "--server-args", json.dumps(["--enforce-eager", "--dtype", "float32", "--max-model-len",
                                                             "2048", "--kv-cache-memory-bytes", TEST_KV_CACHE,
                                                             "--structured-outputs-config.backend", "guidance"]),
                                "--server-env", json.dumps({"HF_HUB_OFFLINE": "1", **FAST_ENGINE_ENV})))
        prompts = [b["messages"][0]["content"] for b in judge.bodies("/v1/chat/completions")]
    answers = [json.loads(line) for line in (out / "answers.jsonl").read_text(encoding="utf-8").splitlines()]
    assert code == 0 and [a["prompt_id"] for a in answers] == sorted(CASES)
    assert {a["model"] for a in answers} == {tiny_causal_dir.name} and all(a["error"] is None for a in answers)
    # Each answer with text is judged once on each criterion of its instruction, and nothing else is: the judge saw
    # the answers the served checkpoint wrote.
    said = Counter((a["answer"], criterion) for a in answers if a["answer"].strip()
                   for criterion in CASES[a["prompt_id"]][1])
    seen = Counter((p.split("### Ответ для оценки:\n")[1].split("\n\n### Критерий оценки:")[0],
                    p.split("### Критерий оценки:\n")[1].split("\n\n")[0]) for p in prompts)
    assert sum(said.values()) == sum(len(CASES[k][1]) for k in CASES), "an answer without text: not every item was judged"
    assert seen == said
    assert "vllm" in (out / "candidate" / "server.log").read_text(errors="replace").lower()
    leftovers = [p for p in psutil.process_iter(["cmdline"]) if p.pid not in before
                 and str(tiny_causal_dir) in " ".join(p.info["cmdline"] or [])]
    assert not leftovers, "the candidate's server outlived its stage"
