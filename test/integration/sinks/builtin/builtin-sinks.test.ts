import { readdirSync, readFileSync } from 'node:fs';
import { open, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { runCommand } from '../../../../src/process/run-command.ts';
import { createExecSink, execSinkFactory } from '../../../../src/sinks/exec/index.ts';
import { createFileSink, fileSinkFactory } from '../../../../src/sinks/file/index.ts';
import { findSinkFactory } from '../../../../src/sinks/registry.ts';
import { createStdoutSink } from '../../../../src/sinks/stdout/index.ts';
import { DeliveryError } from '../../../../src/sinks/types.ts';
import { makeRecord } from '../../../support/delivery.ts';
import { makeTempDir } from '../../../support/tmp.ts';

let tmp: { dir: string; cleanup: () => void };
beforeEach(() => {
  tmp = makeTempDir('sef-sinks-');
});
afterEach(() => {
  vi.restoreAllMocks();
  tmp.cleanup();
});
const signal = () => new AbortController().signal;

describe('registry', () => {
  it('registers stdout, file and exec', () => {
    expect(findSinkFactory('stdout')).toBeDefined();
    expect(findSinkFactory('file')).toBe(fileSinkFactory);
    expect(findSinkFactory('exec')).toBe(execSinkFactory);
  });
});

describe('stdout sink', () => {
  it('writes one JSON line per record', async () => {
    const out = new PassThrough();
    const chunks: string[] = [];
    out.on('data', (c) => chunks.push(String(c)));
    await createStdoutSink('out', out).deliver([makeRecord(1), makeRecord(2)], signal());
    const lines = chunks.join('').trimEnd().split('\n');
    expect(lines.map((l) => JSON.parse(l).id)).toEqual(['rec-1', 'rec-2']);
  });
});

describe('file sink', () => {
  it('appends JSON lines and fsyncs before resolving', async () => {
    const path = join(tmp.dir, 'sub', 'records.jsonl');
    const probe = await open(join(tmp.dir, 'probe'), 'w');
    const proto = Object.getPrototypeOf(probe) as {
      sync: () => Promise<void>;
      write: () => Promise<unknown>;
    };
    await probe.close();
    const order: string[] = [];
    const realSync = proto.sync;
    const realWrite = proto.write;
    vi.spyOn(proto, 'write').mockImplementation(function (this: unknown, ...args: unknown[]) {
      order.push('write');
      return (realWrite as (...a: unknown[]) => Promise<unknown>).apply(this, args);
    });
    vi.spyOn(proto, 'sync').mockImplementation(function (this: unknown) {
      order.push('sync');
      return realSync.apply(this);
    });
    const sink = createFileSink('f', fileSinkFactory.optionsSchema.parse({ path }));
    await sink.deliver([makeRecord(1), makeRecord(2)], signal());
    order.push('resolved');
    await sink.deliver([makeRecord(3)], signal());
    expect(order).toEqual(['write', 'sync', 'resolved', 'write', 'sync']);
    const lines = readFileSync(path, 'utf8').trimEnd().split('\n');
    expect(lines.map((l) => JSON.parse(l))).toEqual([makeRecord(1), makeRecord(2), makeRecord(3)]);
  });

  it('rotates by size and keeps maxFiles rotated files', async () => {
    const path = join(tmp.dir, 'records.jsonl');
    const lineBytes = JSON.stringify(makeRecord(1)).length + 1;
    const sink = createFileSink('f', { path, maxBytes: lineBytes * 2 + 10, maxFiles: 2 });
    for (let i = 1; i <= 9; i++) await sink.deliver([makeRecord(i)], signal());
    expect(readdirSync(tmp.dir).sort()).toEqual(['records.jsonl', 'records.jsonl.1', 'records.jsonl.2']);
    const ids = (file: string) =>
      readFileSync(join(tmp.dir, file), 'utf8')
        .trimEnd()
        .split('\n')
        .map((l) => JSON.parse(l).id);
    expect(ids('records.jsonl')).toEqual(['rec-9']);
    expect(ids('records.jsonl.1')).toEqual(['rec-7', 'rec-8']);
    expect(ids('records.jsonl.2')).toEqual(['rec-5', 'rec-6']);
  });

  it('never glues a record to a line torn by a crash', async () => {
    const path = join(tmp.dir, 'records.jsonl');
    await writeFile(path, '{"id":"torn-by-crash"');
    await createFileSink('f', { path, maxBytes: 1e9, maxFiles: 1 }).deliver([makeRecord(1)], signal());
    const lines = (await readFile(path, 'utf8')).trimEnd().split('\n');
    expect(lines[0]).toBe('{"id":"torn-by-crash"');
    expect(JSON.parse(lines[1] as string).id).toBe('rec-1');
  });

  it('reports an unwritable path as a retryable DeliveryError', async () => {
    await writeFile(join(tmp.dir, 'file'), 'x');
    const sink = createFileSink('f', {
      path: join(tmp.dir, 'file', 'records.jsonl'),
      maxBytes: 1e9,
      maxFiles: 1,
    });
    await expect(sink.deliver([makeRecord(1)], signal())).rejects.toMatchObject({
      name: 'DeliveryError',
      retryable: true,
    });
  });
});

const node = process.execPath;
/** A node script as an exec sink command (no shell). */
const script = (code: string, extra: Record<string, unknown> = {}) =>
  execSinkFactory.optionsSchema.parse({ command: node, args: ['-e', code], ...extra });

describe('exec sink', () => {
  it('passes the record on stdin and key fields in SEF_* env vars; exit 0 = delivered', async () => {
    const out = join(tmp.dir, 'hook.json');
    const code =
      `let s='';process.stdin.on('data',c=>s+=c).on('end',()=>{require('fs').writeFileSync(${JSON.stringify(out)},` +
      `JSON.stringify({stdin:JSON.parse(s),env:Object.fromEntries(Object.entries(process.env).filter(([k])=>k.startsWith('SEF_')||k==='EXTRA'))}))})`;
    await createExecSink('hook', script(code, { env: { EXTRA: 'yes' } })).deliver([makeRecord(4)], signal());
    const seen = JSON.parse(readFileSync(out, 'utf8'));
    expect(seen.stdin).toEqual(makeRecord(4));
    expect(seen.env).toMatchObject({
      SEF_RECORD_ID: 'rec-4',
      SEF_EVENT_ID: makeRecord(4).data.EventId,
      SEF_EVENT_TYPE: 'Reboot',
      SEF_TRANSITION: 'scheduled',
      SEF_AFFECTS_THIS_VM: 'true',
      SEF_RESOURCES: 'vm1',
      SEF_NOT_BEFORE: '2016-09-19T18:29:47.000Z',
      SEF_SINK_NAME: 'hook',
      EXTRA: 'yes',
    });
  });

  it('treats a non-zero exit as retryable by default, permanent when configured', async () => {
    const fail = 'process.stderr.write("prepare failed");process.exit(3)';
    const retry = await createExecSink('h', script(fail))
      .deliver([makeRecord(1)], signal())
      .catch((e: unknown) => e);
    expect(retry).toBeInstanceOf(DeliveryError);
    expect(retry).toMatchObject({ retryable: true, code: 'exec-exit-3' });
    expect((retry as Error).message).toContain('prepare failed');
    await expect(
      createExecSink('h', script(fail, { nonZeroExit: 'permanent' })).deliver([makeRecord(1)], signal()),
    ).rejects.toMatchObject({ retryable: false, code: 'exec-exit-3' });
    await expect(
      createExecSink('h', script(fail, { permanentExitCodes: [3] })).deliver([makeRecord(1)], signal()),
    ).rejects.toMatchObject({ retryable: false });
  });

  it('times out a hanging command (retryable) and kills it', async () => {
    const started = Date.now();
    await expect(
      createExecSink('h', script('setInterval(()=>{},1000)', { timeoutMs: 300 })).deliver(
        [makeRecord(1)],
        signal(),
      ),
    ).rejects.toMatchObject({ retryable: true, code: 'timeout' });
    expect(Date.now() - started).toBeLessThan(20_000);
  });

  it('reports a missing command as a refusal of the destination (the sink pauses) with a clear message and the fix', async () => {
    await expect(
      createExecSink(
        'h',
        execSinkFactory.optionsSchema.parse({ command: join(tmp.dir, 'no-such-hook') }),
      ).deliver([makeRecord(1)], signal()),
    ).rejects.toMatchObject({
      retryable: false,
      scope: 'destination',
      code: 'exec-start-failed',
      message: expect.stringMatching(/not found \(ENOENT; .*fix: install the command/),
    });
  });

  it('rejects unknown options (no shell option exists)', () => {
    expect(() => execSinkFactory.optionsSchema.parse({ command: 'x', shell: true })).toThrow();
  });
});

describe('runCommand', () => {
  it('captures bounded output and reports exit codes without a shell', async () => {
    const result = await runCommand({
      command: node,
      args: [
        '-e',
        'process.stdout.write("x".repeat(5000));process.stderr.write("err");process.exit(7)',
        '$HOME',
      ],
      maxOutputBytes: 100,
    });
    expect(result).toMatchObject({ exitCode: 7, signal: null, timedOut: false, stderr: 'err' });
    expect(result.stdout.startsWith('x'.repeat(100))).toBe(true);
    expect(result.stdout).toContain('[truncated]');
  });

  it('ends the process on abort', async () => {
    const controller = new AbortController();
    const running = runCommand({
      command: node,
      args: ['-e', 'setInterval(()=>{},1000)'],
      signal: controller.signal,
    });
    setTimeout(() => controller.abort(), 200);
    const result = await running;
    expect(result.aborted).toBe(true);
    expect(result.exitCode).toBeNull();
  });
});
