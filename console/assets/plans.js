// The plans list and the plan page: review, Validate, Rebase, Apply.
import { request, newIdempotencyKey, readPermission, writePermission, Problem, KINDS } from './api.js';
import { h, clear, time, badge, problem, pager, table, planLink, revisionLink, loading, link, actor } from './dom.js';
import { page, can, current, navigate } from './app.js';
import { diffOps, fieldPath } from './diff.js';
import { reviewSection, approvalsMissing } from './review.js';
import { followLive } from './live.js';

const STATUSES = ['planned', 'applying', 'applied', 'conflicted', 'expired', 'rejected'];

// typesText writes a plan's or revision's types compactly, as the CLI's
// lists do: "all" for every kind, the kind for one, else how many of all.
export function typesText(types) {
  if (types.length >= KINDS.length && KINDS.every((k) => types.includes(k))) return 'all';
  if (types.length === 1) return types[0];
  return `${types.length} of ${KINDS.length}`;
}

function summaryText(s) {
  if (!s) return '';
  return `+${s.create} ~${s.update} −${s.delete} =${s.no_op}`;
}

export async function plansPage({ seq, params }) {
  const status = params.get('status') || '';
  const q = new URLSearchParams();
  if (status) q.set('status', status);
  if (params.get('cursor')) q.set('cursor', params.get('cursor'));
  const select = h('select', { id: 'status-filter' },
    h('option', { value: '' }, 'Any status'),
    STATUSES.map((s) => h('option', { value: s, selected: s === status }, s)));
  const filter = h('form', { class: 'filters', onsubmit: (ev) => {
    ev.preventDefault();
    navigate('/console/plans' + (select.value ? '?status=' + encodeURIComponent(select.value) : ''));
  } },
  h('label', { for: 'status-filter' }, 'Status'), select, h('button', { type: 'submit', class: 'secondary' }, 'Filter'));
  const body = h('div', {}, loading());
  const live = h('p', { class: 'muted small', id: 'live-note', role: 'status' });
  page('Plans', filter, live, body);
  await fillPlans(body, q, params, status, seq);
  // The list follows the live stream (§19): each event of a plan reads the
  // page again, in place (the focus stays where it is).
  let pending = null;
  followLive((ev) => {
    if (!current(seq) || pending) return;
    pending = setTimeout(async () => {
      pending = null;
      if (!current(seq)) return;
      try {
        await fillPlans(body, q, params, status, seq);
        live.textContent = `Updated live: ${ev.type} of ${ev.data && ev.data.plan_id ? ev.data.plan_id : 'a plan'}.`;
      } catch {
        // the next event tries again
      }
    }, 200);
  });
}

// fillPlans reads a page of the plans list into body.
async function fillPlans(body, q, params, status, seq) {
  const list = await request('/config-plans' + (q.toString() ? '?' + q : ''));
  if (!current(seq)) return;
  clear(body);
  if (list.data.length === 0) {
    body.append(h('p', { class: 'empty' }, status ? `No plan is ${status}.` : 'No plan yet.'));
  } else {
    body.append(table('Plans, newest first', ['Plan', 'Status', 'Created', 'Created by', 'Types', 'Changes'],
      list.data.map((p) => [planLink(p.id), badge(p.status), time(p.created_at), actor(p.created_by, p.created_by_owner),
        h('span', { title: p.types.join(', ') }, typesText(p.types)),
        h('span', { class: 'mono', title: 'create, update, delete, unchanged' }, summaryText(p.summary))])));
  }
  const pg = pager(list, params);
  if (pg) body.append(pg);
}

// planPermissions are those an apply of p needs (SPEC §3).
function applyPermissions(p) {
  const perms = ['config:write', ...p.types.map(readPermission)];
  for (const c of p.changes) if (c.action !== 'no_op') perms.push(writePermission(c.kind));
  return perms;
}

