"""Generate the bundled sample data, ``judge/data/sample.jsonl``, from ``judge/data/sample_content.yaml`` (fixed seed).

    python -m scripts.make_sample                          # rewrite judge/data/sample.jsonl
    python -m scripts.make_sample --out /tmp/sample.jsonl  # write elsewhere (e.g. to diff against the bundled file)

Sample data written for this project, not the POLLUX benchmark: Russian instructions on Zero-Shot and Standard task
types of the vendored taxonomy, hand-written answers of fictional evaluated models (``yozh-mini``, ``vorona-3b``,
``orel-7b``, ``lisa-13b``, ``sokol-70b``) of varying quality, and for each answer 2-4 criteria from its leaf's
criteria set with the real rubric text. Every answer carries the level the experts converge on per criterion
("2"), or two levels the panel splits between ("0/1": equal halves, so no unique mode). The seeded generator draws
the panel size (2-5), the occasional dissenting expert one level away, and assembles each expert's rationale from
per-criterion phrases and the answer-specific remark. Each panel is drawn from a pool of eight named experts
(``EXPERTS``, stable ids in ``expert_ids``) by a generator of its own, so the scores do not depend on the names and
every expert scores enough items for the alternative annotator test (eval/validity). Panel sizes ignore the
paper's overlap per criterion group and its one-annotator Technical Problems items, and no expert abstains
(docs/contract.md, "Sample data"). The content (instructions, answers, remarks, phrases) is data,
``sample_content.yaml``; this module is the logic that turns it into records.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from judge.record_sources import write_jsonl
from judge.records import JudgeRecord
from judge.scales import has_unique_mode
from judge.splits import ZERO_SHOT, split_of
from judge.taxonomy import Criterion, Task, Taxonomy, load_taxonomy

SEED = 20240917
CONTENT = "sample_content.yaml"  # in judge/data, shipped with the package
DEFAULT_OUT = Path(__file__).resolve().parents[1] / "judge" / "data" / "sample.jsonl"
# Panel sizes as drawn for rows the experts converge on; split rows use an even panel (2 or 4).
PANEL_SIZES = (2, 3, 3, 3, 4, 4, 5)
# Share of converging rows where every expert gives the same score; the rest have one or two dissenters.
FULL_AGREEMENT = 0.5
# Critical criteria state a fact about the answer (a censor stub, an unreadable answer): 1 is the bad outcome.
# Neither they nor the other two-level criteria (the code runs or not) get a lone dissenter: a flip of the binary
# verdict is a disagreement about facts, written as an explicit split where it is plausible.
CRITICAL = ("narushenie_formata", "censor")
# The expert pool: each panel is a draw of distinct experts from it, by a generator of its own (seed + 1), so adding
# the ids left the scores and rationales of the sample unchanged.
EXPERTS = tuple(f"expert-{i:02d}" for i in range(1, 9))


@dataclass(frozen=True)
class Answer:
    """One evaluated model's answer.

    Attributes:
        model_id: the fictional model.
        scores: one token per criterion of the item: the level the experts converge on ("2") or the two levels
            an evenly split panel gives ("0/1").
        text: the answer.
        notes: criterion id or base id -> what the experts point at under that criterion.
    """

    model_id: str
    scores: str
    text: str
    notes: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Item:
    """One instruction with its leaf task, the criteria its answers are scored on, and the answers."""

    path: tuple[str, ...]
    difficulty: str
    instruction: str
    criteria: tuple[str, ...]
    answers: tuple[Answer, ...]
    reference: str = ""


@dataclass(frozen=True)
class Phrases:
    """What the experts' rationales are assembled from.

    Attributes:
        aspects: criterion base id -> (phrases for the scale's lowest, middle, highest level).
        verdicts, asides: "bad" / "mid" / "good" -> closing verdicts / optional asides.
        stricter, milder: what a dissenter below / above the panel's level says instead of the remark.
    """

    aspects: dict[str, tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]]
    verdicts: dict[str, tuple[str, ...]]
    asides: dict[str, tuple[str, ...]]
    stricter: tuple[str, ...]
    milder: tuple[str, ...]


def load_content(path: str | Path | None = None) -> tuple[Phrases, tuple[Item, ...]]:
    """Read the sample's content: the phrases and the items, in file order.

    Args:
        path: the YAML file (default: ``CONTENT``, shipped with the package).

    Raises:
        ValueError: a missing or unknown key, or a value of the wrong kind, naming where in the file.
    """
    import yaml

    source = Path(path) if path else resources.files("judge") / "data" / CONTENT
    raw = yaml.safe_load(source.read_text(encoding="utf-8"))
    where = str(path or CONTENT)
    top = _fields(raw, where, ("phrases", "items"))
    phrases = _fields(top["phrases"], f"{where}: phrases", ("aspects", "verdicts", "asides", "stricter", "milder"))
    aspects = {}
    for base_id, levels in _fields(phrases["aspects"], f"{where}: phrases.aspects").items():
        at = f"{where}: phrases.aspects.{base_id}"
        levels = _fields(levels, at, ("lowest", "middle", "highest"))
        aspects[base_id] = tuple(_texts(levels[key], f"{at}.{key}") for key in ("lowest", "middle", "highest"))
    by_quality = {
        key: {quality: _texts(texts, f"{where}: phrases.{key}.{quality}")
              for quality, texts in _fields(phrases[key], f"{where}: phrases.{key}", ("bad", "mid", "good")).items()}
        for key in ("verdicts", "asides")
    }
    if not isinstance(top["items"], list):
        raise ValueError(f"{where}: items must be a list")
    items = []
    for i, raw_item in enumerate(top["items"]):
        at = f"{where}: items[{i}]"
        item = _fields(raw_item, at, ("path", "difficulty", "instruction", "criteria", "answers"), ("reference",))
        if not isinstance(item["answers"], list):
            raise ValueError(f"{at}.answers must be a list")
        answers = []
        for j, raw_answer in enumerate(item["answers"]):
            at_answer = f"{at}.answers[{j}]"
            answer = _fields(raw_answer, at_answer, ("model", "scores", "text", "notes"))
            notes = _fields(answer["notes"], f"{at_answer}.notes")
            answers.append(Answer(
                model_id=_text(answer["model"], f"{at_answer}.model"),
                scores=_text(answer["scores"], f"{at_answer}.scores"),
                text=_text(answer["text"], f"{at_answer}.text"),
                notes={key: _text(note, f"{at_answer}.notes.{key}") for key, note in notes.items()},
            ))
        items.append(Item(
            path=_texts(item["path"], f"{at}.path"),
            difficulty=_text(item["difficulty"], f"{at}.difficulty"),
            instruction=_text(item["instruction"], f"{at}.instruction"),
            criteria=_texts(item["criteria"], f"{at}.criteria"),
            answers=tuple(answers),
            reference=_text(item.get("reference", ""), f"{at}.reference"),
        ))
    return Phrases(
        aspects=aspects,
        verdicts=by_quality["verdicts"],
        asides=by_quality["asides"],
        stricter=_texts(phrases["stricter"], f"{where}: phrases.stricter"),
        milder=_texts(phrases["milder"], f"{where}: phrases.milder"),
    ), tuple(items)


def _fields(node, where: str, required: tuple[str, ...] | None = None, optional: tuple[str, ...] = ()) -> dict:
    """``node`` as a mapping; with ``required``, exactly those keys plus any of ``optional``."""
    if not isinstance(node, dict):
        raise ValueError(f"{where}: expected a mapping, got {type(node).__name__}")
    if required is not None:
        missing = [key for key in required if key not in node]
        unknown = sorted(set(node) - set(required) - set(optional))
        if missing or unknown:
            problems = [f"{what} keys {keys}" for what, keys in (("missing", missing), ("unknown", unknown)) if keys]
            raise ValueError(f"{where}: {'; '.join(problems)}")
    return node


def _text(value, where: str) -> str:
    # Outer whitespace is layout, not content: a `|` block scalar ends in a newline, a `|-` one does not.
    if not isinstance(value, str):
        raise ValueError(f"{where}: expected text, got {value!r} (quote it in the YAML)")
    return value.strip()


def _texts(values, where: str) -> tuple[str, ...]:
    if not isinstance(values, list):
        raise ValueError(f"{where}: expected a list of texts, got {values!r}")
    return tuple(_text(value, f"{where}[{k}]") for k, value in enumerate(values))


# ======================================================================================== generation
def _leaf(tax: Taxonomy, path: tuple[str, ...]) -> Task:
    leaves = tax.find_tasks(*path)
    if len(leaves) != 1 or leaves[0].path != path:
        raise ValueError(f"{' / '.join(path)} is not one leaf task of the taxonomy")
    return leaves[0]


def _quality(crit: Criterion, score: int) -> str:
    """How a level of the criterion's scale reads: "bad", "mid" or "good" (critical criteria: 0 is good)."""
    levels = crit.scale.levels
    if crit.base_id in CRITICAL:
        return "good" if score == levels[0] else "bad"
    if score == levels[0]:
        return "bad"
    return "good" if score == levels[-1] else "mid"


def _token_levels(token: str, crit: Criterion, where: str) -> list[int]:
    """The levels a score token names: one ("2"), or two different ones an evenly split panel gives ("0/1").

    Raises:
        ValueError: any other token (three levels, one level twice, a non-integer) or a level off the criterion's
            scale, naming ``where`` (the item and the model), the token and the criterion: read as written, such a
            token would become another panel without a word.
    """
    levels = crit.scale.levels
    said = f"{where}: score {token!r} for {crit.id}"
    parts = [int(p) for p in token.split("/")] if re.fullmatch(r"[0-9]+(/[0-9]+)?", token) else []
    if not parts or len(set(parts)) != len(parts):
        raise ValueError(f"{said}: a token is one level or two different levels split evenly (\"2\", \"0/1\")")
    if any(p not in levels for p in parts):
        raise ValueError(f"{said}: outside the scale {levels}")
    return parts


def _expert_scores(token: str, crit: Criterion, rng: random.Random, where: str) -> list[int]:
    levels = crit.scale.levels
    parts = _token_levels(token, crit, where)
    if len(parts) == 2:  # an evenly split panel: no unique mode
        half = rng.choice((1, 1, 2))
        scores = [parts[0]] * half + [parts[1]] * half
    elif len(levels) == 2 or rng.random() < FULL_AGREEMENT:
        scores = [parts[0]] * rng.choice(PANEL_SIZES)
    else:
        target = parts[0]
        size = rng.choice(tuple(n for n in PANEL_SIZES if n >= 3))
        dissent = 1 if size < 5 else rng.choice((1, 2))  # always fewer than the experts giving the target
        scores = [target] * (size - dissent)
        for _ in range(dissent):
            if target == levels[0]:
                scores.append(target + 1)
            elif target == levels[-1]:
                scores.append(target - 1)
            else:
                scores.append(target + rng.choice((-1, 1)))
    rng.shuffle(scores)
    return scores


def _sentence(text: str) -> str:
    text = text.strip()
    if text and text[0].isalpha():
        text = text[0].upper() + text[1:]
    return text if text.endswith((".", "!", "?", "…")) else text + "."


def _feedback(
    crit: Criterion, scores: list[int], token: str, note: str, phrases: Phrases, rng: random.Random
) -> list[str]:
    """One rationale per expert: a phrase for the expert's level of the criterion plus the answer-specific remark.

    Experts who give the level the panel converges on (or either level of a split panel) cite the remark; a
    dissenter one level away says why they are stricter or milder instead, since the remark states the consensus.
    """
    levels = crit.scale.levels
    converged = {int(p) for p in token.split("/")}
    texts: list[str] = []
    for score in scores:
        quality = _quality(crit, score)
        position = 0 if score == levels[0] else 2 if score == levels[-1] else 1
        aspects = phrases.aspects[crit.base_id][position]
        for _attempt in range(12):
            aspect = rng.choice(aspects)
            if score in converged:
                # An aspect phrase that opens with the remark's first word would only repeat it.
                echo = aspect.split()[0].lower() == note.split()[0].lower().strip("«»:,")
                form = rng.choice((1, 3) if echo else (0, 1, 3) if ":" in aspect + note else (0, 1, 2, 3))
                if form == 0:
                    text = f"{aspect}. {_sentence(note)}"
                elif form == 1:
                    text = _sentence(note)
                elif form == 2:
                    text = f"{aspect}: {note.rstrip('.')}."
                else:
                    text = f"{_sentence(note)} {rng.choice(phrases.verdicts[quality])}."
                if form != 3 and rng.random() < 0.35:
                    text += f" {rng.choice(phrases.asides[quality])}."
            else:
                hedge = rng.choice(phrases.stricter if score < min(converged) else phrases.milder)
                text = f"{aspect}. {hedge}."
            if text not in texts:
                break
        texts.append(text)
    return texts


def build_records(seed: int = SEED) -> list[JudgeRecord]:
    """The sample records, in a fixed order with ids ``s0001``…; the same seed gives the same records.

    Raises:
        ValueError: content that does not fit the taxonomy (a path that is not a leaf, a criterion the leaf does
            not list, a difficulty the leaf does not define, a score token that is not one level or two different
            ones, a score outside the scale, a missing remark, a remark for a criterion the item is not scored on).
    """
    phrases, items = load_content()
    rng = random.Random(seed)
    panels = random.Random(seed + 1)
    tax = load_taxonomy()
    records: list[JudgeRecord] = []
    for item in items:
        leaf = _leaf(tax, item.path)
        where = f"{' / '.join(item.path)}: {item.instruction[:40]!r}"
        if item.difficulty not in leaf.complexity:
            raise ValueError(f"{where}: difficulty {item.difficulty!r} not in {sorted(leaf.complexity)}")
        if bool(item.reference) != leaf.has_gold:
            raise ValueError(f"{where}: reference answers go with exactly the leaves that have gold answers")
        criteria = []
        for cid in item.criteria:
            if cid not in leaf.criteria:
                raise ValueError(f"{where}: criterion {cid} is not in the leaf's criteria set")
            criteria.append(tax.criterion(cid))
            if criteria[-1].base_id not in phrases.aspects:
                raise ValueError(f"{where}: criterion {cid} has no phrases (phrases.aspects.{criteria[-1].base_id})")
        scored = {key for crit in criteria for key in (crit.id, crit.base_id)}
        for answer in item.answers:
            tokens = answer.scores.split()
            if len(tokens) != len(criteria):
                raise ValueError(f"{where}: {answer.model_id} has {len(tokens)} scores for {len(criteria)} criteria")
            for key in answer.notes:
                if key not in scored:  # a typo of a criterion's id, or a criterion taken off the item
                    raise ValueError(f"{where}: {answer.model_id} has a remark for {key}, a criterion the item is "
                                     f"not scored on (its criteria: {', '.join(item.criteria)})")
            for crit, token in zip(criteria, tokens):
                note = answer.notes.get(crit.id) or answer.notes.get(crit.base_id)
                if not note:
                    raise ValueError(f"{where}: {answer.model_id} has no remark for {crit.base_id}")
                scores = _expert_scores(token, crit, rng, f"{where}: {answer.model_id}")
                records.append(
                    JudgeRecord(
                        id=f"s{len(records) + 1:04d}",
                        instruction=item.instruction,
                        reference_answer=item.reference,
                        answer=answer.text,
                        criteria_name=crit.name["ru"],
                        rubrics=crit.rubric("ru"),
                        criteria_score=sum(scores) / len(scores),
                        expert_scores=tuple(float(s) for s in scores),
                        expert_feedback=tuple(_feedback(crit, scores, token, note, phrases, rng)),
                        expert_ids=tuple(panels.sample(EXPERTS, len(scores))),
                        model_id=answer.model_id,
                        task_type=leaf.task_type,
                        task_subtype=leaf.subtype or "",
                        task_subsubtype=leaf.subsubtype or "",
                        difficulty=item.difficulty,
                        domain=leaf.domain.get("en", ""),
                    )
                )
    return records


def summary(records: list[JudgeRecord]) -> dict[str, int]:
    """The counts the generator prints."""
    splits = Counter(split_of(record) for record in records)
    return {
        "rows": len(records),
        "instructions": len({record.instruction for record in records}),
        "models": len({record.model_id for record in records}),
        "task_types": len({record.task_type for record in records}),
        "zero_shot": splits[ZERO_SHOT],
        "standard": len(records) - splits[ZERO_SHOT],
        "no_unique_mode": sum(not has_unique_mode(record.expert_scores) for record in records),
    }


def main(argv: list[str] | None = None) -> int:
    from judge.plumbing.config_files import ExactArgumentParser  # long options in full, never abbreviated

    parser = ExactArgumentParser(prog="python scripts/make_sample.py", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="JSONL file to write (default: %(default)s)")
    args = parser.parse_args(argv)
    if args.out.is_dir():  # refused before any work, not a traceback from the final rename
        parser.error(f"--out {args.out}: a folder, not a file; give the JSONL file to write")
    try:  # its folder made before any work, as the writer would make it after it
        args.out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        parser.error(f"--out {args.out}: cannot be written ({err.strerror or err})")
    records = build_records(SEED)
    try:
        write_jsonl(records, args.out)
    except OSError as err:  # a folder that cannot be written in: one line, not the writer's traceback
        parser.error(f"--out {args.out}: cannot be written ({err.strerror or err})")
    counts = summary(records)
    print(f"wrote {args.out} (seed {SEED})")
    for key, value in counts.items():
        print(f"  {key:15s} {value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
