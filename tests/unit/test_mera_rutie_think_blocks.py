"""ruTiE's ``think_blocks``: how the ``mera`` parser reads a reply's ``<think>`` reasoning, a named setting whose
default (skip in chat mode, read in completion mode) and whose refusals (log-probability scoring, the choice parser)
are checked here without an endpoint. Runs through ``judge-eval mera rutie`` are in test_mera_rutie_chat_reasoning."""

from __future__ import annotations

import pytest

from eval.mera import cli
from eval.mera.config import ConfigError, RutieConfig, check_values
from eval.mera.rutie import Answer, RutieItem, RutieSettings, ask, parse_reply

CLOSED = "<think>Считаю: 1 вариант неверен</think>2"
UNCLOSED = "<think>Вариант 1 кажется верным, но"
UNCLOSED_NO_DIGIT = "<think>Думаю, что"


@pytest.mark.parametrize(
    ("reply", "think_blocks", "expected"),
    [
        # Skip: the text after </think> is " 2"; read: the first standalone digit of the whole reply is the "1" of
        # "Считаю: 1".
        (CLOSED, "skip", Answer("2")),
        (CLOSED, "read", Answer("1")),
        # Unclosed: skip has no text after the reasoning, so no answer yet; read takes the reasoning's "1".
        (UNCLOSED, "skip", Answer(None, "reasoning not finished")),
        (UNCLOSED, "read", Answer("1")),
        # Unclosed and no digit in it: unparsed either way, each with its own reason.
        (UNCLOSED_NO_DIGIT, "skip", Answer(None, "reasoning not finished")),
        (UNCLOSED_NO_DIGIT, "read", Answer(None, "no standalone digit")),
    ],
)
def test_the_setting_decides_the_reading_in_either_mode(reply, think_blocks, expected):
    """The setting given wins over the mode's default (``chat``) both ways."""
    assert parse_reply(reply, "mera", chat=True, think_blocks=think_blocks) == expected
    assert parse_reply(reply, "mera", chat=False, think_blocks=think_blocks) == expected


def test_left_out_it_is_the_modes_default():
    """None: skip in chat mode (answers 2), read in completion mode (answers 1), as before the setting existed."""
    assert parse_reply(CLOSED, "mera", chat=True) == Answer("2")
    assert parse_reply(CLOSED, "mera", chat=False) == Answer("1")


def test_the_choice_parser_skips_and_refuses_read():
    """The choice parser reads after the reasoning (its definition): skip is what it does, read is refused."""
    assert parse_reply(CLOSED, "choice", think_blocks="skip") == Answer("2")
    with pytest.raises(ValueError, match=r"^--think-blocks read applies to --answer-parser mera only: "
                                         r"--answer-parser choice always reads after the reasoning"):
        parse_reply(CLOSED, "choice", think_blocks="read")


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"scoring": "logprobs", "think_blocks": "skip"},
         ("--think-blocks skip applies to --scoring generate only: --scoring logprobs parses no reply; leave "
          "--think-blocks out")),
        ({"scoring": "logprobs", "think_blocks": "read", "mode": "chat"},
         ("--think-blocks read applies to --scoring generate only: --scoring logprobs parses no reply; leave "
          "--think-blocks out")),
        ({"answer_parser": "choice", "think_blocks": "read"},
         ("--think-blocks read applies to --answer-parser mera only: --answer-parser choice always reads after the "
          "reasoning; leave --think-blocks out, or use --answer-parser mera")),
        ({"think_blocks": "maybe"}, "--think-blocks must be one of skip, read, got 'maybe'"),
    ],
)
def test_config_refuses_a_think_blocks_that_cannot_apply(values, message):
    with pytest.raises(ConfigError) as err:
        check_values(RutieConfig(out="x", **values))
    assert str(err.value) == message


@pytest.mark.parametrize("values", [
    {}, {"mode": "chat"}, {"think_blocks": "skip"}, {"mode": "chat", "think_blocks": "read"},
    {"answer_parser": "choice", "think_blocks": "skip"}, {"scoring": "logprobs"},
])  # fmt: skip
def test_config_takes_a_think_blocks_that_applies(values):
    check_values(RutieConfig(out="x", **values))  # raises on a refusal


def test_the_flag_and_the_yaml_key_are_refused_alike(tmp_path, capsys):
    """--think-blocks from the command line and think_blocks from --config: a usage error (exit 2) naming the flag,
    before anything is asked; a value outside the choices names the field."""
    yaml = tmp_path / "r.yaml"
    yaml.write_text("scoring: logprobs\nthink_blocks: read\n", encoding="utf-8")
    base = ["rutie", "--endpoint", "http://127.0.0.1:9/v1", "--model", "m", "--out", str(tmp_path / "run")]
    for extra, said in [
        (["--answer-parser", "choice", "--think-blocks", "read"], "applies to --answer-parser mera only"),
        (["--config", str(yaml)], "--think-blocks read applies to --scoring generate only"),
        (["--think-blocks", "maybe"], "think_blocks: 'maybe' is not one of skip, read"),
    ]:
        with pytest.raises(SystemExit) as exit_info:
            cli.main(base + extra)
        assert exit_info.value.code == 2 and said in capsys.readouterr().err
    assert not (tmp_path / "run").exists()


def test_ask_refuses_settings_the_setting_cannot_apply_to():
    """A library caller's RutieSettings are checked as the config is, before the endpoint is asked (a client that
    would fail the test if called)."""
    item = RutieItem(dialog_id=0, question_id=0, instruction="{context}{question}", question="q", choice1="a",
                     choice2="b", gold="1")

    class NoCalls:
        def __getattr__(self, name):
            raise AssertionError(f"the endpoint was asked ({name})")

    with pytest.raises(ValueError, match="^--think-blocks skip applies to --scoring generate only"):
        ask(NoCalls(), item, [], RutieSettings(scoring="logprobs", think_blocks="skip"))


class _SearchedText:
    """Stands in for ``extraction._THINK_BLOCK``: records the length of each text the block search is given."""

    def __init__(self, pattern):
        self.pattern, self.lengths = pattern, []

    def sub(self, repl, text, count=0):
        self.lengths.append(len(text))
        return self.pattern.sub(repl, text, count)


@pytest.mark.parametrize(("text", "searched"), [
    ("<think>a</think> 2", len("<think>a</think>")),
    # 8,000 open tags with no close after them: past the last close none is searched
    ("<think>a</think> 2" + "<THINK>" * 8000, len("<think>a</think>")),
    ("<think>" * 8000, None),
])  # fmt: skip
def test_after_reasoning_searches_for_blocks_only_up_to_the_last_close(monkeypatch, text, searched):
    from eval.mera import extraction

    recording = _SearchedText(extraction._THINK_BLOCK)
    monkeypatch.setattr(extraction, "_THINK_BLOCK", recording)
    assert extraction.after_reasoning(text) == (None if searched is None or "THINK" in text else " 2")
    assert recording.lengths == ([] if searched is None else [searched])


def test_after_reasoning_reads_as_the_whole_text_search_did():
    import re

    from eval.mera.extraction import _THINK_CLOSE, _THINK_OPEN, after_reasoning

    whole = re.compile(r"<think>.*?</think>", re.S | re.I)
    for text in ["x<think>a</think>y<THINK>b</Think>z", "<think><think>a</think>b</think>c", "a</think>b<think>c",
                 "<think>a</think>" + "<think>" * 50, "1<think>x</think>2", "no tags"]:
        visible = _THINK_CLOSE.split(whole.sub(" ", text))[-1]
        assert after_reasoning(text, gap=" ") == (None if _THINK_OPEN.search(visible) else visible), text
