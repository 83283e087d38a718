"""The release's ``-1`` abstentions (``annotations`` score -1: "the criterion does not apply") reach no validity
figure as a number: the bundled sample with an abstaining named expert added to every item's panel gives the
section of the sample itself."""

from __future__ import annotations

import json

import judge
from tests.unit.test_validity_report import _run

ABSTAINS = {"score": -1, "comment": "Критерий неприменим"}


def test_an_abstaining_named_expert_changes_no_validity_figure(tmp_path):
    """Each item gets, second in its ``annotations``, a -1 from one of the sample's eight experts who did not score
    it (so that a -1 read as a score would enter that expert's alt-test pairs, the ceiling, alpha and leniency on a
    0-2 scale). The validity section equals the sample's own, and the headline counts the abstentions (341, one per
    item)."""
    rows = [json.loads(line) for line in judge.sample_data_path().read_text(encoding="utf-8").splitlines()]
    names = [f"expert-0{k}" for k in range(1, 9)]
    released = []
    for row in rows:
        spare = next(name for name in names if name not in row["expert_ids"])
        annotations = [{"score": s, "comment": c} for s, c in zip(row.pop("expert_scores"), row.pop("expert_feedback"))]
        row["annotations"] = [annotations[0], ABSTAINS, *annotations[1:]]
        row["expert_ids"] = [row["expert_ids"][0], spare, *row["expert_ids"][1:]]
        released.append(row)
    data = tmp_path / "abstaining.jsonl"
    data.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in released), encoding="utf-8")
    records = judge.load_records(judge.sample_data_path())
    plain = _run(tmp_path, "plain", records, 1, judge.sample_data_path())
    abstaining = _run(tmp_path, "abstaining", records, 1, data)
    overall = abstaining["splits"]["all"]["overall"]
    assert overall["n_abstained"] == len(rows) == 341
    assert overall["mae"] == plain["splits"]["all"]["overall"]["mae"]
    assert abstaining["validity"]["named_experts"] is True
    assert abstaining["validity"] == plain["validity"]
