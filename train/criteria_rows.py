"""Training rows of the ``criteria: auto`` classifiers beyond hand labels: weakly labelled texts from the taxonomy
itself (``taxonomy_rows``: every leaf, no hand label needed) and the rows the shipped tfidf classifier is trained on
(``bundled_rows``: the bundled training set, the bundled sample's instructions and the taxonomy texts). Read by both
recipes, ``judge-train criteria-classifier`` (``train/criteria_classifier.py``) and ``judge-train classifier``
(``train/classifier.py``), and by ``bench/criteria_auto.py --train``.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from judge.criteria_auto.labelled import load_labelled, training_path
from judge.criteria_auto.policy import label_of
from judge.splits import STANDARD, ZERO_SHOT, load_split_spec
from judge.taxonomy import Taxonomy, load_taxonomy

__all__ = ["bundled_rows", "classifier_rows", "taxonomy_rows", "refuse_benchmark_sources"]


def refuse_benchmark_sources(sources, allow: bool, *, config_file: bool = True) -> None:
    """Refuse labelled sources in the released POLLUX benchmark's schema, as ``judge-train build-data`` refuses them
    (``train.build_data.BenchmarkRowsError``): a task classifier trained on the benchmark's instructions has seen the
    test it routes in ``judge-eval run --criteria auto``, Zero-Shot task types included, and the dataset card
    (ai-forever/POLLUX) asks that the benchmark not be trained on.

    Args:
        config_file: whether the command takes a config file, whose key the refusal then names beside the flag.

    Raises:
        BenchmarkRowsError: naming the source, unless ``allow``.
    """
    from judge.record_sources import jsonl_rows, load_records_report
    from judge.records import is_benchmark_row, row_place
    from train.build_data import BenchmarkRowsError

    if allow:
        return
    for source in sources:
        path = Path(str(source))
        if path.suffix == ".jsonl":
            # Labelled rows of other shapes too, so each row's keys tell (read as judge.load_records reads a row,
            # an unreadable line named): every row, since a file whose first rows are plain labelled ones can hold
            # benchmark rows further down (two files concatenated).
            found = next((index for _, index, row in jsonl_rows(path)
                          if isinstance(row, dict) and is_benchmark_row(row)), None)  # fmt: skip
            where = f"{source}: {row_place(found)} (the first such row) is" if found is not None else None
        else:  # every record's row is counted by the load (LoadReport.n_benchmark_rows)
            report = load_records_report(path, make_id=True)[1]
            where = (f"{source}: {report.n_benchmark_rows} of {report.n_rows} rows are" if report.n_benchmark_rows
                     else None)
        if where is not None:
            raise BenchmarkRowsError(
                f"{where} in the released POLLUX benchmark's schema. A task classifier trained on them has "
                "seen the instructions `judge-eval run --criteria auto` then routes on POLLUX, and the dataset card "
                "(ai-forever/POLLUX) asks that the benchmark not be trained on. Pass --allow-benchmark-rows "
                f"{'(config: allow_benchmark_rows: true) ' if config_file else ''}only for a deliberate experiment.")


def taxonomy_rows(include_zero_shot: bool = False, taxonomy: Taxonomy | None = None) -> list[dict]:
    """Weakly labelled training texts from the taxonomy itself (``tasks.json``), marked ``"source": "taxonomy"``:
    per leaf, one row of everything (its Russian path names, description and complexity notes) and one row per
    part (path names + that part). Covers all 152 leaves without hand labels; no instruction of the held-out set is
    derived from it.
    """
    taxonomy = taxonomy or load_taxonomy()
    held_out = load_split_spec(taxonomy=taxonomy).task_types
    rows = []
    for task in taxonomy.tasks:
        if task.task_type in held_out and not include_zero_shot:
            continue
        names = " ".join(n for n in task.names_ru if n)
        parts = [(task.description or {}).get("ru") or ""]
        parts += [(level or {}).get("ru") or "" for level in (task.complexity or {}).values()]
        parts = [p for p in parts if p]
        split = ZERO_SHOT if task.task_type in held_out else STANDARD
        for text in [". ".join([names, *parts])] + [f"{names}. {p}" for p in parts]:
            rows.append({"instruction": text, "label": label_of(task), "split": split, "source": "taxonomy"})
    return rows


def bundled_rows(include_zero_shot: bool = True) -> tuple[list[dict], dict]:
    """What the shipped classifier is trained on: the bundled training instructions, the bundled sample's
    instructions (``judge/data/sample.jsonl``, by their task columns) and ``taxonomy_rows``; never the held-out set.

    Zero-Shot task types are in by default: the shipped classifier routes any instruction a user sends, and the
    Zero-Shot split concerns the judges, not the router (``bench/criteria_auto.py --exclude-zero-shot`` measures
    transfer to unseen task types instead).

    Returns:
        (pairs, counts) as ``load_labelled``.
    """
    sample = Path(str(resources.files("judge") / "data" / "sample.jsonl"))
    pairs, counts = load_labelled([training_path(), sample], include_zero_shot=include_zero_shot)
    return pairs + taxonomy_rows(include_zero_shot=include_zero_shot), counts


def classifier_rows(config) -> tuple[list[dict], dict]:
    """The labelled training rows of a ``ClassifierConfig`` and a report of what was read, dropped or refused.

    ``zero_shot`` (the config's help: 'drop', 'allow', 'refuse') governs the data's rows and the taxonomy texts
    (``taxonomy_text``) alike: the texts of the Zero-Shot task types are added only with ``allow``. With ``refuse``
    they are left out rather than refused: they are rows this recipe adds, not the user's, and a run that refuses
    Zero-Shot data must train on none of it (190 taxonomy texts: 38 leaves, five each).

    Raises:
        ConfigError: held-out instructions or near duplicates of them (``judge.criteria_auto.labelled.
            near_duplicates``) in the data, or Zero-Shot rows with ``zero_shot: refuse``.
    """
    from judge.criteria_auto.labelled import heldout_leaks
    from train.config import SAMPLE_DATA, ConfigError

    sources = [training_path() if s.strip() == SAMPLE_DATA else Path(s.strip()) for s in config.data.split(",") if s.strip()]
    refuse_benchmark_sources(sources, config.allow_benchmark_rows)
    pairs, counts = load_labelled(sources, include_zero_shot=config.zero_shot != "drop")
    if config.zero_shot == "refuse" and any(p["split"] == "zero_shot" for p in pairs):
        n = sum(p["split"] == "zero_shot" for p in pairs)
        counted = "1 training instruction belongs to a Zero-Shot task type" if n == 1 else (
            f"{n} training instructions belong to Zero-Shot task types")
        raise ConfigError(f"{counted}; set zero_shot: drop or allow")
    # near duplicates too (a held-out instruction with a clause cut, a few words changed), not only exact copies
    leaked = heldout_leaks(pairs)
    if leaked:
        raise ConfigError(leaked)
    if config.taxonomy_text:
        pairs += taxonomy_rows(include_zero_shot=config.zero_shot == "allow")
    if config.max_rows:
        pairs = pairs[: config.max_rows]
    return pairs, {**counts, "n_train": len(pairs), "taxonomy_text": config.taxonomy_text}