// warningsByChange files each warning under the change its pointer names.
function warningsByChange(p) {
  const by = new Map();
  const general = [];
  for (const w of p.warnings || []) {
    const m = /^\/changes\/(\d+)(\/|$)/.exec(w.pointer || '');
    if (m) {
      const i = Number(m[1]);
      if (!by.has(i)) by.set(i, []);
      by.get(i).push(w);
    } else general.push(w);
  }
  return { by, general };
}

// warningText is a warning's detail in the console's words: a deletion to
// confirm names the checkbox (or the CLI flag of the command shown), not
// the API's confirm_deletions member.
function warningText(w, how) {
  if (w.code !== 'deletion_requires_confirmation') return w.detail;
  let why = (w.detail || '').replace(/\s*with confirm_deletions\b.*$/s, '');
  why = why ? why.charAt(0).toUpperCase() + why.slice(1) : 'This deletion must be confirmed';
  if (how === 'checkbox') return `${why}: tick “Confirm the deletion of ${w.target}” under Actions before you apply.`;
  if (how === 'command') return `${why}: the apply command below confirms it (--confirm-deletion ${w.target}).`;
  return `${why} when the plan is applied.`;
}

// ruleNote names the guardrail rule a rule_warning or rule_approval comes
// from (§18), and the approvals a rule_approval asks for.
function ruleNote(w) {
  if (!w.rule) return null;
  const approvals = w.approvals ? `, ${w.approvals} approval${w.approvals === 1 ? '' : 's'} needed` : '';
  return h('span', { class: 'rule' }, ` (rule ${w.rule}${approvals})`);
}

function warningItem(w, how) {
  return h('li', { class: 'warning' }, h('span', { class: 'badge badge-warning' }, w.code), ' ',
    h('code', { class: 'pointer', title: w.pointer }, w.target), ' ', warningText(w, how), ruleNote(w));
}

// sideLabels name the two sides of a change's diff: what the plan was
// computed from and what it writes. Once applied, the old side is no
// longer the current configuration.
function sideLabels(p, c) {
  const after = c.action === 'delete' ? 'After the apply' : 'Planned';
  if (p.status === 'applied') return ['Before', c.action === 'delete' ? 'After (deleted)' : 'Applied'];
  if (p.status === 'planned' || p.status === 'applying' || p.status === 'preview') return ['Current', after];
  return ['When planned', after];
}

function changeCard(p, c, i, warnings, how) {
  const meta = [];
  if (c.base_version !== null && c.base_version !== undefined) meta.push(`version ${c.base_version}`);
  if (c.resource_id) meta.push(c.resource_id);
  return h('li', { class: 'change change-' + c.action, id: 'change-' + i },
    h('div', { class: 'change-head' },
      badge(c.action), ' ',
      h('h4', { class: 'change-key' }, c.key),
      meta.length ? h('span', { class: 'muted small' }, ' ', meta.join(' · ')) : null,
      c.requires_secret ? h('span', { class: 'badge badge-secret' }, 'needs ' + (c.secret_ref || 'a secret')) : null),
    warnings && warnings.length ? h('ul', { class: 'warnings' }, warnings.map((w) => warningItem(w, how))) : null,
    diffOps(c.diff, sideLabels(p, c)));
}

function changesSection(p, how) {
  const { by, general } = warningsByChange(p);
  const kinds = [];
  const byKind = new Map();
  p.changes.forEach((c, i) => {
    if (!byKind.has(c.kind)) {
      byKind.set(c.kind, []);
      kinds.push(c.kind);
    }
    byKind.get(c.kind).push([c, i]);
  });
  return h('section', { 'aria-labelledby': 'changes-title' },
    h('h2', { id: 'changes-title' }, 'Changes'),
    general.length ? h('ul', { class: 'warnings', id: 'plan-warnings' }, general.map((w) => warningItem(w, how))) : null,
    p.changes.length === 0 ? h('p', { class: 'empty' }, 'This plan has no change.') : null,
    kinds.map((kind) => {
      const items = byKind.get(kind);
      const changed = items.filter(([c]) => c.action !== 'no_op');
      const unchanged = items.filter(([c]) => c.action === 'no_op');
      return h('section', { class: 'kind' },
        h('h3', {}, kind),
        changed.length ? h('ul', { class: 'changes' }, changed.map(([c, i]) => changeCard(p, c, i, by.get(i), how))) : null,
        unchanged.length ? h('details', { class: 'unchanged' },
          h('summary', {}, `${unchanged.length} unchanged`),
          h('ul', { class: 'plain' }, unchanged.map(([c, i]) => h('li', {}, h('code', {}, c.key),
            by.get(i) ? h('ul', { class: 'warnings' }, by.get(i).map((w) => warningItem(w, how))) : null)))) : null);
    }));
}

