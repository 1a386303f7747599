/** The VM and a SinkContext for the otel sink tests (records: test/support/records.ts). */

import type { VmIdentity } from '../../../../src/domain/index.ts';
import { silentLogger } from '../../../../src/log.ts';
import type { SinkContext } from '../../../../src/sinks/types.ts';
import { FIXTURE_VM } from '../../../support/records.ts';

export const VM = FIXTURE_VM;

export function makeContext(vm?: VmIdentity): SinkContext {
  return { logger: silentLogger(), vm: () => vm, stateDir: '.' };
}
