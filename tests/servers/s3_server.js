'use strict';
// An S3 server for the tests, on 127.0.0.1 only: s3rver (the protocol: buckets, ranged GET, ETag, ListObjectsV2
// with continuation tokens) behind a front of our own that checks every request as AWS S3 does, since s3rver does
// not: the AWS Signature Version 4 is recomputed with AWS's own signer (@aws-sdk/signature-v4) from the method,
// path, query and signed headers as received, and a request that does not match is answered 403
// SignatureDoesNotMatch. The front also answers If-Match as S3 does (412 PreconditionFailed), which s3rver ignores.
// And it keeps the SHA-256 checksums of uploads as AWS S3 does, which s3rver 3.7 does not: a PUT through the front
// that carries x-amz-checksum-sha256 (base64 of the body's SHA-256) is refused with 400 BadDigest when the body
// does not match it, else the checksum is kept with the object (a later PUT without one drops it), and HEAD or GET
// of the whole object return it in x-amz-checksum-sha256 (with x-amz-checksum-type: FULL_OBJECT) only when the
// request carries `x-amz-checksum-mode: ENABLED`, as on AWS; a ranged GET never gets it.
//
//   node s3_server.js DATA_DIR LOG_FILE     settings as JSON on stdin (below); prints {"front": PORT, "store": PORT}
//
// Settings (changed later by PUT /.front/settings with a JSON object, merged; bucket names never start with '.'):
//   region                the region requests must be signed for (default us-east-1)
//   accounts              [{access_key, secret_key, session_token?, buckets?}]: who may read; with session_token,
//                         temporary credentials whose token must come signed; buckets, if given, the only ones
//                         this account may read
//   public_buckets        buckets anyone may read without signing
//   clock_offset_seconds  how far the front's clock is ahead of the machine's (to answer RequestTimeTooSkewed)
//   sts                   {role_arn, tokens, duration_seconds?, buckets?}: the front is also AWS STS for web
//                         identity (below); null: it is not
// The store port takes unsigned requests of any kind: the tests create buckets and objects through it.
// LOG_FILE gets one JSON line per request through the front (no header values, so no secret).
//
// STS: `POST /` with a form body Action=AssumeRoleWithWebIdentity&Version=2011-06-15&RoleArn=..&RoleSessionName=..
// &WebIdentityToken=.. (unsigned, as AWS's SDKs send it) answers as AWS STS does: temporary keys with a session
// token that expire duration_seconds (default 3) later, for RoleArn = sts.role_arn and a token among sts.tokens
// (else 400 InvalidIdentityToken, 403 AccessDenied). The front then takes those keys (for sts.buckets only, when
// given) until they expire, and refuses them after with 400 ExpiredToken, as S3 does. GET /.front/sts lists the
// keys given, in order: {access_key, secret_key, session_token, expires_ms, session_name, token} (the web identity
// token they were given for; the log names none of these).

const crypto = require('crypto');
const fs = require('fs');
const http = require('http');
const S3rver = require('s3rver');
const { SignatureV4 } = require('@aws-sdk/signature-v4');
const { Sha256 } = require('@aws-crypto/sha256-js');

const SKEW_LIMIT_MS = 15 * 60 * 1000;
const EMPTY_SHA256 = crypto.createHash('sha256').update('').digest('hex');
const MAX_BODY_BYTES = 1 << 20;
const MAX_PUT_BODY_BYTES = 256 << 20;  // objects uploaded through the front (with a checksum)
// The x-amz-checksum-sha256 of objects uploaded with one, by canonical path (/BUCKET/KEY).
const checksums = new Map();

// The temporary keys STS gave (accounts that expire).
const issued = [];

const [dataDir, logFile] = process.argv.slice(2);
let settings = { region: 'us-east-1', accounts: [], public_buckets: [], clock_offset_seconds: 0, sts: null };
const log = fs.createWriteStream(logFile, { flags: 'a' });

class S3Refusal extends Error {
  constructor(status, code, message, detail = {}) {
    super(message);
    this.status = status;
    this.code = code;
    this.detail = detail;
  }
}