function movedSection(p) {
  if (!p.moved || p.moved.length === 0) return null;
  return h('section', { 'aria-labelledby': 'moved-title' },
    h('h2', { id: 'moved-title' }, 'Moved since the source plan'),
    h('p', { class: 'muted' }, 'This plan is a rebase of ', planLink(p.rebased_from),
      '. These resources changed after the source was planned:'),
    h('ul', { class: 'changes' }, p.moved.map((m) => h('li', { class: 'change' },
      h('div', { class: 'change-head' },
        h('h4', { class: 'change-key' }, m.key === null ? m.kind : `${m.kind}/${m.key}`),
        m.code ? h('span', { class: 'badge badge-warning' }, m.code) : null,
        m.version_then !== undefined ? h('span', { class: 'muted small' },
          ` version ${m.version_then} → ${m.version_now === null ? 'gone' : m.version_now}`) : null),
      m.diff ? diffOps(m.diff, ['Then', 'Now']) : null))));
}

// applyCommand is the CLI command that applies p with secrets from the
// environment (the CLI's own form, cli/render.go).
function applyCommand(p) {
  const parts = ['keenauth config apply', p.id];
  for (const w of p.warnings || []) if (w.code === 'deletion_requires_confirmation') parts.push('--confirm-deletion', w.target);
  parts.push('--secrets-from-env');
  if (p.requires_sp_host) parts.push('--sp-host', '<host>');
  return parts.join(' ');
}

function secretsSection(p) {
  if (!p.required_secrets || p.required_secrets.length === 0) return null;
  return h('section', { 'aria-labelledby': 'secrets-title' },
    h('h2', { id: 'secrets-title' }, 'Required secrets'),
    h('ul', { class: 'plain' }, p.required_secrets.map((s) => h('li', {}, h('code', {}, s)))),
    p.status === 'planned' ? [
      h('p', {}, 'Secrets are never typed into the console. Set each as an environment variable of that name and apply with the CLI:'),
      h('pre', { class: 'command', id: 'apply-command' }, applyCommand(p)),
    ] : null);
}

// canValidateHere reports whether the page offers Validate (and the
// apply's checkboxes): validate_only does not count approvals (§17).
function canValidateHere(p) {
  const needsSecrets = p.required_secrets && p.required_secrets.length > 0;
  return p.status === 'planned' && !needsSecrets && can(...applyPermissions(p));
}

// canApplyHere reports whether the page offers Apply: not while approvals
// are missing.
function canApplyHere(p) {
  return canValidateHere(p) && approvalsMissing(p) === 0;
}

