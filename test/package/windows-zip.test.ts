/**
 * The win-x64 zip: its layout, the executable's PE header (PE32+, x86-64, console subsystem) read from the
 * bytes, and the service wrapper (WinSW from node-windows) beside it. No Windows here to run them.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTempDir } from '../support/tmp.ts';
import { artifact, FILES, VERSION } from './release.ts';

const tmp = makeTempDir('sef-pkg-win-');
afterAll(() => tmp.cleanup());
const dir = FILES.archiveDir('win-x64');
let zip: string;

/** The COFF machine, optional-header magic and subsystem of a PE file. */
function peHeader(bytes: Buffer): { machine: number; magic: number; subsystem: number } {
  expect(bytes.subarray(0, 2).toString('latin1')).toBe('MZ');
  const pe = bytes.readUInt32LE(0x3c);
  expect(bytes.subarray(pe, pe + 4).toString('latin1')).toBe('PE\0\0');
  const optional = pe + 24;
  return {
    machine: bytes.readUInt16LE(pe + 4),
    magic: bytes.readUInt16LE(optional),
    subsystem: bytes.readUInt16LE(optional + 68),
  };
}

beforeAll(() => {
  zip = artifact(FILES.zip);
  const unzip = spawnSync('unzip', ['-q', zip, '-d', tmp.dir], { encoding: 'utf8' });
  expect(unzip.status).toBe(0);
});

describe('win-x64 zip', () => {
  it('holds one folder with the executable, the service wrapper, the install script and the example config', () => {
    const list = spawnSync('unzip', ['-Z1', zip], { encoding: 'utf8' }).stdout.trim().split('\n').sort();
    expect(list).toEqual(
      [
        `${dir}/`,
        `${dir}/LICENSE.node`,
        `${dir}/THIRD-PARTY-NOTICES`,
        `${dir}/forwarder.example.yaml`,
        `${dir}/install.ps1`,
        `${dir}/scheduled-events-forwarder-service.exe`,
        `${dir}/scheduled-events-forwarder.exe`,
      ].sort(),
    );
  });

  it('scheduled-events-forwarder.exe is a PE32+ x86-64 console executable carrying the SEA blob', () => {
    const bytes = readFileSync(join(tmp.dir, dir, 'scheduled-events-forwarder.exe'));
    const header = peHeader(bytes);
    expect(header.machine).toBe(0x8664); // IMAGE_FILE_MACHINE_AMD64
    expect(header.magic).toBe(0x20b); // PE32+
    expect(header.subsystem).toBe(3); // IMAGE_SUBSYSTEM_WINDOWS_CUI
    // postject adds the blob as the NODE_SEA_BLOB resource and flips the fuse.
    expect(bytes.includes(Buffer.from('NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2:1'))).toBe(true);
    expect(bytes.includes(Buffer.from(`"${VERSION}"`))).toBe(true);
  });

  it('the service wrapper is WinSW (a .NET PE) and install.ps1 registers it without Node.js', () => {
    const wrapper = readFileSync(join(tmp.dir, dir, 'scheduled-events-forwarder-service.exe'));
    expect(peHeader(wrapper).machine).toBe(0x14c); // AnyCPU .NET assembly
    expect(wrapper.includes(Buffer.from('winsw', 'utf16le')) || wrapper.includes(Buffer.from('winsw'))).toBe(
      true,
    );
    const script = readFileSync(join(tmp.dir, dir, 'install.ps1'), 'utf8');
    expect(script).not.toMatch(/&\s*(node|npm)\b/i);
    expect(script).toContain('$env:ProgramData');
    expect(script).toContain("/inheritance:r /grant:r 'SYSTEM:(OI)(CI)F' 'Administrators:(OI)(CI)F'");
    expect(script).toContain('& $wrapper install');
    expect(script).toContain('config validate');
  });
});
