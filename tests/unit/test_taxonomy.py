"""The vendored POLLUX taxonomy: lookups, criteria sets of tasks, and the deliberate handling of its data flaws."""

import dataclasses
import json
from importlib import resources

import pytest

from judge import TaxonomyError, load_taxonomy
from judge.taxonomy import CRITERION_GROUPS


@pytest.fixture(scope="module")
def taxonomy():
    return load_taxonomy()


def test_sizes(taxonomy):
    """295 criterion entries (60 base criteria), 152 leaf tasks, 35 task types, 8 groups."""
    assert len(taxonomy.criteria) == 295
    assert len({c.base_id for c in taxonomy.criteria.values()}) == 60
    assert len(taxonomy.tasks) == 152
    assert len(taxonomy.task_types) == 35
    assert len({t.group for t in taxonomy.tasks}) == 8


def test_groups_are_the_five_known(taxonomy):
    """Every criterion belongs to one of the five POLLUX criterion groups (arXiv 2505.24616v3, Appendix P.1-P.5:
    Critical, Fine-grained, Domain-specific, Task-specific and Subjective), and each group has criteria."""
    assert CRITERION_GROUPS == ("Critical", "Fine-grained", "Domain-specific", "Task-specific", "Subjective")
    assert {c.group for c in taxonomy.criteria.values()} == set(CRITERION_GROUPS)


@pytest.mark.parametrize(
    "key,expected_id",
    [
        ("creativity__3", "creativity__3"),  # by id
        ("Креативность", "creativity"),  # by Russian name: the base criterion
        ("creativity", "creativity"),
        ("CREATIVITY ", "creativity"),  # English name, case and whitespace ignored
        ("Absence of excessive repetitions", "repeats"),
        ("Optimal approach", "optimality__2"),  # a name only variants carry: the first variant
    ],
)
def test_criterion_lookup(taxonomy, key, expected_id):
    """Criteria resolve by id and by Russian or English name."""
    if expected_id == "optimality__2":
        ids = [cid for cid, c in taxonomy.criteria.items() if c.name["en"] == "Optimal approach"]
        expected_id = ids[0]
    assert taxonomy.criterion(key).id == expected_id


def test_decomposed_names_resolve_as_their_composed_form(taxonomy):
    """A name written decomposed (NFD: "й" as "и" + U+0306, "ё" as "е" + U+0308, as macOS file names and some
    pipelines write it) looks the same and is the same name: every criterion and task type carrying "й" or "ё"
    resolves from it."""
    import unicodedata

    def nfd(name):
        return unicodedata.normalize("NFD", name)

    composed = sorted({c.name["ru"] for c in taxonomy.criteria.values() if "й" in c.name["ru"] or "ё" in c.name["ru"]})
    assert composed
    for name in composed:
        assert nfd(name) != name and taxonomy.criterion(nfd(name)).id == taxonomy.criterion(name).id
    assert taxonomy.canonical_task_type(nfd("Перевод на русский или английский")) == \
        "Translation, English-Russian language pair"
    assert taxonomy.criteria_for(nfd("Написать художественный текст"), "Poetry") == \
        taxonomy.criteria_for("Literary text", "Poetry")


def test_criterion_lookup_by_task_picks_the_leafs_variant(taxonomy):
    """A shared name resolves to the variant the task's leaf lists."""
    poetry = taxonomy.find_tasks("Literary text", "Poetry")[0]
    crit = taxonomy.criterion("Rhyme quality", task=poetry)
    assert crit.id in poetry.criteria and crit.base_id == "rhyme_quality"
    python_mod = taxonomy.criteria_for("Code modification", "Python")
    operability = taxonomy.criterion("Работоспособность", task=("Code modification", "Python"))
    assert operability in python_mod


