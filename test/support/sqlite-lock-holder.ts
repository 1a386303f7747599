/**
 * A process that holds a SQLite file's write lock: `node test/support/sqlite-lock-holder.ts FILE` opens FILE,
 * takes the write lock (BEGIN IMMEDIATE), prints "locked", and keeps it until a line "release" arrives on stdin
 * (or stdin closes: the test that started it ended), then commits, prints "released" and exits. It stands for
 * another consumer in the middle of a long write (`fleet import` of a large file) on the same host.
 */

import { createInterface } from 'node:readline';
import { DatabaseSync } from 'node:sqlite';

const db = new DatabaseSync(process.argv[2]!, { timeout: 0 });
db.exec('BEGIN IMMEDIATE');
process.stdout.write('locked\n');
for await (const line of createInterface({ input: process.stdin })) if (line === 'release') break;
db.exec('COMMIT');
db.close();
process.stdout.write('released\n');
