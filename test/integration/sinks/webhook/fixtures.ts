/**
 * Constants for the webhook sink tests. Their records come from the shared fixture, test/support/records.ts
 * (built through the real transform).
 */
import type { Transition } from '../../../../src/domain/index.ts';

/** The transitions slack/teams forward by default, plus the two extra ones. */
export const ALL_TRANSITIONS: Transition[] = [
  'scheduled',
  'started',
  'completed',
  'canceled',
  'updated',
  'approved',
];

/** A Standard Webhooks test secret (not used anywhere real). */
export const SIGNING_SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
export const SIGNING_SECRET_2 = 'whsec_ZXhhbXBsZS1zZWNyZXQtZG8tbm90LXVzZS0wMTIzNDU=';