def test_a_name_whose_variants_differ_across_the_tasks_leaves_is_refused_naming_them(taxonomy):
    """A task path above several leaves that list different variants of a name (Extract's Literary, Scientific and
    Journalistic texts: ``creativity``, ``creativity__3``, ``creativity__2``, each its own rubric) names no one
    variant: refused, naming each variant's id and its leaves, as ``criteria_for`` refuses the path, never the first
    variant's rubric judged silently. Variants that show and score alike (one rubric, one scale) still resolve."""
    leaves = taxonomy.find_tasks("Extract")
    listed = {cid for leaf in leaves for cid in leaf.criteria if taxonomy.criteria[cid].base_id == "creativity"}
    assert listed == {"creativity", "creativity__2", "creativity__3"}
    assert len({taxonomy.criteria[cid].rubric("ru") for cid in listed}) == 3
    with pytest.raises(TaxonomyError) as refused:
        taxonomy.criterion("Креативность", task=("Extract",))
    message = str(refused.value)
    assert "'Креативность'" in message and "Extract" in message
    for cid, leaf in (("creativity", "Literary text"), ("creativity__3", "Scientific text"),
                      ("creativity__2", "Journalistic text")):
        assert f"{cid} (Extract / {leaf})" in message
    # one leaf named: its own variant, as before
    assert taxonomy.criterion("Креативность", task=("Extract", "Scientific text")).id == "creativity__3"
    assert taxonomy.criterion("creativity__2", task=("Extract",)).id == "creativity__2"  # an id names one
    # several ids that render and score alike are one criterion to the judge: the first stands
    alike = None
    for task_type in taxonomy.task_types:
        by_name: dict[str, set[str]] = {}
        for leaf in taxonomy.find_tasks(task_type):
            for cid in leaf.criteria:
                by_name.setdefault(taxonomy.criteria[cid].name["ru"], set()).add(cid)
        for name, ids in by_name.items():
            if len(ids) > 1 and len({(taxonomy.criteria[c].rubric("ru"), taxonomy.criteria[c].scale)
                                     for c in ids}) == 1:
                alike = (task_type, name, ids)
                break
        if alike:
            break
    assert alike is not None
    assert taxonomy.criterion(alike[1], task=(alike[0],)).id in alike[2]


def test_a_name_refused_above_its_leaves_names_the_field_that_picks_one(taxonomy):
    """The refusal of a name whose variants differ below the task says which field must name the leaf, as its
    ``level`` does (``criteria_for``'s and ``leaf``'s): a task type alone, its ``task_subtype``; a subtype with several
    sub-subtypes (Summarizing / Brief retelling: a literary, journalistic, official and scientific text, one
    ``Креативность`` rubric each), its ``task_subsubtype``, where naming the subtype again resolves nothing."""
    with pytest.raises(TaxonomyError) as refused:
        taxonomy.criterion("Креативность", task=("Extract",))
    assert refused.value.level == 1 and "name its task_subtype (one leaf) or the variant's id" in str(refused.value)
    with pytest.raises(TaxonomyError) as refused:
        taxonomy.criterion("Креативность", task=("Summarizing", "Brief retelling"))
    message = str(refused.value)
    assert refused.value.level == 2 and "name its task_subsubtype (one leaf) or the variant's id" in message
    assert "(its subtype)" not in message and "'Summarizing / Brief retelling'" in message
    assert taxonomy.criterion("Креативность", task=("Summarizing", "Brief retelling", "Scientific text")).id == (
        "creativity__3")


def test_a_leaf_task_listing_two_differing_variants_of_a_name_is_refused_naming_the_leaf(taxonomy):
    """A ``Task`` given as the task is named by its path in the refusal, as a path tuple is. No leaf of the released
    taxonomy lists two differing variants of one name; one that did (built here) is refused naming it and both ids,
    with only the id left to pick one (no field names more than the leaf), not a ``TypeError``."""
    leaf = taxonomy.find_tasks("Extract", "Scientific text")[0]
    leaf = dataclasses.replace(leaf, criteria=leaf.criteria + ("creativity",))
    with pytest.raises(TaxonomyError) as refused:
        taxonomy.criterion("Креативность", task=leaf)
    message = str(refused.value)
    assert "under task 'Extract / Scientific text'" in message and refused.value.level is None
    assert "creativity (Extract / Scientific text)" in message and "creativity__3 (Extract / Scientific text)" in message
    assert message.endswith("; name the variant's id")


def test_unknown_criterion_suggests(taxonomy):
    """An unknown name fails with the closest matches named."""
    with pytest.raises(TaxonomyError, match="did you mean 'Creativity'"):
        taxonomy.criterion("creativty")


def test_criterion_not_in_task(taxonomy):
    """Asking for a criterion in a task that does not use it is an error, not a silent fallback."""
    with pytest.raises(TaxonomyError, match="not used by task"):
        taxonomy.criterion("Rhyme quality", task=("Code creation", "Python"))


def test_criteria_for_leaf_in_taxonomy_order(taxonomy):
    """A leaf's criteria set comes back in tasks.json order, as Criterion objects."""
    raw = json.loads((resources.files("judge") / "data" / "tasks.json").read_text(encoding="utf-8"))
    expected = raw["Technical Problems"]["tasks"]["Code modification"]["subtasks_l1"]["Python"]["criteria"]
    assert [c.id for c in taxonomy.criteria_for("Code modification", "Python")] == expected
    # Russian names work along the path too.
    assert taxonomy.criteria_for("Изменить код", "Python") == taxonomy.criteria_for("Code modification", "Python")


