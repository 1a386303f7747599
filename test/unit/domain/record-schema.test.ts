import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { HEARTBEAT_TYPE, type LifecycleRecord } from '../../../src/domain/index.ts';
import { validateRecord } from '../../../src/domain/record-schema.ts';
import { recordId } from '../../../src/transform/index.ts';
import { event, runSteps } from '../transform/helpers.ts';

const DOC = new URL('../../../docs/record-format.md', import.meta.url);

function documentedExamples(): LifecycleRecord[] {
  const text = readFileSync(DOC, 'utf8');
  return [...text.matchAll(/```json\n([\s\S]*?)\n```/g)]
    .map((match) => JSON.parse(match[1]!) as LifecycleRecord)
    .filter((value) => value.specversion === '1.0' && value.type !== HEARTBEAT_TYPE);
}

describe('lifecycle record schema', () => {
  it('every example in docs/record-format.md validates and its id follows the documented derivation', () => {
    const examples = documentedExamples();
    expect(new Set(examples.map((example) => example.transition))).toEqual(
      new Set(['scheduled', 'started', 'completed', 'canceled', 'updated', 'approved']),
    );
    for (const example of examples) {
      expect(validateRecord(example)).toEqual([]);
      // updated ids also hash the change; the example approval was POSTed, so it has no discriminator.
      if (example.transition !== 'updated') {
        expect(example.id).toBe(
          recordId(example.source, example.subject, example.transition, example.data.occurrence as number),
        );
      }
    }
  });

  it('reports what is wrong with a bad record, naming the field', () => {
    const [record] = runSteps([{ at: 0, events: [event({ EventId: 'X1' })] }]).records;
    const bad = structuredClone(record!) as unknown as Record<string, unknown>;
    bad.type = 'com.example.other';
    delete (bad.data as Record<string, unknown>).affectsThisVm;
    (bad as { time: string }).time = 'yesterday';
    const errors = validateRecord(bad);
    expect(errors.join('\n')).toMatch(/\/type/);
    expect(errors.join('\n')).toMatch(/affectsThisVm/);
    expect(errors.join('\n')).toMatch(/\/time must match format "date-time"/);
  });

  it('rejects a completed record that says inferred without a reason', () => {
    const { records } = runSteps([
      { at: 0, events: [event({ EventId: 'X2', EventStatus: 'Started' })] },
      { at: 1, events: [] },
    ]);
    const completed = structuredClone(records[1]!);
    completed.data.inferred = true;
    expect(validateRecord(completed).join('\n')).toMatch(/reason/);
  });
});
