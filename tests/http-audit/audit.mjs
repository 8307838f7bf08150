// Runs graphql-http's server audits (the GraphQL-over-HTTP specification's checks, from its
// reference implementation) against AUDIT_URL, with AUDIT_TOKEN as the bearer token on
// every request, and prints one JSON array of {id, name, status, reason}.
// status: "ok", or "error" (a MUST failed), "warn" (a SHOULD), "notice" (a MAY).
import { serverAudits } from 'graphql-http';

const url = process.env.AUDIT_URL;
const token = process.env.AUDIT_TOKEN;
if (!url || !token) {
  console.error('AUDIT_URL and AUDIT_TOKEN are required');
  process.exit(2);
}

function fetchFn(input, init = {}) {
  const headers = new Headers(init.headers);
  headers.set('authorization', `Bearer ${token}`);
  return fetch(input, { ...init, headers });
}

const results = [];
for (const audit of serverAudits({ url, fetchFn })) {
  const result = await audit.fn();
  results.push({
    id: audit.id,
    name: audit.name,
    status: result.status,
    reason: result.status === 'ok' ? null : result.reason,
  });
}
process.stdout.write(JSON.stringify(results));