def test_criteria_for_single_leaf_task_type(taxonomy):
    """A task type with one leaf needs no subtype."""
    assert [c.base_id for c in taxonomy.criteria_for("Recommendations")][:2] == ["narushenie_formata", "censor"]


def test_criteria_for_ambiguous_task_type_names_options(taxonomy):
    """Leaves with different criteria sets need a subtype; the error lists them."""
    with pytest.raises(TaxonomyError, match="Literary text / Poetry") as err:
        taxonomy.criteria_for("Literary text")
    assert err.value.level == 1  # the subtype must name the leaf, as judge-eval's criteria: auto says


def test_an_unknown_task_type_is_answered_with_names_as_written(taxonomy):
    """The closest task types are suggested as tasks.json writes them (not lower-cased), a Russian one with the
    English name that run.json and the reports use."""
    with pytest.raises(TaxonomyError) as err:
        taxonomy.find_tasks("Литературный тескт")
    assert str(err.value) == ("unknown task type 'Литературный тескт'; did you mean 'Написать научный текст' "
                              "(Scientific text), 'Написать художественный текст' (Literary text)?")
    with pytest.raises(TaxonomyError, match=r"did you mean 'Editing', 'Rephrasing'\?$"):
        taxonomy.find_tasks("Editng")


def test_criteria_for_ambiguous_subtype_names_the_sub_subtype(taxonomy):
    """A subtype whose sub-subtypes differ in criteria: the level at fault is the sub-subtype's."""
    with pytest.raises(TaxonomyError, match="name one of") as err:
        taxonomy.criteria_for("Summarizing", "Brief retelling")
    assert err.value.level == 2
    with pytest.raises(TaxonomyError, match="name one of") as err:
        taxonomy.criteria_for("Summarizing", "", "")  # blanks are not names: the subtype is still the one to give
    assert err.value.level == 1


def test_group_then_task_type_path(taxonomy):
    """Exports that put the group in task_type and the task type in subtype still resolve."""
    assert {t.task_type for t in taxonomy.find_tasks("AI as a Character", "Formal setting")} == {"Formal setting"}
    assert taxonomy.canonical_task_type("ИИ как персонаж (бытовая ситуация)") == "Informal setting"


@pytest.mark.parametrize("key,english,russian", [
    ("Genres", "Literary movements, genres, and narrative modes", "Перепиши в стиле (задаём литературное направление)"),
    ("Words", "Words (within context or cultural translation)", "Слова (внутри контекста или культурный перевод)"),
])
def test_a_subtype_resolves_by_its_published_english_name_as_by_its_key(taxonomy, key, english, russian):
    """tasks.json gives two subtypes an English ``name`` other than their key, and criteria.json names the first by
    that name (``subtask1`` of dialog, drama, emphasis, rhyme_quality, meter): a record or request naming it so was
    refused ("has no subtype ..."), where its key and its Russian name resolve. Every name of the node resolves to
    the same leaf, through find_tasks, leaf, criteria_for and criterion(..., task=)."""
    task_type = {"Genres": "Style transfer", "Words": "Translation, English-Russian language pair"}[key]
    raw = json.loads((resources.files("judge") / "data" / "tasks.json").read_text(encoding="utf-8"))
    group = next(g for g in raw.values() if task_type in g["tasks"])
    node = group["tasks"][task_type]["subtasks_l1"][key]
    assert node["name"] == {"en": english, "ru": russian}  # the vendored names, byte for byte
    (by_key,) = taxonomy.find_tasks(task_type, key)
    for name in (english, english.upper(), russian):
        assert taxonomy.find_tasks(task_type, name) == [by_key], name
        assert taxonomy.leaf(task_type, name) == by_key
        assert taxonomy.criteria_for(task_type, name) == taxonomy.criteria_for(task_type, key)
    assert by_key.names_en == (group["name"]["en"], task_type, english)
    if key == "Genres":
        assert taxonomy.criterion("Rhyme quality", task=(task_type, english)).id == "rhyme_quality"


@pytest.mark.parametrize(
    "path,domain",
    [
        (("Editing",), {"ru": "Общее", "en": "General-purpose"}),
        (("Style transfer", "Functional styles", "Rewrite in conversational style"),
         {"ru": "Разговорный", "en": "Conversational"}),
        (("Extract", "Scientific text"), {"ru": "Научный текст", "en": "Scientific text"}),
    ],
)
def test_leaf_domain_in_both_languages(taxonomy, path, domain):
    """A leaf task carries its domain in Russian and English as tasks.json gives it (judge/data/tasks.json)."""
    (leaf,) = taxonomy.find_tasks(*path)
    assert leaf.domain == domain


