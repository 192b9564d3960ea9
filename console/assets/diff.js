// Rendering of diffs: each operation as old → new, a whole spec side by
// side.
import { h, value, json } from './dom.js';

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
    h('code', { class: 'path' }, op.path || '/'),
    h('span', { class: 'sides' },
      op.op === 'add' ? h('span', { class: 'absent' }, '(absent)') : value(op.old, 'old'),
      h('span', { class: 'arrow', 'aria-label': 'becomes' }, ' → '),
      op.op === 'remove' ? h('span', { class: 'absent' }, '(removed)') : value(op.value, 'new')))));
}

// sideBySide shows two whole specs in two columns; undefined or null is
// "none".
export function sideBySide(before, after, labels = ['Before', 'After']) {
  const col = (label, v, cls) => h('div', { class: 'side ' + cls },
    h('div', { class: 'side-label' }, label),
    v === undefined || v === null ? h('p', { class: 'absent' }, '(none)') : json(v));
  return h('div', { class: 'side-by-side' }, col(labels[0], before, 'old'), col(labels[1], after, 'new'));
}
