// The management log, with a type filter; entries link to their plan and
// revision.
import { request, KINDS } from './api.js';
import { h, clear, time, pager, table, planLink, revisionLink, loading, actor } from './dom.js';
import { page, current, navigate } from './app.js';

const TYPES = ['config.applied', ...KINDS.flatMap((k) => ['created', 'updated', 'deleted'].map((a) => `${k}.${a}`))];

// approversText names config.applied's approvers (§17): each owner, or the
// key id of a key without owner.
function approversText(v) {
  if (v.length === 0) return 'none';
  return v.map((a) => (a && (a.owner || a.api_key_id)) || '?').join(', ');
}

function dataText(d) {
  if (!d) return '';
  return Object.entries(d).map(([k, v]) => {
    if (k === 'approved_by' && Array.isArray(v)) return `${k}: ${approversText(v)}`;
    return `${k}: ${typeof v === 'string' ? v : JSON.stringify(v)}`;
  }).join(', ');
}

export async function logsPage({ seq, params }) {
  const type = params.get('type') || '';
  const select = h('select', { id: 'type-filter' },
    h('option', { value: '' }, 'Any type'),
    TYPES.map((t) => h('option', { value: t, selected: t === type }, t)));
  const filter = h('form', { class: 'filters', onsubmit: (ev) => {
    ev.preventDefault();
    navigate('/console/logs' + (select.value ? '?type=' + encodeURIComponent(select.value) : ''));
  } },
  h('label', { for: 'type-filter' }, 'Type'), select, h('button', { type: 'submit', class: 'secondary' }, 'Filter'));
  const body = h('div', {}, loading());
  page('Management log', filter, body);
  const q = new URLSearchParams();
  if (type) q.set('type', type);
  if (params.get('cursor')) q.set('cursor', params.get('cursor'));
  const list = await request('/management-logs' + (q.toString() ? '?' + q : ''));
  if (!current(seq)) return;
  clear(body);
  if (list.data.length === 0) body.append(h('p', { class: 'empty' }, type ? `No ${type} entry.` : 'No entry yet.'));
  else {
    body.append(table('Management log, newest first', ['When', 'Type', 'Details', 'Plan', 'Revision', 'By'],
      list.data.map((e) => [time(e.created_at), h('code', {}, e.type), dataText(e.data), planLink(e.plan_id),
        revisionLink(e.revision_id), actor(e.actor && e.actor.api_key_id, e.actor && e.actor.owner)])));
  }
  const pg = pager(list, params);
  if (pg) body.append(pg);
}
