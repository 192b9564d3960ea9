// The console's shell: sign-in, the header (environment, permissions, sign
// out), the navigation and the client-side router over the History API.
import { request, getKey, setKey, clearKey, Problem } from './api.js';
import { h, append, clear, problem, loading } from './dom.js';
import { plansPage, planPage, prefetchPlan } from './plans.js';
import { revisionsPage, revisionPage } from './revisions.js';
import { logsPage } from './logs.js';
import { configPage } from './config.js';
import { stopLive } from './live.js';
import { webhooksPage, webhookPage } from './webhooks.js';

const main = document.getElementById('main');
const top = document.getElementById('top');

// session is the signed-in key as GET /v1/api-keys/current describes it.
let session = null;

const planRoute = /^\/console\/plans\/([^/]+)$/;

const routes = [
  [/^\/console\/?$/, () => navigate('/console/plans', true)],
  [/^\/console\/plans\/?$/, plansPage],
  [planRoute, planPage],
  [/^\/console\/revisions\/?$/, revisionsPage],
  [/^\/console\/revisions\/([^/]+)$/, revisionPage],
  [/^\/console\/logs\/?$/, logsPage],
  [/^\/console\/config\/?$/, configPage],
  [/^\/console\/webhooks\/?$/, webhooksPage],
  [/^\/console\/webhooks\/([^/]+)$/, webhookPage],
];

const navItems = [
  ['/console/plans', 'Plans', 'config:read'],
  ['/console/revisions', 'Revisions', 'config:read'],
  ['/console/logs', 'Management log', 'management-logs:read'],
  ['/console/config', 'Configuration', 'config:read'],
  ['/console/webhooks', 'Webhooks', 'webhooks:read'],
];

// can reports whether the signed-in key holds every permission.
export function can(...perms) {
  return !!session && perms.every((p) => session.permissions.includes(p));
}

// signedInKey is the signed-in key as GET /v1/api-keys/current describes
// it (id, owner, permissions), null before sign-in.
export function signedInKey() {
  return session;
}

export function navigate(path, replace) {
  if (replace) history.replaceState(null, '', path);
  else history.pushState(null, '', path);
  render();
}

// page is what a page module fills: its title (also the document's) and
// body; focus moves to the title so that a reader hears the new page.
export function page(title, ...body) {
  document.title = title + ' · Keenauth console';
  clear(main);
  main.append(h('h1', { id: 'page-title', tabindex: '-1' }, title), ...body.flat().filter(Boolean));
  document.getElementById('page-title').focus({ preventScroll: true });
}

let renderSeq = 0;

// current tells a page whether it is still the one shown when its request
// answers (a quicker click may have moved on).
export function current(seq) {
  return seq === renderSeq;
}

async function render() {
  const seq = ++renderSeq;
  stopLive(); // a page that follows the live stream starts it again
  if (!getKey()) {
    session = null;
    renderHeader();
    signInPage();
    return;
  }
  if (!session) {
    clear(main);
    main.append(loading());
    // A plan's page (the largest) asks for its plan beside the session.
    const plan = location.pathname.match(planRoute);
    if (plan) prefetchPlan(seq, plan[1]);
    try {
      session = await request('/api-keys/current');
    } catch (err) {
      if (!current(seq)) return;
      clearKey();
      renderHeader();
      signInPage(err);
      return;
    }
    if (!current(seq)) return;
  }
  renderHeader();
  const path = location.pathname;
  for (const [re, fn] of routes) {
    const m = path.match(re);
    if (m) {
      try {
        await fn({ seq, params: new URLSearchParams(location.search), id: m[1] ? decodeURIComponent(m[1]) : null });
      } catch (err) {
        if (!current(seq)) return;
        if (err instanceof Problem && err.status === 401) {
          clearKey();
          session = null;
          renderHeader();
          signInPage(err);
          return;
        }
        page('Something went wrong', err instanceof Problem ? problem(err) : h('p', {}, String(err)));
      }
      return;
    }
  }
  page('Page not found', h('p', {}, 'There is no console page at this address. '),
    h('p', {}, h('a', { href: '/console/plans' }, 'Go to the plans')));
}

function renderHeader() {
  clear(top);
  const brand = h('a', { href: '/console/', class: 'brand' }, h('span', { class: 'brand-mark', 'aria-hidden': 'true' }, 'K'), 'Keenauth console');
  if (!session) {
    top.append(h('div', { class: 'top-bar' }, brand));
    return;
  }
  const perms = session.permissions;
  const nav = h('nav', { class: 'nav', 'aria-label': 'Console' },
    h('ul', {}, navItems.filter(([, , perm]) => can(perm)).map(([href, label]) => {
      const here = location.pathname === href || location.pathname.startsWith(href + '/');
      return h('li', {}, h('a', { href, 'aria-current': here ? 'page' : null }, label));
    })));
  top.append(
    h('div', { class: 'top-bar' },
      brand,
      h('div', { class: 'who' },
        h('span', { class: 'env' }, h('span', { class: 'muted' }, 'Environment '), h('code', { id: 'environment' }, session.environment_id)),
        session.owner ? h('span', { class: 'env' }, h('span', { class: 'muted' }, 'Signed in as '), h('code', { id: 'owner' }, session.owner)) : null,
        h('details', { class: 'perms' },
          h('summary', {}, `${perms.length} permission${perms.length === 1 ? '' : 's'}`),
          h('ul', { id: 'permissions' }, perms.map((p) => h('li', {}, h('code', {}, p))))),
        h('button', { type: 'button', class: 'secondary', id: 'sign-out', onclick: signOut }, 'Sign out'))),
    nav);
}

function signOut() {
  clearKey();
  session = null;
  navigate('/console/');
}

function signInPage(err) {
  const input = h('input', { id: 'api-key', type: 'password', autocomplete: 'off', spellcheck: 'false', required: true, 'aria-describedby': 'api-key-help' });
  const form = h('form', { class: 'card sign-in', method: 'post', action: '/console/', onsubmit: async (ev) => {
    ev.preventDefault();
    const key = input.value.trim();
    if (!key) return;
    setKey(key);
    input.value = '';
    session = null;
    render();
  } },
  h('label', { for: 'api-key' }, 'API key'),
  input,
  h('p', { id: 'api-key-help', class: 'muted small' },
    'Paste a secret key (ksk_…). It is kept in this tab only and forgotten when the tab closes or you sign out. ' +
    'The console can do only what the key may.'),
  h('button', { type: 'submit' }, 'Sign in'));
  document.title = 'Sign in · Keenauth console';
  clear(main);
  // dom's append skips a null; Element.append would write it as the text "null".
  append(main, [h('h1', { id: 'page-title', tabindex: '-1' }, 'Sign in'), err ? problem(err) : null, form]);
  input.focus();
}

// Same-origin links below /console/ are followed by the router.
document.addEventListener('click', (ev) => {
  if (ev.defaultPrevented || ev.button !== 0 || ev.metaKey || ev.ctrlKey || ev.shiftKey || ev.altKey) return;
  const a = ev.target.closest('a');
  if (!a || a.hasAttribute('download') || a.target) return;
  const url = new URL(a.href, location.href);
  if (url.origin !== location.origin || !url.pathname.startsWith('/console/') || url.hash) return;
  ev.preventDefault();
  navigate(url.pathname + url.search);
});

window.addEventListener('popstate', render);
render();