def test_every_leaf_has_a_domain_in_both_languages(taxonomy):
    """All 152 leaves have a non-empty domain in both languages (the sample data's `domain` column relies on it)."""
    assert all(set(t.domain) == {"ru", "en"} and all(t.domain.values()) for t in taxonomy.tasks)


def test_rubric_rendering(taxonomy):
    """A rubric renders as 'level: text' lines separated by a blank line, in the asked language."""
    crit = taxonomy.criterion("repeats")
    ru = crit.rubric("ru")
    assert ru.startswith("0: ") and "\n\n1: " in ru and "\n\n2: " in ru
    assert crit.rubric("en").startswith("0: ") and crit.rubric("en") != ru


# ------------------------------------------------------------------ flaws of the published data


def test_flaw_empty_english_texts_fall_back_to_russian(taxonomy):
    """Criteria with empty English texts render their Russian text in English prompts, and say so."""
    raw = json.loads((resources.files("judge") / "data" / "criteria.json").read_text(encoding="utf-8"))
    empty_scale = [(cid, lvl) for cid, c in raw.items() for lvl, t in c["scale"]["en"].items() if not t.strip()]
    assert len(empty_scale) == 122  # as published
    cid, level = empty_scale[0]
    crit = taxonomy.criteria[cid]
    assert crit.scale_texts["en"][int(level)] == crit.scale_texts["ru"][int(level)] != ""
    assert any(f.startswith("en_scale_missing") for f in crit.flaws)
    empty_desc = [cid for cid, c in raw.items() if not c["desc"]["en"].strip()]
    assert empty_desc and all(taxonomy.criteria[c].description["en"] for c in empty_desc)
    assert all("en_desc_missing" in taxonomy.criteria[c].flaws for c in empty_desc)


def test_flaw_truncated_russian_scale_texts_end_the_sentence(taxonomy):
    """The 51 Russian scale texts cut after a colon (17 criteria) end with a full stop instead."""
    raw = json.loads((resources.files("judge") / "data" / "criteria.json").read_text(encoding="utf-8"))
    cut = [(cid, lvl) for cid, c in raw.items() for lvl, t in c["scale"]["ru"].items() if t.rstrip().endswith(":")]
    assert len(cut) == 51 and len({cid for cid, _ in cut}) == 17
    flagged = [c.id for c in taxonomy.criteria.values() if any(f.startswith("ru_scale_truncated") for f in c.flaws)]
    assert sorted(flagged) == sorted({cid for cid, _ in cut})
    crit = taxonomy.criteria["consistency_and_logic__3"]
    assert crit.scale_texts["ru"][0] == "Ответ модели не последовательный и не логичный."
    assert not any(text.endswith(":") for c in taxonomy.criteria.values() for text in c.scale_texts["ru"].values())


def test_flaw_creativity_3_russian_keys_shifted(taxonomy):
    """creativity__3's Russian levels 1..3 map in order onto the English (and every other variant's) 0..2."""
    crit = taxonomy.criteria["creativity__3"]
    assert crit.scale.levels == (0, 1, 2)
    assert sorted(crit.scale_texts["ru"]) == sorted(crit.scale_texts["en"]) == [0, 1, 2]
    assert "совсем не креативный" in crit.scale_texts["ru"][0]
    assert "очень креативный" in crit.scale_texts["ru"][2]
    assert "ru_scale_keys_shifted" in crit.flaws


def test_unflawed_criterion_has_no_flaws(taxonomy):
    """A clean entry records no repairs and keeps its texts verbatim."""
    raw = json.loads((resources.files("judge") / "data" / "criteria.json").read_text(encoding="utf-8"))
    crit = taxonomy.criteria["repeats"]
    assert crit.flaws == ()
    assert crit.scale_texts["ru"][2] == raw["repeats"]["scale"]["ru"]["2"].strip()


def test_an_unknown_name_of_any_length_gets_a_short_message():
    """A client's unknown criterion or task type is named back by its first characters and length, with suggestions
    only for names of a plausible length (difflib's matching is quadratic: an 800,000-character name once took 1.9 s
    and was echoed whole); a typo still gets its suggestions."""
    taxonomy = load_taxonomy()
    for lookup, kind in ((taxonomy.criterion, "criterion"), (taxonomy.find_tasks, "task type")):
        with pytest.raises(TaxonomyError) as err:
            lookup("к" * 800_000)
        assert str(err.value).startswith(f"unknown {kind} 'ккк") and str(err.value).endswith("... [800000 characters]")
    with pytest.raises(TaxonomyError, match="did you mean 'Креативность'"):
        taxonomy.criterion("Креативнсть")


