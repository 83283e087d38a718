"""Characters that show nothing (a left-to-right or right-to-left mark, a soft hyphen, a bidi embedding, a byte order
mark, a zero-width space) and the decomposed spelling of "й"/"ё" change no reading of a text that looks the same:

- the rubric reader (``judge.scale_of``) reads a level line however such a character opens it; before, a 0/1/2
  rubric with a left-to-right mark before level 1 read as the scale (0, 2), with no error;
- the splits' instruction key (``judge.splits.instruction_groups``) groups copies spelt apart only by them, so a
  held-out instruction's copy is dropped with it and the copies land on one side of train/validation;
- the instructions stage's exact-duplicate filter drops such a copy;
- the near-duplicate check of ``criteria: auto``'s labelled sets (``normalise_instruction``) finds a decomposed copy;
- the taxonomy finds a criterion whose name carries one.
- a word written with a combining mark (a decomposed "ё", a stress mark) counts as one word towards Appendix B's
  two-word floor (``judge.verdicts.rationale_words``).

Every expected value below is written by hand from the text shown.
"""

from __future__ import annotations

import sys
import unicodedata

import pytest

from judge import load_taxonomy, records_from_rows, scale_of
from judge.criteria_auto.labelled import near_duplicates, normalise_instruction
from judge.plumbing.invisible_text import INVISIBLE, without_invisible
from judge.splits import instruction_groups, instruction_text_key

LRM, RLM, SHY, LRE, PDF, LRI, PDI, MVS = "\u200e", "\u200f", "\u00ad", "\u202a", "\u202c", "\u2066", "\u2069", "\u180e"
BOM, ZWSP = "\ufeff", "\u200b"

RUBRIC_LEVELS = [
    ("a left-to-right mark before level 1", f"0: плохо\n{LRM}1: средне\n2: хорошо", (0, 1, 2)),
    ("a left-to-right mark before level 0", f"{LRM}0: плохо\n1: средне\n2: хорошо", (0, 1, 2)),
    ("a right-to-left mark before level 2", f"0: плохо\n1: средне\n{RLM}2: хорошо", (0, 1, 2)),
    ("a soft hyphen before level 1", f"0: плохо\n{SHY}1: средне\n2: хорошо", (0, 1, 2)),
    ("a bidi embedding around level 2", f"0: плохо\n1: средне\n{LRE}2: хорошо{PDF}", (0, 1, 2)),
    ("a bidi isolate around every level", f"{LRI}0 — плохо{PDI}\n{LRI}1 — хорошо{PDI}", (0, 1)),
    ("a Mongolian vowel separator before level 2", f"0: плохо\n1: средне\n{MVS}2: хорошо", (0, 1, 2)),
    ("a left-to-right mark before a one-line rubric", f"{LRM}0: плохо; 1: средне; 2: хорошо", (0, 1, 2)),
    ("marks before an indented level", f"0: плохо\n {LRM} 1: средне\n2: хорошо", (0, 1, 2)),
    ("a soft hyphen after a one-line rubric's ';'", f"0: плохо; 1: средне;{SHY} 2: хорошо", (0, 1, 2)),
    ("a left-to-right mark after a one-line rubric's ';'", f"0: плохо;{LRM} 1: средне; 2: хорошо", (0, 1, 2)),
    ("a left-to-right mark inside a range in words", f"Оцените от{LRM} 0 до 2", (0, 1, 2)),
    ("a left-to-right mark before a level's separator", f"0{LRM}: плохо\n1{LRM}: хорошо", (0, 1)),
    ("a left-to-right mark in a mapping's key", {f"{LRM}0": "плохо", "1": "средне", f"2{RLM}": "хорошо"}, (0, 1, 2)),
]


@pytest.mark.parametrize("name,rubrics,levels", RUBRIC_LEVELS, ids=[r[0] for r in RUBRIC_LEVELS])
def test_an_invisible_character_before_a_level_hides_no_level(name, rubrics, levels):
    assert scale_of(rubrics).levels == levels