function actionsSection(p, rebasedAs, onResult, onRefused, refusal) {
  const needsSecrets = p.required_secrets && p.required_secrets.length > 0;
  const canValidate = canValidateHere(p);
  const canApply = canApplyHere(p);
  // A plan already rebased is not offered the rebase again: the page names
  // the plan that replaced it instead.
  const canRebase = rebasedAs.length === 0 && ['planned', 'conflicted', 'expired'].includes(p.status) &&
    can('config:write', ...p.types.map(readPermission));
  if (!canValidate && !canRebase) return null;
  const out = h('div', { class: 'result', 'aria-live': 'polite' }, refusal ? problem(refusal) : null);
  const controls = [];
  const confirms = (p.warnings || []).filter((w) => w.code === 'deletion_requires_confirmation').map((w) => w.target);
  const boxes = confirms.map((target, i) => {
    const id = 'confirm-' + i;
    const box = h('input', { type: 'checkbox', id, value: target });
    controls.push(h('div', { class: 'check' }, box, h('label', { for: id }, 'Confirm the deletion of ', h('code', {}, target))));
    return box;
  });
  let spHost = null;
  if (p.requires_sp_host && canValidate) {
    spHost = h('input', { id: 'sp-host', type: 'text', autocomplete: 'off', placeholder: 'login.example.com', 'aria-describedby': 'sp-host-help' });
    controls.push(h('div', { class: 'field' }, h('label', { for: 'sp-host' }, 'Service-provider host'), spHost,
      h('p', { id: 'sp-host-help', class: 'muted small' }, 'The callback URLs are https://<host>/sso/<connection id>/callback.')));
  }
  const body = () => {
    const b = {};
    const confirmed = boxes.filter((x) => x.checked).map((x) => x.value);
    if (confirmed.length) b.confirm_deletions = confirmed;
    if (spHost && spHost.value.trim()) b.sp_host = spHost.value.trim();
    return b;
  };
  const buttons = [];
  const run = async (btn, label, fn) => {
    for (const b of buttons) b.disabled = true;
    // The problem shown before is cleared, and is no longer kept.
    shownRefusal = { seq: shownRefusal.seq, refusal: undefined };
    clear(out);
    out.append(h('p', { class: 'muted', role: 'status' }, label + '…'));
    try {
      await fn();
    } catch (err) {
      clear(out);
      out.append(err instanceof Problem ? problem(err) : h('p', {}, String(err)));
      // A refusal may have moved the plan (config_conflict makes it
      // conflicted): show it as it is now, the problem kept.
      if (err instanceof Problem && err.status !== 0) onRefused(err);
    } finally {
      for (const b of buttons) b.disabled = false;
    }
  };
  if (canValidate) {
    buttons.push(h('button', { type: 'button', class: 'secondary', id: 'validate', onclick: (ev) => run(ev.target, 'Validating', async () => {
      await request(`/config-plans/${encodeURIComponent(p.id)}:apply?validate_only=true`, { method: 'POST', body: body(), idempotencyKey: newIdempotencyKey() });
      clear(out);
      out.append(h('p', { class: 'ok', role: 'status' }, 'Validation passed: the apply would succeed now. Nothing was written.'));
    }) }, 'Validate'));
  }
  if (canRebase) {
    buttons.push(h('button', { type: 'button', class: 'secondary', id: 'rebase', onclick: (ev) => run(ev.target, 'Rebasing', async () => {
      const np = await request(`/config-plans/${encodeURIComponent(p.id)}:rebase`, { method: 'POST', body: {}, idempotencyKey: newIdempotencyKey() });
      navigate('/console/plans/' + encodeURIComponent(np.id));
    }) }, 'Rebase'));
  }
  if (canApply) {
    buttons.push(h('button', { type: 'button', id: 'apply', onclick: (ev) => run(ev.target, 'Applying', async () => {
      const ap = await request(`/config-plans/${encodeURIComponent(p.id)}:apply`, { method: 'POST', body: body(), idempotencyKey: newIdempotencyKey() });
      onResult(ap);
    }) }, 'Apply'));
  }
  return h('section', { class: 'card actions', 'aria-labelledby': 'actions-title' },
    h('h2', { id: 'actions-title' }, 'Actions'),
    canValidate && !canApply ? h('p', { class: 'note', id: 'apply-held' },
      `Apply is held back: ${approvalsMissing(p)} approval${approvalsMissing(p) === 1 ? '' : 's'} missing (see Review). Validate checks the plan meanwhile.`) : null,
    canValidate ? null : h('p', { class: 'muted small' }, needsSecrets ? 'This plan needs secrets: apply it with the CLI command below.' : ''),
    controls, h('div', { class: 'buttons' }, buttons), out);
}

