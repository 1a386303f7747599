/**
 * A child for test/unit/bench/turns.test.ts: `node turns-child.ts NAME ROUNDS FILE [fail]`. Waits at its gate
 * before each of ROUNDS rounds and appends `NAME ROUND` to FILE in each; then waits once more and sends its
 * name and rounds as its result. With `fail` it writes to stderr and exits with code 3 after the first round.
 */
import { appendFileSync } from 'node:fs';
import { childGate, sendResult } from '../../bench/lib/turns.ts';

const [name = '', rounds = '0', file = '', mode] = process.argv.slice(2);
const gate = childGate();
for (let round = 0; round < Number(rounds); round++) {
  await gate();
  appendFileSync(file, `${name} ${round}\n`);
  if (mode === 'fail') {
    process.stderr.write(`${name}: the disk is full\n`);
    process.exit(3);
  }
}
await gate();
await sendResult({ name, rounds: Number(rounds) });
process.exit(0);
