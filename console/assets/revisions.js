// The revisions list and the revision page: each resource's recorded spec
// beside today's, and Restore as plan.
import { request, newIdempotencyKey, readPermission, Problem } from './api.js';
import { h, clear, time, badge, problem, pager, table, planLink, revisionLink, loading, link, json } from './dom.js';
import { page, can, current, navigate } from './app.js';
import { diffOps, sideBySide, changedFields } from './diff.js';
import { typesText } from './plans.js';

function countsText(c) {
  if (!c) return '';
  return `+${c.created} ~${c.updated} −${c.deleted} =${c.unchanged}`;
}

export async function revisionsPage({ seq, params }) {
  const body = h('div', {}, loading());
  page('Revisions', h('p', { class: 'muted' }, 'Each applied plan keeps the configuration from before it. The 50 most recent, for 90 days.'), body);
  const q = params.get('cursor') ? '?cursor=' + encodeURIComponent(params.get('cursor')) : '';
  const list = await request('/config-revisions' + q);
  if (!current(seq)) return;
  clear(body);
  if (list.data.length === 0) body.append(h('p', { class: 'empty' }, 'No revision yet.'));
  else {
    body.append(table('Revisions, newest first', ['Revision', 'Created', 'Plan', 'Types', 'Resources'],
      list.data.map((r) => [revisionLink(r.id), time(r.created_at), planLink(r.plan_id), h('span', { title: r.types.join(', ') }, typesText(r.types)),
        h('span', { class: 'mono', title: 'created, updated, deleted, unchanged' }, countsText(r.counts))])));
  }
  const pg = pager(list, params);
  if (pg) body.append(pg);
}

// applied labels a resource by what the revision's apply did to it, so
// that "create" is not read as what a restore would do (it deletes it).
const appliedLabels = { create: 'the apply created it', update: 'the apply updated it', delete: 'the apply deleted it' };
function applied(action) {
  return action ? badge(appliedLabels[action] || action, action) : null;
}

function resourceDiff(r, action) {
  const versions = `version ${r.version_before === null || r.version_before === undefined ? '—' : r.version_before} then, ` +
    (r.version_now === null ? 'gone today' : `${r.version_now} today`);
  const same = Array.isArray(r.diff) && r.diff.length === 0;
  // Both specs exist (an update): the fields that differ are named and
  // marked on both sides, so two whole JSON blocks need no comparing by eye.
  const both = r.spec_before !== null && r.spec_before !== undefined && r.spec_now !== null && r.spec_now !== undefined;
  const fields = both && !same ? changedFields(r.spec_before, r.spec_now) : [];
  return h('li', { class: 'change' },
    h('div', { class: 'change-head' },
      applied(action), ' ',
      h('h4', { class: 'change-key' }, `${r.kind}/${r.key}`),
      h('span', { class: 'muted small' }, ' ', versions),
      same ? h('span', { class: 'badge badge-no_op' }, 'same as today') : null),
    fields.length ? h('p', { class: 'changed-fields small' }, 'Changed fields: ',
      fields.map((f, i) => [i ? ', ' : '', h('code', {}, f)]), h('span', { class: 'muted' }, ' (marked ~ below)')) : null,
    sideBySide(r.spec_before, r.spec_now, ['Recorded (before the apply)', 'Today'], both && !same),
    same ? null : h('details', { class: 'ops' },
      h('summary', {}, 'What a restore would change'),
      diffOps(r.diff, ['Today', 'Restored'])));
}

export async function revisionPage({ seq, id }) {
  page('Revision', loading());
  const rev = await request('/config-revisions/' + encodeURIComponent(id));
  if (!current(seq)) return;
  let diff;
  try {
    diff = await request('/config-revisions/' + encodeURIComponent(id) + '/diff');
  } catch (err) {
    diff = err;
  }
  if (!current(seq)) return;
  const actions = new Map(rev.resources.map((r) => [`${r.kind}/${r.key}`, r.action]));
  const out = h('div', { class: 'result', 'aria-live': 'polite' });
  const canRestore = can('config:write', ...rev.types.map(readPermission));
  const restore = canRestore ? h('button', { type: 'button', id: 'restore', onclick: async (ev) => {
    ev.target.disabled = true;
    clear(out);
    out.append(h('p', { class: 'muted', role: 'status' }, 'Planning the restore…'));
    try {
      const p = await request(`/config-revisions/${encodeURIComponent(rev.id)}:restore`, { method: 'POST', body: {}, idempotencyKey: newIdempotencyKey() });
      navigate('/console/plans/' + encodeURIComponent(p.id));
    } catch (err) {
      clear(out);
      out.append(err instanceof Problem ? problem(err) : h('p', {}, String(err)));
      ev.target.disabled = false;
    }
  } }, 'Restore as plan') : null;
  let resources;
  if (diff instanceof Problem) {
    // Without the diff, the recorded specs alone, and why today's are
    // missing.
    resources = [
      h('p', { class: 'muted' }, 'Today’s specs could not be read; the recorded ones follow.'), problem(diff),
      h('ul', { class: 'changes' }, rev.resources.map((r) => h('li', { class: 'change' },
        h('div', { class: 'change-head' }, applied(r.action), ' ', h('h4', { class: 'change-key' }, `${r.kind}/${r.key}`),
          r.version_before === null ? null : h('span', { class: 'muted small' }, ` version ${r.version_before}`)),
        h('div', { class: 'side-label' }, 'Recorded (before the apply)'),
        r.spec_before === null ? h('p', { class: 'absent' }, '(none: the apply created it)') : json(r.spec_before)))),
    ];
  } else {
    resources = h('ul', { class: 'changes' }, diff.resources.map((r) => resourceDiff(r, actions.get(`${r.kind}/${r.key}`))));
  }
  page('Revision ' + rev.id,
    h('dl', { class: 'facts' }, [
      ['Plan', planLink(rev.plan_id)],
      ['Created', time(rev.created_at)],
      ['Expires', time(rev.expires_at)],
      ['Types', rev.types.join(', ')],
      ['Resources', h('span', { class: 'mono' }, countsText(rev.counts))],
    ].map(([k, v]) => h('div', {}, h('dt', {}, k), h('dd', {}, v)))),
    restore ? h('section', { class: 'card actions', 'aria-labelledby': 'actions-title' },
      h('h2', { id: 'actions-title' }, 'Actions'),
      h('p', { class: 'muted small' }, 'Restore as plan makes a new plan that brings every resource back to its recorded spec, to review and apply like any plan.'),
      h('div', { class: 'buttons' }, restore), out) : null,
    h('section', { 'aria-labelledby': 'resources-title' },
      h('h2', { id: 'resources-title' }, 'Resources: recorded and today'), resources),
    h('p', {}, link('/console/revisions', '← All revisions')));
}
