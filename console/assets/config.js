// The current configuration: the export per kind with each resource's
// version, and a download of the JSON.
import { request, KINDS, DOCUMENT_KEY, readPermission } from './api.js';
import { h, clear, json, loading } from './dom.js';
import { page, can, current } from './app.js';

// The document key → kind, to read versions ("<kind>/<key>").
const KIND_OF_KEY = Object.fromEntries(KINDS.map((k) => [DOCUMENT_KEY[k], k]));
const SINGLETONS = ['environment_settings', 'identity_settings', 'attack_protection', 'branding'];

export async function configPage({ seq }) {
  const readable = KINDS.filter((k) => can(readPermission(k)));
  const body = h('div', {}, loading());
  const hidden = KINDS.length - readable.length;
  page('Configuration',
    hidden ? h('p', { class: 'muted' }, `The key cannot read ${hidden} of the ${KINDS.length} kinds; they are left out.`) : null,
    body);
  if (readable.length === 0) {
    clear(body);
    body.append(h('p', { class: 'empty' }, 'The key can read no kind of resource.'));
    return;
  }
  const exp = await request('/config?types=' + readable.join(','));
  if (!current(seq)) return;
  clear(body);
  const text = JSON.stringify(exp, null, 2) + '\n';
  const url = URL.createObjectURL(new Blob([text], { type: 'application/json' }));
  const name = `keenauth-config-${new Date().toISOString().replace(/[:.]/g, '-')}.json`;
  body.append(h('p', {}, h('a', { href: url, download: name, class: 'button', id: 'download' }, 'Download JSON')));
  const sections = [];
  for (const [docKey, content] of Object.entries(exp.config)) {
    const kind = KIND_OF_KEY[docKey] || docKey;
    let items;
    if (SINGLETONS.includes(docKey)) {
      items = [["default", exp.versions[`${kind}/default`], content]];
    } else {
      items = Object.entries(content || {}).map(([key, spec]) => [key, exp.versions[`${kind}/${key}`], spec]);
    }
    sections.push(h('section', { class: 'kind' },
      h('h2', {}, docKey, ' ', h('span', { class: 'muted small' }, SINGLETONS.includes(docKey) ? '' : `${items.length}`)),
      items.length === 0 ? h('p', { class: 'empty' }, 'None.') :
        h('ul', { class: 'changes' }, items.map(([key, version, spec]) => h('li', { class: 'change' },
          h('details', {},
            h('summary', {}, h('span', { class: 'change-key' }, key), ' ',
              h('span', { class: 'muted small' }, version === undefined ? '' : `version ${version}`)),
            json(spec)))))));
  }
  body.append(...sections);
}
