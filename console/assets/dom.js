// DOM helpers. Every value from the API becomes a text node: nothing here
// parses HTML.

// h builds an element: attrs are set as attributes (on… functions become
// listeners, false/null are skipped); children are nodes, strings (text
// nodes), arrays or null.
//
// A plan's page builds tens of thousands of elements with it: it walks
// attrs and children with plain loops (no entries arrays, no iterators).
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  if (attrs) {
    for (const k in attrs) {
      const v = attrs[k];
      if (v === null || v === undefined || v === false) continue;
      if (typeof v === 'function' && k.startsWith('on')) {
        el.addEventListener(k.slice(2), v);
      } else if (k === 'class') {
        el.className = v;
      } else {
        el.setAttribute(k, v === true ? '' : String(v));
      }
    }
  }
  append(el, children);
  return el;
}

export function append(el, children) {
  for (let i = 0; i < children.length; i++) {
    const c = children[i];
    if (c === null || c === undefined || c === false) continue;
    if (typeof c === 'string') el.appendChild(document.createTextNode(c));
    else if (Array.isArray(c)) append(el, c);
    else if (c instanceof Node) el.appendChild(c);
    else el.appendChild(document.createTextNode(String(c)));
  }
  return el;
}

export function clear(el) {
  while (el.firstChild) el.removeChild(el.firstChild);
}

// json renders a value as indented JSON text.
export function json(v) {
  return h('pre', { class: 'json' }, JSON.stringify(v, null, 2));
}

// value renders a short value inline and a long one as a block.
export function value(v, cls) {
  const s = JSON.stringify(v, null, 2);
  if (s === undefined) return h('span', { class: 'absent ' + (cls || '') }, '(absent)');
  if (s.length > 60 || s.includes('\n')) return h('pre', { class: 'json ' + (cls || '') }, s);
  return h('code', { class: cls || '' }, s);
}

// time renders an RFC 3339 timestamp as a <time> in the reader's locale.
export function time(ts) {
  if (!ts) return h('span', { class: 'muted' }, '—');
  const d = new Date(ts);
  const label = isNaN(d) ? ts : d.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'medium' });
  return h('time', { datetime: ts, title: ts }, label);
}

export function badge(text, kind) {
  return h('span', { class: 'badge badge-' + (kind || text) }, text);
}

// problem renders a refused request: its title, detail, each pointer and
// the extra members the spec names.
export function problem(p) {
  const b = p.body || { title: String(p.message || p) };
  const extras = [];
  if (b.plan_status) extras.push(h('p', {}, 'Plan status: ', h('code', {}, b.plan_status)));
  if (Array.isArray(b.required_permissions)) {
    extras.push(h('p', {}, 'Required permissions: ', b.required_permissions.map((x, i) => [i ? ', ' : '', h('code', {}, x)])));
  }
  if (Array.isArray(b.unconfirmed_deletions)) {
    extras.push(h('p', {}, 'Unconfirmed deletions: ', b.unconfirmed_deletions.map((x, i) => [i ? ', ' : '', h('code', {}, x)])));
  }
  if (b.retry_after !== undefined) extras.push(h('p', {}, `Retry after ${b.retry_after} s.`));
  if (b.approvals_required !== undefined && b.approvals_received !== undefined) {
    extras.push(h('p', {}, `Approvals: ${b.approvals_received} of ${b.approvals_required}.`));
  }
  const errors = Array.isArray(b.errors) ? b.errors : [];
  return h('div', { class: 'problem', role: 'alert' },
    h('h2', { class: 'problem-title' }, b.title || 'Request failed',
      b.status ? h('span', { class: 'problem-status' }, ` ${b.status}`) : null,
      b.code ? [' ', h('code', {}, b.code)] : null),
    b.detail ? h('p', { class: 'problem-detail' }, b.detail) : null,
    extras,
    errors.length ? h('ul', { class: 'problem-errors' }, errors.map((e) =>
      h('li', {}, h('code', { class: 'pointer' }, e.pointer || '(no pointer)'), ' ',
        e.code ? h('span', { class: 'badge badge-code' }, e.code) : null, ' ', e.detail || ''))) : null,
    b.request_id ? h('p', { class: 'muted small' }, 'Request ', h('code', {}, b.request_id)) : null);
}

// pager renders the link to the next page of a list, keeping the other
// query parameters; the first page is one link away.
export function pager(page, params) {
  const items = [];
  if (params.get('cursor')) {
    const first = new URLSearchParams(params);
    first.delete('cursor');
    items.push(h('a', { href: location.pathname + (first.toString() ? '?' + first : ''), class: 'button secondary' }, 'First page'));
  }
  if (page.has_more && page.next_cursor) {
    const next = new URLSearchParams(params);
    next.set('cursor', page.next_cursor);
    items.push(h('a', { href: location.pathname + '?' + next, class: 'button secondary', rel: 'next' }, 'Next page'));
  }
  return items.length ? h('nav', { class: 'pager', 'aria-label': 'Pages' }, items) : null;
}

// table renders rows as a table whose cells carry their column's name (the
// narrow layout shows it beside each value).
export function table(caption, columns, rows) {
  return h('table', {},
    h('caption', { class: 'visually-hidden' }, caption),
    h('thead', {}, h('tr', {}, columns.map((c) => h('th', { scope: 'col' }, c)))),
    h('tbody', {}, rows.map((r) => h('tr', {}, r.map((cell, i) => h('td', { 'data-label': columns[i] }, cell))))));
}

export function link(href, text, cls) {
  return h('a', { href, class: cls || null }, text);
}

export function planLink(id) {
  return id ? link('/console/plans/' + encodeURIComponent(id), id, 'mono') : h('span', { class: 'muted' }, '—');
}

export function revisionLink(id) {
  return id ? link('/console/revisions/' + encodeURIComponent(id), id, 'mono') : h('span', { class: 'muted' }, '—');
}

export function loading() {
  return h('p', { class: 'muted', role: 'status' }, 'Loading…');
}

// actor names who did something: the key's owner (§17) with the key id
// beside it, or the key id alone for a key that names no owner.
export function actor(apiKeyID, owner) {
  if (!apiKeyID && !owner) return h('span', { class: 'muted' }, '—');
  if (!owner) return h('code', { class: 'actor-key' }, apiKeyID);
  return h('span', { class: 'actor' }, h('span', { class: 'actor-owner' }, owner),
    apiKeyID ? [' ', h('code', { class: 'actor-key muted' }, apiKeyID)] : null);
}
