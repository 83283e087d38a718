"""judge-serve's side of the promise its clients now hold it to: each ``/v1/judge`` response item is the request's
item (or pair) at its place, in request order, with its ``index`` and the ``id`` it was sent with, exactly (a number
stays a number, none stays null). judge-eval refuses an answer whose item has another id or index than asked, and the
reward clients, whose items carry no id, one whose index is not each item's place
(tests/unit/test_judge_serve_item_ids.py): a judge-serve that stopped echoing them would fail every request, so the
promise is pinned here, items and pairs alike, through the app over a scripted engine."""

from __future__ import annotations

from tests.support.served_app import served

HEADERS = {"Authorization": "Bearer k"}
CRITERION = {"name": "Точность", "rubrics": "0: неточно\n\n1: отчасти\n\n2: точно"}
SCALE = "Какой ответ лучше по корректности?\n-1: первый\n0: одинаково\n1: второй"


def test_each_item_and_pair_comes_back_at_its_index_with_its_id_as_sent(tiny_causal_dir, monkeypatch):
    second = {**CRITERION, "name": "Вторая"}
    items = [{"id": "b", "instruction": "Вопрос 1?", "answer": "Ответ 1.", "criteria": [CRITERION, second]},
             {"id": 7, "instruction": "Вопрос 2?", "answer": "Ответ 2.", "criteria": [CRITERION]},
             {"instruction": "Вопрос 3?", "answer": "Ответ 3.", "criteria": [CRITERION]},
             {"id": "7", "instruction": "Вопрос 4?", "answer": "Ответ 4.", "criteria": [CRITERION]}]
    pairs = [{"id": id_, "instruction": f"Вопрос {k}?", "answer_1": "А", "answer_2": "Б", "rubrics": SCALE}
             for k, id_ in enumerate(("p", 3, None))]
    with served(tiny_causal_dir, monkeypatch, api_key="k") as (http, engine):
        pointwise = http.post("/v1/judge", headers=HEADERS, json={"items": items})
        pairwise = http.post("/v1/judge", headers=HEADERS, json={"pairs": pairs})
    assert pointwise.status_code == 200, pointwise.text
    assert pairwise.status_code == 200, pairwise.text
    assert [(item["index"], item["id"], [r["criterion"] for r in item["results"]])
            for item in pointwise.json()["items"]] == [
        (0, "b", ["Точность", "Вторая"]), (1, 7, ["Точность"]), (2, None, ["Точность"]), (3, "7", ["Точность"])]
    assert [(item["index"], item["id"], len(item["results"])) for item in pairwise.json()["items"]] == [
        (0, "p", 1), (1, 3, 1), (2, None, 1)]