// changeRef names the change a pointer /changes/<i>… of p points into, as a
// link to it on the page; another pointer is shown as it is.
function pointerRef(p, pointer) {
  const m = /^\/changes\/(\d+)(\/.*)?$/.exec(pointer || '');
  const c = m && p.changes[Number(m[1])];
  if (c) {
    const rest = m[2] ? ' ' + fieldPath(m[2].replace(/^\/spec/, '')) : '';
    return h('a', { href: '#change-' + m[1], class: 'mono' }, `${c.kind}/${c.key}${rest}`);
  }
  const t = /^\/types\/(\d+)$/.exec(pointer || '');
  if (t && p.types[Number(t[1])]) return h('code', {}, `${p.types[Number(t[1])]} (other resources of this type)`);
  return h('code', { class: 'pointer' }, pointer || '(request)');
}

// problemList writes the errors of a problem (a conflict's moved versions)
// as readable lines: what, why, the code.
function problemList(p, errors, id) {
  return h('ul', { class: 'problem-errors readable', id: id || null }, errors.map((e) =>
    h('li', {}, pointerRef(p, e.pointer), ' ', e.code ? h('span', { class: 'badge badge-code' }, e.code) : null, ' ', e.detail || '')));
}

// conflictSection says why a conflicted plan is, from its apply_conflicted
// event, and what to do.
function conflictSection(p, events, rebasedAs) {
  if (p.status !== 'conflicted' || !Array.isArray(events)) return null;
  const ev = events.filter((e) => e.type === 'apply_conflicted').at(-1);
  const errors = ev && ev.data && Array.isArray(ev.data.errors) ? ev.data.errors : [];
  return h('section', { class: 'card conflict', 'aria-labelledby': 'conflict-title' },
    h('h2', { id: 'conflict-title' }, 'Why this plan is conflicted'),
    h('p', {}, 'The configuration changed after this plan was made, so applying it would overwrite those changes.' +
      (rebasedAs.length ? ' It was rebased: review and apply the new plan.' : ' Rebase it to plan the same changes against the configuration as it is now.')),
    errors.length ? problemList(p, errors, 'conflict-errors') : null);
}

function eventsSection(p, events) {
  return h('section', { 'aria-labelledby': 'events-title' },
    h('h2', { id: 'events-title' }, 'Events'),
    events.length === 0 ? h('p', { class: 'empty' }, 'No event.') :
      h('ol', { class: 'timeline' }, events.map((e) => h('li', {},
        h('div', {}, h('strong', {}, e.type), ' ', time(e.created_at)),
        h('div', { class: 'muted small' }, 'by ', actor(e.actor && e.actor.api_key_id, e.actor && e.actor.owner),
          e.request_id ? [' · request ', h('code', {}, e.request_id)] : null),
        eventData(p, e.data)))));
}

// eventData writes an event's data: plan and revision ids as links, a
// list of problems (a conflict's) as readable lines, a string as text.
function eventData(p, d) {
  if (!d || Object.keys(d).length === 0) return null;
  const show = (k, v) => {
    if (typeof v === 'string' && /^cfgp_/.test(v)) return planLink(v);
    if (typeof v === 'string' && /^cfgr_/.test(v)) return revisionLink(v);
    if (typeof v === 'string') return h('code', {}, v);
    if (k === 'errors' && Array.isArray(v) && v.every((e) => e && typeof e === 'object')) return problemList(p, v);
    const scalar = (x) => x === null || ['string', 'number', 'boolean'].includes(typeof x);
    if (Array.isArray(v) && v.every(scalar)) return v.map((x, i) => [i ? ', ' : '', h('code', {}, String(x))]);
    if (v && typeof v === 'object' && Object.values(v).every(scalar)) {
      // A summary and the like: "create 1, update 0, …".
      return Object.entries(v).map(([n, x], i) => [i ? ', ' : '', n, ' ', h('code', {}, String(x))]);
    }
    return h('code', {}, JSON.stringify(v));
  };
  return h('dl', { class: 'inline' }, Object.entries(d).map(([k, v]) => [h('dt', {}, k), h('dd', {}, show(k, v))]));
}

