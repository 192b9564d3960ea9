// The review of a plan (§17): its approvals and its rejection, how many
// approvals an apply still needs, and Approve and Reject for a key that may
// review it.
import { request, readPermission, Problem } from './api.js';
import { h, clear, time, problem, actor } from './dom.js';
import { can, signedInKey } from './app.js';

// approvalsReceived counts people as the API does: approvals of keys with
// the same non-null owner count once, a key without owner alone.
export function approvalsReceived(p) {
  const seen = new Set();
  for (const a of p.approvals || []) seen.add(a.owner === null || a.owner === undefined ? 'key ' + a.api_key_id : 'owner ' + a.owner);
  return seen.size;
}

// approvalsMissing is how many more people must approve p before it can
// be applied.
export function approvalsMissing(p) {
  return Math.max(0, (p.approvals_required || 0) - approvalsReceived(p));
}

// reviewOffer says which reviews the signed-in key is offered on p: none
// unless p is planned and the key holds config:approve and the plan's read
// permissions and did not create it; Approve not to a key of the creator's
// owner either (the API refuses it: self_approval_forbidden), nor to a key
// that approved it already.
function reviewOffer(p) {
  const me = signedInKey();
  if (!me || p.status !== 'planned' || me.id === p.created_by) return { approve: false, reject: false };
  if (!can('config:approve', ...p.types.map(readPermission))) return { approve: false, reject: false };
  const sameOwner = !!me.owner && me.owner === p.created_by_owner;
  // A second approval by the same key changes nothing: it is not offered.
  const approved = (p.approvals || []).some((a) => a.api_key_id === me.id);
  return { approve: !sameOwner && !approved, reject: true, sameOwner, approved };
}

function approvalItem(a) {
  return h('li', { class: 'approval' },
    h('div', {}, actor(a.api_key_id, a.owner), ' ', h('span', { class: 'muted small' }, 'approved ', time(a.approved_at))),
    a.comment ? h('p', { class: 'review-comment' }, a.comment) : null);
}

function rejectionCard(p) {
  const r = p.rejection;
  if (!r) return null;
  const withdrawn = r.api_key_id === p.created_by;
  return h('div', { class: 'rejection', id: 'rejection' },
    h('p', {}, h('strong', {}, withdrawn ? 'Withdrawn' : 'Rejected'), ' by ', actor(r.api_key_id, r.owner), ' ',
      h('span', { class: 'muted small' }, time(r.rejected_at))),
    h('p', { class: 'review-comment' }, r.comment),
    h('p', { class: 'muted small' }, 'A rejected plan can no longer be approved, applied or rebased.'));
}

// countLine is "Approvals: n of m".
function countLine(p) {
  const got = approvalsReceived(p);
  const need = p.approvals_required || 0;
  return h('p', { class: 'approvals-count', id: 'approvals-count' }, h('strong', {}, `Approvals: ${got} of ${need}`),
    need === 0 && got === 0 ? h('span', { class: 'muted' }, ' (none needed)') : null);
}

// missingLine says how many approvals a planned plan still waits for.
function missingLine(p) {
  const missing = approvalsMissing(p);
  if (p.status !== 'planned' || missing === 0) return null;
  return h('p', { class: 'note', id: 'approvals-missing' },
    `${missing} missing: the plan can be applied once ${missing === 1 ? 'one more person approves' : missing + ' more people approve'} it.`);
}

// reviewSection is the plan page's Review section. onReviewed(plan, note)
// shows the plan an approval or a rejection answered; onRefused(problem)
// shows the plan as it is now after a refusal.
export function reviewSection(p, onReviewed, onRefused, note) {
  if (p.status === 'preview') return null;
  const offer = reviewOffer(p);
  const out = h('div', { class: 'result', 'aria-live': 'polite' },
    note ? h('p', { class: 'ok', role: 'status', id: 'review-note' }, note) : null);
  let controls = null;
  if (offer.approve || offer.reject) {
    const comment = h('input', { id: 'review-comment', type: 'text', autocomplete: 'off', 'aria-describedby': 'review-comment-help' });
    const buttons = [];
    const send = async (verb, body) => {
      for (const b of buttons) b.disabled = true;
      clear(out);
      out.append(h('p', { class: 'muted', role: 'status' }, verb === 'approve' ? 'Approving…' : 'Rejecting…'));
      try {
        const np = await request(`/config-plans/${encodeURIComponent(p.id)}:${verb}`, { method: 'POST', body });
        onReviewed(np, verb === 'approve' ? 'Approved.' : 'Rejected.');
      } catch (err) {
        clear(out);
        out.append(err instanceof Problem ? problem(err) : h('p', {}, String(err)));
        if (err instanceof Problem && err.status !== 0) onRefused(err);
      } finally {
        for (const b of buttons) b.disabled = false;
      }
    };
    if (offer.approve) {
      buttons.push(h('button', { type: 'button', id: 'approve', onclick: () => {
        const c = comment.value.trim();
        send('approve', c ? { comment: c } : {});
      } }, 'Approve'));
    }
    if (offer.reject) {
      // The comment is required: the API answers its absence (400 at
      // /comment) like every other problem.
      buttons.push(h('button', { type: 'button', class: 'secondary danger', id: 'reject', onclick: () => send('reject', { comment: comment.value.trim() }) }, 'Reject'));
    }
    controls = [
      offer.approved ? h('p', { class: 'muted small', id: 'approved-already' }, 'This key approved the plan.') : null,
      h('div', { class: 'field' }, h('label', { for: 'review-comment' }, offer.approve ? 'Comment' : 'Comment (required)'),
        comment,
        h('p', { id: 'review-comment-help', class: 'muted small' },
          (offer.approve ? 'Optional to approve, required to reject. ' : 'Required to reject. ') + 'One line, at most 1,000 characters.')),
      offer.sameOwner ? h('p', { class: 'muted small', id: 'same-owner' }, 'This key has the owner of the key that created the plan: it may reject the plan, not approve it.') : null,
      h('div', { class: 'buttons' }, buttons),
    ];
  }
  const approvals = p.approvals || [];
  return h('section', { class: 'card review', 'aria-labelledby': 'review-title' },
    h('h2', { id: 'review-title' }, 'Review'),
    countLine(p),
    approvals.length ? h('ol', { class: 'approvals plain', id: 'approvals' }, approvals.map(approvalItem)) : null,
    missingLine(p),
    rejectionCard(p),
    controls,
    out);
}
