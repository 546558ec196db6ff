'use strict';
// Signs one request with AWS's own signer (@aws-sdk/signature-v4), for the tests that prove the front refuses
// what it must: reads {method, host, path, query, headers, access_key, secret_key, session_token?, region,
// date (ISO 8601)} as JSON on stdin and prints the headers to send, as JSON.

const fs = require('fs');
const { SignatureV4 } = require('@aws-sdk/signature-v4');
const { Sha256 } = require('@aws-crypto/sha256-js');

async function main() {
  const input = JSON.parse(fs.readFileSync(0, 'utf8'));
  const signer = new SignatureV4({
    credentials: { accessKeyId: input.access_key, secretAccessKey: input.secret_key,
                   sessionToken: input.session_token || undefined },
    region: input.region, service: 's3', sha256: Sha256, uriEscapePath: false,
  });
  const signed = await signer.sign(
    { method: input.method, protocol: 'http:', hostname: input.host, path: input.path, query: input.query,
      headers: { host: input.host, 'x-amz-content-sha256': 'UNSIGNED-PAYLOAD', ...input.headers } },
    { signingDate: new Date(input.date) });
  process.stdout.write(JSON.stringify(signed.headers) + '\n');
}

main().catch(error => {
  process.stderr.write(`s3_sign: ${error.stack || error}\n`);
  process.exit(1);
});
