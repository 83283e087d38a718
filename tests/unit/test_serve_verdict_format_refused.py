"""judge-serve asked for a verdict format its judge cannot write: one line, exit 2, the port let go."""

from __future__ import annotations

from tests.support.released_r_checkpoint import released_r


def test_a_verdict_format_the_judge_cannot_write_is_one_line_exit_2_with_the_port_released(tmp_path, monkeypatch,
                                                                                           capsys):
    """create_app decides the verdict format: an integer format asked of a regression judge is a bad configuration
    (exit 2, one line), not a traceback, and the port judge-serve took is let go."""
    import serve.cli

    class Socket:
        closed = False

        def close(self) -> None:
            self.closed = True

    socket = Socket()
    monkeypatch.setattr(serve.cli, "check_installed_vllm", lambda: None)
    monkeypatch.setattr(serve.cli, "bind_listening_socket", lambda host, port: socket)
    root = released_r(tmp_path / "r")
    (root / "tokenizer.json").write_text("{}")  # the release ships one; without it the folder is refused first
    code = serve.cli.main(["--model", str(root), "--verdict-format", "integer", "--log-dir", str(tmp_path / "logs")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and socket.closed
    assert err.startswith("judge-serve: verdict_format: integer") and "\n" not in err
