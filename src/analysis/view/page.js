/* abridge view: the page's script. Plain browser JavaScript; the data is inlined by `abridge view`. */
(function () {
  'use strict';
  const started = performance.now();
  const D = JSON.parse(document.getElementById('data').textContent);
  const parsedAt = performance.now();
  const P = D.points;
  const N = P.entry.length;
  const cats = D.categories;
  const $ = (id) => document.getElementById(id);
  const int = (n) => (n === null || n === undefined ? '—' : Math.round(n).toLocaleString('en-US'));
  const pct = (x) => `${(x * 100).toFixed(x < 0.1 ? 1 : 0)}%`;
  const esc = (s) =>
    String(s).replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]);
  // The page runs under a Content-Security-Policy without 'unsafe-inline': markup carries no style attributes. Colours,
  // widths and offsets ride in data-* attributes and are set here, through the CSSOM (which the policy allows).
  const styled = (root) => {
    for (const el of root.querySelectorAll('[data-bg],[data-width],[data-top]')) {
      if (el.dataset.bg) el.style.background = el.dataset.bg;
      if (el.dataset.width) el.style.width = el.dataset.width;
      if (el.dataset.top) el.style.top = el.dataset.top;
    }
    return root;
  };
  const BASE_COLORS = {
    prefix: '#9aa3b5',
    system: '#c5b3e6',
    summary: '#e0622a',
    user: '#5fb36b',
    assistant: '#6f95e6',
  };
  const TOOL_COLORS = [
    '#f2a541',
    '#d96c8a',
    '#46b5b0',
    '#b08b4f',
    '#8d6cd9',
    '#e6d35c',
    '#2e9e6a',
    '#a3c94f',
    '#cf8fd6',
    '#7b5a3a',
    '#f07f6e',
    '#4fb0e0',
    '#9c6b9e',
    '#d4b483',
    '#5f6f3a',
    '#e895c0',
  ];
  cats.forEach((c, i) => (c.color = BASE_COLORS[c.key] || TOOL_COLORS[(i - 5) % TOOL_COLORS.length]));

  // ---- header
  const m = D.meta;
  $('head').innerHTML = `<h1>${esc(m.title)}</h1><div class="facts">
    <span>format <b>${esc(m.format)}</b></span><span>model <b>${esc(m.models.join(', ') || 'not reported')}</b></span>
    <span><b>${int(m.messages)}</b> messages · <b>${int(N)}</b> requests (${int(m.reportedRequests)} with reported usage)</span>
    <span><b>${D.compactions.length}</b> compaction${D.compactions.length === 1 ? '' : 's'}</span>
    ${m.sidechainMessages ? `<span>${int(m.sidechainMessages)} subagent messages not shown</span>` : ''}
    ${m.problems ? `<span>${int(m.problems)} unreadable records</span>` : ''}
    <span class="dim">${esc(m.source)}</span><span class="dim">tokens ${m.counting === 'exact' ? 'counted exactly' : 'estimated'}, scaled to the provider's reports</span></div>`;

  // ---- chart
  let selected = N - 1;
  let plot;
  function chartData() {
    const x = Array.from({ length: N }, (_, i) => i);
    // Stacked: each category's series is the running total up to it; drawn top first so lower ones overlay.
    const stacks = [];
    let run = new Array(N).fill(0);
    for (let k = 0; k < cats.length; k++) {
      run = run.map((v, i) => v + P.tokens[k][i]);
      stacks.push(run);
    }
    const series = [x];
    for (let k = cats.length - 1; k >= 0; k--) series.push(stacks[k]);
    series.push(P.reported, P.predicted, P.window, P.warn, P.compact, P.block);
    return series;
  }
  function makeChart() {
    const el = $('chart');
    const width = Math.max(480, el.clientWidth || 900);
    const bars = N <= 600;
    const fillPath = bars ? uPlot.paths.bars({ size: [0.92, 40], align: 0 }) : uPlot.paths.stepped({ align: 1 });
    const series = [
      { label: 'request', value: (u, v) => (v === null || v === undefined ? '' : `#${v + 1} · entry ${P.entry[v]}`) },
    ];
    for (let k = cats.length - 1; k >= 0; k--) {
      const c = cats[k];
      series.push({
        label: c.label.length > 40 ? `${c.label.slice(0, 38)}…` : c.label,
        fill: c.color,
        stroke: c.color,
        width: 0,
        paths: fillPath,
        points: { show: false },
        value: (u, v, si, i) => (i === null || i === undefined ? '' : int(P.tokens[k][i])),
      });
    }
    const line = (label, stroke, dash, w) => ({
      label,
      stroke,
      width: w || 1.5,
      dash,
      points: { show: false },
      value: (u, v) => int(v),
      spanGaps: false,
    });
    series.push({
      ...line('reported prompt', '#111', undefined, 1.8),
      points: { show: N <= 300, size: 4, fill: '#111' },
    });
    series.push(line("abridge's prediction", '#2f6fde', [6, 4], 1.6));
    series.push(line('window', '#555', [2, 3], 1.2));
    series.push(line('warn', '#d99a00', [8, 4], 1));
    series.push(line('compact', '#e0622a', [8, 4], 1));
    series.push(line('block', '#c62828', [8, 4], 1));
    const marks = {
      hooks: {
        draw: [
          (u) => {
            const ctx = u.ctx;
            ctx.save();
            for (const c of D.compactions) {
              const xpos = Math.round(u.valToPos(c.beforePoint - 0.5, 'x', true));
              ctx.strokeStyle = c.source === 'abridge' ? '#8a1fb5' : '#e0622a';
              ctx.lineWidth = 2 * devicePixelRatio;
              ctx.setLineDash([6 * devicePixelRatio, 4 * devicePixelRatio]);
              ctx.beginPath();
              ctx.moveTo(xpos, u.bbox.top);
              ctx.lineTo(xpos, u.bbox.top + u.bbox.height);
              ctx.stroke();
              ctx.setLineDash([]);
              ctx.fillStyle = ctx.strokeStyle;
              ctx.font = `${12 * devicePixelRatio}px system-ui, sans-serif`;
              ctx.fillText(`#${c.number} ${c.source}`, xpos + 4 * devicePixelRatio, u.bbox.top + 14 * devicePixelRatio);
            }
            if (selected >= 0 && selected < N) {
              const xs = Math.round(u.valToPos(selected, 'x', true));
              ctx.strokeStyle = 'rgba(47,111,222,.55)';
              ctx.lineWidth = 1 * devicePixelRatio;
              ctx.beginPath();
              ctx.moveTo(xs, u.bbox.top);
              ctx.lineTo(xs, u.bbox.top + u.bbox.height);
              ctx.stroke();
            }
            ctx.restore();
          },
        ],
      },
    };
    const opts = {
      width,
      height: 360,
      cursor: { points: { show: false }, drag: { x: true, y: false } },
      scales: {
        x: { time: false, range: (u, mn, mx) => [mn - 0.5, mx + 0.5] },
        y: { range: (u, mn, mx) => [0, Math.max(mx, 1) * 1.05] },
      },
      axes: [
        { label: 'request', values: (u, vals) => vals.map((v) => (Number.isInteger(v) ? v + 1 : '')) },
        {
          label: 'prompt tokens',
          size: 70,
          values: (u, vals) => vals.map((v) => (v >= 1e6 ? `${v / 1e6}M` : v >= 1000 ? `${v / 1000}K` : v)),
        },
      ],
      legend: { live: true },
      series,
      plugins: [marks],
    };
    el.innerHTML = '';
    plot = new uPlot(opts, chartData(), el);
    plot.over.addEventListener('click', () => {
      const i = plot.cursor.idx;
      if (i !== null && i !== undefined) select(i);
    });
  }
  if (N > 0) makeChart();
  else $('chart').innerHTML = '<p class="hint">No provider requests in this transcript: nothing to chart.</p>';
  let resizeTimer;
  window.addEventListener('resize', () => {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(
      () => plot && plot.setSize({ width: Math.max(480, $('chart').clientWidth), height: 360 }),
      150,
    );
  });

  // ---- the context as of a request
  const slider = $('at');
  slider.max = String(Math.max(0, N - 1));
  slider.addEventListener('input', () => select(Number(slider.value)));
  function levelOf(i, used) {
    return used >= P.block[i] ? 'block' : used >= P.compact[i] ? 'compact' : used >= P.warn[i] ? 'warn' : 'ok';
  }
  function select(i) {
    if (N === 0) return;
    selected = Math.max(0, Math.min(N - 1, i));
    slider.value = String(selected);
    const used = P.reported[selected] ?? P.predicted[selected];
    $('atLabel').textContent =
      `request ${selected + 1} of ${N} · entry ${P.entry[selected]}${P.line[selected] !== null ? ` · line ${P.line[selected]}` : ''}`;
    const win = P.window[selected];
    const level = levelOf(selected, used);
    const rows = cats.map((c, k) => ({ c, k, t: P.tokens[k][selected] })).filter((r) => r.t > 0 || r.k < 5);
    const catRows = rows
      .map(
        (r) =>
          `<tr><td><span class="sw" data-bg="${esc(r.c.color)}"></span>${esc(r.c.label)}</td><td>${int(r.t)}</td><td>${pct(r.t / win)}</td><td class="bar"><span data-width="${Math.min(100, (r.t / win) * 100)}%" data-bg="${esc(r.c.color)}"></span></td></tr>`,
      )
      .join('');
    const free = Math.max(0, P.compact[selected] - used);
    const tools = cats
      .map((c, k) => ({ c, k }))
      .filter((x) => x.c.tool && (P.results[x.k][selected] || P.calls[x.k][selected] || P.tokens[x.k][selected]));
    tools.sort((a, b) => P.tokens[b.k][selected] - P.tokens[a.k][selected]);
    const toolRows = tools
      .map(
        (x) =>
          `<tr><td><span class="sw" data-bg="${esc(x.c.color)}"></span>${esc(x.c.label)}</td><td>${int(P.calls[x.k][selected])}</td><td>${int(P.results[x.k][selected])}</td><td>${int(P.tokens[x.k][selected])}</td><td>${pct(P.tokens[x.k][selected] / win)}</td></tr>`,
      )
      .join('');
    const servers = Object.create(null); // keyed by server names from the transcript (`__proto__` included)
    for (const x of tools) {
      if (!x.c.mcpServer) continue;
      const s = (servers[x.c.mcpServer] ||= { calls: 0, results: 0, tokens: 0, tools: 0 });
      s.calls += P.calls[x.k][selected];
      s.results += P.results[x.k][selected];
      s.tokens += P.tokens[x.k][selected];
      s.tools++;
    }
    const serverRows = Object.entries(servers)
      .sort((a, b) => b[1].tokens - a[1].tokens)
      .map(
        ([n, s]) =>
          `<tr><td>${esc(n)} <span class="dim">(${s.tools} tool${s.tools === 1 ? '' : 's'})</span></td><td>${int(s.calls)}</td><td>${int(s.results)}</td><td>${int(s.tokens)}</td><td>${pct(s.tokens / win)}</td></tr>`,
      )
      .join('');
    $('contextTitle').textContent = `Context as of request ${selected + 1} (/context)`;
    $('contextBody').innerHTML =
      `<p><b class="level-${level}">${level}</b> · ${P.reported[selected] !== null ? `reported <b>${int(P.reported[selected])}</b>` : 'no reported usage'} · predicted ${int(P.predicted[selected])}${P.anchored[selected] ? '' : ' (not anchored)'} · window ${int(win)} (${int(P.reserve[selected])} reserved for the response) · ${pct(used / win)} of the window · ${esc(m.models[P.model[selected]] || '')} · ${int(P.messages[selected])} messages in context</p>
      <div class="grid"><div><table><tr><th>component</th><th>tokens</th><th>of window</th><th></th></tr>${catRows}
      <tr class="dim"><td>Free until compaction (at ${int(P.compact[selected])})</td><td>${int(free)}</td><td>${pct(free / win)}</td><td></td></tr>
      <tr class="dim"><td>Marks</td><td colspan="3">warn ${int(P.warn[selected])} · compact ${int(P.compact[selected])} · block ${int(P.block[selected])}</td></tr></table></div>
      <div><table><tr><th>tool</th><th>calls</th><th>results</th><th>result tokens</th><th>of window</th></tr>${toolRows || '<tr><td colspan="5" class="dim">no tool results in this context</td></tr>'}</table>
      ${serverRows ? `<table class="spaced"><tr><th>MCP server</th><th>calls</th><th>results</th><th>result tokens</th><th>of window</th></tr>${serverRows}</table>` : '<p class="hint">No MCP tools (named mcp__server__tool) in this context.</p>'}</div></div>`;
    styled($('contextBody'));
    if (plot) plot.redraw(false, false);
  }

  // ---- compactions
  const recByEntry = new Map(D.records.map((r, i) => [r.e, i]));
  $('compactionList').innerHTML = D.compactions.length
    ? D.compactions
        .map((c, ci) => {
          const head = `#${c.number} by ${esc(c.source)}${c.trigger ? ` (${esc(c.trigger)})` : ''} · ${c.line !== undefined ? `line ${c.line}` : `entry ${c.entry}`} · ${int(c.tokensBefore)} → ${int(c.tokensAfter)} tokens · ${int(c.archivedMessages)} messages archived${c.edits.length ? ` · ${c.edits.length} edited` : ''}`;
          const edits = c.edits.length
            ? `<table><tr><th>entry</th><th>tool</th><th>how</th><th>tokens before</th><th>after</th><th>ref</th><th>now reads</th></tr>${c.edits
                .map(
                  (e) =>
                    `<tr><td><a href="#" data-entry="${e.entry}">${e.entry}</a></td><td>${esc(((D.records[recByEntry.get(e.entry)] || {}).tools || []).join(', '))}</td><td>${esc(e.how)}</td><td>${int(e.before)}</td><td>${int(e.after)}</td><td>${esc(e.ref || '')}</td><td class="dim prose">${esc(e.preview.slice(0, 160))}</td></tr>`,
                )
                .join('')}</table>`
            : '';
          const hidden = c.hidden
            ? `<p class="dim">Already hidden by earlier compactions: ${c.hidden.map((h) => `entries ${h.fromEntry}–${h.toEntry}`).join(', ')}</p>`
            : '';
          return `<details class="compaction" data-n="${c.number}"><summary>${head}</summary><div>
            <p>${c.strategies && c.strategies.length ? `strategies: <b>${esc(c.strategies.join(' → '))}</b> · ` : ''}archived entries ${c.archived ? `${c.archived.fromEntry}–${c.archived.toEntry}` : '—'} (${int(c.archivedTokens)} tokens counted) · <a href="#" data-show-archived="${c.number}">show archived messages</a> · <a href="#" data-point="${c.beforePoint}">context just after</a></p>
            <h4>Summary the model saw instead</h4><pre class="summary">${esc(c.summary)}</pre>${edits}${hidden}</div></details>`;
        })
        .join('')
    : '<p class="hint">No compactions in this session.</p>';
  $('compactionList').addEventListener('click', (ev) => {
    const a = ev.target.closest('a');
    if (!a) return;
    ev.preventDefault();
    if (a.dataset.entry !== undefined) openRecord(recByEntry.get(Number(a.dataset.entry)), true);
    if (a.dataset.point !== undefined) select(Number(a.dataset.point));
    if (a.dataset.showArchived !== undefined) {
      $('roleFilter').value = 'archived';
      archivedBy = Number(a.dataset.showArchived);
      applyFilter();
      $('conversation').scrollIntoView();
    }
  });

  // ---- conversation: a virtual list of fixed-height rows; full texts are decompressed on first use
  const R = D.records;
  const ROW = 28;
  let view = R.map((_, i) => i);
  let sel = -1;
  let query = '';
  let archivedBy = 0;
  let texts = null;
  let textsPromise = null;
  // base64 → bytes → gunzip → JSON, each step native (fetch of a data: URL and Response.json are several times slower).
  function base64Bytes(b64) {
    if (Uint8Array.fromBase64) return Uint8Array.fromBase64(b64);
    const bin = atob(b64);
    const u = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) u[i] = bin.charCodeAt(i);
    return u;
  }
  async function readTexts() {
    if (document.readyState === 'loading')
      await new Promise((done) => document.addEventListener('DOMContentLoaded', done, { once: true }));
    const ds = new DecompressionStream('gzip');
    const w = ds.writable.getWriter();
    w.write(base64Bytes(document.getElementById('texts').textContent.trim())).catch(() => undefined);
    w.close().catch(() => undefined);
    const bytes = await new Response(ds.readable).arrayBuffer();
    texts = JSON.parse(new TextDecoder().decode(bytes));
    return texts;
  }
  function loadTexts() {
    if (!textsPromise) textsPromise = readTexts();
    return textsPromise;
  }
  // Lower-cased texts, made on first search and kept: later searches only scan.
  let lowered = null;
  const list = $('list');
  const inner = $('listInner');
  const fmtSize = (r) => `${int(r.t)} tok`;
  // A record's time, when it is one a date can hold (toISOString throws a RangeError on any other).
  const when = (ts) => {
    const d = new Date(ts);
    return ts && !Number.isNaN(d.getTime()) ? ` · ${d.toISOString().replace('T', ' ').slice(0, 19)}` : '';
  };
  function rowHtml(i, top) {
    const r = R[i];
    const role = r.r === 'tool' ? 'tool' : r.r;
    const badges =
      (r.a ? `<span class="badge">archived by #${r.a}</span>` : '') +
      (r.ed
        ? r.ed
            .map(
              (e) =>
                `<span class="badge">${esc(e.how)} by #${e.n}: ${int(e.before)}→${int(e.after)}${e.ref ? ` · ${esc(e.ref)}` : ''}</span>`,
            )
            .join('')
        : '') +
      (r.err ? '<span class="badge err">error</span>' : '');
    const label =
      r.r === 'tool' ? 'result' : r.r === 'compaction' ? `compact #${r.k}` : r.syn && r.r === 'user' ? 'injected' : r.r;
    return `<div class="row${r.a ? ' archived' : ''}${i === sel ? ' sel' : ''}" data-i="${i}" data-top="${top}px"><span class="n">${r.l !== undefined ? r.l : r.e}</span><span class="role ${role}">${label}</span>${r.tools ? `<span class="tools">${esc(r.tools.join(', '))}</span>` : ''}<span class="size">${fmtSize(r)}</span>${badges}<span class="pv">${esc(r.p)}</span></div>`;
  }
  function renderList() {
    inner.style.height = `${view.length * ROW}px`;
    const first = Math.max(0, Math.floor(list.scrollTop / ROW) - 10);
    const last = Math.min(view.length, Math.ceil((list.scrollTop + list.clientHeight) / ROW) + 10);
    let html = '';
    for (let j = first; j < last; j++) html += rowHtml(view[j], j * ROW);
    inner.innerHTML = html;
    styled(inner);
  }
  list.addEventListener('scroll', () => requestAnimationFrame(renderList));
  inner.addEventListener('click', (ev) => {
    const row = ev.target.closest('.row');
    if (row) openRecord(Number(row.dataset.i), false);
  });
  function highlight(text) {
    if (!query) return esc(text);
    const lower = text.toLowerCase();
    const q = query.toLowerCase();
    let out = '';
    let at = 0;
    for (let k = lower.indexOf(q); k !== -1; k = lower.indexOf(q, k + q.length)) {
      out += `${esc(text.slice(at, k))}<mark>${esc(text.slice(k, k + q.length))}</mark>`;
      at = k + q.length;
    }
    return out + esc(text.slice(at));
  }
  async function openRecord(i, scroll) {
    if (i === undefined || i < 0) return;
    sel = i;
    const r = R[i];
    if (scroll) {
      let j = view.indexOf(i);
      if (j === -1) {
        $('roleFilter').value = '';
        archivedBy = 0;
        query = '';
        $('search').value = '';
        await applyFilter();
        j = view.indexOf(i);
      }
      list.scrollTop = Math.max(0, j * ROW - 100);
    }
    renderList();
    const d = $('detail');
    d.innerHTML = `<h3>${esc(r.r === 'tool' ? 'tool result' : r.r)}${r.tools ? ` · ${esc(r.tools.join(', '))}` : ''} · entry ${r.e}${r.l !== undefined ? ` · line ${r.l}` : ''}</h3><p class="dim">${int(r.t)} tokens (counted) · ${int(r.c)} characters${r.a ? ` · archived by compaction #${r.a}` : ''}${when(r.ts)}</p><pre id="fulltext">loading…</pre>`;
    const t = await loadTexts();
    if (sel === i) $('fulltext').innerHTML = highlight(t[i]);
  }
  async function applyFilter() {
    const f = $('roleFilter').value;
    let idx = R.map((_, i) => i);
    if (f === 'archived') idx = idx.filter((i) => R[i].a && (!archivedBy || R[i].a === archivedBy));
    else if (f === 'edited') idx = idx.filter((i) => R[i].ed);
    else if (f) idx = idx.filter((i) => R[i].r === f);
    if (f !== 'archived') archivedBy = 0;
    if (query) {
      $('searchInfo').textContent = 'searching…';
      const t = await loadTexts();
      if (!lowered) lowered = t.map((x) => x.toLowerCase());
      const q = query.toLowerCase();
      idx = idx.filter((i) => lowered[i].includes(q) || (R[i].tools && R[i].tools.join(' ').toLowerCase().includes(q)));
      $('searchInfo').textContent =
        `${idx.length.toLocaleString('en-US')} message${idx.length === 1 ? '' : 's'} contain “${query}”`;
    } else $('searchInfo').textContent = `${idx.length.toLocaleString('en-US')} messages`;
    view = idx;
    list.scrollTop = 0;
    renderList();
    return idx;
  }
  $('search').addEventListener('keydown', (ev) => {
    if (ev.key === 'Enter') {
      query = $('search').value.trim();
      applyFilter();
    }
  });
  $('search').addEventListener('search', () => {
    query = $('search').value.trim();
    applyFilter();
  });
  $('roleFilter').addEventListener('change', () => applyFilter());

  select(N - 1);
  $('searchInfo').textContent = `${R.length.toLocaleString('en-US')} messages`;
  renderList();
  // For tests and scripts: the page's state, and ways to drive it.
  window.abridgeView = {
    search: (q) => {
      query = q;
      $('search').value = q;
      return applyFilter().then((idx) => idx.length);
    },
    select,
    open: (i) => openRecord(i, true),
    visibleRows: () => view.length,
    readyAt: 0,
    timings: () => ({ scriptStart: started, dataParsed: parsedAt - started }),
  };
  window.abridgeView.readyAt = performance.now();
  document.body.dataset.ready = '1';
  // Decompress the full texts while the person looks at the chart, so the first search or expand does not wait.
  setTimeout(() => loadTexts(), 1500);
})();
