"""judge-serve refusing a checkpoint at start, with the port it took let go: a verdict format its judge cannot
write, a folder without tokenizer files (transformers built a tokenizer of one token from it, judge-serve turned
ready, and every prompt reached the engine empty: 400 "You must pass at least one prompt", every item a failure),
and a tokenizer without a chat template (every prompt is rendered through it).
Each is one line, exit 2, before any engine starts."""

from __future__ import annotations

import pytest

from serve.layout import TOKENIZER_FILES, LayoutError, require_tokenizer
from tests.support.released_r_checkpoint import released_r


class _Socket:
    closed = False

    def close(self) -> None:
        self.closed = True


def _with_tokenizer(root, chat_template: bool = True):
    """``root`` with the tokenizer files the release ships (without them the folder is refused first): a
    tokenizer.json and, unless not asked, its chat template."""
    (root / "tokenizer.json").write_text("{}")
    if chat_template:
        (root / "chat_template.jinja").write_text("{{ messages }}")
    return root


def _main(monkeypatch, argv: list[str]) -> tuple[int, _Socket]:
    """judge-serve's main with no vLLM check and a stand-in for the socket it listens on."""
    import serve.cli

    socket = _Socket()
    monkeypatch.setattr(serve.cli, "check_installed_vllm", lambda: None)
    monkeypatch.setattr(serve.cli, "bind_listening_socket", lambda host, port: socket)
    return serve.cli.main(argv), socket