def test_an_unknown_sub_level_is_named_by_its_level(taxonomy):
    """A wrong sub-subtype was reported as a "subtype", a leaf with none below it listed "options: []", and the name
    was echoed whole. Each level is named as what it is, under the path above it, and the echoed name is clipped."""
    with pytest.raises(TaxonomyError) as err:
        taxonomy.find_tasks("Literary text", "Nope")
    assert str(err.value) == ("task type 'Literary text' has no subtype 'Nope'; options: ['Drama', 'Fragment', "
                              "'Poetry', 'Prose']")
    with pytest.raises(TaxonomyError) as err:
        taxonomy.find_tasks("Code creation", "Python", "x")
    assert str(err.value) == "task type 'Code creation', subtype 'Python', has no sub-subtype 'x'; it has no sub-subtypes"
    with pytest.raises(TaxonomyError) as err:
        taxonomy.find_tasks("Literary text", "Poetry", "y" * 10_000)
    assert "has no sub-subtype 'yyy" in str(err.value) and "[10000 characters]" in str(err.value)
    assert len(str(err.value)) < 300


TRANSLATION = "Translation, English-Russian language pair"


@pytest.mark.parametrize("levels, path", [
    ((TRANSLATION, "", "Informative translation"), (TRANSLATION, "Texts", "Informative translation")),
    ((TRANSLATION, None, "  informative translation "), (TRANSLATION, "Texts", "Informative translation")),
    ((TRANSLATION, "Текст", "Художественный (литературный) перевод"), (TRANSLATION, "Texts", "Literary translation")),
    ((TRANSLATION, "Words", ""), (TRANSLATION, "Words")),
    (("Advice", "", None), ("Advice",)),
], ids=["blank subtype", "None subtype, spacing and case", "Russian names", "blank sub-subtype", "type of one leaf"])
def test_a_blank_level_is_unknown_and_narrowed_by_the_levels_given(taxonomy, levels, path):
    """The rule every reader of a row's task columns shares (annotate, the labelled sets, leaf labels): a blank
    level was dropped by one of them, so the sub-subtype moved up and was refused as "no subtype 'Informative
    translation'". Translation's leaves (tasks.json) are Sentences, Words, Texts / Informative translation and Texts /
    Literary translation: the sub-subtype alone names one of them."""
    assert taxonomy.leaf(*levels).path == path


@pytest.mark.parametrize("levels, level, message", [
    (("", "Poetry"), 0, "no task type given"),
    (("Xyzzy",), 0, "unknown task type 'Xyzzy'"),
    (("Literary text", "Nope"), 1, "task type 'Literary text' has no subtype 'Nope'; options: ['Drama', 'Fragment', "
                                   "'Poetry', 'Prose']"),
    ((TRANSLATION, "", "Nope"), 2, f"task type {TRANSLATION!r} has no sub-subtype 'Nope'; options: "
                                   "['Informative translation', 'Literary translation']"),
    (("AI as a Character", "Nope"), 1, "unknown task type 'Nope'"),
    ((TRANSLATION,), 1, f"task {TRANSLATION!r} names 4 leaves, not one: {TRANSLATION} / Sentences; {TRANSLATION} / "
                        f"Texts / Informative translation; {TRANSLATION} / Texts / Literary translation; "
                        f"{TRANSLATION} / Words"),
    ((TRANSLATION, "Texts"), 2, f"task '{TRANSLATION} / Texts' names 2 leaves, not one: {TRANSLATION} / Texts / "
                                f"Informative translation; {TRANSLATION} / Texts / Literary translation"),
], ids=["no type", "unknown type", "unknown subtype", "unknown sub-subtype under a blank subtype",
        "unknown type under its group", "above four leaves", "above two leaves"])
def test_a_task_that_is_not_one_leaf_names_the_level_at_fault(taxonomy, levels, level, message):
    """``TaxonomyError.level`` is the index of the name at fault as passed (a group named as the task type counts),
    so a reader names that column; a sub-subtype under a blank subtype was described under a subtype nobody gave.
    A path above several leaves is at the first level they differ at."""
    with pytest.raises(TaxonomyError) as err:
        taxonomy.leaf(*levels)
    assert (err.value.level, str(err.value)) == (level, message)
