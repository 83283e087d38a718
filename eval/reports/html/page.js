// judge-eval report pages: sortable tables and the item explorer. Plain ES2017, no libraries, works from file://.
"use strict";
(function () {
  // ---- sortable tables: click a header; cells carry their number in data-v ("" = undefined, sorts last) ----
  function sortTable(th) {
    const table = th.closest("table"), body = table.tBodies[0], col = th.cellIndex;
    const dir = th.dataset.dir === "desc" ? "asc" : "desc";
    table.querySelectorAll("th").forEach(h => { delete h.dataset.dir; h.removeAttribute("aria-sort"); });
    th.dataset.dir = dir;
    th.setAttribute("aria-sort", dir === "asc" ? "ascending" : "descending");
    const keep = Array.from(body.rows).filter(r => r.classList.contains("overall"));
    const rows = Array.from(body.rows).filter(r => !r.classList.contains("overall"));
    const key = r => { const c = r.cells[col]; if (!c) return null; const v = c.dataset.v;
      return v === undefined ? c.textContent.trim() : (v === "" ? null : Number(v)); };
    rows.sort((a, b) => { const x = key(a), y = key(b);
      if (x === null && y === null) return 0; if (x === null) return 1; if (y === null) return -1;
      const o = (typeof x === "number" && typeof y === "number") ? x - y : String(x).localeCompare(String(y));
      return dir === "asc" ? o : -o; });
    rows.concat(keep).forEach(r => body.appendChild(r));
  }
  document.addEventListener("click", ev => {
    const th = ev.target.closest("table.sortable th");
    if (th) sortTable(th);
  });
  // The keyboard reaches every sortable heading (Tab) and sorts by it with Enter or Space, as a click does.
  document.querySelectorAll("table.sortable th").forEach(th => { th.tabIndex = 0; });
  const pressed = ev => ev.key === "Enter" || ev.key === " ";
  document.addEventListener("keydown", ev => {
    const th = ev.target.closest && ev.target.closest("table.sortable th");
    if (th && pressed(ev)) { ev.preventDefault(); sortTable(th); }
  });
  // ---- the bookkeeping columns of every metric table: shown by the switch in the nav ----
  const toggle = document.getElementById("show-bookkeeping");
  if (toggle) {
    const show = () => document.body.classList.toggle("show-bookkeeping", toggle.checked);
    toggle.addEventListener("change", show);
    show();
  }

  // ---- the item explorer ----
  const holder = document.getElementById("explorer-data");
  if (!holder) { document.body.dataset.ready = "1"; return; }
  const D = JSON.parse(holder.textContent);
  const PAGE = D.page_size || 50;
  const root = document.getElementById("explorer");
  // The texts are parsed on the first opened item, not at load (they are most of a large page).
  let T = null;
  const texts = () => T || (T = JSON.parse(document.getElementById("explorer-texts").textContent));
  const rows = D.rows;  // [id, [category index per filter], [judge scores], reference, diff, [experts], detail index]
  const fmt = (v, d) => (v === null || v === undefined) ? "—" : (Number.isInteger(v) ? String(v) : v.toFixed(d || 2));
  const esc = s => String(s).replace(/[&<>"']/g, c =>
    ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}[c]));
  // A status badge's class: one of the known statuses, never a label taken as it is from the data.
  const BADGES = new Set(["scored", "failed", "experts-tie", "unlabelled", "missing", "unknown"]);
  const badgeClass = v => { const c = String(v).replace(/ /g, "-"); return BADGES.has(c) ? " " + c : ""; };

  // Files the page could not read (a data or predictions file moved since scoring): said before the items.
  for (const note of D.notes || []) {
    const p = document.createElement("p");
    p.className = "warn";
    p.textContent = note;
    root.appendChild(p);
  }
  const filterBox = document.createElement("div");
  filterBox.className = "filters";
  const selects = D.filters.map((f, k) => {
    const label = document.createElement("label");
    label.textContent = f.label;
    const sel = document.createElement("select");
    sel.dataset.filter = f.key;
    sel.innerHTML = '<option value="-1">all (' + f.values.length + ")</option>" +
      f.values.map((v, i) => '<option value="' + i + '">' + esc(v) + "</option>").join("");
    sel.addEventListener("change", () => { state.page = 0; apply(); });
    label.appendChild(sel); filterBox.appendChild(label);
    return sel;
  });
  const orderLabel = document.createElement("label");
  orderLabel.textContent = "order";
  const order = document.createElement("select");
  order.id = "order";
  order.innerHTML = '<option value="desc">' + esc(D.diff_label) + ' — largest first</option><option value="asc">' +
    esc(D.diff_label) + " — smallest first</option><option value=\"id\">id</option>";
  order.addEventListener("change", () => { state.page = 0; apply(); });
  orderLabel.appendChild(order); filterBox.appendChild(orderLabel);
  root.appendChild(filterBox);

  const pager = document.createElement("div");
  pager.className = "pager";
  pager.innerHTML = '<button id="prev">◀ previous</button><span id="page-info"></span><button id="next">next ▶</button>' +
    '<span id="match-count" class="note"></span>';
  root.appendChild(pager);
  const table = document.createElement("table");
  table.className = "items";
  table.id = "items";
  const head = ["id"].concat(D.list_columns.map(k => D.filters[k].label), ["experts", D.reference_label],
    D.judges.map(j => j), [D.diff_label]);
  table.innerHTML = "<thead><tr>" + head.map(h => "<th>" + esc(h) + "</th>").join("") + "</tr></thead><tbody></tbody>";
  // In a scroll box, as the metric tables: a list wider than a phone scrolls there, not the whole page.
  const scroller = document.createElement("div");
  scroller.className = "scroll";
  scroller.appendChild(table);
  root.appendChild(scroller);
  const body = table.tBodies[0];

  // Default order: largest difference first, undefined differences (failures, no reference) after all others.
  const byDiff = Array.from(rows.keys()).sort((a, b) => {
    const x = rows[a][4], y = rows[b][4];
    if (x === null && y === null) return a - b; if (x === null) return 1; if (y === null) return -1;
    return y - x || a - b; });
  const state = { page: 0, match: null };

  function apply() {
    const want = selects.map(s => Number(s.value));
    let base = byDiff;
    if (order.value === "asc") base = byDiff.slice().reverse().filter(i => rows[i][4] !== null)
      .concat(byDiff.filter(i => rows[i][4] === null));
    if (order.value === "id") base = Array.from(rows.keys()).sort((a, b) => rows[a][0] < rows[b][0] ? -1 : rows[a][0] > rows[b][0] ? 1 : 0);
    const match = [];
    for (const i of base) {
      const cats = rows[i][1];
      let ok = true;
      for (let k = 0; k < want.length; k++) if (want[k] >= 0 && cats[k] !== want[k]) { ok = false; break; }
      if (ok) match.push(i);
    }
    state.match = match;
    render();
  }

  function render() {
    const m = state.match, pages = Math.max(1, Math.ceil(m.length / PAGE));
    state.page = Math.min(state.page, pages - 1);
    document.getElementById("page-info").textContent = "page " + (state.page + 1) + " of " + pages;
    document.getElementById("match-count").textContent = m.length + " of " + rows.length + " items match";
    document.getElementById("prev").disabled = state.page === 0;
    document.getElementById("next").disabled = state.page >= pages - 1;
    const html = [];
    for (const i of m.slice(state.page * PAGE, (state.page + 1) * PAGE)) {
      const r = rows[i];
      const cells = ['<td>' + esc(r[0]) + "</td>"];
      for (const k of D.list_columns) {
        const v = D.filters[k].values[r[1][k]];
        cells.push(k === D.status_filter ? '<td><span class="badge' + badgeClass(v) + '">' + esc(v) + "</span></td>"
                                         : "<td>" + esc(v) + "</td>");
      }
      cells.push("<td>" + esc(r[5].map(v => fmt(v, 1)).join(", ")) + "</td>");
      cells.push('<td class="num">' + fmt(r[3]) + "</td>");
      for (const s of r[2]) cells.push('<td class="num">' + fmt(s) + "</td>");
      cells.push('<td class="num">' + fmt(r[4]) + "</td>");
      html.push('<tr class="item" tabindex="0" data-row="' + i + '">' + cells.join("") + "</tr>");
    }
    body.innerHTML = html.join("");
    window.__firstPageMs = window.__firstPageMs || performance.now();
    document.body.dataset.ready = "1";
  }

  // The data's texts (POLLUX's are Russian) say lang="ru" where the page around them is English: a screen reader
  // then reads each in its own voice.
  function text(title, value) {
    if (value === null || value === undefined || value === "") return "<h5>" + esc(title) + '</h5><div class="note">(none)</div>';
    return "<h5>" + esc(title) + '</h5><div class="text" lang="ru">' + esc(value) + "</div>";
  }

  function verdict(name, v) {
    let out = "<h5>" + esc(name) + "</h5>";
    if (!v) return out + '<div class="note">no prediction</div>';
    if (v.m) return out + '<div class="note missing">' + esc(v.m) + "</div>";  // its predictions file is gone
    // v.n: said over a verdict shown all the same (it judged the item's text before the data was edited)
    if (v.n) out += '<div class="note missing">' + esc(v.n) + "</div>";
    const facts = [];
    if (v.e) facts.push("error: " + esc(v.e) + (v.w ? " (" + esc(v.w) + ")" : ""));
    if (v.k !== undefined && v.k !== null) facts.push("confidence " + fmt(v.k, 3));
    if (v.x !== undefined && v.x !== null) facts.push("expected score " + fmt(v.x, 3));
    if (v.src) facts.push("score source: " + esc(v.src));
    if (facts.length) out += '<div class="note">' + facts.join(" · ") + "</div>";
    if (v.p) {
      const levels = Object.keys(v.p).sort((a, b) => Number(a) - Number(b));
      out += '<div class="bars" title="the judge\'s probability of each score">' + levels.map(l =>
        '<span style="height:' + Math.max(1, Math.round(38 * v.p[l])) + 'px" title="' + esc(l) + ": " + fmt(v.p[l], 3) +
        '"><em>' + esc(l) + "</em></span>").join("") + "</div><div style=\"height:14px\"></div>";
    }
    out += '<div class="text feedback" lang="ru">' + esc(v.f || "") + "</div>";
    if (v.o && v.o !== v.f)
      out += '<details><summary>raw output</summary><div class="text" lang="ru">' + esc(v.o) + "</div></details>";
    return out;
  }

  function detail(i) {
    const r = rows[i];
    if (r[6] < 0) return '<div class="note">' + esc(D.no_text_note) + "</div>";
    const S = texts().strings, t = texts().details[r[6]];
    // t.m: why the texts are not here (the data file is gone, the item is not in it), said instead of "(none)".
    let out = '<div class="cols2"><div>' + (t.m ? '<h5>Texts</h5><div class="note missing">' + esc(t.m) + "</div>"
      : text("Instruction", S[t.i]) + text("Answer", S[t.a]) + text("Reference answer", S[t.r])) +
      "</div><div>" + (t.m ? "" : text("Criterion and rubric", S[t.u]));
    out += "<h5>Experts</h5><table class=\"grid experts\"><tr><th>#</th><th>score</th><th>comment</th></tr>" +
      r[5].map((s, k) => "<tr><td>" + (k + 1) + "</td><td>" + fmt(s, 1) +
        '</td><td lang="ru" style="white-space:pre-wrap">' +
        esc((t.c && t.c[k]) || "") + "</td></tr>").join("") + "</table>";
    out += "<div class=\"note\">" + esc(D.reference_label) + ": " + fmt(r[3]) + "</div>";
    // compare.html names each row's own run over its verdict (D.filter_judges, by the row's comparison): the
    // column heading cannot, when three runs or more share the run column.
    const judges = D.filter_judges ? D.filter_judges[r[1][D.judges_filter]] : D.judges;
    out += "</div></div><div class=\"cols" + (judges.length > 1 ? "2" : "1") + "\">" +
      judges.map((j, k) => "<div>" + verdict(j + " — score " + fmt(r[2][k]), t.v[k]) + "</div>").join("") + "</div>";
    return out;
  }

  function toggleItem(tr) {
    const next = tr.nextElementSibling;
    if (next && next.classList.contains("detail-row")) { next.remove(); tr.classList.remove("open"); return; }
    const row = document.createElement("tr");
    row.className = "detail-row";
    row.innerHTML = '<td colspan="' + tr.cells.length + '"><div class="detail">' + detail(Number(tr.dataset.row)) + "</div></td>";
    tr.after(row);
    tr.classList.add("open");
  }
  body.addEventListener("click", ev => {
    const tr = ev.target.closest("tr.item");
    if (tr) toggleItem(tr);
  });
  // An item row is reached with Tab and opened (or closed) with Enter or Space, as a click does.
  body.addEventListener("keydown", ev => {
    const tr = ev.target.closest("tr.item");
    if (tr && ev.target === tr && pressed(ev)) { ev.preventDefault(); toggleItem(tr); }
  });
  document.getElementById("prev").addEventListener("click", () => { state.page--; render(); });
  document.getElementById("next").addEventListener("click", () => { state.page++; render(); });
  apply();
})();
