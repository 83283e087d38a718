"""A checkpoint folder without tokenizer files: transformers built a tokenizer of one token from it, judge-serve
turned ready, and every prompt reached the engine empty (400 "You must pass at least one prompt", every item a
failure). Now judge-serve refuses the folder at start, one line naming it and the files looked for, exit 2, before
any engine starts."""

from __future__ import annotations

import pytest

from serve.layout import TOKENIZER_FILES, LayoutError, require_tokenizer
from tests.support.released_r_checkpoint import released_r


def test_a_folder_without_tokenizer_files_is_refused_at_start_naming_them(tmp_path, monkeypatch, capsys):
    import serve.cli

    class Socket:
        closed = False

        def close(self) -> None:
            self.closed = True

    socket = Socket()
    monkeypatch.setattr(serve.cli, "check_installed_vllm", lambda: None)
    monkeypatch.setattr(serve.cli, "bind_listening_socket", lambda host, port: socket)
    root = released_r(tmp_path / "r")  # weights and tokenizer_config.json, no tokenizer
    assert serve.cli.main(["--model", str(root), "--log-dir", str(tmp_path / "logs")]) == 2
    assert socket.closed
    assert capsys.readouterr().err == (
        f"judge-serve: model: {root} holds no tokenizer (tokenizer.json, vocab.json, tokenizer.model, spiece.model, "
        "vocab.txt): judge-serve tokenizes every prompt with it; save the base model's tokenizer into the folder "
        "(tokenizer.save_pretrained), as judge-train's exports have it\n")


@pytest.mark.parametrize("name", TOKENIZER_FILES)
def test_any_tokenizer_file_passes(tmp_path, name):
    (tmp_path / name).write_text("{}")
    require_tokenizer(tmp_path)
    (tmp_path / name).unlink()
    with pytest.raises(LayoutError, match="holds no tokenizer"):
        require_tokenizer(tmp_path)
