/**
 * Kubernetes record enrichment in the pure transform: the node context is an input (like the VM identity) and
 * becomes `data.kubernetes`; without it records are exactly what they were before enrichment existed.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { KubernetesRecordContext, LifecycleRecord } from '../../../src/domain/index.ts';
import { selectLabels } from '../../../src/kubernetes/enrichment.ts';
import { buildSlackMessage } from '../../../src/sinks/webhook/slack.ts';
import { buildTeamsMessage } from '../../../src/sinks/webhook/teams.ts';
import { templateView } from '../../../src/sinks/webhook/template.ts';
import { transform } from '../../../src/transform/index.ts';
import { event, runSteps, T0, VM } from './helpers.ts';

const NODE: KubernetesRecordContext = {
  nodeName: 'aks-nodepool1-12345678-vmss000000',
  clusterName: 'prod-weu',
  labels: { 'topology.kubernetes.io/zone': 'westeurope-2', 'kubernetes.azure.com/agentpool': 'nodepool1' },
};

/** A story with every transition: scheduled, updated, approved, started, completed. */
function story(kubernetes?: KubernetesRecordContext): LifecycleRecord[] {
  const nb = T0 + 15 * 60_000;
  return runSteps(
    [
      { at: 1, events: [event({ EventId: 'K1', EventType: 'Reboot', notBeforeMs: nb })] },
      { at: 60, events: [event({ EventId: 'K1', EventType: 'Reboot', notBeforeMs: nb + 600_000 })] },
      {
        at: 120,
        events: [event({ EventId: 'K1', EventType: 'Reboot', notBeforeMs: nb + 600_000 })],
        approvals: [
          {
            eventId: 'K1',
            approvedAtMs: T0 + 119_000,
            rule: 'drain-then-approve',
            leader: true,
            hooks: [{ name: 'node', ok: true, exitCode: null, durationMs: 900, budgetMs: 60_000 }],
          },
        ],
      },
      { at: 180, events: [event({ EventId: 'K1', EventType: 'Reboot', EventStatus: 'Started' })] },
      { at: 240, events: [] },
    ],
    kubernetes === undefined ? {} : { kubernetes },
  ).records;
}

describe('Kubernetes enrichment in the transform', () => {
  it('without the node context records carry no data.kubernetes and equal the documented examples byte for byte', () => {
    const records = story();
    expect(records.map((r) => r.transition)).toEqual([
      'scheduled',
      'updated',
      'approved',
      'started',
      'completed',
    ]);
    for (const record of records) expect(Object.hasOwn(record.data, 'kubernetes')).toBe(false);
    // An explicit `kubernetes: undefined` is the same as none.
    const doc = {
      kind: 'document' as const,
      document: {
        DocumentIncarnation: 2,
        Events: [event({ EventId: 'C7061BAC-AFDC-4513-B24B-AA5F13A16123' })],
      },
      observed: { wallMs: T0 + 1000, monotonicMs: 1000 },
      changed: true,
    };
    const without = transform({ ...runSteps([]).state }, { outcome: doc, vm: VM }).records;
    const explicit = transform(
      { ...runSteps([]).state },
      { outcome: doc, vm: VM, kubernetes: undefined },
    ).records;
    expect(JSON.stringify(explicit)).toBe(JSON.stringify(without));
    // The docs' scheduled example (written before enrichment existed) is this very record, byte for byte.
    const docs = readFileSync(new URL('../../../docs/record-format.md', import.meta.url), 'utf8');
    const example = /### scheduled\n\n```json\n([\s\S]*?)\n```/.exec(docs)![1]!;
    expect(JSON.stringify(without[0], null, 2)).toBe(example);
  });

  it('with the node context every record carries data.kubernetes; ids and everything else are unchanged', () => {
    const plain = story();
    const enriched = story(NODE);
    expect(enriched).toHaveLength(plain.length);
    enriched.forEach((record, i) => {
      expect(record.data.kubernetes).toEqual(NODE);
      const { kubernetes: _k, ...rest } = record.data;
      expect({ ...record, data: rest }).toEqual(plain[i]);
      expect(record.id).toBe(plain[i]!.id);
      // Right after `vm`, before `timing`.
      const keys = Object.keys(record.data);
      expect(keys.indexOf('kubernetes')).toBe(keys.indexOf('vm') + 1);
    });
  });

  it('only the fields that are set; the record holds a copy of the labels', () => {
    const labels = { agentpool: 'np1' };
    const [nameOnly] = story({ nodeName: 'n1' });
    expect(nameOnly!.data.kubernetes).toEqual({ nodeName: 'n1' });
    expect(Object.keys(nameOnly!.data.kubernetes!)).toEqual(['nodeName']);
    const [withLabels] = story({ nodeName: 'n1', labels });
    labels.agentpool = 'changed later';
    expect(withLabels!.data.kubernetes).toEqual({ nodeName: 'n1', labels: { agentpool: 'np1' } });
  });

  it('selectLabels keeps the configured keys the node carries, in the configured order', () => {
    expect(selectLabels(['b', 'missing', 'a', 'toString'], { a: '1', b: '2', c: '3' })).toEqual({
      b: '2',
      a: '1',
    });
    expect(Object.keys(selectLabels(['b', 'a'], { a: '1', b: '2' }))).toEqual(['b', 'a']);
  });
});

describe('Kubernetes enrichment in Slack and Teams', () => {
  const [plain] = story();
  const [enriched] = story(NODE);

  it('the template view exposes node, cluster and labels ("" and [] outside Kubernetes)', () => {
    const view = templateView(enriched!);
    expect(view).toMatchObject({
      nodeName: NODE.nodeName,
      clusterName: 'prod-weu',
      nodeDescription: `${NODE.nodeName} (cluster prod-weu)`,
      nodeLabels: [
        { key: 'topology.kubernetes.io/zone', value: 'westeurope-2' },
        { key: 'kubernetes.azure.com/agentpool', value: 'nodepool1' },
      ],
      kubernetes: NODE,
    });
    expect(templateView(plain!)).toMatchObject({
      nodeName: '',
      clusterName: '',
      nodeDescription: '',
      nodeLabels: [],
      kubernetes: undefined,
    });
  });

  it('the default messages show the node and cluster when present, and are unchanged otherwise', () => {
    const slack = JSON.stringify(buildSlackMessage(enriched!));
    expect(slack).toContain(`*Kubernetes node*\\n${NODE.nodeName} (cluster prod-weu)`);
    expect(JSON.stringify(buildSlackMessage(plain!))).not.toContain('Kubernetes');
    const teams = JSON.stringify(buildTeamsMessage(enriched!));
    expect(teams).toContain(`{"title":"Kubernetes node","value":"${NODE.nodeName} (cluster prod-weu)"}`);
    expect(JSON.stringify(buildTeamsMessage(plain!))).not.toContain('Kubernetes');
    // Without the enrichment the messages are those of the record without data.kubernetes.
    const { kubernetes: _k, ...data } = enriched!.data;
    expect(buildSlackMessage({ ...enriched!, data })).toEqual(buildSlackMessage(plain!));
  });
});