function facts(p, rebasedAs) {
  const rows = [
    ['Status', badge(p.status)],
    ['Environment', h('code', {}, p.environment_id)],
    ['Types', p.types.join(', ') + (p.prune ? ' (prune)' : '')],
    ['Created', time(p.created_at)],
    ['Expires', time(p.expires_at)],
    ['Applied', time(p.applied_at)],
    ['Revision', revisionLink(p.revision_id)],
    ['Created by', actor(p.created_by, p.created_by_owner)],
  ];
  if (p.rebased_from) rows.push(['Rebased from', planLink(p.rebased_from)]);
  if (rebasedAs.length) rows.push(['Rebased as', rebasedAs.map((id, i) => [i ? ', ' : '', planLink(id)])]);
  return h('dl', { class: 'facts' }, rows.map(([k, v]) => h('div', {}, h('dt', {}, k), h('dd', {}, v))));
}

function summaryCounts(s) {
  return h('ul', { class: 'counts', 'aria-label': 'Summary' },
    [['create', 'Create'], ['update', 'Update'], ['delete', 'Delete'], ['no_op', 'Unchanged']].map(([k, label]) =>
      h('li', { class: 'count count-' + k }, h('span', { class: 'count-n' }, String(s[k])), h('span', { class: 'count-label' }, label))));
}

// planRequests reads a plan and its events (a refusal of the events is
// kept as the value: the page shows the plan all the same).
function planRequests(id) {
  return Promise.all([
    request('/config-plans/' + encodeURIComponent(id)),
    request('/config-plans/' + encodeURIComponent(id) + '/events?limit=100').catch((err) => err),
  ]);
}

// early is the plan page's requests sent by prefetchPlan, for the render
// (seq) that sent them.
let early = null;

// prefetchPlan sends the requests of a plan's page (rawID as the path
// holds it) beside the request of the session that a deep link or a
// reload first makes, so that the page waits for one round trip instead
// of two. Only planPage of the same render takes the answer; a refusal is
// its to show, or nobody's.
export function prefetchPlan(seq, rawID) {
  let id;
  try {
    id = decodeURIComponent(rawID);
  } catch {
    return; // the router shows what is wrong with the path
  }
  const answer = planRequests(id);
  answer.catch(() => {});
  early = { seq, id, answer };
}

export async function planPage({ seq, id }) {
  page('Plan', loading());
  const mine = early && early.seq === seq && early.id === id ? early.answer : planRequests(id);
  early = null;
  const [p, events] = await mine;
  if (!current(seq)) return;
  showPlan(p, events, seq);
  // The page follows the live stream (§19): an event of this plan shows it
  // again, with its new status and events; the focus stays where it was.
  followLive(async (ev) => {
    if (!current(seq) || !ev.data || ev.data.plan_id !== id) return;
    const [now, evs] = await Promise.all([
      request('/config-plans/' + encodeURIComponent(id)).catch(() => null),
      request('/config-plans/' + encodeURIComponent(id) + '/events?limit=100').catch((err) => err),
    ]);
    if (!now || !current(seq)) return;
    if (now.status === shownStatus.status && approvalsOf(now) === shownStatus.approvals && shownStatus.seq === seq) {
      // Neither the status nor the approvals moved (a refused apply): only the
      // events are shown again, so that what the reader is doing on the
      // page (a refusal shown, a box ticked) stays as it is.
      const old = [...document.querySelectorAll('main section')].find((sec) => {
        const t = sec.querySelector('h2');
        return t && t.textContent === 'Events';
      });
      if (old && !(evs instanceof Problem)) old.replaceWith(eventsSection(now, evs.data));
    } else {
      const focused = document.activeElement && document.activeElement.id;
      showPlan(now, evs, seq, shownRefusal.seq === seq ? shownRefusal.refusal : undefined);
      const again = focused && document.getElementById(focused);
      if (again) again.focus({ preventScroll: true });
    }
    const note = document.getElementById('live-plan-note');
    if (note) note.textContent = `Updated live: ${ev.type}.`;
  });
}

