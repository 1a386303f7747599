/**
 * planReload: what a reload applies live (sinks, approval, shutdownDeadlineMs) and what it reports as needing a
 * restart, on configurations loaded through the real loader (secrets resolved from an injected environment).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { sameSetting } from '../../../src/config/equal.ts';
import { type Config, validateConfig } from '../../../src/config/index.ts';
import { appliesChanges, planReload } from '../../../src/pipeline/reload-plan.ts';
import { Secret } from '../../../src/secret.ts';
import { makeTempDir } from '../../support/tmp.ts';
import { FAKE_FACTORIES } from '../config/fake-factories.ts';

const tmp = makeTempDir('sef-reload-plan-');
afterAll(() => tmp.cleanup());
/** The hook's URL is a secret in a file: a reload reads it again. */
const HOOK_URL_FILE = join(tmp.dir, 'hook-url');
writeFileSync(HOOK_URL_FILE, 'https://a.example/x');

const BASE = {
  stateDir: '/var/lib/sef-reload-plan',
  sinks: [
    { name: 'file', type: 'file', path: '/tmp/a.jsonl' },
    { name: 'hook', type: 'hook', url: { file: HOOK_URL_FILE } },
    { name: 'spare', type: 'stdout', enabled: false },
  ],
};

function load(raw: Record<string, unknown>): Config {
  return validateConfig(raw, { factories: FAKE_FACTORIES });
}

const names = (list: ReadonlyArray<{ name: string }>) => list.map((s) => s.name);

describe('planReload', () => {
  it('the same file read again changes nothing and applies nothing', () => {
    const plan = planReload(load(BASE), load(BASE));
    expect(appliesChanges(plan)).toBe(false);
    expect(plan.needsRestart).toEqual([]);
    expect(plan.sinks.unchanged).toEqual(['file', 'hook']); // the disabled one is not running
  });

  it('sorts sink changes: added, removed (or disabled), rebuilt (options, secret value, delivery), re-filtered', () => {
    const running = load(BASE);
    writeFileSync(HOOK_URL_FILE, 'https://b.example/rotated'); // the same reference, a new secret value
    const next = load({
      ...BASE,
      sinks: [
        { name: 'file', type: 'file', path: '/tmp/a.jsonl', filter: { transitions: ['scheduled'] } },
        { name: 'hook', type: 'hook', url: { file: HOOK_URL_FILE } },
        { name: 'spare', type: 'stdout' }, // enabled now
        { name: 'new', type: 'stdout', delivery: { maxBatch: 5 } },
      ],
    });
    const plan = planReload(running, next);
    expect(names(plan.sinks.added)).toEqual(['spare', 'new']);
    expect(names(plan.sinks.rebuilt)).toEqual(['hook']);
    expect(names(plan.sinks.refiltered)).toEqual(['file']);
    expect(plan.sinks.removed).toEqual([]);
    expect(appliesChanges(plan)).toBe(true);

    const removed = planReload(
      next,
      load({
        ...BASE,
        sinks: [
          { name: 'file', type: 'file', path: '/tmp/a.jsonl', filter: { transitions: ['scheduled'] } },
          { name: 'hook', type: 'hook', url: { file: HOOK_URL_FILE }, enabled: false },
          { name: 'new', type: 'stdout', delivery: { maxBatch: 5, caps: { maxPendingRows: 10 } } },
        ],
      }),
    );
    expect(names(removed.sinks.removed)).toEqual(['hook', 'spare']);
    expect(names(removed.sinks.rebuilt)).toEqual(['new']); // delivery settings live in the worker
    expect(removed.sinks.unchanged).toEqual(['file']);
  });

  it('names the settings that apply only at the next start and keeps their running values', () => {
    const running = load(BASE);
    const next = load({
      ...BASE,
      stateDir: '/var/lib/elsewhere',
      imds: { endpoint: 'http://127.0.0.1:9999', pollIntervalMs: 2000 },
      telemetry: { listen: { enabled: true } },
      log: { level: 'debug' },
      kubernetes: { enabled: true, nodeName: 'n1' },
      shutdownDeadlineMs: 9000,
    });
    const plan = planReload(running, next);
    expect(plan.needsRestart.sort()).toEqual(
      [
        'stateDir',
        'imds.endpoint',
        'imds.pollIntervalMs',
        'telemetry.listen',
        'log.level',
        'kubernetes.enabled',
        'kubernetes.nodeName',
      ].sort(),
    );
    expect(plan.shutdownDeadlineMs).toBe(true);
    expect(plan.effective.stateDir).toBe('/var/lib/sef-reload-plan');
    expect(plan.effective.imds).toBe(running.imds);
    expect(plan.effective.shutdownDeadlineMs).toBe(9000);
    // Only restart-only settings changed: nothing to apply (outcome needs-restart).
    const only = planReload(running, load({ ...BASE, stateDir: '/var/lib/elsewhere' }));
    expect(appliesChanges(only)).toBe(false);
    expect(only.needsRestart).toEqual(['stateDir']);
  });

  it('applies approval live, unless it needs the Kubernetes built-in hook and Kubernetes was off at start', () => {
    const rules = [{ name: 'all', match: {}, action: 'approve' }];
    const running = load(BASE);
    const plan = planReload(running, load({ ...BASE, approval: { rules } }));
    expect(plan.approval).toBe(true);
    expect(plan.effective.approval.rules).toHaveLength(1);

    const withNodeHook = load({
      ...BASE,
      kubernetes: { enabled: true, nodeName: 'n1' },
      approval: { rules, hooks: { prepare: [{ name: 'drain', builtin: 'kubernetes-node' }] } },
    });
    const waits = planReload(running, withNodeHook);
    expect(waits.approval).toBe(false);
    expect(waits.needsRestart).toContain('approval');
    expect(waits.effective.approval).toBe(running.approval);
  });
});

describe('sameSetting', () => {
  it('compares secrets by value without exposing them, URLs by href, undefined keys as absent', () => {
    expect(sameSetting(new Secret('a', 'env A'), new Secret('a', 'env B'))).toBe(true);
    expect(sameSetting(new Secret('a', 'env A'), new Secret('b', 'env A'))).toBe(false);
    expect(sameSetting(new Secret('a', 'env A'), 'a')).toBe(false);
    expect(sameSetting(new URL('http://x/'), new URL('http://x'))).toBe(true);
    expect(sameSetting({ a: 1, b: undefined }, { a: 1 })).toBe(true);
    expect(sameSetting([1, 2], [2, 1])).toBe(false);
    expect(sameSetting({ a: [{ b: 1 }] }, { a: [{ b: 1 }] })).toBe(true);
  });
});
