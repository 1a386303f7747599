/**
 * Compliance harnesses (test/support/sink-harness.ts) for the built-in local sinks: file (a real file whose
 * directory can be made unusable), stdout (a captured stream that can fail a write) and exec (a real child
 * process steered by a control file; its command is a link to node that breakDestination('destination') removes,
 * as an uninstalled hook would be).
 */
import { existsSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Writable } from 'node:stream';
import type { LifecycleRecord } from '../../../../src/domain/index.ts';
import { createStdoutSink } from '../../../../src/sinks/stdout/index.ts';
import type { Harness, HarnessContext } from '../../../support/sink-harness.ts';

export async function fileHarness(context: HarnessContext): Promise<Harness> {
  const path = join(context.dir, `out-${Math.random().toString(36).slice(2)}`, 'records.jsonl');
  let blocker: string | undefined;
  return {
    options: { path },
    secrets: [],
    arrived: () => {
      try {
        return readFileSync(path, 'utf8')
          .split('\n')
          .filter(Boolean)
          .map((l) => (JSON.parse(l) as LifecycleRecord).id);
      } catch {
        return [];
      }
    },
    breakDestination() {
      // a regular file where the sink's directory should be: mkdir/open fail (retryable)
      blocker = join(path, '..');
      rmSync(blocker, { recursive: true, force: true });
      writeFileSync(blocker, 'not a directory');
    },
    repair() {
      if (blocker !== undefined) rmSync(blocker);
      blocker = undefined;
    },
    permanent: false,
    close: async () => {},
  };
}

export async function stdoutHarness(): Promise<Harness> {
  const lines: string[] = [];
  let failing = false;
  // A captured stream: a real Writable errors once and stays errored, while stdout (a pipe that fills up
  // or a reader that restarts) can fail one write and take the next, so only write() (and the error listener
  // the sink attaches) is provided.
  const stream = {
    on: () => stream,
    write(chunk: string, callback: (error?: Error | null) => void): boolean {
      if (failing) callback(new Error('EPIPE: broken pipe'));
      else {
        lines.push(...chunk.split('\n').filter(Boolean));
        callback();
      }
      return true;
    },
  } as unknown as Writable;
  return {
    options: {},
    secrets: [],
    create: async (name) => createStdoutSink(name, stream),
    arrived: () => lines.map((l) => (JSON.parse(l) as LifecycleRecord).id),
    breakDestination() {
      failing = true;
    },
    repair() {
      failing = false;
    },
    permanent: false,
    close: async () => {},
  };
}

export async function execHarness(context: HarnessContext): Promise<Harness> {
  const control = join(context.dir, `mode-${Math.random().toString(36).slice(2)}`);
  const out = `${control}.out`;
  const reject = `${control}.reject`;
  const command = `${control}.node`; // the installed hook: removing it makes every start fail with ENOENT
  const install = () => {
    if (!existsSync(command)) symlinkSync(process.execPath, command);
  };
  install();
  writeFileSync(control, 'ok');
  writeFileSync(out, '');
  writeFileSync(reject, '');
  const script = [
    "const fs = require('node:fs');",
    'const [control, out, reject] = process.argv.slice(1);',
    "let input = ''; process.stdin.on('data', (d) => { input += d; });",
    "process.stdin.on('end', () => {",
    "  const mode = fs.readFileSync(control, 'utf8');",
    "  if (mode === 'retryable') { process.stderr.write('busy'); process.exit(3); }",
    "  if (mode === 'record') { process.stderr.write('rejected'); process.exit(4); }",
    "  if (mode === 'hang') { setTimeout(() => {}, 600000); return; }",
    "  if (JSON.parse(input).id === fs.readFileSync(reject, 'utf8')) { process.stderr.write('rejected'); process.exit(4); }",
    "  fs.appendFileSync(out, JSON.parse(input).id + '\\n');",
    '});',
  ].join('\n');
  return {
    options: {
      command,
      args: ['-e', script, control, out, reject],
      permanentExitCodes: [4],
    },
    secrets: [],
    arrived: () => readFileSync(out, 'utf8').split('\n').filter(Boolean),
    breakDestination(kind) {
      if (kind === 'destination') rmSync(command);
      else writeFileSync(control, kind);
    },
    repair() {
      install();
      writeFileSync(control, 'ok');
      writeFileSync(reject, '');
    },
    poison(record) {
      writeFileSync(reject, record.id);
      return record;
    },
    permanent: true,
    refusal: 'the command was uninstalled (ENOENT)',
    hang: () => writeFileSync(control, 'hang'),
    close: async () => {},
  };
}
