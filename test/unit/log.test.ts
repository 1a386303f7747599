/**
 * No log line carries a key twice (issue 31 item 5): the lines of createLogger's loggers, parsed with a strict
 * parser that keeps duplicate keys (test/support/logs.ts, @humanwhocodes/momoa), whatever the bindings and log
 * calls repeat; and the audit every test run goes through (test/support/log-audit-setup.ts) does catch a line
 * that repeats one, as a plain pino logger writes it.
 */
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { childLogger, createLogger } from '../../src/log.ts';
import { auditLogText, duplicateKeys, takeLogProblems } from '../support/logs.ts';

function rawLogger(kind: 'createLogger' | 'plain pino') {
  const chunks: string[] = [];
  const destination = new Writable({
    write(chunk, _encoding, callback) {
      chunks.push(String(chunk));
      callback();
    },
  });
  const logger =
    kind === 'createLogger'
      ? createLogger({ level: 'debug', pretty: false, destination })
      : pino({ level: 'debug' }, destination);
  const lines = () => chunks.join('').split('\n').filter(Boolean);
  return { logger, lines };
}

describe('the strict parser of the log audit', () => {
  it('finds every key written twice in one object, at any depth, and refuses what is not JSON', () => {
    expect(duplicateKeys('{"a":1,"b":{"c":1,"d":[{"e":1,"e":2}]},"a":3}')).toEqual(['b.d[0].e', 'a']);
    expect(duplicateKeys('{"a":{"b":1},"c":{"b":1}}')).toEqual([]);
    expect(() => duplicateKeys('{"a":1,}')).toThrow();
    // JSON.parse keeps the last of two values without a word: the reason for a parser that keeps them.
    expect(JSON.parse('{"sink":"a","sink":"a"}')).toEqual({ sink: 'a' });
  });

  it('catches the line a plain pino logger writes when a sink adds `sink` to a logger that binds it', () => {
    const { logger, lines } = rawLogger('plain pino');
    logger
      .child({ component: 'sink', sink: 'am-any' })
      .warn({ sink: 'am-any', code: 'network' }, 'peer failed');
    expect(lines()[0]).toContain('"sink":"am-any","sink":"am-any"');
    auditLogText(lines().join('\n'), 'this test');
    const problems = takeLogProblems(); // taken here, so the setup file's check of this test stays clean
    expect(problems).toEqual([expect.stringContaining('a key written twice (sink)')]);
  });
});

describe('createLogger writes every key once', () => {
  it('a child binding a key its parent binds replaces it; a log call repeating a bound key leaves it out', () => {
    const { logger, lines } = rawLogger('createLogger');
    const sink = logger.child({ component: 'sink', sink: 'am-any' });
    sink.warn({ sink: 'am-any', code: 'network' }, 'alertmanager peer failed'); // the duplicate of issue 31
    const delivery = sink.child({ component: 'delivery' }); // re-binds component
    delivery.info({ component: 'delivery', attempts: 2 }, 'sink recovered');
    childLogger(delivery, { component: 'delivery', sink: 'am-any', extra: 1 }).debug('bound again');
    sink.info({ sink: 'other', msg: 'given', time: 5, level: 'x' }, 'conflicting keys');
    delivery.child({ sink: 'renamed' }).child({ sink: 'renamed again' }).info('twice re-bound');

    const written = lines();
    expect(written).toHaveLength(5);
    for (const line of written) expect(duplicateKeys(line), line).toEqual([]);
    const parsed = written.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(parsed[0]).toMatchObject({ component: 'sink', sink: 'am-any', code: 'network' });
    expect(parsed[1]).toMatchObject({ component: 'delivery', sink: 'am-any', attempts: 2 });
    expect(parsed[2]).toMatchObject({ component: 'delivery', sink: 'am-any', extra: 1 });
    // A different value given again is kept under its own name, never lost and never written twice.
    expect(parsed[3]).toMatchObject({
      sink: 'am-any',
      sinkLogged: 'other',
      msg: 'conflicting keys',
      msgLogged: 'given',
      timeLogged: 5,
      levelLogged: 'x',
      level: 30,
    });
    expect(parsed[4]).toMatchObject({ component: 'delivery', sink: 'renamed again', msg: 'twice re-bound' });
  });
});
