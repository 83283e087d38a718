"""Every rubric POLLUX ships reads to its own scale, in every layout the reader takes: a guard for any change to
``judge.scales``.

The expected scale is the taxonomy's own (its level keys, and the best level the taxonomy gives the criterion), not
a reading captured from the reader. The texts are ``judge/data/criteria.json`` (POLLUX's ``metainfo/criteria.json``)
both as published and as ``judge.taxonomy`` repairs them, in Russian and English, each level written in each of the
reader's line layouts, one or two newlines apart, bare or after a sentence stating the scale's own range.
"""

import json
from importlib import resources

import pytest

import judge
from judge import Scale, load_taxonomy, scale_of

LAYOUTS = {
    "colon": "{level}: {text}",
    "hyphen": "{level} - {text}",
    "em dash": "{level} — {text}",
    "full stop": "{level}. {text}",
    "parenthesis": "{level}) {text}",
    "bulleted": "- {level}: {text}",
    "bold": "**{level}**: {text}",
}
SEPARATORS = {"blank line": "\n\n", "newline": "\n"}
# A sentence before the levels stating the range they run over, as a hand-written rubric may open.
PREAMBLES = {
    "none": "",
    "range in Russian": "Оцените ответ по шкале от {low} до {high}.\n\n",
    "range in English": "Score the answer from {low} to {high}.\n",
}


def _vendored_texts():
    """(criterion id, language, source, level -> text) for every vendored rubric, published and repaired."""
    published = json.loads((resources.files("judge") / "data" / "criteria.json").read_text(encoding="utf-8"))
    taxonomy = load_taxonomy()
    assert len(published) == len(taxonomy.criteria) == 295
    for cid, entry in published.items():
        for lang in ("ru", "en"):
            yield cid, lang, "published", {int(k): (v or "").strip() for k, v in entry["scale"][lang].items()}
            yield cid, lang, "repaired", taxonomy.criteria[cid].scale_texts[lang]


def _expected(cid: str, texts: dict[int, str]) -> Scale:
    """The scale a rubric of these levels states (its own keys: ``creativity__3``'s published Russian keys are
    1..3), oriented as the taxonomy orients the criterion."""
    own = load_taxonomy().criteria[cid].scale
    scale = Scale(tuple(sorted(texts)))
    return scale.best_at_lowest() if own.best == own.min else scale


@pytest.mark.parametrize("preamble", PREAMBLES, ids=list(PREAMBLES))
@pytest.mark.parametrize("separator", SEPARATORS, ids=list(SEPARATORS))
@pytest.mark.parametrize("layout", LAYOUTS, ids=list(LAYOUTS))
def test_every_vendored_rubric_reads_to_its_own_scale(layout, separator, preamble):
    """Each of the 295 criteria x 2 languages x (published, repaired) rubrics, written in this layout, reads to its
    levels, with the taxonomy's best level and flag status (``oriented_scale``)."""
    taxonomy = load_taxonomy()
    wrong = []
    for cid, lang, source, texts in _vendored_texts():
        levels = sorted(texts)
        body = SEPARATORS[separator].join(LAYOUTS[layout].format(level=k, text=texts[k]) for k in levels)
        text = PREAMBLES[preamble].format(low=levels[0], high=levels[-1]) + body
        expected = _expected(cid, texts)
        name = taxonomy.criteria[cid].name[lang]
        try:
            got = judge.oriented_scale(name, text)
        except judge.ScaleError as err:
            wrong.append((cid, lang, source, f"ScaleError: {err}"))
            continue
        if (got, got.is_flag, got.worst) != (expected, expected.is_flag, expected.worst):
            wrong.append((cid, lang, source, got))
    assert not wrong, wrong[:5]


def test_every_vendored_rubric_mapping_reads_to_its_own_scale():
    """The rubrics as mappings (level -> text, and nested by language as criteria.json holds them) read to the same
    levels."""
    published = json.loads((resources.files("judge") / "data" / "criteria.json").read_text(encoding="utf-8"))
    for cid, entry in published.items():
        assert scale_of(entry["scale"]).levels == tuple(sorted(int(k) for k in entry["scale"]["ru"])), cid
        for lang in ("ru", "en"):
            assert scale_of(entry["scale"][lang]).levels == tuple(sorted(int(k) for k in entry["scale"][lang])), cid


def test_every_sample_rubric_reads_to_its_criterions_scale():
    """The bundled sample's rubric texts (``judge/data/sample.jsonl``) read to their criterion's taxonomy scale."""
    taxonomy = load_taxonomy()
    rows = [json.loads(line) for line in
            (resources.files("judge") / "data" / "sample.jsonl").read_text(encoding="utf-8").splitlines() if line]
    assert rows
    for row in rows:
        by_rubric = [c for c in taxonomy.criteria.values() if c.rubric("ru") == row["rubrics"]]
        assert by_rubric, row["id"]
        assert judge.oriented_scale(row["criteria_name"], row["rubrics"]) == by_rubric[0].scale, row["id"]
