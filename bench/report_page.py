"""How long report.html takes to show its item explorer for a run of the full POLLUX test's size (~160,000 items).

    .venv/bin/python bench/report_page.py
    .venv/bin/python bench/report_page.py --items 40000 --text-items -1      # example override: every text embedded

Builds a seeded synthetic run shaped like the POLLUX test (``bench/eval_metrics.py``'s table: 11 evaluated
models, 35 task types, 60 criteria, 2-5 experts, 3 % parse failures), with texts of realistic length in Cyrillic
(instructions ~400 characters and answers ~1,200 shared by the ~10 criteria of one answer, rubrics per criterion
and scale, a ~150-character comment per expert, ~250 characters of judge feedback), scores it (``evaluate`` with a
small bootstrap: the metric step is benchmarked in ``bench/eval_metrics.py``), writes the page with
``eval.reports.html_report.write_report_page`` and opens it from disk in headless chromium (Debian's, via selenium).

Printed: the page's size, the time to write it, and the time until the explorer shows its first page, both as
the page measures it (``performance.now()`` since navigation start) and as the wall clock around ``driver.get``.
Without ``--out`` the run, the page and Chromium's profile are in temporary folders removed at the end; ``--out``
keeps the run and the page, with a screenshot.
"""

from __future__ import annotations

import dataclasses
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
WORDS = ("ответ", "модель", "критерий", "задача", "текст", "пользователь", "требование", "ошибка", "стиль", "рифма",
         "логика", "факт", "пример", "вывод", "структура", "описание", "запрос", "оценка", "смысл", "точность",
         "полностью", "частично", "верно", "неверно", "хорошо", "плохо", "учтено", "пропущено", "и", "но", "в", "на")