// rebasesOf lists the plans that rebased p (its plan_rebased events).
function rebasesOf(events) {
  if (!Array.isArray(events)) return [];
  return events.filter((e) => e.type === 'plan_rebased' && e.data && e.data.plan_id).map((e) => e.data.plan_id);
}

// shownRefusal is the refusal the plan page shows, kept when the live
// stream shows the plan again.
let shownRefusal = { seq: 0, refusal: undefined };

// shownStatus is the status of the plan the page shows, and its number of
// approvals: an approval given elsewhere changes what the page offers
// (Apply once enough), so it shows the plan again whole.
let shownStatus = { seq: 0, status: '', approvals: 0 };

function approvalsOf(p) {
  return Array.isArray(p.approvals) ? p.approvals.length : 0;
}

function showPlan(p, events, seq, refusal, reviewNote) {
  shownRefusal = { seq, refusal };
  shownStatus = { seq, status: p.status, approvals: approvalsOf(p) };
  const evs = events instanceof Problem ? null : events.data;
  const rebasedAs = rebasesOf(evs);
  const needsSecrets = p.required_secrets && p.required_secrets.length > 0;
  const how = canValidateHere(p) ? 'checkbox' : (p.status === 'planned' && needsSecrets ? 'command' : 'apply');
  const refused = async (err) => {
    // The refusal is kept from now on: its own event (apply_conflicted) may
    // reach the live stream, which shows the plan again, before the read
    // below answers, and that showing must not drop the problem.
    shownRefusal = { seq, refusal: err };
    let now;
    try {
      now = await request('/config-plans/' + encodeURIComponent(p.id));
    } catch {
      return;
    }
    if (!current(seq) || now.status === p.status) return;
    const ev = await request('/config-plans/' + encodeURIComponent(p.id) + '/events?limit=100').catch((e) => e);
    if (!current(seq)) return;
    showPlan(now, ev, seq, err);
  };
  const applied = (ap) => {
    if (!current(seq)) return;
    request('/config-plans/' + encodeURIComponent(ap.id) + '/events?limit=100').catch((err) => err).then((ev) => {
      if (!current(seq)) return;
      showPlan(ap, ev, seq);
      const note = document.getElementById('apply-note');
      if (note) note.focus();
    });
  };
  const reviewed = (np, note) => {
    if (!current(seq)) return;
    request('/config-plans/' + encodeURIComponent(np.id) + '/events?limit=100').catch((err) => err).then((ev) => {
      if (!current(seq)) return;
      showPlan(np, ev, seq, null, note);
      const shown = document.getElementById('review-note');
      if (shown) {
        shown.setAttribute('tabindex', '-1');
        shown.focus();
      }
    });
  };
  page('Plan ' + p.id,
    p.status === 'applied' ? h('p', { class: 'ok', id: 'apply-note', tabindex: '-1', role: 'status' },
      'Applied. Revision ', revisionLink(p.revision_id), ' keeps the configuration from before.') : null,
    rebasedAs.length ? h('p', { class: 'note', id: 'rebased-note' }, 'This plan was rebased as ',
      rebasedAs.map((id, i) => [i ? ', ' : '', planLink(id)]), rebasedAs.length > 1 ? ' (the last is the newest).' : '.') : null,
    facts(p, rebasedAs),
    h('p', { class: 'muted small', id: 'live-plan-note', role: 'status' }),
    summaryCounts(p.summary),
    conflictSection(p, evs, rebasedAs),
    reviewSection(p, reviewed, refused, reviewNote),
    actionsSection(p, rebasedAs, applied, refused, refusal) || (refusal ? problem(refusal) : null),
    secretsSection(p),
    movedSection(p),
    changesSection(p, how),
    evs === null ? h('section', {}, h('h2', {}, 'Events'), problem(events)) : eventsSection(p, evs),
    h('p', {}, link('/console/plans', '← All plans')));
  const shown = refusal && document.querySelector('main .problem');
  if (shown) {
    shown.setAttribute('tabindex', '-1');
    shown.focus();
  }
}
