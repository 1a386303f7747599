import { describe, expect, it } from 'vitest';
import { errorMessage, UsageError } from '../../src/errors.ts';
import { redactedMessage } from '../../src/redact.ts';

describe('errorMessage', () => {
  it('returns the message of an Error and the string form of anything else', () => {
    expect(errorMessage(new UsageError('bad flag'))).toBe('bad flag');
    expect(errorMessage('plain text')).toBe('plain text');
    expect(errorMessage(42)).toBe('42');
  });

  it('agrees with redactedMessage on text that carries no secret', () => {
    const error = new Error('connection refused');
    expect(redactedMessage(error)).toBe(errorMessage(error));
    expect(redactedMessage(new Error('https://user:pw@host/x'))).not.toContain('pw');
  });
});
