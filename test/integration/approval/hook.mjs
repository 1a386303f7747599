// A test hook run with process.execPath (works on Windows too): `hook.mjs <mode> <logFile>`.
// Appends one JSON line {phase, env, stdin} to logFile, then: ok → exit 0, fail → exit 3, hang → never exits.
import { appendFileSync } from 'node:fs';

const [mode, logFile] = process.argv.slice(2);
let stdin = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk) => {
  stdin += chunk;
});
process.stdin.on('end', () => {
  const env = Object.fromEntries(Object.entries(process.env).filter(([key]) => key.startsWith('SEF_')));
  appendFileSync(logFile, `${JSON.stringify({ mode, env, stdin: JSON.parse(stdin) })}\n`);
  process.stdout.write(`hook ${mode} for ${env.SEF_EVENT_ID}\n`);
  if (mode === 'fail') {
    process.stderr.write('drain failed: backend unreachable\n');
    process.exit(3);
  }
  if (mode === 'hang') setInterval(() => {}, 60_000);
});