def test_the_pairwise_check_reads_past_an_invisible_character_as_the_scale_reader_does():
    """A -1/0/1 comparison text with a decimal line ``scale_of`` refuses is taken as it is for its "-1" line; a
    left-to-right mark inside that "-1" is no reason to refuse it, since ``scale_of`` reads past the mark."""
    from judge.scales import pairwise_scale_error

    text = "Сравни.\n-1: первый лучше\n0.5: почти\n1: второй лучше"
    assert pairwise_scale_error(text) is None
    assert pairwise_scale_error(text.replace("-1:", f"-{LRM}1:")) is None
    assert pairwise_scale_error(f"0{LRM}: плохо\n1: средне\n{LRM}2: хорошо").startswith("the comparison scale's levels")


#: The format characters that print (Unicode's Prepended_Concatenation_Mark: the Arabic number signs and end of ayah,
#: the Syriac abbreviation mark, the Arabic pound and piastre marks above, the Kaithi number signs).
PRINTED_FORMAT = set("\u0600\u0601\u0602\u0603\u0604\u0605\u06dd\u070f\u0890\u0891\u08e2\U000110bd\U000110cd")
#: Format characters assigned after Unicode 14.0, the database of the oldest Python the project runs on (3.11):
#: Egyptian hieroglyph format controls of Unicode 15.0.
NEWER_FORMAT = {chr(c) for c in range(0x13439, 0x13440)}


def test_the_invisible_characters_are_every_format_character_that_shows_nothing():
    """Every character the readers drop is a format character (Unicode category Cf), the ones the findings name are
    among them, and every format character this Python's database knows is in it but the ones that print: a tag
    character (U+E0001, U+E0020-U+E007F) or a shorthand format control (U+1BCA0-U+1BCA3) shows nothing either."""
    format_characters = {chr(c) for c in range(sys.maxunicode + 1) if unicodedata.category(chr(c)) == "Cf"}
    assert set(INVISIBLE) - NEWER_FORMAT == format_characters - PRINTED_FORMAT - NEWER_FORMAT
    assert len(INVISIBLE) == len(set(INVISIBLE))
    assert {"\U000e0001", "\U000e0041", "\U0001bca0"} <= set(INVISIBLE)
    assert set(LRM + RLM + SHY + LRE + PDF + LRI + PDI + MVS + BOM + ZWSP) <= set(INVISIBLE)
    assert without_invisible(f"{BOM}При{SHY}вет{LRM}, {ZWSP}мир") == "Привет, мир"


RUBRIC = "0: Ответ неверный.\n\n1: Ответ верный."
HELD = "Перепиши это письмо в стиле делового отчёта."


def _row(rid: str, instruction: str, **extra) -> dict:
    return {"id": rid, "instruction": instruction, "answer": "Ответ.", "criteria_name": "Грамотность",
            "rubrics": RUBRIC, "task_type": "Дать совет", "expert_scores": [1], "criteria_score": 1, **extra}


DECOMPOSED = unicodedata.normalize("NFD", HELD)  # "ё" as "е" + U+0308
TWINS = [("a byte order mark", BOM + HELD), ("a zero-width space", HELD.replace(" ", " " + ZWSP, 1)),
         ("a soft hyphen", HELD.replace("письмо", f"пись{SHY}мо")), ("a left-to-right mark", HELD + LRM),
         ("decomposed ё", DECOMPOSED),
         ("a soft hyphen inside a decomposed ё", DECOMPOSED.replace("\u0308", f"{SHY}\u0308")),
         ("a zero-width space inside a decomposed ё", DECOMPOSED.replace("\u0308", f"{ZWSP}\u0308"))]


@pytest.mark.parametrize("name,twin", TWINS, ids=[t[0] for t in TWINS])
def test_copies_spelt_apart_by_invisible_characters_are_one_instruction(name, twin):
    assert twin != HELD
    assert instruction_text_key(twin) == instruction_text_key(HELD) == HELD.casefold()
    records = records_from_rows([_row("a", HELD, instruction_id="a"), _row("b", twin, instruction_id="b")])
    assert instruction_groups(records) == ["a", "a"]


@pytest.mark.parametrize("name,twin", TWINS, ids=[t[0] for t in TWINS])
def test_a_held_out_instructions_copy_is_dropped_with_it(name, twin):
    """The held-out text under a Zero-Shot task type (Style transfer) and its copy, spelt apart, under a Standard one:
    neither stays in train."""
    from train.synthetic.config import SplitConfig
    from train.synthetic.splitting import split_records

    rows = [_row("held", HELD, instruction_id="a", task_type="Style transfer"), _row("copy", twin, instruction_id="b"),
            _row("other", "Другое.", instruction_id="c")]
    splits, dropped, _ = split_records(rows, SplitConfig(validation_fraction=0.0))
    assert [r["id"] for r in splits["train"]] == ["other"]
    assert {r["id"]: r["drop_reason"] for r in dropped} == {"held": "zero_shot:task_type", "copy": "zero_shot:instruction"}


