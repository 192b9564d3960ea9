// Webhooks (SPEC §19): the endpoints, each with its deliveries — status,
// attempts, last error — and Retry for a failed one. Read with
// webhooks:read; Retry is offered with webhooks:write. A secret is never
// shown: the API shows it once, at creation, and the console creates none.
import { request, Problem } from './api.js';
import { h, clear, time, badge, problem, pager, table, planLink, loading, link } from './dom.js';
import { page, can, current } from './app.js';

// The badge style of each status, from the console's palette.
const STATUS_STYLE = { enabled: 'applied', disabled: 'expired', pending: 'planned', succeeded: 'applied', failed: 'conflicted' };

function statusBadge(s) {
  return badge(s, STATUS_STYLE[s] || 'code');
}

export async function webhooksPage({ seq, params }) {
  const body = h('div', {}, loading());
  page('Webhooks', h('p', { class: 'muted' }, 'Each endpoint receives the plan events it subscribes to, signed (Standard Webhooks). ' +
    'Endpoints are created and changed with the API or the CLI (keenauth webhooks).'), body);
  const q = new URLSearchParams();
  if (params.get('cursor')) q.set('cursor', params.get('cursor'));
  const list = await request('/webhook-endpoints' + (q.toString() ? '?' + q : ''));
  if (!current(seq)) return;
  clear(body);
  if (list.data.length === 0) body.append(h('p', { class: 'empty' }, 'No webhook endpoint.'));
  else {
    body.append(table('Webhook endpoints, newest first', ['Endpoint', 'URL', 'Events', 'Status', 'Created'],
      list.data.map((e) => [link('/console/webhooks/' + encodeURIComponent(e.id), e.id, 'mono'), h('code', { class: 'wrap' }, e.url),
        e.events.join(', '), statusBadge(e.status), time(e.created_at)])));
  }
  const pg = pager(list, params);
  if (pg) body.append(pg);
}

export async function webhookPage({ seq, id, params }) {
  page('Webhook endpoint', loading());
  const q = new URLSearchParams();
  if (params.get('cursor')) q.set('cursor', params.get('cursor'));
  const base = '/webhook-endpoints/' + encodeURIComponent(id);
  const [e, deliveries] = await Promise.all([
    request(base),
    request(base + '/deliveries' + (q.toString() ? '?' + q : '')).catch((err) => err),
  ]);
  if (!current(seq)) return;
  const result = h('div', { class: 'result', 'aria-live': 'polite' });
  const retry = async (d, button) => {
    button.disabled = true;
    clear(result);
    try {
      await request(base + '/deliveries/' + encodeURIComponent(d.id) + ':retry', { method: 'POST', body: {} });
      if (!current(seq)) return;
      result.append(h('p', { class: 'ok', id: 'retry-note', tabindex: '-1', role: 'status' }, `Delivery ${d.id} is queued again.`));
      const cell = document.getElementById('status-' + d.id);
      if (cell) {
        clear(cell);
        cell.append(statusBadge('pending'));
      }
      button.remove();
      document.getElementById('retry-note').focus();
    } catch (err) {
      if (!current(seq)) return;
      button.disabled = false;
      result.append(err instanceof Problem ? problem(err) : h('p', {}, String(err)));
    }
  };
  const facts = h('dl', { class: 'facts' },
    h('div', {}, h('dt', {}, 'URL'), h('dd', {}, h('code', { class: 'wrap' }, e.url))),
    h('div', {}, h('dt', {}, 'Status'), h('dd', {}, statusBadge(e.status))),
    h('div', {}, h('dt', {}, 'Events'), h('dd', {}, e.events.join(', '))),
    h('div', {}, h('dt', {}, 'Description'), h('dd', {}, e.description || '—')),
    h('div', {}, h('dt', {}, 'Created'), h('dd', {}, time(e.created_at))));
  let section;
  if (deliveries instanceof Problem) section = problem(deliveries);
  else if (deliveries.data.length === 0) section = h('p', { class: 'empty' }, 'No delivery yet.');
  else {
    const canRetry = can('webhooks:write');
    section = [table('Deliveries, newest first', ['Delivery', 'Event', 'Plan', 'Status', 'Attempts', 'Last attempt', 'Last error', 'Next attempt', ''],
      deliveries.data.map((d) => {
        const button = canRetry && d.status === 'failed'
          ? h('button', { type: 'button', class: 'secondary', id: 'retry-' + d.id, onclick: (ev) => retry(d, ev.currentTarget) }, 'Retry')
          : null;
        const last = d.last_status_code ? `HTTP ${d.last_status_code}` : '';
        return [h('code', {}, d.id), h('code', {}, d.event_type), planLink(d.plan_id),
          h('span', { id: 'status-' + d.id }, statusBadge(d.status)), String(d.attempts),
          [time(d.last_attempt_at), last ? h('span', { class: 'muted small' }, ' ', last) : null],
          d.last_error ? h('span', { class: 'wrap' }, d.last_error) : h('span', { class: 'muted' }, '—'),
          time(d.next_attempt_at), button];
      })), pager(deliveries, params)];
  }
  page('Webhook endpoint ' + e.id, facts,
    h('section', { 'aria-labelledby': 'deliveries-title' }, h('h2', { id: 'deliveries-title' }, 'Deliveries'), result, section),
    h('p', {}, link('/console/webhooks', '← All webhook endpoints')));
}
