// The API client: the key lives in sessionStorage only and is sent only as
// the Authorization header of same-origin /v1 requests.
const KEY = 'keenauth.apiKey';

export function getKey() {
  return sessionStorage.getItem(KEY);
}

export function setKey(key) {
  sessionStorage.setItem(KEY, key);
}

export function clearKey() {
  sessionStorage.removeItem(KEY);
}

// Problem is a refused request: the API's problem details, or a network
// failure described the same way.
export class Problem extends Error {
  constructor(status, body) {
    super(body.title || 'Request failed');
    this.status = status;
    this.body = body;
  }
}

// request sends one API call and returns the decoded JSON, or throws a
// Problem. opts: {method, body, idempotencyKey}.
export async function request(path, opts = {}) {
  const headers = { Accept: 'application/json' };
  const key = getKey();
  if (key) headers.Authorization = 'Bearer ' + key;
  if (opts.body !== undefined) headers['Content-Type'] = 'application/json';
  if (opts.idempotencyKey) headers['Idempotency-Key'] = opts.idempotencyKey;
  let resp;
  try {
    resp = await fetch('/v1' + path, {
      method: opts.method || 'GET',
      headers,
      body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
      cache: 'no-store',
      credentials: 'omit',
      redirect: 'error',
    });
  } catch (err) {
    throw new Problem(0, { title: 'The API could not be reached', detail: String(err.message || err) });
  }
  const text = await resp.text();
  let body = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    body = null;
  }
  if (!resp.ok) {
    if (!body || typeof body !== 'object') {
      body = { title: 'HTTP ' + resp.status, detail: text.slice(0, 500) };
    }
    throw new Problem(resp.status, body);
  }
  return body;
}

// newIdempotencyKey returns a random UUID v4. crypto.randomUUID exists only
// in secure contexts, so the fallback builds one from getRandomValues.
export function newIdempotencyKey() {
  if (crypto.randomUUID) return crypto.randomUUID();
  const b = crypto.getRandomValues(new Uint8Array(16));
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const hex = Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

// The permission prefix of each kind (SPEC §3).
const PERMISSION_OF_KIND = {
  environment_settings: 'environment-settings',
  identity_settings: 'identity-settings',
  attack_protection: 'attack-protection',
  branding: 'branding',
  application_branding: 'branding',
  connection: 'connections',
  api: 'apis',
  role: 'roles',
  application: 'applications',
};

export const KINDS = Object.keys(PERMISSION_OF_KIND);

// The document key of each kind, for the export's types= parameter and its
// sections.
export const DOCUMENT_KEY = {
  environment_settings: 'environment_settings',
  identity_settings: 'identity_settings',
  attack_protection: 'attack_protection',
  branding: 'branding',
  application_branding: 'application_branding',
  connection: 'connections',
  api: 'apis',
  role: 'roles',
  application: 'applications',
};

export function readPermission(kind) {
  return PERMISSION_OF_KIND[kind] + ':read';
}

export function writePermission(kind) {
  return PERMISSION_OF_KIND[kind] + ':write';
}
