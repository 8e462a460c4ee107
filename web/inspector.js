// The inspector's one script (svc-migrate webhook listen --inspect, webhook inspect): keeps the
// list the server rendered live through server-sent events, filters it, and shows one delivery.
// Everything that came with a delivery is set as text (textContent, value, title): nothing of it is
// ever parsed as markup, and the page's Content-Security-Policy runs no script but this file.
'use strict';

(() => {
  const config = document.body.dataset;
  const token = new URLSearchParams(location.search).get('token') ?? '';
  const withToken = (path) => `${path}${path.includes('?') ? '&' : '?'}token=${encodeURIComponent(token)}`;
  const byId = (id) => document.getElementById(id);
  const rows = byId('rows');
  const detail = byId('detail');
  const filters = { event: byId('filter-event'), action: byId('filter-action'), outcome: byId('filter-outcome') };
  let shown = null;

  // ---- text as the server draws it (src/webhook/inspector/page.ts) ----

  /** Controls as their pictures, C1 and bidirectional overrides as U+FFFD: one line, in its own order. */
  const visible = (text) =>
    String(text).replace(/[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g, (c) => {
      const code = c.charCodeAt(0);
      if (code < 0x20) return String.fromCharCode(0x2400 + code);
      return code === 0x7f ? '\u2421' : '\ufffd';
    });
  /** As `visible`, but line breaks and tabs kept: for bodies. */
  const visibleLines = (text) => String(text).split(/(\r\n|\n|\t)/).map((part, i) => (i % 2 ? part.replace('\r\n', '\n') : visible(part))).join('');
  const CELL_CHARS = 200;
  const cellText = (text) => visible(text.length > CELL_CHARS ? `${text.slice(0, CELL_CHARS)}…` : text);
  const UNITS = ['B', 'KiB', 'MiB', 'GiB'];
  const formatBytes = (bytes) => {
    let value = bytes;
    let unit = 0;
    while (value >= 1024 && unit < UNITS.length - 1) {
      value /= 1024;
      unit++;
    }
    return unit === 0 ? `${value} B` : `${value.toFixed(1)} ${UNITS[unit]}`;
  };

  /** An element with its class, text and children; attributes set as properties or attributes, never as markup. */
  function el(tag, options = {}, children = []) {
    const node = document.createElement(tag);
    if (options.className) node.className = options.className;
    if (options.text !== undefined) node.textContent = options.text;
    for (const [name, value] of Object.entries(options.attrs ?? {})) node.setAttribute(name, value);
    for (const child of children) if (child) node.append(child);
    return node;
  }

  const eventName = (s) => (s.event === null ? `${s.method} ${s.path}` : `${s.event}${s.action === null ? '' : `.${s.action}`}`);

  function trust(verification) {
    if (verification.state === 'verified') {
      const how = verification.relayed === 'matched' ? ' (re-encoded body matched)' : verification.legacy ? ' (sha1)' : '';
      return [`verified${how} · secret #${verification.secret}`];
    }
    if (verification.state === 'unverified') return verification.relayed === 'unverifiable' ? ['unverifiable: the relay re-encoded the body'] : ['unverified', verification.reason];
    return [`refused ${verification.status}`, verification.reason];
  }

  function relayFact(relay) {
    if (!relay) return null;
    const body = relay.body === 'raw' ? 'the bytes the service sent' : 'the relay\'s re-encoding of the body';
    const at = relay.relayedAt ? `, relayed at ${relay.relayedAt}` : '';
    return `${relay.channel}${at}: ${body}${relay.formConverted ? '; a form body the relay turned into JSON, rebuilt as a form' : ''}`;
  }

  /** A list row: the cells and data the server worked out for it (`row`), as elements. */
  function row(s) {
    const { cells, data } = s.row;
    const tr = el('tr', { attrs: { tabindex: '0' } });
    for (const [name, value] of Object.entries(data)) tr.dataset[name] = visible(value);
    for (const [name, text, title] of cells) {
      const td = el('td', { className: name, text: cellText(text) });
      if (title) td.title = cellText(title);
      tr.append(td);
    }
    return tr;
  }

  // ---- the list: live, filtered ----
  // Changes from the stream are noted as they come (unparsed, the latest of each delivery only, the
  // newest `keep` added) and drawn at the next animation frame, a few milliseconds of them per
  // frame: a burst of thousands of deliveries never holds the page, and only the rows added or
  // changed are filtered.

  /** Each row by its delivery's number. */
  const rowsByN = new Map();
  const rowOf = (n) => rowsByN.get(Number(n));
  /** The events and actions already offered in the filters. */
  const offered = { event: new Set(), action: new Set() };
  /** Deliveries to add and rows to update, by number: the JSON of their latest state. */
  const incoming = { added: new Map(), updated: new Map(), dropped: null };
  /** Milliseconds of rows drawn per frame, at most. */
  const FRAME_MS = 4;
  let drawing = false;

  function later() {
    if (drawing) return;
    drawing = true;
    requestAnimationFrame(drawIncoming);
  }

  function drawIncoming() {
    drawing = false;
    const until = performance.now() + FRAME_MS;
    if (incoming.dropped) {
      dropped(incoming.dropped);
      for (const n of incoming.added.keys()) if (n < incoming.dropped.oldest) incoming.added.delete(n);
      incoming.dropped = null;
    }
    // Oldest first, each on top of the one before.
    const rowsAdded = document.createDocumentFragment();
    for (const [n, data] of incoming.added) {
      if (performance.now() > until) break;
      incoming.added.delete(n);
      const summary = JSON.parse(data);
      if (rowOf(n)) {
        replaceRow(summary);
        continue;
      }
      const tr = row(summary);
      rowsByN.set(n, tr);
      tr.hidden = !matches(tr);
      offer(tr);
      rowsAdded.prepend(tr);
      config.last = String(Math.max(Number(config.last), n));
    }
    rows.prepend(rowsAdded);
    // The server drops the oldest beyond `keep`; rows it has not told of yet are trimmed here too.
    const keep = Number(config.keep) || Infinity;
    while (rows.rows.length > keep) removeRow(rows.lastElementChild);
    for (const [n, data] of incoming.updated) {
      if (performance.now() > until) break;
      incoming.updated.delete(n);
      replaceRow(JSON.parse(data));
    }
    counted();
    if (incoming.added.size > 0 || incoming.updated.size > 0) later();
  }

  /** A delivery from the stream, noted to be drawn: only the newest `keep` can be on the page. */
  function arrived(n, data) {
    incoming.added.set(n, data);
    if (incoming.added.size > (Number(config.keep) || Infinity)) incoming.added.delete(incoming.added.keys().next().value);
    later();
  }

  /** A row's new state (its forward ended), noted to be drawn; the latest wins. */
  function changed(data) {
    // The server writes the number first: the rest is parsed only if drawn.
    const n = Number(/^\{"n":(\d+),/.exec(data)?.[1]);
    if (incoming.added.has(n)) incoming.added.set(n, data);
    else {
      // A hidden tab draws no frame: what piles up is bounded (an update of a row long dropped is moot).
      incoming.updated.delete(n);
      incoming.updated.set(n, data);
      if (incoming.updated.size > 2 * (Number(config.keep) || Infinity)) incoming.updated.delete(incoming.updated.keys().next().value);
    }
    later();
  }

  function removeRow(tr) {
    rowsByN.delete(Number(tr.dataset.n));
    tr.remove();
  }

  function replaceRow(summary) {
    const old = rowOf(summary.n);
    if (!old) return;
    const tr = row(summary);
    tr.className = old.className;
    tr.hidden = !matches(tr);
    old.replaceWith(tr);
    rowsByN.set(summary.n, tr);
    if (shown?.n === summary.n) {
      shown.forward = summary.forward;
      const section = byId('forward-section');
      if (section) section.replaceWith(forwardSection(shown));
    }
  }

  /** Rows before the oldest kept removed: from the bottom, where the oldest are. */
  function dropped(state) {
    let last = rows.lastElementChild;
    while (last && Number(last.dataset.n) < state.oldest) {
      const above = last.previousElementSibling;
      removeRow(last);
      last = above;
    }
    const notice = byId('dropped');
    if (state.text) notice.textContent = state.text;
    notice.hidden = state.dropped === 0;
  }

  /** The event and action of a row offered in the filters. */
  function offer(tr) {
    for (const [name, select] of [['event', filters.event], ['action', filters.action]]) {
      const value = tr.dataset[name];
      if (!value || offered[name].has(value)) continue;
      offered[name].add(value);
      select.append(el('option', { text: cellText(value), attrs: { value } }));
    }
  }

  function matches(tr) {
    const data = tr.dataset;
    if (filters.event.value && data.event !== filters.event.value) return false;
    if (filters.action.value && data.action !== filters.action.value) return false;
    switch (filters.outcome.value) {
      case 'verified':
      case 'unverified':
      case 'refused':
        return data.outcome === filters.outcome.value;
      case 'warnings':
        return data.warnings !== '0';
      case 'forward-failed':
        return data.forwardOk === '0';
      case 'duplicate':
        return data.duplicate === '1';
      case 'relayed':
        return data.relayed === '1';
      default:
        return true;
    }
  }

  /** Every row filtered again: when a filter changes, not when a delivery arrives. */
  function filter() {
    for (const tr of rows.rows) tr.hidden = !matches(tr);
    counted();
  }

  function counted() {
    let count = 0;
    for (const tr of rows.rows) if (!tr.hidden) count++;
    const total = rows.rows.length;
    byId('count').textContent = count === total ? `${total} deliver${total === 1 ? 'y' : 'ies'}` : `${count} of ${total} shown`;
    byId('empty').hidden = total > 0;
  }

  function status(text, state) {
    const node = byId('status');
    node.textContent = text;
    node.dataset.state = state;
  }

  // ---- one delivery ----

  async function api(path, init = {}) {
    const response = await fetch(path, { ...init, headers: { 'X-Inspector-Token': token, ...(init.headers ?? {}) } });
    const answer = await response.json().catch(() => ({ error: `answered ${response.status}` }));
    return { ok: response.ok, answer };
  }

  async function open(n) {
    for (const tr of rows.querySelectorAll('tr.selected')) tr.classList.remove('selected');
    rowOf(n)?.classList.add('selected');
    history.replaceState(null, '', `${location.pathname}${location.search}#${n}`);
    showDetail(true);
    detail.dataset.opening = String(n);
    detail.replaceChildren(el('p', { className: 'loading', text: 'loading…' }));
    const { ok, answer } = await api(`/api/deliveries/${n}`);
    if (!ok) {
      detail.replaceChildren(el('p', { className: 'error', text: visible(answer.error ?? 'cannot show it') }), closeButton());
      return;
    }
    // Drawn in a task of its own: a large delivery's answer took one to parse.
    await nextTask();
    if (detail.dataset.opening !== String(n)) return;
    shown = answer;
    draw(answer);
  }

  /** The list's layout follows (a class, not :has(), which the browser would check again at every row added). */
  function showDetail(on) {
    detail.hidden = !on;
    document.body.classList.toggle('detail-open', on);
  }

  function closeButton() {
    const button = el('button', { className: 'close', text: 'Close', attrs: { type: 'button' } });
    button.addEventListener('click', () => {
      showDetail(false);
      shown = null;
      for (const tr of rows.querySelectorAll('tr.selected')) tr.classList.remove('selected');
      history.replaceState(null, '', `${location.pathname}${location.search}`);
    });
    return button;
  }

  function facts(pairs) {
    const list = el('dl', { className: 'facts' });
    for (const [name, value] of pairs) if (value !== undefined && value !== null) list.append(el('dt', { text: name }), el('dd', { text: visible(value) }));
    return list;
  }

  /** Characters of a raw body shown open; a larger one is shown when asked. */
  const RAW_OPEN_CHARS = 64 * 1024;

  function draw(d) {
    const [verification, why] = trust(d.verification);
    const parts = [
      el('header', { className: 'detail-head' }, [el('h2', { text: visible(eventName(d)) }), closeButton()]),
      facts([
        ['Delivery', d.id ?? '—'],
        ['Received', d.receivedAt],
        ['Verification', why ? `${verification}: ${why}` : verification],
        ['Repository', d.repository],
        ['Redelivery', d.duplicate ? 'yes: answered, not saved or forwarded again' : null],
        ['Via relay', relayFact(d.relay)],
        ['File', d.file],
      ]),
    ];
    if (d.warnings.length > 0) parts.push(el('ul', { className: 'warnings' }, d.warnings.map((w) => el('li', { text: visible(w) }))));
    parts.push(actions(d));
    parts.push(el('h3', { text: 'Request' }), el('pre', { className: 'request-line', text: visible(`${d.method} ${d.path} HTTP/1.1`) }));
    const headers = el('table', { className: 'headers' });
    for (const [name, value] of d.headers) headers.append(el('tr', {}, [el('th', { text: visible(name) }), el('td', { text: visible(value) })]));
    parts.push(headers);
    parts.push(payloadSection(d));
    parts.push(el('h3', { text: 'Raw body' }));
    if (d.body === null) parts.push(el('p', { text: 'The body was not read: the request was refused before it.' }));
    else {
      const note = `${formatBytes(d.body.bytes)}${d.body.utf8 ? '' : ', not UTF-8 (shown as Latin-1)'}${d.body.truncated ? ', the start shown: download it for the whole' : ''}`;
      // A large body is laid out only when opened: a megabyte of text takes the browser a while.
      const raw = el('details', { className: 'raw-body' }, [el('summary', { text: 'the body as text' }), el('pre', { className: 'raw', text: visibleLines(d.body.text) })]);
      raw.open = d.body.text.length <= RAW_OPEN_CHARS;
      parts.push(el('p', { className: 'note', text: note }), raw);
    }
    parts.push(el('h3', { text: 'Our answer' }));
    if (d.answer) parts.push(el('p', { text: `${d.answer.status}` }), el('pre', { className: 'answer', text: visible(d.answer.body) }));
    else parts.push(el('p', { text: 'Saved deliveries were answered 200 once saved.' }));
    if (config.mode === 'listen' || d.forward !== null) parts.push(forwardSection(d));
    detail.replaceChildren(...parts);
  }

  function forwardSection(d) {
    const section = el('section', { attrs: { id: 'forward-section' } }, [el('h3', { text: 'Forward' })]);
    const f = d.forward;
    const target = visible(config.forward || 'the forward target');
    if (f === null) {
      section.append(el('p', { text: config.forward ? 'Not forwarded: a redelivery is not forwarded again.' : 'No forward target (--forward-to).' }));
      return section;
    }
    if (f.state === 'pending') {
      section.append(el('p', { className: 'forward-result', text: `Waiting to be forwarded to ${target}.` }));
      return section;
    }
    const last = f.history.at(-1);
    const tried = f.history.filter((attempt) => attempt.attempt !== null).at(-1);
    const of = `attempt ${f.attempts} of ${f.maxAttempts}`;
    const failure = tried === undefined ? '' : tried.status === null ? `got no answer (${tried.error})` : `answered ${tried.status}`;
    const summary = {
      delivered: `${target} answered ${tried?.status}${tried?.ms === null ? '' : ` in ${tried?.ms} ms`} (${of})`,
      retrying: `${target} ${failure} (${of}); it is tried again`,
      failed: `${target} ${failure} (${of})${last?.attempt === null ? `; ${last.error}` : ''}`,
      not_forwarded: `Not forwarded: ${last?.error ?? ''}`,
    }[f.state];
    section.append(el('p', { className: `forward-result${f.state === 'delivered' ? '' : ' error'}`, text: visible(summary) }));
    const attempts = el('ol', { className: 'attempts' });
    for (const attempt of f.history) {
      if (attempt.attempt === null) continue;
      const what = attempt.status === null ? `no answer: ${attempt.error}` : `answered ${attempt.status}${attempt.ms === null ? '' : ` in ${attempt.ms} ms`}`;
      const item = el('li', {}, [el('span', { text: visible(`attempt ${attempt.attempt}, ${attempt.at.slice(11, 19)} UTC: ${what}`) })]);
      if (attempt.preview) item.append(el('pre', { className: 'forward-preview', text: visible(attempt.preview) }));
      attempts.append(item);
    }
    if (attempts.children.length > 0) section.append(attempts);
    return section;
  }

  // ---- actions: replay, curl, copies ----

  const bodyFileName = (d) => (d.id !== null && /^[A-Za-z0-9._-]{1,100}$/.test(d.id) && !d.id.startsWith('.') ? `${d.id}.body` : `delivery-${d.n}.body`);
  const quote = (text) => `'${text.replace(/'/g, '\'\\\'\'')}'`;
  const CONNECTION_FIELDS = new Set(['host', 'content-length', 'connection', 'keep-alive', 'transfer-encoding', 'te', 'trailer', 'upgrade', 'proxy-connection', 'expect']);

  function curlCommand(d, url) {
    const lines = [`curl -X POST ${quote(url)}`];
    for (const [name, value] of d.headers) if (!CONNECTION_FIELDS.has(name.toLowerCase())) lines.push(`-H ${quote(`${name}: ${value}`)}`);
    lines.push(`--data-binary @${quote(bodyFileName(d))}`);
    return lines.join(' \\\n  ');
  }

  /** Where a replay goes unless told otherwise: the forward target (the app), else where it was sent. */
  function defaultUrl(d) {
    if (config.forward && !config.forward.includes('REDACTED')) return config.forward;
    if (config.mode === 'listen') return config.where;
    const host = d.headers.find(([name]) => name.toLowerCase() === 'host');
    return host ? `http://${host[1]}${d.path}` : '';
  }

  function actions(d) {
    const result = el('output', { className: 'result', attrs: { role: 'status' } });
    const say = (text, error = false) => {
      result.textContent = visible(text);
      result.classList.toggle('error', error);
    };
    const box = el('div', { className: 'actions' });
    const sendable = d.body !== null;
    if (config.forward) {
      const button = el('button', { className: 'replay-forward', text: `Replay to ${visible(config.forward)}`, attrs: { type: 'button' } });
      button.disabled = !sendable;
      button.addEventListener('click', () => replay(d.n, { to: 'forward' }, say));
      box.append(button);
    } else if (config.mode === 'listen') {
      // Not posted to the receiver (it would answer a duplicate): handed back to it, taken as new.
      const button = el('button', { className: 'replay-receiver', text: 'Replay to this receiver as a new delivery (its duplicate check bypassed)', attrs: { type: 'button' } });
      button.disabled = !sendable || d.verification.state === 'refused';
      button.addEventListener('click', () => replay(d.n, { to: 'receiver' }, say));
      box.append(button);
    }
    const form = el('form', { className: 'replay-url' });
    const url = el('input', { attrs: { type: 'text', name: 'url', 'aria-label': 'URL to replay to', spellcheck: 'false' } });
    url.value = defaultUrl(d);
    const sign = el('select', { attrs: { name: 'sign', 'aria-label': 'signature' } }, [el('option', { text: 'as sent', attrs: { value: 'as-sent' } })]);
    for (let i = 1; i <= Number(config.secrets); i++) sign.append(el('option', { text: `re-signed with secret #${i}`, attrs: { value: String(i) } }));
    const go = el('button', { text: 'Replay to this URL', attrs: { type: 'submit' } });
    go.disabled = !sendable;
    // This receiver remembers delivery ids: a replay to it is answered as a duplicate, and nothing more.
    const toReceiver = () => {
      const self = config.mode === 'listen' && url.value.trim() === config.where;
      go.textContent = self ? 'Replay to this receiver (a delivery id it took is answered as a duplicate: not saved or forwarded again)' : 'Replay to this URL';
    };
    url.addEventListener('input', toReceiver);
    toReceiver();
    form.append(url, sign, go);
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      replay(d.n, { to: 'url', url: url.value, sign: sign.value === 'as-sent' ? 'as-sent' : Number(sign.value) }, say);
    });
    const curlText = el('textarea', { className: 'curl', attrs: { readonly: '', rows: '6', 'aria-label': 'curl command' } });
    curlText.hidden = true;
    const curl = el('button', { className: 'copy-curl', text: 'Copy as curl', attrs: { type: 'button' } });
    curl.disabled = !sendable;
    curl.addEventListener('click', async () => {
      // The URL as Replay reads it (a port or path alone means this machine): the server's one reading.
      const { ok, answer } = await api(`/api/target?url=${encodeURIComponent(url.value)}`);
      if (!ok) return say(`no curl command: ${answer.error}`, true);
      curlText.value = curlCommand(d, answer.url);
      curlText.hidden = false;
      copy(curlText.value, `curl command copied; it reads the body from ${bodyFileName(d)}: download it beside`, say);
    });
    const download = el('a', { className: 'download-body', text: 'Download body', attrs: { href: withToken(`/api/deliveries/${d.n}/body`), download: bodyFileName(d) } });
    if (!sendable) download.hidden = true;
    const copyPayload = el('button', { className: 'copy-payload', text: 'Copy payload', attrs: { type: 'button' } });
    copyPayload.disabled = d.payload === null;
    copyPayload.addEventListener('click', () => copy(d.payload, 'payload copied', say));
    box.append(form, el('div', { className: 'copies' }, [curl, download, copyPayload]), result, curlText);
    return box;
  }

  async function replay(n, ask, say) {
    say('sending…');
    try {
      const { answer } = await api(`/api/deliveries/${n}/replay`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(ask) });
      if (ask.to === 'forward') void redrawn([n]);
      if (answer.taken === true) say('taken by this receiver as a new delivery: it is listed, saved and shown as any other');
      else if (answer.taken === false) say(`not taken: ${answer.error}`, true);
      else if (answer.sent === true) say(`${answer.url} answered ${answer.status} in ${answer.ms} ms (${answer.signed})${answer.response ? `: ${answer.response}` : ''}`);
      else if (answer.sent === false) say(`could not send to ${answer.url}: ${answer.error}`, true);
      else say(`not sent: ${answer.error}`, true);
    } catch (error) {
      say(`not sent: ${error.message}`, true);
    }
  }

  /**
   * Without an event stream (saved deliveries), the rows of deliveries replayed to the forward
   * target are drawn again from the list as it now stands: their forward changed.
   */
  async function redrawn(ns) {
    if (config.mode === 'listen' || ns.length === 0) return;
    const { ok, answer } = await api('/api/deliveries');
    if (!ok) return;
    const wanted = new Set(ns);
    for (const summary of answer.records) if (wanted.has(summary.n)) replaceRow(summary);
    counted();
  }

  function copy(text, done, say) {
    navigator.clipboard.writeText(text).then(
      () => say(done),
      () => say('the browser refused to copy: select the text and copy it yourself', true),
    );
  }

  // ---- the payload as a tree, with search ----
  // A payload may be 25 MB. Searching it and drawing it are done in slices of a few milliseconds,
  // the browser drawing and answering clicks between them; a newer search or view stops an older
  // one. What is drawn is bounded: a branch shows its first CHILD_PAGE children (more on demand),
  // and "Expand all" opens branches, breadth first, until EXPAND_NODES nodes are drawn.

  const EXPAND_NODES = 5000;
  const CHILD_PAGE = 200;
  const STRING_CHARS = 10000;
  /** Levels of the tree drawn and searched: deeper ones are in the raw body (nested elements that deep crash the browser's layout). */
  const MAX_DEPTH = 100;
  /** Milliseconds of work before the browser gets its turn. */
  const SLICE_MS = 10;
  /** Matches found at most: the way to each is opened. */
  const MAX_MATCHES = 500;
  const pathKey = (path) => path.join('\u0000');

  /** Resolves in a new task, with no minimum delay (setTimeout's grows once nested). */
  const channel = new MessageChannel();
  const resumes = [];
  channel.port1.onmessage = () => resumes.shift()?.();
  const nextTask = () =>
    new Promise((resolve) => {
      resumes.push(resolve);
      channel.port2.postMessage(null);
    });

  /** Runs the steps of `steps` (an iterator) in slices, until done (true) or `run` is cancelled (false). */
  async function sliced(steps, run) {
    let until = performance.now() + SLICE_MS;
    for (let step = steps.next(); !step.done; step = steps.next()) {
      if (performance.now() < until) continue;
      await nextTask();
      if (run.cancelled) return false;
      until = performance.now() + SLICE_MS;
    }
    return !run.cancelled;
  }

  /** The payload section, its tree drawn once the payload is parsed (in a task of its own: a large one takes a while). */
  function payloadSection(d) {
    const section = el('section', { className: 'payload' }, [el('h3', { text: 'Payload' })]);
    if (d.payload === null) {
      section.append(el('p', { text: visible(d.payloadError ?? 'none') }));
      return section;
    }
    const holder = el('div', { className: 'tree-pending', text: 'reading the payload…' });
    section.append(holder);
    nextTask().then(() => {
      if (!section.isConnected) return;
      let value;
      try {
        value = JSON.parse(d.payload);
      } catch (error) {
        holder.replaceWith(el('p', { className: 'error', text: `not JSON: ${error.message}` }), el('pre', { className: 'raw', text: visibleLines(d.payload) }));
        return;
      }
      return nextTask().then(() => section.isConnected && holder.replaceWith(...payloadTree(value)));
    });
    return section;
  }

  function payloadTree(value) {
    const search = el('input', { className: 'search', attrs: { type: 'search', placeholder: 'Search keys and values', 'aria-label': 'search the payload' } });
    const count = el('span', { className: 'matches' });
    const expand = el('button', { text: 'Expand all', attrs: { type: 'button' } });
    const collapse = el('button', { text: 'Collapse all', attrs: { type: 'button' } });
    const note = el('p', { className: 'tree-note' });
    const holder = el('div', { className: 'tree' });
    /** The work under way (a search, a view drawn): cancelled by the next. */
    let run = { cancelled: true };
    const restart = () => {
      run.cancelled = true;
      run = { cancelled: false };
      return run;
    };
    const render = (view, current = restart()) => {
      const tree = drawTree(value, view, current);
      holder.replaceChildren(tree.root);
      note.textContent = '';
      return sliced(tree.steps, current).then((done) => {
        if (done && view.open === 'all') {
          note.textContent = tree.state.limited
            ? `expanded ${tree.state.drawn} nodes, the most "Expand all" draws: open the others one by one, or search`
            : `expanded: all ${tree.state.drawn} nodes`;
        }
      });
    };
    render({ open: new Set([pathKey([])]), matches: new Set() });
    let timer;
    search.addEventListener('input', () => {
      clearTimeout(timer);
      timer = setTimeout(async () => {
        const current = restart();
        const query = search.value.trim().toLowerCase();
        if (!query) {
          count.textContent = '';
          return render({ open: new Set([pathKey([])]), matches: new Set() }, current);
        }
        count.textContent = 'searching…';
        const found = { open: new Set([pathKey([])]), matches: new Set(), more: false };
        if (!(await sliced(find(value, query, found), current))) return;
        count.textContent = `${found.matches.size}${found.more ? '+' : ''} match${found.matches.size === 1 ? '' : 'es'}`;
        render(found, current);
      }, 120);
    });
    expand.addEventListener('click', () => render({ open: 'all', matches: new Set() }));
    collapse.addEventListener('click', () => render({ open: new Set(), matches: new Set() }));
    return [el('div', { className: 'tree-tools' }, [search, count, expand, collapse]), note, holder];
  }

  /**
   * Adds to `found` the paths of keys and values holding `query` (the first MAX_MATCHES) and the
   * nodes to open to show them, a step per node. A walk with its own stack, to MAX_DEPTH: a payload
   * nested a hundred thousand deep (25 MB of brackets) would overflow the call stack.
   */
  function* find(root, query, found) {
    const stack = [[root, []]];
    while (stack.length > 0) {
      if (found.matches.size >= MAX_MATCHES) {
        found.more = true;
        return;
      }
      const [value, path] = stack.pop();
      const key = path.at(-1);
      const hit = (key !== undefined && String(key).toLowerCase().includes(query)) ||
        ((value === null || typeof value !== 'object') && String(value).toLowerCase().includes(query));
      if (hit) {
        found.matches.add(pathKey(path));
        for (let i = 0; i < path.length; i++) found.open.add(pathKey(path.slice(0, i)));
      }
      if (value !== null && typeof value === 'object' && path.length < MAX_DEPTH) {
        const keys = Object.keys(value);
        for (let i = keys.length - 1; i >= 0; i--) stack.push([value[keys[i]], [...path, keys[i]]]);
      }
      yield;
    }
  }

  /**
   * The tree of `value` as `view` shows it: its root element, and the steps that draw the rest,
   * breadth first, a node per step. `view.open`: the keys of the branches open, or 'all' (bounded).
   */
  function drawTree(value, view, run) {
    const state = { drawn: 0, limited: false };
    const queue = [];
    const holder = el('div');
    queue.push({ value, name: 'payload', path: [], into: holder });
    const steps = (function* () {
      for (let i = 0; i < queue.length; i++) {
        const job = queue[i];
        queue[i] = undefined;
        job.into.append(node(job, view, state, queue, run));
        state.drawn++;
        yield;
      }
    })();
    // The root is drawn at once: the tree's tools act on it.
    steps.next();
    return { root: holder.firstChild, steps, state };
  }

  function node({ value, name, path }, view, state, queue, run) {
    const key = pathKey(path);
    const label = el('span', { className: 'key', text: visible(name) });
    if (view.matches.has(key)) label.classList.add('match');
    if (value === null || typeof value !== 'object') {
      const text = typeof value === 'string' ? JSON.stringify(value.length > STRING_CHARS ? `${value.slice(0, STRING_CHARS)}…` : value) : String(value);
      const shownValue = el('span', { className: `value ${value === null ? 'null' : typeof value}`, text: visible(text) });
      if (view.matches.has(key)) shownValue.classList.add('match');
      return el('div', { className: 'leaf' }, [label, el('span', { className: 'colon', text: ': ' }), shownValue]);
    }
    const keys = Object.keys(value);
    const kind = Array.isArray(value) ? `[${keys.length}]` : `{${keys.length}}`;
    if (path.length >= MAX_DEPTH) {
      const deeper = el('span', { className: 'value deeper', text: `${kind} nested deeper than ${MAX_DEPTH} levels: see the raw body` });
      return el('div', { className: 'leaf' }, [label, el('span', { className: 'colon', text: ': ' }), deeper]);
    }
    const details = el('details', { className: 'branch' }, [el('summary', {}, [label, el('span', { className: 'kind', text: ` ${kind}` })])]);
    const children = el('div', { className: 'children' });
    details.append(children);
    let shownUpTo = 0;
    /** The next page of children, queued to be drawn (by the view's steps, or by steps of their own). */
    const page = (into) => {
      const upTo = Math.min(keys.length, shownUpTo + CHILD_PAGE);
      for (let i = shownUpTo; i < upTo; i++) into.push({ value: value[keys[i]], name: keys[i], path: [...path, keys[i]], into: children });
      shownUpTo = upTo;
      more.hidden = shownUpTo >= keys.length;
      more.textContent = `show ${Math.min(CHILD_PAGE, keys.length - shownUpTo)} more of ${keys.length}`;
    };
    /** Drawn when the reader asks for them: a page at a time, in slices. */
    const drawLater = () => {
      const own = [];
      page(own);
      const closed = { open: new Set(), matches: view.matches };
      sliced((function* () {
        for (const job of own) {
          job.into.append(node(job, closed, state, own, run));
          yield;
        }
      })(), run);
    };
    /** Only the way to a search's matches is drawn; "show all" draws the rest. */
    let filtered = false;
    const more = el('button', { className: 'more', text: '', attrs: { type: 'button' } });
    more.hidden = true;
    more.addEventListener('click', () => {
      if (filtered) {
        filtered = false;
        children.replaceChildren();
        shownUpTo = 0;
      }
      drawLater();
    });
    details.append(more);
    let opened;
    if (view.open === 'all') {
      opened = !state.limited && queue.length + Math.min(keys.length, CHILD_PAGE) <= EXPAND_NODES;
      if (!opened && keys.length > 0) state.limited = true;
    } else opened = view.open.has(key);
    if (opened && view.matches.size > 0) {
      const onTheWay = keys.filter((k) => {
        const childKey = pathKey([...path, k]);
        return view.open.has(childKey) || view.matches.has(childKey);
      });
      for (const k of onTheWay) queue.push({ value: value[k], name: k, path: [...path, k], into: children });
      if (onTheWay.length < keys.length) {
        filtered = true;
        more.hidden = false;
        more.textContent = `show all ${keys.length} (${keys.length - onTheWay.length} without a match)`;
      }
      shownUpTo = keys.length;
      details.open = true;
    } else if (opened) {
      details.open = true;
      page(queue);
    }
    details.addEventListener('toggle', () => {
      if (details.open && shownUpTo === 0 && keys.length > 0) drawLater();
    });
    return details;
  }

  // ---- replay every failed forward ----

  async function replayFailed(button, result) {
    button.disabled = true;
    result.classList.remove('error');
    result.textContent = 'replaying…';
    try {
      const response = await fetch('/api/replay-failed', { method: 'POST', headers: { 'X-Inspector-Token': token } });
      if (!response.ok) {
        const answer = await response.json().catch(() => ({ error: `answered ${response.status}` }));
        throw new Error(answer.error);
      }
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      let text = '';
      const replayed = [];
      for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
        text += chunk.value;
        const lines = text.split('\n');
        text = lines.pop();
        for (const line of lines) {
          const p = JSON.parse(line);
          if (p.finished) {
            result.textContent = p.of === 0 ? 'no failed forward to replay' : `replayed ${p.of}: ${p.delivered} delivered, ${p.failed} failed again`;
            result.classList.toggle('error', p.failed > 0);
            await redrawn(replayed);
          } else {
            replayed.push(p.n);
            const outcome = p.status === null ? visible(p.error) : `answered ${p.status}`;
            result.textContent = `replaying ${p.done} of ${p.of}… (${visible(p.id ?? `#${p.n}`)}: ${outcome})`;
          }
        }
      }
    } catch (error) {
      result.textContent = `not replayed: ${visible(error.message)}`;
      result.classList.add('error');
    } finally {
      button.disabled = false;
    }
  }

  // ---- relay gaps ----

  function gap(told) {
    const list = byId('gaps');
    const key = `${told.channel} ${told.from}`;
    const item = [...list.children].find((li) => li.dataset.key === key) ?? list.appendChild(el('li'));
    item.dataset.key = key;
    item.textContent = visible(told.text);
    list.hidden = false;
  }

  // ---- start ----

  for (const tr of rows.rows) {
    rowsByN.set(Number(tr.dataset.n), tr);
    offer(tr);
  }
  for (const select of Object.values(filters)) select.addEventListener('change', filter);
  byId('filters').addEventListener('submit', (event) => event.preventDefault());
  const replayFailedButton = byId('replay-failed');
  replayFailedButton?.addEventListener('click', () => replayFailed(replayFailedButton, byId('replay-failed-result')));
  rows.addEventListener('click', (event) => {
    const tr = event.target.closest('tr');
    if (tr) open(tr.dataset.n);
  });
  rows.addEventListener('keydown', (event) => {
    const tr = event.target.closest('tr');
    if (!tr) return;
    if (event.key === 'Enter' || event.key === ' ') {
      event.preventDefault();
      open(tr.dataset.n);
    } else if (event.key === 'ArrowDown' || event.key === 'ArrowUp') {
      event.preventDefault();
      let next = event.key === 'ArrowDown' ? tr.nextElementSibling : tr.previousElementSibling;
      while (next?.hidden) next = event.key === 'ArrowDown' ? next.nextElementSibling : next.previousElementSibling;
      next?.focus();
    }
  });
  filter();
  if (/^#\d+$/.test(location.hash)) open(location.hash.slice(1));

  if (config.mode === 'listen') {
    const events = new EventSource(withToken(`/events?after=${Number(config.last)}`));
    events.addEventListener('open', () => status('live', 'live'));
    events.addEventListener('error', () => {
      // A stream refused with a status (too many pages open, or a listener restarted with a new
      // token) is not tried again by the browser; a connection lost is.
      if (events.readyState === EventSource.CLOSED) status('disconnected: the stream was refused (too many pages open, or `webhook listen` restarted with a new address): close other pages, or reload', 'down');
      else status('disconnected: trying again… (has `webhook listen` stopped?)', 'down');
    });
    events.addEventListener('delivery', (event) => arrived(Number(event.lastEventId), event.data));
    events.addEventListener('update', (event) => changed(event.data));
    events.addEventListener('gap', (event) => gap(JSON.parse(event.data)));
    events.addEventListener('dropped', (event) => {
      incoming.dropped = JSON.parse(event.data);
      later();
    });
  }
})();
