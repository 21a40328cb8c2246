// The OpenID Connect provider the tests of single sign-on run against:
// the certified `oidc-provider` package (pinned in package.json), with
// one confidential client and made-up users, on 127.0.0.1 port 0.
//
// Usage: node provider.mjs --client-id ID --client-secret SECRET [--redirect-uri URI]
// Prints `listening on http://127.0.0.1:PORT` once it serves; that URL is
// the issuer.
//
// The client is a native one whose redirect URI is on 127.0.0.1, so any
// port there matches (RFC 8252, 7.3): the board under test listens on a
// port of its own choosing.
//
// Users: whoever logs in on the login page (devInteractions, any password)
// is the account NAME (its subject), as the login says:
//   NAME            email NAME@example.com, verified, no groups
//   unverified-NAME email NAME@example.com, not verified
//   admin-NAME      email NAME@example.com, verified, groups ["board-admins"]
//   noemail-NAME    no email
// Each has `name` "NAME Example" and `preferred_username` NAME.
//
// The tests' controls, on the same port (not part of the provider):
//   POST /__admin/rotate      a new signing key replaces the old one (also SIGUSR2)
//   POST /__admin/mode?m=M    how the next ID tokens are made: normal,
//                             stray-key (signed by a key not published, under
//                             the published key's id), unknown-key (signed
//                             by a key not published, under an id of its own),
//                             wrong-audience, expired, other-issuer
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';

import Provider, { interactionPolicy } from 'oidc-provider';
import { SignJWT, exportJWK, generateKeyPair } from 'jose';

const { values: args } = parseArgs({
  options: {
    'client-id': { type: 'string' },
    'client-secret': { type: 'string' },
    'redirect-uri': { type: 'string', default: 'http://127.0.0.1/api/v1/auth/oidc/callback' },
  },
});
if (!args['client-id'] || !args['client-secret']) {
  console.error('usage: node provider.mjs --client-id ID --client-secret SECRET [--redirect-uri URI]');
  process.exit(2);
}

async function newKey() {
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  const kid = randomUUID();
  const jwk = { ...(await exportJWK(privateKey)), kid, alg: 'RS256', use: 'sig' };
  return { kid, privateKey, jwk };
}

function account(login) {
  let name = login;
  let emailVerified = true;
  let groups = [];
  let email = true;
  if (login.startsWith('unverified-')) {
    name = login.slice('unverified-'.length);
    emailVerified = false;
  } else if (login.startsWith('admin-')) {
    name = login.slice('admin-'.length);
    groups = ['board-admins'];
  } else if (login.startsWith('noemail-')) {
    name = login.slice('noemail-'.length);
    email = false;
  }
  const claims = {
    sub: name,
    name: `${name} Example`,
    preferred_username: name,
    groups,
  };
  if (email) {
    claims.email = `${name}@example.com`;
    claims.email_verified = emailVerified;
  }
  return claims;
}

let key = await newKey();
const stray = await newKey();
let mode = 'normal';
let handler = null;

const server = http.createServer((req, res) => {
  if (req.url.startsWith('/__admin/')) {
    admin(req, res).catch((e) => {
      res.writeHead(500);
      res.end(String(e));
    });
    return;
  }
  handler(req, res);
});
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const issuer = `http://127.0.0.1:${server.address().port}`;

// A first-party client: no consent page, not even for a native client.
const policy = interactionPolicy.base();
policy.get('consent').checks.remove('native_client_prompt');

function build() {
  const provider = new Provider(issuer, {
    clients: [{
      client_id: args['client-id'],
      client_secret: args['client-secret'],
      application_type: 'native',
      redirect_uris: [args['redirect-uri']],
      grant_types: ['authorization_code'],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_basic',
    }],
    jwks: { keys: [key.jwk] },
    claims: {
      openid: ['sub'],
      email: ['email', 'email_verified'],
      profile: ['name', 'preferred_username'],
      groups: ['groups'],
    },
    scopes: ['openid', 'email', 'profile', 'groups'],
    // The scopes' claims in the ID token itself, as most providers do.
    conformIdTokenClaims: false,
    cookies: { keys: ['taskboard-tests-cookie-key'] },
    findAccount: async (_ctx, id) => ({
      accountId: id,
      claims: async () => account(id),
    }),
    // A first-party client: no consent page.
    loadExistingGrant: async (ctx) => {
      const grant = new ctx.oidc.provider.Grant({
        clientId: ctx.oidc.client.clientId,
        accountId: ctx.oidc.session.accountId,
      });
      grant.addOIDCScope('openid email profile groups');
      grant.addOIDCClaims(['email', 'email_verified', 'name', 'preferred_username', 'groups']);
      await grant.save();
      return grant;
    },
    interactions: { policy },
    features: { devInteractions: { enabled: true } },
    pkce: { required: () => true },
  });
  provider.use(async (ctx, next) => {
    await next();
    if (ctx.path === '/token' && mode !== 'normal' && ctx.body && ctx.body.id_token) {
      ctx.body = { ...ctx.body, id_token: await remade(ctx.body.id_token) };
    }
  });
  return provider.callback();
}

// The ID token as the current mode makes it.
async function remade(token) {
  const payload = JSON.parse(Buffer.from(token.split('.')[1], 'base64url'));
  let signer = key.privateKey;
  let kid = key.kid;
  const now = Math.floor(Date.now() / 1000);
  switch (mode) {
    case 'stray-key': signer = stray.privateKey; break;
    case 'unknown-key': signer = stray.privateKey; kid = stray.kid; break;
    case 'wrong-audience': payload.aud = 'another-client'; break;
    case 'expired': payload.iat = now - 7200; payload.exp = now - 3600; break;
    case 'other-issuer': payload.iss = 'http://127.0.0.1:1/another-issuer'; break;
    default: throw new Error(`unknown mode ${mode}`);
  }
  return new SignJWT(payload).setProtectedHeader({ alg: 'RS256', kid }).sign(signer);
}

async function rotate() {
  key = await newKey();
  handler = build();
  console.log(`rotated: signing with key ${key.kid}`);
}

async function admin(req, res) {
  const url = new URL(req.url, issuer);
  if (req.method === 'POST' && url.pathname === '/__admin/rotate') {
    await rotate();
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ kid: key.kid }));
    return;
  }
  if (req.method === 'POST' && url.pathname === '/__admin/mode') {
    const next = url.searchParams.get('m') || 'normal';
    const known = ['normal', 'stray-key', 'unknown-key', 'wrong-audience', 'expired', 'other-issuer'];
    if (!known.includes(next)) {
      res.writeHead(400);
      res.end(`unknown mode ${next}`);
      return;
    }
    mode = next;
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ mode }));
    return;
  }
  res.writeHead(404);
  res.end();
}

handler = build();
process.on('SIGUSR2', () => { rotate().catch((e) => console.error(e)); });
process.on('SIGTERM', () => process.exit(0));
// The harness reads this line.
console.log(`listening on ${issuer}`);
