// A test command run with process.execPath (works on Windows too): `dump-env.mjs <file> [exitCode]`.
// Appends one JSON line {env, stdin} to <file>: its whole environment and the record it got on stdin.
import { appendFileSync } from 'node:fs';

const [file, exitCode = '0'] = process.argv.slice(2);
let stdin = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk) => {
  stdin += chunk;
});
process.stdin.on('end', () => {
  appendFileSync(file, `${JSON.stringify({ env: process.env, stdin: JSON.parse(stdin) })}\n`);
  process.exitCode = Number(exitCode);
});
