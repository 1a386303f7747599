import { describe, expect, it } from 'vitest';
import { errorMessage, toError, UsageError } from '../../src/errors.ts';
import { redactedMessage } from '../../src/redact.ts';

describe('errorMessage', () => {
  it('returns the message of an Error and the string form of anything else', () => {
    expect(errorMessage(new UsageError('bad flag'))).toBe('bad flag');
    expect(errorMessage('plain text')).toBe('plain text');
    expect(errorMessage(42)).toBe('42');
  });

  it('gives a thrown string or object a message: never undefined, empty or [object Object]', () => {
    // A plain object with a message (SDKs and gRPC throw such objects): its message.
    expect(errorMessage({ message: 'UNAVAILABLE: no connection', code: 14 })).toBe(
      'UNAVAILABLE: no connection',
    );
    // Any other plain object: its JSON, cut short when long.
    expect(errorMessage({ code: 'E_BUSY', retry: true })).toBe('{"code":"E_BUSY","retry":true}');
    expect(errorMessage({ message: '' })).toBe('{"message":""}');
    const long = errorMessage({ text: 'x'.repeat(2000) });
    expect(long).toHaveLength(503);
    expect(long.endsWith('...')).toBe(true);
    // An object with its own toString: that.
    expect(errorMessage(new URL('https://example.test/a'))).toBe('https://example.test/a');
    // An object JSON cannot show (a cycle, a BigInt): named by its constructor.
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    expect(errorMessage(cycle)).toBe('a thrown Object that has no message');
    expect(errorMessage(Object.assign(Object.create(null), { n: 1n }))).toBe(
      'a thrown object that has no message',
    );
    // Primitives: their string form; nothing thrown says so.
    expect(errorMessage(Symbol('stop'))).toBe('Symbol(stop)');
    expect(errorMessage(undefined)).toBe('undefined was thrown');
    expect(errorMessage(null)).toBe('null was thrown');
    for (const thrown of ['', 'text', {}, [], { a: 1 }, 0, false, undefined, null, new Error('')]) {
      const message = errorMessage(thrown);
      expect(typeof message).toBe('string');
      expect(message).not.toBe('[object Object]');
    }
  });

  it('names an Error with an empty message by its inner errors, its code or its name', () => {
    // Node's connect to every address of a name fails with an AggregateError whose own message is empty.
    const refused = Object.assign(
      new AggregateError(
        [new Error('connect ECONNREFUSED ::1:80'), new Error('connect ECONNREFUSED 127.0.0.1:80')],
        '',
      ),
      { code: 'ECONNREFUSED' },
    );
    expect(errorMessage(refused)).toBe('connect ECONNREFUSED ::1:80; connect ECONNREFUSED 127.0.0.1:80');
    expect(errorMessage(Object.assign(new Error(''), { code: 'ECONNRESET' }))).toBe('ECONNRESET');
    expect(errorMessage(new TypeError(''))).toBe('TypeError');
    expect(errorMessage(new AggregateError([], 'all failed'))).toBe('all failed');
  });

  it('toError keeps an Error and makes anything else one, with its errorMessage', () => {
    const error = new RangeError('out of range');
    expect(toError(error)).toBe(error);
    expect(toError('disk full')).toEqual(new Error('disk full'));
    expect(toError({ code: 'E1' }).message).toBe('{"code":"E1"}');
  });

  it('agrees with redactedMessage on text that carries no secret', () => {
    const error = new Error('connection refused');
    expect(redactedMessage(error)).toBe(errorMessage(error));
    expect(redactedMessage(new Error('https://user:pw@host/x'))).not.toContain('pw');
  });
});