def test_a_decomposed_copy_is_a_near_duplicate_of_its_labelled_instruction():
    """"Какой ёжик?" decomposed ("ё" as "е" + U+0308) was no near duplicate of itself: the combining mark became a
    space ("какои е жик")."""
    text = "Какой ёжик?"
    decomposed = unicodedata.normalize("NFD", text)
    assert normalise_instruction(decomposed) == normalise_instruction(text) == "какой ежик"
    found = near_duplicates([text], [decomposed, BOM + text, text.replace("ёжик", f"ё{SHY}жик")])
    assert [(i, j, jaccard) for i, j, jaccard, _ in found] == [(0, 0, 1.0), (0, 1, 1.0), (0, 2, 1.0)]


@pytest.mark.parametrize("text", ["Пра\u0301вильно ли?", "Пра\u0300вильно ли?",
                                  "Правильно\u0301 ли?"])
def test_a_mark_with_no_composed_form_leaves_the_word_whole(text):
    """A stress mark on a Cyrillic vowel (U+0301 has no precomposed Cyrillic form, so NFKC leaves it apart) is no
    word character: read as a space, it split "Пра́вильно" in two and the copy was no near duplicate of the text."""
    assert normalise_instruction(text) == normalise_instruction("Правильно ли?") == "правильно ли"


@pytest.mark.parametrize("between", [SHY, ZWSP, LRM])
def test_an_invisible_character_between_a_letter_and_its_mark_leaves_one_letter(between):
    """An invisible character between "и" and its breve (U+0306) kept the two apart when composing, and dropping it
    after left the mark to be read as a space: the characters that show nothing go first, then the text is composed."""
    assert normalise_instruction(f"Какои{between}\u0306 ежик?") == "какой ежик"
    assert instruction_text_key(f"Какои{between}\u0306 ежик?") == instruction_text_key("Какой ежик?")


def test_the_instructions_stage_drops_a_copy_spelt_apart():
    """Stage 1's exact-duplicate filter is the splits' key (``judge.splits.instruction_text_key``), so what that key
    folds the stage drops: the four copies below are one problem."""
    text = "Напиши 5 коротких рассказов о моём дне."
    for twin in (unicodedata.normalize("NFD", text), BOM + text, text.replace("рассказов", f"рас{SHY}сказов"),
                 text.replace("5", "\uff15")):
        assert instruction_text_key(twin) == instruction_text_key(text), twin


@pytest.mark.parametrize("name", [BOM + "Грамотность", "Грамотность" + LRM, f"Грамот{SHY}ность",
                                  unicodedata.normalize("NFD", "Грамотность")])
def test_the_taxonomy_finds_a_criterion_name_carrying_an_invisible_character(name):
    assert load_taxonomy().criterion(name).base_id == "grammar"


def test_the_taxonomy_key_composes_a_letter_whose_mark_an_invisible_character_split_off():
    from judge.taxonomy import name_key

    assert name_key(f"Строи{SHY}\u0306") == name_key("Строй") == "строй"


@pytest.mark.parametrize("word", ["Объёмно.", "Приёмлемо", "Пра\u0301вильно.", "Неёмкий-то", f"Объ{SHY}ёмно.",
                                  f"Объ{ZWSP}ёмно."])
def test_a_word_written_with_a_combining_mark_is_one_word(word):
    """Appendix B's two-word floor (``gives_reasons``) counts words: "Объёмно." decomposed ("ё" as "е" + U+0308), a
    stress mark ("Пра́вильно", U+0301) or a soft hyphen or zero-width space inside it is still one word, which gives no
    reasons; the mark or the invisible character broke the word in two."""
    from judge.verdicts import gives_reasons, rationale_words

    for text in (word, unicodedata.normalize("NFD", word)):
        assert rationale_words(text) == 1, ascii(text)
        assert not gives_reasons(text)
    assert rationale_words(f"{unicodedata.normalize('NFD', word)} Ответ") == 2