def _text(rng: np.random.Generator, chars: int) -> str:
    words = rng.choice(WORDS, size=max(1, chars // 7))
    return " ".join(words).capitalize() + "."


def build_run(n_items: int, folder: Path, seed: int = 0):
    """Score a synthetic run into ``folder``; returns ``(records, predictions)`` for the page."""
    sys.path.insert(0, str(REPO / "bench"))
    from eval_metrics import synthetic_table

    import judge
    from eval.scoring import item_table

    table = synthetic_table(n_items, seed=seed)
    rng = np.random.default_rng(seed + 1)
    target = "mode"
    derived = item_table.derive(table, target, vc_repeats=10, seed=seed)
    result = item_table.evaluate(table, target=target, n_boot=50, seed=seed, vc_repeats=10, derived=derived)
    item_table.write_table(table, folder / "items.parquet", extra={
        "reference": derived.reference, "vc_judge": derived.vc_judge, "vc_experts": derived.vc_experts})
    result = dataclasses.replace(result, data="(synthetic)", predictions="(synthetic)")
    (folder / "metrics.json").write_text(item_table.dumps(result) + "\n", encoding="utf-8")

    answers = [(_text(rng, 400), _text(rng, 1200), _text(rng, 600)) for _ in range(n_items // 10 + 1)]
    # One rubric per criterion and scale (a name the taxonomy scores on two scales has two), its levels those of
    # the item's scale, which its scores lie on (``synthetic_table``'s scale_high); in sorted order, so that the
    # texts drawn for each do not follow the process's string hashing.
    tops = table.scale_high.astype(int)
    rubrics = {(name, top): "\n\n".join(f"{level}: {_text(rng, 100)}" for level in range(top + 1))
               for name, top in sorted(set(zip(table.criteria_name.tolist(), tops.tolist())))}
    records, predictions = [], []
    for i in range(n_items):
        instruction, answer, reference = answers[i // 10]
        experts = [float(v) for v in table.experts[i] if np.isfinite(v)]
        records.append(judge.JudgeRecord(
            id=str(table.ids[i]), instruction=instruction, answer=answer, reference_answer=reference,
            criteria_name=str(table.criteria_name[i]), rubrics=rubrics[table.criteria_name[i], tops[i]],
            expert_scores=tuple(experts), expert_feedback=tuple(_text(rng, 150) for _ in experts),
            model_id=str(table.model_id[i]), task_type=str(table.task_type[i])))
        ok = table.status[i] == "ok"
        feedback = _text(rng, 250) if ok else ""
        score = float(table.judge[i]) if ok else None
        predictions.append({"id": str(table.ids[i]), "judge": "synthetic", "feedback": feedback, "score": score,
                            "raw_output": f"[FEEDBACK] {feedback} [RESULT] {score} [END]" if ok else "[FEEDBACK] …",
                            "parse_ok": bool(ok), "error": None if ok else "no_result", "reason": "",
                            "score_source": "verdict" if ok else None})
    return records, predictions


def _time_loads(driver, page: Path, repeats: int, By, WebDriverWait) -> tuple[list, list, int, str, bool]:
    """Load the page ``repeats`` times: seconds to the explorer's first page in the page and around ``driver.get``,
    the rows shown, the match count's text, and whether the first item opens."""
    driver.set_page_load_timeout(300)
    in_page, wall = [], []
    for _ in range(repeats):
        driver.get("about:blank")
        started = time.perf_counter()
        driver.get(page.as_uri())
        WebDriverWait(driver, 300).until(lambda d: d.execute_script("return document.body.dataset.ready") == "1")
        wall.append(time.perf_counter() - started)
        in_page.append(driver.execute_script("return window.__firstPageMs") / 1000)
        shown = len(driver.find_elements(By.CSS_SELECTOR, "#items tr.item"))
        matched = driver.find_element(By.ID, "match-count").text
    driver.find_element(By.CSS_SELECTOR, "#items tr.item").click()
    opened = bool(driver.find_elements(By.CSS_SELECTOR, "tr.detail-row .detail"))
    return in_page, wall, shown, matched, opened


def texts_said(text_items: int, items: int) -> str:
    """How many items the page can embed texts for: ``--text-items`` (-1: every item) bounded by the run's items. The
    page's byte budget (``eval.reports.html_explorer.DEFAULT_TEXT_BYTES``) may stop the texts sooner."""
    most = items if text_items < 0 else min(text_items, items)
    return f"texts embedded for at most {most} of the {items} items" if most else "no texts embedded"


def main(argv: list[str] | None = None) -> int:
    from measure import positive_int

    from judge.plumbing.config_files import ExactArgumentParser  # long options in full, never abbreviated

    parser = ExactArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=160_000, help="items in the synthetic run")
    parser.add_argument("--text-items", type=int, default=None,
                        help="items whose texts the page embeds (default: the page's default; -1: all)")
    parser.add_argument("--out", default=None, help="folder that keeps the run, the page and a screenshot (default: "
                                                    "a temporary one, removed at the end)")
    parser.add_argument("--repeats", type=positive_int, default=3, help="page loads to time (the median is printed)")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(REPO))
    from eval.reports.html_explorer import DEFAULT_TEXT_ITEMS
    from eval.reports.html_report import write_report_page
    from tests.support.browser import CHROMEDRIVER, chrome_options, missing_browser

    reason = missing_browser()
    if reason:
        print(f"cannot run: {reason}", file=sys.stderr)
        return 2
    # Without --out the run, the page and the browser profile live in temporary folders, removed at the end.
    scratch = None if args.out else tempfile.TemporaryDirectory(prefix="report-page-bench-", ignore_cleanup_errors=True)
    folder = Path(args.out or scratch.name)
    folder.mkdir(parents=True, exist_ok=True)
    try:
        started = time.perf_counter()
        records, predictions = build_run(args.items, folder)
        print(f"synthetic run of {args.items} items scored in {time.perf_counter() - started:.1f} s")
        text_items = DEFAULT_TEXT_ITEMS if args.text_items is None else args.text_items
        started = time.perf_counter()
        page = write_report_page(folder, records, predictions, text_items)
        write_s = time.perf_counter() - started
        size_mb = page.stat().st_size / 2**20
        print(f"report.html: {size_mb:.1f} MiB, written in {write_s:.1f} s ({texts_said(text_items, args.items)})")

        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
        from selenium.webdriver.common.by import By
        from selenium.webdriver.support.ui import WebDriverWait

        with tempfile.TemporaryDirectory(prefix="chromium-profile-", ignore_cleanup_errors=True) as profile:
            driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=chrome_options(profile))
            try:
                in_page, wall, shown, matched, opened = _time_loads(driver, page, args.repeats, By, WebDriverWait)
                screenshot = folder / "report-page-bench.png" if args.out else None
                if screenshot is not None:
                    driver.save_screenshot(str(screenshot))
            finally:
                driver.quit()
        print(f"first page of the explorer: {np.median(in_page):.2f} s in the page (median of {args.repeats}: "
              f"{', '.join(f'{v:.2f}' for v in in_page)}), {np.median(wall):.2f} s wall clock around driver.get")
        print(f"rows shown: {shown}; {matched}; first item opens: {opened}; "
              f"{f'screenshot: {screenshot}' if screenshot else 'the run, the page and a screenshot: with --out'}")
    finally:
        if scratch is not None:
            scratch.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