function xmlEscape(text) {
  return String(text).replace(/[&<>"']/g, c => `&#${c.charCodeAt(0)};`);
}

function errorXml(code, message, detail) {
  const extra = Object.entries(detail).map(([k, v]) => `<${k}>${xmlEscape(v)}</${k}>`).join('');
  return `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code><Message>${xmlEscape(message)}` +
         `</Message>${extra}<RequestId>${crypto.randomBytes(8).toString('hex')}</RequestId></Error>`;
}

// S3's own encoding of a path segment or query part for the canonical request: RFC 3986's unreserved characters
// stay, every other byte is %XX (upper case).
function awsEncode(text) {
  return encodeURIComponent(text).replace(/[!'()*]/g, c => '%' + c.charCodeAt(0).toString(16).toUpperCase());
}

function decode(text) {
  try {
    return decodeURIComponent(text);
  } catch (e) {
    throw new S3Refusal(400, 'InvalidURI', "Couldn't parse the specified URI.");
  }
}

// The path as S3 reads it: each segment decoded, then encoded again its own way (so a client that signed another
// encoding of the same key than S3's fails, as on AWS).
function canonicalPath(rawPath) {
  return rawPath.split('/').map(segment => awsEncode(decode(segment))).join('/');
}

// The query as received: {name: value or [values]}, decoded ('+' is a plus sign: AWS clients encode spaces).
function parseQuery(rawQuery) {
  const query = {};
  if (!rawQuery) return query;
  for (const part of rawQuery.split('&')) {
    if (part === '') continue;
    const equals = part.indexOf('=');
    const name = decode(equals < 0 ? part : part.slice(0, equals));
    const value = equals < 0 ? '' : decode(part.slice(equals + 1));
    if (name in query) query[name] = [].concat(query[name], value);
    else query[name] = value;
  }
  return query;
}

// "20240102T030405Z" as a Date; null when it is not one.
function parseAmzDate(text) {
  const match = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(text || '');
  if (!match) return null;
  const [, y, mo, d, h, mi, s] = match.map(Number);
  return new Date(Date.UTC(y, mo - 1, d, h, mi, s));
}

function parseAuthorization(header) {
  const space = header.indexOf(' ');
  const algorithm = space < 0 ? header : header.slice(0, space);
  if (algorithm !== 'AWS4-HMAC-SHA256') {
    throw new S3Refusal(400, 'InvalidArgument', 'Unsupported Authorization Type', { ArgumentName: 'Authorization' });
  }
  const parts = {};
  for (const component of header.slice(space + 1).split(',')) {
    const equals = component.indexOf('=');
    if (equals > 0) parts[component.slice(0, equals).trim()] = component.slice(equals + 1).trim();
  }
  for (const name of ['Credential', 'SignedHeaders', 'Signature']) {
    if (!parts[name]) {
      throw new S3Refusal(400, 'AuthorizationHeaderMalformed',
                          `The authorization header is malformed; missing ${name}.`);
    }
  }
  const [accessKey, date, region, service, terminator, ...rest] = parts.Credential.split('/');
  if (rest.length || terminator !== 'aws4_request' || service !== 's3') {
    throw new S3Refusal(400, 'AuthorizationHeaderMalformed',
                        'The authorization header is malformed; the Credential is mal-formed.');
  }
  return { accessKey, date, region, signedHeaders: parts.SignedHeaders.split(';'), signature: parts.Signature };
}

// Checks a signed request as S3 does; returns the account, or throws the refusal S3 would answer.
async function checkSigned(request, rawPath, rawQuery, body) {
  const auth = parseAuthorization(request.headers.authorization);
  const account = settings.accounts.find(a => a.access_key === auth.accessKey) ||
                  issued.find(a => a.access_key === auth.accessKey);
  if (!account) {
    throw new S3Refusal(403, 'InvalidAccessKeyId',
                        'The AWS Access Key Id you provided does not exist in our records.',
                        { AWSAccessKeyId: auth.accessKey });
  }
  const amzDate = request.headers['x-amz-date'];
  const signedAt = parseAmzDate(amzDate);
  if (!signedAt) throw new S3Refusal(403, 'AccessDenied', 'AWS authentication requires a valid Date or x-amz-date header');
  const now = new Date(Date.now() + 1000 * (settings.clock_offset_seconds || 0));
  if (Math.abs(now - signedAt) > SKEW_LIMIT_MS) {
    throw new S3Refusal(403, 'RequestTimeTooSkewed',
                        'The difference between the request time and the current time is too large.',
                        { RequestTime: amzDate, ServerTime: now.toISOString().replace(/\.\d+/, ''),
                          MaxAllowedSkewMilliseconds: SKEW_LIMIT_MS });
  }
  if (auth.date !== amzDate.slice(0, 8)) {
    throw new S3Refusal(400, 'AuthorizationHeaderMalformed',
                        `The authorization header is malformed; Invalid credential date "${auth.date}". ` +
                        'This date is not the same as X-Amz-Date: "' + amzDate.slice(0, 8) + '".');
  }
  if (auth.region !== settings.region) {
    throw new S3Refusal(400, 'AuthorizationHeaderMalformed',
                        `The authorization header is malformed; the region '${auth.region}' is wrong; ` +
                        `expecting '${settings.region}'`, { Region: settings.region });
  }
  const contentSha256 = request.headers['x-amz-content-sha256'];
  if (contentSha256 === undefined) {
    throw new S3Refusal(400, 'InvalidRequest', 'Missing required header for this request: x-amz-content-sha256');
  }
  const bodySha256 = crypto.createHash('sha256').update(body).digest('hex');
  if (contentSha256 !== 'UNSIGNED-PAYLOAD' && contentSha256 !== bodySha256) {
    throw new S3Refusal(400, 'XAmzContentSHA256Mismatch',
                        "The provided 'x-amz-content-sha256' header does not match what was computed.",
                        { ClientComputedContentSHA256: contentSha256, S3ComputedContentSHA256: bodySha256 });
  }
  const signed = new Set(auth.signedHeaders);
  const unsigned = Object.keys(request.headers).filter(name => name.startsWith('x-amz-') && !signed.has(name));
  if (!signed.has('host') || unsigned.length) {
    throw new S3Refusal(403, 'AccessDenied', 'There were headers present in the request which were not signed',
                        { HeadersNotSigned: unsigned.length ? unsigned.join(', ') : 'host' });
  }
  const token = request.headers['x-amz-security-token'];
  if ((account.session_token || undefined) !== token) {
    throw new S3Refusal(403, 'InvalidToken', 'The provided token is malformed or otherwise invalid.');
  }
  if (account.expires_ms !== undefined && Date.now() >= account.expires_ms) {
    throw new S3Refusal(400, 'ExpiredToken', 'The provided token has expired.',
                        { 'X-Amz-Security-Token': token.slice(0, 8) + '...' });
  }

  const headers = {};
  for (const name of auth.signedHeaders) {
    if (request.headers[name] === undefined) {
      throw new S3Refusal(403, 'SignatureDoesNotMatch', `Signed header ${name} is not in the request.`);
    }
    headers[name] = request.headers[name];
  }
  const signer = new SignatureV4({
    credentials: { accessKeyId: account.access_key, secretAccessKey: account.secret_key },
    region: auth.region, service: 's3', sha256: Sha256, uriEscapePath: false, applyChecksum: false,
  });
  const recomputed = await signer.sign(
    { method: request.method, protocol: 'http:', hostname: request.headers.host, path: canonicalPath(rawPath),
      query: parseQuery(rawQuery), headers },
    { signingDate: signedAt, signableHeaders: signed });
  const expected = /Signature=([0-9a-f]+)/.exec(recomputed.headers.authorization)[1];
  const expectedList = /SignedHeaders=([^,]+)/.exec(recomputed.headers.authorization)[1];
  if (expected !== auth.signature || expectedList !== auth.signedHeaders.join(';')) {
    throw new S3Refusal(403, 'SignatureDoesNotMatch',
                        'The request signature we calculated does not match the signature you provided. ' +
                        'Check your key and signing method.', { AWSAccessKeyId: auth.accessKey });
  }
  return account;
}

function bucketOf(rawPath) {
  return decode(rawPath.split('/')[1] || '');
}

async function authorize(request, rawPath, rawQuery, body) {
  const bucket = bucketOf(rawPath);
  if (request.headers.authorization === undefined) {
    const reads = request.method === 'GET' || request.method === 'HEAD';
    if (!reads || !settings.public_buckets.includes(bucket)) throw new S3Refusal(403, 'AccessDenied', 'Access Denied');
    return 'anonymous';
  }
  const account = await checkSigned(request, rawPath, rawQuery, body);
  if (account.buckets && !account.buckets.includes(bucket)) throw new S3Refusal(403, 'AccessDenied', 'Access Denied');
  return account.access_key;
}

function readBody(request) {
  const limit = request.method === 'PUT' ? MAX_PUT_BODY_BYTES : MAX_BODY_BYTES;
  return new Promise((resolve, reject) => {
    const chunks = [];
    let length = 0;
    request.on('data', chunk => {
      length += chunk.length;
      if (length > limit) {
        reject(new S3Refusal(400, 'EntityTooLarge', 'The front takes small request bodies only.'));
        request.destroy();
      } else {
        chunks.push(chunk);
      }
    });
    request.on('end', () => resolve(Buffer.concat(chunks)));
    request.on('error', reject);
  });
}

const storeAgent = new http.Agent({ keepAlive: true, maxSockets: 64 });

// A PUT's x-amz-checksum-sha256 checked against its body, as S3 does; returns it (undefined when none was sent).
function checkedChecksum(request, body) {
  const claimed = request.headers['x-amz-checksum-sha256'];
  if (request.method !== 'PUT' || claimed === undefined) return undefined;
  if (claimed !== crypto.createHash('sha256').update(body).digest('base64')) {
    throw new S3Refusal(400, 'BadDigest', 'The SHA256 you specified did not match the calculated checksum.');
  }
  return claimed;
}

// The headers of the store's answer, with the object's checksum where S3 would return it.
function answerHeaders(request, answer, path) {
  const headers = { ...answer.headers };
  const wanted = request.headers['x-amz-checksum-mode'] === 'ENABLED' && answer.statusCode === 200;
  if (wanted && checksums.has(path) && (request.method === 'GET' || request.method === 'HEAD')) {
    headers['x-amz-checksum-sha256'] = checksums.get(path);
    headers['x-amz-checksum-type'] = 'FULL_OBJECT';
  }
  return headers;
}

function forward(request, response, storePort, record, body, checksum, retried = false) {
  const headers = {};
  for (const [name, value] of Object.entries(request.headers)) {
    // s3rver verifies nothing of SigV4 but would refuse an access key it does not know: it sees anonymous reads.
    if (name !== 'authorization' && !name.startsWith('x-amz-') && name !== 'if-match') headers[name] = value;
  }
  headers.host = `127.0.0.1:${storePort}`;
  const upstream = http.request({ host: '127.0.0.1', port: storePort, method: request.method, path: request.url,
                                  headers, agent: storeAgent }, answer => {
    const ifMatch = request.headers['if-match'];
    const etag = answer.headers.etag;
    if (ifMatch !== undefined && answer.statusCode < 300 && ifMatch !== '*' && ifMatch !== etag) {
      answer.destroy();
      refuse(response, new S3Refusal(412, 'PreconditionFailed', 'At least one of the pre-conditions you specified ' +
                                     'did not hold', { Condition: 'If-Match' }), record);
      return;
    }
    // s3rver answers a range of an empty object with 206 and a Content-Length of 1 but no body; S3 answers 416.
    if (answer.statusCode === 206 && /\/0$/.test(answer.headers['content-range'] || '')) {
      answer.destroy();
      refuse(response, new S3Refusal(416, 'InvalidRange', 'The requested range is not satisfiable',
                                     { RangeRequested: request.headers.range, ActualObjectSize: 0 }), record);
      return;
    }
    const path = canonicalPath(request.url.split('?')[0]);
    if (request.method === 'PUT' && answer.statusCode === 200) {
      if (checksum === undefined) checksums.delete(path);
      else checksums.set(path, checksum);
    }
    record.status = answer.statusCode;
    record.bytes = 0;
    answer.on('data', chunk => { record.bytes += chunk.length; });
    // The request's line is in the log before the client has the end of the answer: a test that reads the log
    // once its reads have returned sees every request they made.
    answer.on('end', () => log.write(JSON.stringify(record) + '\n', () => response.end()));
    response.writeHead(answer.statusCode, answerHeaders(request, answer, path));
    answer.pipe(response, { end: false });
  });
  upstream.on('error', error => {
    // A kept connection that s3rver closed as this request went out (Node's keep-alive race, likelier on a busy
    // machine): the request is sent again once (the agent has dropped that connection), as Node's documentation
    // advises.
    if (upstream.reusedSocket && error.code === 'ECONNRESET' && !retried && !response.headersSent) {
      forward(request, response, storePort, record, body, checksum, true);
      return;
    }
    refuse(response, new S3Refusal(500, 'InternalError', String(error)), record);
  });
  upstream.end(body);
}

function refuse(response, refusal, record) {
  const body = Buffer.from(errorXml(refusal.code, refusal.message, refusal.detail));
  record.status = refusal.status;
  record.error = refusal.code;
  record.bytes = 0;
  log.write(JSON.stringify(record) + '\n', () => {  // logged first, as above
    response.writeHead(refusal.status, { 'Content-Type': 'application/xml', 'Content-Length': body.length });
    response.end(body);
  });
}

function stsError(status, type, code, message) {
  const error = new S3Refusal(status, code, message);
  error.sts = `<ErrorResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><Error><Type>${type}</Type>` +
              `<Code>${code}</Code><Message>${xmlEscape(message)}</Message></Error>` +
              `<RequestId>${crypto.randomUUID()}</RequestId></ErrorResponse>`;
  return error;
}

// AssumeRoleWithWebIdentity as AWS STS answers it; returns the XML answer, or throws an stsError.
function assumeRole(body, record) {
  const form = new URLSearchParams(body.toString());
  const sts = settings.sts;
  if (!sts) throw stsError(400, 'Sender', 'InvalidAction', 'This front is not an STS endpoint.');
  if (form.get('Action') !== 'AssumeRoleWithWebIdentity' || form.get('Version') !== '2011-06-15') {
    throw stsError(400, 'Sender', 'InvalidAction', `Could not find operation ${form.get('Action')}.`);
  }
  const session = form.get('RoleSessionName') || '';
  record.session_name = session;
  if (!/^[\w+=,.@-]{2,64}$/.test(session)) {
    throw stsError(400, 'Sender', 'ValidationError', 'RoleSessionName does not satisfy its constraints.');
  }
  const token = form.get('WebIdentityToken');
  if (!sts.tokens.includes(token)) {
    throw stsError(400, 'Sender', 'InvalidIdentityToken', 'Incorrect token audience or signature.');
  }
  if (form.get('RoleArn') !== sts.role_arn) {
    throw stsError(403, 'Sender', 'AccessDenied', 'Not authorized to perform sts:AssumeRoleWithWebIdentity');
  }
  const number = String(issued.length + 1).padStart(4, '0');
  const keys = { access_key: `ASIASTSTEMP${number}`, secret_key: crypto.randomBytes(15).toString('base64'),
                 session_token: 'IQoJ' + crypto.randomBytes(24).toString('base64'),
                 expires_ms: Date.now() + 1000 * (sts.duration_seconds || 3), session_name: session,
                 token };
  if (sts.buckets) keys.buckets = sts.buckets;
  issued.push(keys);
  record.who = 'sts';
  record.issued = keys.access_key;
  // STS writes whole seconds: the keys' life as said ends at or before the front's.
  const expiration = new Date(Math.floor(keys.expires_ms / 1000) * 1000).toISOString().replace(/\.\d+Z$/, 'Z');
  return '<AssumeRoleWithWebIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">' +
         '<AssumeRoleWithWebIdentityResult>' +
         `<SubjectFromWebIdentityToken>system:serviceaccount:test:reader</SubjectFromWebIdentityToken>` +
         `<AssumedRoleUser><Arn>${xmlEscape(sts.role_arn)}/${xmlEscape(session)}</Arn>` +
         `<AssumedRoleId>AROATEST:${xmlEscape(session)}</AssumedRoleId></AssumedRoleUser>` +
         `<Credentials><SessionToken>${keys.session_token}</SessionToken>` +
         `<SecretAccessKey>${keys.secret_key}</SecretAccessKey><Expiration>${expiration}</Expiration>` +
         `<AccessKeyId>${keys.access_key}</AccessKeyId></Credentials>` +
         '<Audience>sts.amazonaws.com</Audience></AssumeRoleWithWebIdentityResult>' +
         `<ResponseMetadata><RequestId>${crypto.randomUUID()}</RequestId></ResponseMetadata>` +
         '</AssumeRoleWithWebIdentityResponse>';
}

function answerSts(response, body, record) {
  let status = 200;
  let text;
  try {
    text = assumeRole(body, record);
  } catch (error) {
    if (!error.sts) throw error;
    status = error.status;
    text = error.sts;
    record.error = error.code;
  }
  record.status = status;
  const answer = Buffer.from(text);
  log.write(JSON.stringify(record) + '\n', () => {
    response.writeHead(status, { 'Content-Type': 'text/xml', 'Content-Length': answer.length });
    response.end(answer);
  });
}

function serveFront(storePort) {
  return http.createServer(async (request, response) => {
    const question = request.url.indexOf('?');
    const rawPath = question < 0 ? request.url : request.url.slice(0, question);
    const rawQuery = question < 0 ? '' : request.url.slice(question + 1);
    const record = { method: request.method, path: rawPath, query: rawQuery, range: request.headers.range || null,
                     signed_headers: null };
    try {
      const body = await readBody(request);
      if (rawPath === '/.front/settings' && request.method === 'PUT') {
        settings = { ...settings, ...JSON.parse(body.toString()) };
        response.writeHead(204);
        response.end();
        return;
      }
      if (rawPath === '/.front/sts' && request.method === 'GET') {
        const answer = Buffer.from(JSON.stringify(issued));
        response.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': answer.length });
        response.end(answer);
        return;
      }
      if (rawPath === '/' && request.method === 'POST' && request.headers.authorization === undefined) {
        answerSts(response, body, record);
        return;
      }
      if (request.headers.authorization) {
        const match = /SignedHeaders=([^,\s]+)/.exec(request.headers.authorization);
        record.signed_headers = match ? match[1] : '';
      }
      record.who = await authorize(request, rawPath, rawQuery, body);
      forward(request, response, storePort, record, body, checkedChecksum(request, body));
    } catch (error) {
      refuse(response, error instanceof S3Refusal ? error : new S3Refusal(500, 'InternalError', String(error)),
             record);
    }
  });
}

async function main() {
  const input = fs.readFileSync(0, 'utf8');
  if (input.trim()) settings = { ...settings, ...JSON.parse(input) };
  const store = new S3rver({ address: '127.0.0.1', port: 0, directory: dataDir, silent: true,
                             vhostBuckets: false });
  const storeAddress = await store.run();
  const front = serveFront(storeAddress.port);
  front.keepAliveTimeout = 60000;
  await new Promise(resolve => front.listen(0, '127.0.0.1', resolve));
  process.stdout.write(JSON.stringify({ front: front.address().port, store: storeAddress.port }) + '\n');
  const stop = () => process.exit(0);
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

main().catch(error => {
  process.stderr.write(`s3_server: ${error.stack || error}\n`);
  process.exit(1);
});
