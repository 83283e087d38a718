"""judge-serve's error messages (``serve.errors``) echo a client's text bounded: an unknown ``model`` of any length
is named clipped, in the 404 of ``/v1/judge`` (``serve.judging.unknown_model``) and of a proxied route whose
engine refused it (``engine_error``)."""

from __future__ import annotations

import json

from serve.errors import engine_error, unknown_model_message
from serve.judging import unknown_model


def test_an_unknown_model_name_of_any_length_is_echoed_clipped():
    """A 3 MB model name was echoed whole, a 3 MB 404; now its first 1,000 characters and its length, as a long
    task_type is (``serve.schema``'s clip); a short one is named whole."""
    model = "м" * 3_000_000
    clipped = f"{'м' * 1000}... [3000000 characters]"
    expected = f"model: the model `{clipped}` does not exist; this server serves `a` or `b`"
    assert unknown_model_message(model, ["a", "b"]) == expected
    assert str(unknown_model(model, ("a", "b"))) == expected
    vllm_404 = json.dumps({"error": {"message": f"The model `{model}` does not exist.", "type": "NotFoundError",
                                     "param": "model", "code": 404}}).encode()
    answer = engine_error(404, vllm_404, "generator", names=("a", "b"), asked_model=model)
    assert answer.status_code == 404 and len(answer.body) < 3000
    assert json.loads(answer.body)["error"] == {"message": expected, "type": "not_found_error", "param": "model",
                                                "code": "model_not_found"}
    assert unknown_model_message("gpt-4", ["a"]) == "model: the model `gpt-4` does not exist; this server serves `a`"