def test_a_verdict_format_the_judge_cannot_write_is_one_line_exit_2_with_the_port_released(tmp_path, monkeypatch,
                                                                                           capsys):
    """create_app decides the verdict format: an integer format asked of a regression judge is a bad configuration
    (exit 2, one line), not a traceback, and the port judge-serve took is let go."""
    root = _with_tokenizer(released_r(tmp_path / "r"))
    code, socket = _main(monkeypatch, ["--model", str(root), "--verdict-format", "integer", "--log-dir",
                                       str(tmp_path / "logs")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and socket.closed
    assert err.startswith("judge-serve: error: verdict_format: integer") and "\n" not in err


def test_a_folder_without_tokenizer_files_is_refused_at_start_naming_them(tmp_path, monkeypatch, capsys):
    root = released_r(tmp_path / "r")  # weights and tokenizer_config.json, no tokenizer
    code, socket = _main(monkeypatch, ["--model", str(root), "--log-dir", str(tmp_path / "logs")])
    assert code == 2 and socket.closed
    assert capsys.readouterr().err == (
        f"judge-serve: error: model: {root} holds no tokenizer (tokenizer.json, vocab.json, tokenizer.model, "
        "spiece.model, spm.model, sentencepiece.bpe.model, vocab.txt, *.tiktoken): judge-serve tokenizes every prompt with it; save the base model's tokenizer into the folder "
        "(tokenizer.save_pretrained), as judge-train's exports have it\n")


@pytest.mark.parametrize("name", TOKENIZER_FILES)
def test_any_tokenizer_file_passes(tmp_path, name):
    (tmp_path / "chat_template.jinja").write_text("{{ messages }}")
    (tmp_path / name).write_text("{}")
    require_tokenizer(tmp_path)
    (tmp_path / name).unlink()
    with pytest.raises(LayoutError, match="holds no tokenizer"):
        require_tokenizer(tmp_path)


@pytest.mark.parametrize("method, made, said", [
    ("tfidf", None, "no such folder"),
    ("tfidf", "config.json", "no model.json, so no tfidf classifier (one is judge-train criteria-classifier's --out "
                             "folder)"),
    ("head", "model.json", "no config.json, so no head classifier (one is judge-train classifier's <run>/export "
                           "folder); it holds a model.json, as a tfidf classifier's folder does: criteria_classifier "
                           "tfidf reads it"),
    ("head", "config.json", "no tokenizer (tokenizer.json, vocab.json, tokenizer.model, spiece.model, spm.model, "
                            "sentencepiece.bpe.model, vocab.txt, *.tiktoken), so no head classifier (judge-train "
                            "classifier's <run>/export folder holds its base model's)"),
])  # fmt: skip
def test_a_classifier_folder_that_cannot_be_one_is_refused_before_the_engines_start(tmp_path, monkeypatch, capsys,
                                                                                    method, made, said):
    """judge-serve loads its task classifier beside its engines: a wrong folder failed the start (exit 1) once they
    were launched, naming no setting. Now one line naming criteria_classifier_path, exit 2, nothing started."""
    root = _with_tokenizer(released_r(tmp_path / "r"))
    folder = tmp_path / "clf"
    if made:
        folder.mkdir()
        (folder / made).write_text("{}")
    code, socket = _main(monkeypatch, ["--model", str(root), "--criteria-classifier", method,
                                       "--criteria-classifier-path", str(folder), "--log-dir", str(tmp_path / "logs")])
    assert code == 2 and socket.closed
    assert capsys.readouterr().err == f"judge-serve: error: criteria_classifier_path: {folder}: {said}\n"


def test_a_folder_whose_tokenizer_has_no_chat_template_is_refused_at_start_naming_it(tmp_path, monkeypatch, capsys):
    """A folder with tokenizer files but no chat template (a base model's, an export without chat_template.jinja):
    judge-serve turned ready and answered every judgment 500 (transformers' ValueError from apply_chat, every prompt
    is rendered through the template). Refused at start instead, one line, exit 2, the port let go."""
    root = _with_tokenizer(released_r(tmp_path / "r"), chat_template=False)
    code, socket = _main(monkeypatch, ["--model", str(root), "--log-dir", str(tmp_path / "logs")])
    assert code == 2 and socket.closed
    assert capsys.readouterr().err == (
        f"judge-serve: error: model: the tokenizer in {root} has no chat template (chat_template.jinja, or "
        "chat_template in tokenizer_config.json): judge-serve renders every prompt through it; save the base "
        "model's tokenizer with its chat template into the folder (tokenizer.save_pretrained), as judge-train's "
        "exports have it\n")


@pytest.mark.parametrize("where", ["chat_template.jinja", "additional_chat_templates/default.jinja",
                                   "tokenizer_config.json"])
def test_any_chat_template_place_passes(tmp_path, where):
    (tmp_path / "tokenizer.json").write_text("{}")
    with pytest.raises(LayoutError, match="has no chat template"):
        require_tokenizer(tmp_path)
    path = tmp_path / where
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('{"chat_template": "{{ messages }}"}' if where.endswith(".json") else "{{ messages }}")
    require_tokenizer(tmp_path)


@pytest.mark.parametrize("templates, holds", [
    ([{"name": "tool_use", "template": "{{ messages }}"}], False),
    ([{"name": "tool_use", "template": "{{ messages }}"}, {"name": "default", "template": ""}], False),
    ([{"name": "tool_use", "template": "{{ messages }}"}, {"name": "default", "template": "{{ messages }}"}], True),
])  # fmt: skip
def test_named_chat_templates_count_only_with_a_default(tmp_path, templates, holds):
    """A tokenizer_config.json chat_template that is a list of named templates: transformers renders only the one
    named "default" and raises "multiple chat templates with no default specified" on every apply_chat_template
    call without it, so judge-serve would turn ready and fail every judgment."""
    import json

    (tmp_path / "tokenizer.json").write_text("{}")
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"chat_template": templates}))
    if holds:
        require_tokenizer(tmp_path)
    else:
        with pytest.raises(LayoutError, match="has no chat template"):
            require_tokenizer(tmp_path)


def test_a_folder_with_named_chat_templates_and_no_default_is_refused_at_start(tmp_path, monkeypatch, capsys):
    root = _with_tokenizer(released_r(tmp_path / "r"), chat_template=False)
    (root / "tokenizer_config.json").write_text('{"chat_template": [{"name": "tool_use", "template": "{{ messages }}"}]}')
    code, socket = _main(monkeypatch, ["--model", str(root), "--log-dir", str(tmp_path / "logs")])
    assert code == 2 and socket.closed
    assert "has no chat template" in capsys.readouterr().err
