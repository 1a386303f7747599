/**
 * `config validate` prints every warning `run` logs at start-up (one function: configWarnings in
 * src/config/warnings.ts), as real child processes: an exec sink or hook command this machine cannot find (a
 * warning that says the check is this machine's), a retired Office 365 connector URL on a Teams sink, no sinks,
 * inline secrets. Warnings alone exit 0; what `run` would fail on exits 2, naming the key.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli, spawnCli } from '../../support/child.ts';
import { configFileWriter } from '../../support/config-files.ts';
import { makeTempDir } from '../../support/tmp.ts';
import { waitFor } from '../../support/wait.ts';

const tmp = makeTempDir('sef-config-warnings-');
afterAll(() => tmp.cleanup());

const configFile = configFileWriter(tmp.dir);

const MISSING = 'sef-no-such-command-4711';
const RETIRED = 'https://contoso.webhook.office.com/webhookb2/1111@2222/IncomingWebhook/SeCrEtPaRt42/3333';

describe('config validate prints the warnings run logs', () => {
  const warned = {
    sinks: [
      { name: 'script', type: 'exec', command: MISSING },
      { name: 'legacy', type: 'teams', url: RETIRED },
    ],
    approval: { hooks: { prepare: [{ name: 'drain', command: join(tmp.dir, 'no-such-hook') }] } },
  };
  const expected = [
    /warning: sink script \(exec\): command "sef-no-such-command-4711" not found on this machine's PATH.*run `config validate` on the VM/,
    /warning: sink legacy: the url is a retired Office 365 connector \(contoso\.webhook\.office\.com\)/,
    /warning: sinks\[1\]\.url is an inline secret/,
    /warning: approval\.hooks\.prepare\[0\]\.command \(hook drain\): command ".*no-such-hook" does not exist.*run `config validate` on the VM/,
  ];

  it('a missing exec/hook command, a retired Teams connector URL, an inline secret: exit 0 with warnings', async () => {
    const file = configFile(warned);
    const result = await runCli(['config', 'validate', file]);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^ok: .* is valid with 4 warnings \(on stderr\); sinks: script \(exec\)/);
    for (const pattern of expected) expect(result.stderr).toMatch(pattern);
    expect(result.stdout + result.stderr).not.toContain('SeCrEtPaRt42');
  });

  it('run logs the same warnings at start-up', async () => {
    const fwd = spawnCli(['run', '--config', configFile(warned), '--imds-endpoint', 'http://127.0.0.1:9']);
    try {
      await waitFor(
        () =>
          fwd
            .stderr()
            .split('\n')
            .filter((l) => l.includes('"configKey"')).length >= expected.length,
        'the start-up warnings',
      );
      const logged = fwd
        .stderr()
        .split('\n')
        .filter((l) => l.includes('"configKey"'))
        .map((l) => `warning: ${(JSON.parse(l) as { msg: string }).msg}`)
        .join('\n');
      for (const pattern of expected) expect(logged).toMatch(pattern);
      expect(fwd.stderr()).not.toContain('SeCrEtPaRt42');
    } finally {
      fwd.child.kill('SIGKILL');
      await fwd.exited;
    }
  });

  it('an empty sinks list: exit 0 with the warning that nothing is delivered', async () => {
    const result = await runCli(['config', 'validate', configFile({ sinks: [] })]);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/is valid with 1 warning \(on stderr\); no sinks/);
    expect(result.stderr).toMatch(/warning: no sinks configured: records are committed .* delivered nowhere/);
  });

  it('a command that exists here: no warning', async () => {
    const file = configFile({
      sinks: [{ name: 'node', type: 'exec', command: process.execPath }],
      approval: { hooks: { prepare: [{ name: 'node', command: process.execPath }] } },
    });
    const result = await runCli(['config', 'validate', file]);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/is valid; sinks: node \(exec\)/);
    expect(result.stderr).toBe('');
  });

  it('what run cannot start (a NUL in an exec argument or variable) is an error: exit 2, naming the key', async () => {
    const file = configFile({
      sinks: [
        {
          name: 'nul',
          type: 'exec',
          command: process.execPath,
          args: ['a\u0000b'],
          env: { X: 'c\u0000d' },
          passEnv: ['PROXY=x'],
        },
      ],
    });
    const result = await runCli(['config', 'validate', file]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/sinks\[0\]\.args\[0\]: an argument cannot contain a NUL character/);
    expect(result.stderr).toMatch(/sinks\[0\]\.env\.X: an environment value cannot contain a NUL character/);
    expect(result.stderr).toMatch(
      /sinks\[0\]\.passEnv\[0\]: expected a variable name \(HTTPS_PROXY\) or a prefix ending in \* \(MYAPP_\*\)/,
    );
  });

  describe('an approval that can release VMs whose preparation this forwarder cannot see', () => {
    const drain = { name: 'drain', command: process.execPath };
    const rule = (match: Record<string, unknown>) => ({
      name: 'drain-then-approve',
      match,
      action: 'approve-after-hooks',
    });

    it('a rule that runs prepare hooks and matches events of several VMs: warned, naming the safe forms', async () => {
      const file = configFile({
        sinks: [{ name: 'out', type: 'stdout' }],
        approval: { rules: [rule({ eventTypes: ['Reboot'] })], hooks: { prepare: [drain] } },
      });
      const result = await runCli(['config', 'validate', file]);
      expect(result.code).toBe(0);
      expect(result.stdout).toMatch(/is valid with 1 warning \(on stderr\)/);
      expect(result.stderr).toMatch(
        /warning: approval\.rules\[0\] \(drain-then-approve, approve-after-hooks\) runs prepare hooks \(drain\) and can approve an event that affects other VMs too/,
      );
      expect(result.stderr).toContain('match.resources: { max: 2 }');
      expect(result.stderr).toContain('kubernetes.clusterApproval');
    });

    it('the safe forms: only single-VM events, or Kubernetes with cluster-aware approval: no warning', async () => {
      const single = configFile({
        sinks: [{ name: 'out', type: 'stdout' }],
        approval: { rules: [rule({ resources: { max: 2 } })], hooks: { prepare: [drain] } },
      });
      expect(await runCli(['config', 'validate', single])).toMatchObject({ code: 0, stderr: '' });
      const kubeconfig = join(tmp.dir, 'kubeconfig');
      writeFileSync(kubeconfig, 'apiVersion: v1\nkind: Config\n');
      const cluster = configFile({
        sinks: [{ name: 'out', type: 'stdout' }],
        kubernetes: { enabled: true, nodeName: 'aks-nodepool1-0', kubeconfig },
        approval: { rules: [rule({})], hooks: { prepare: [{ name: 'node', builtin: 'kubernetes-node' }] } },
      });
      expect(await runCli(['config', 'validate', cluster])).toMatchObject({ code: 0, stderr: '' });
    });
  });
});
