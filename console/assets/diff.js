// Rendering of diffs: each operation as old → new, a whole spec side by
// side.
import { h, value, json } from './dom.js';

// fieldPath writes a JSON pointer as the CLI does: /brute_force/max_attempts
// is brute_force.max_attempts, /callback_urls/2 is callback_urls[2]; the
// whole value is "(all)".
export function fieldPath(pointer) {
  if (!pointer) return '(all)';
  let out = '';
  for (const raw of pointer.slice(1).split('/')) {
    const t = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (/^\d+$/.test(t)) out += `[${t}]`;
    else out += (out ? '.' : '') + t;
  }
  return out;
}

// diffOps renders an RFC 6902-style list whose replace and remove carry
// old (SPEC §13). A single op at the root (a whole spec created or deleted)
// is shown side by side.
export function diffOps(ops, labels = ['Before', 'After']) {
  if (!Array.isArray(ops) || ops.length === 0) return h('p', { class: 'muted' }, 'No difference.');
  if (ops.length === 1 && ops[0].path === '') {
    const op = ops[0];
    return sideBySide(op.op === 'add' ? undefined : op.old, op.op === 'remove' ? undefined : op.value, labels);
  }
  return h('ul', { class: 'diff' }, ops.map((op) => h('li', { class: 'diff-op diff-' + op.op },
    h('code', { class: 'path', title: op.path }, fieldPath(op.path)),
    h('span', { class: 'sides' },
      op.op === 'add' ? h('span', { class: 'absent' }, '(absent)') : value(op.old, 'old'),
      h('span', { class: 'arrow', 'aria-label': 'becomes' }, ' → '),
      op.op === 'remove' ? h('span', { class: 'absent' }, '(removed)') : value(op.value, 'new')))));
}

// sideBySide shows two whole specs in two columns; undefined or null is
// "none". With mark, the members and elements that differ between the two
// are marked on each side.
export function sideBySide(before, after, labels = ['Before', 'After'], mark = false) {
  const col = (label, v, other, cls) => h('div', { class: 'side ' + cls },
    h('div', { class: 'side-label' }, label),
    v === undefined || v === null ? h('p', { class: 'absent' }, '(none)') : mark ? markedJSON(v, other) : json(v));
  return h('div', { class: 'side-by-side' }, col(labels[0], before, after, 'old'), col(labels[1], after, before, 'new'));
}

// changedFields lists, in the CLI's dotted form, the members of two specs
// that differ: an object member by name, down to the leaves; an array as a
// whole.
export function changedFields(a, b, prefix = '') {
  if (isObject(a) && isObject(b)) {
    const out = [];
    for (const k of [...new Set([...Object.keys(a), ...Object.keys(b)])].sort()) {
      out.push(...changedFields(a[k], b[k], prefix ? prefix + '.' + k : k));
    }
    return out;
  }
  return same(a, b) ? [] : [prefix || '(all)'];
}

function isObject(v) {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function same(a, b) {
  return JSON.stringify(canonical(a)) === JSON.stringify(canonical(b));
}

function canonical(v) {
  if (Array.isArray(v)) return v.map(canonical);
  if (isObject(v)) return Object.fromEntries(Object.keys(v).sort().map((k) => [k, canonical(v[k])]));
  return v;
}

// markedJSON writes v as indented JSON, one line per element, and marks
// (class changed, and a "~" in the gutter that does not rely on colour)
// every line of a member or an array element that other does not hold the
// same: a changed leaf is marked, not the object around it.
function markedJSON(v, other) {
  const lines = [];
  const line = (depth, text, changed) => lines.push(h('span', { class: 'line' + (changed ? ' changed' : '') },
    h('span', { class: 'gutter', 'aria-hidden': 'true' }, changed ? '~ ' : '  '), '  '.repeat(depth) + text));
  const walk = (x, o, depth, head, tail, changed) => {
    if (isObject(x) && !changed) {
      const keys = Object.keys(x);
      if (keys.length === 0) return line(depth, head + '{}' + tail, false);
      line(depth, head + '{', false);
      keys.forEach((k, i) => {
        const ov = isObject(o) ? o[k] : undefined;
        let differs;
        if (!isObject(o) || !(k in o)) differs = true;
        else if (isObject(x[k])) differs = !isObject(ov);
        else if (Array.isArray(x[k])) differs = !Array.isArray(ov);
        else differs = !same(x[k], ov);
        walk(x[k], ov, depth + 1, JSON.stringify(k) + ': ', i < keys.length - 1 ? ',' : '', differs);
      });
      return line(depth, '}' + tail, false);
    }
    if (Array.isArray(x) && !changed) {
      if (x.length === 0) return line(depth, head + '[]' + tail, Array.isArray(o) ? o.length > 0 : true);
      line(depth, head + '[', false);
      const others = Array.isArray(o) ? o : [];
      x.forEach((el, i) => walk(el, undefined, depth + 1, '', i < x.length - 1 ? ',' : '', !others.some((y) => same(el, y))));
      return line(depth, ']' + tail, false);
    }
    // A leaf, or a whole value that differs: every line of it carries the mark.
    const text = JSON.stringify(x, null, 2).split('\n');
    text.forEach((t, i) => line(depth, (i === 0 ? head : '') + t + (i === text.length - 1 ? tail : ''), changed));
  };
  walk(v, other, 0, '', '', false);
  const pre = h('pre', { class: 'json marked' });
  lines.forEach((l, i) => {
    if (i) pre.appendChild(document.createTextNode('\n'));
    pre.appendChild(l);
  });
  return pre;
}
