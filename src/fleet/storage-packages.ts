/**
 * The fleet's Azure Storage packages (@azure/storage-blob, @azure/eventhubs-checkpointstore-blob) are optional
 * peer dependencies of the npm package (a VM never needs them: docs/dependencies.md). The consumer loads them here;
 * `fleet run` and `fleet validate` check first that they are installed (./start-checks.ts), naming the install
 * command when they are not.
 */
import type { BlobCheckpointStore } from '@azure/eventhubs-checkpointstore-blob';
import type { ContainerClient } from '@azure/storage-blob';
import { errorMessage } from '../errors.ts';

export const MISSING_STORAGE_PACKAGES =
  'the fleet consumer needs the Azure Storage packages @azure/storage-blob and ' +
  '@azure/eventhubs-checkpointstore-blob, optional peer dependencies that npm does not install: run ' +
  '`npm install -g @azure/storage-blob@12 @azure/eventhubs-checkpointstore-blob@2` beside a global ' +
  'scheduled-events-forwarder (in a project, the same without -g), or use the release executable, ' +
  'which includes them';

/** Loads both packages; a missing one is the error naming the install command. */
export async function loadStoragePackages(): Promise<{
  BlobCheckpointStore: typeof BlobCheckpointStore;
  ContainerClient: typeof ContainerClient;
}> {
  try {
    const [checkpoints, blob] = await Promise.all([
      import('@azure/eventhubs-checkpointstore-blob'),
      import('@azure/storage-blob'),
    ]);
    return { BlobCheckpointStore: checkpoints.BlobCheckpointStore, ContainerClient: blob.ContainerClient };
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code !== 'ERR_MODULE_NOT_FOUND' && code !== 'MODULE_NOT_FOUND') throw error;
    throw new Error(MISSING_STORAGE_PACKAGES);
  }
}

/** Why the consumer could not start for lack of these packages, or undefined when they load. */
export async function storagePackagesProblem(): Promise<string | undefined> {
  try {
    await loadStoragePackages();
    return undefined;
  } catch (error) {
    if (errorMessage(error) === MISSING_STORAGE_PACKAGES) return MISSING_STORAGE_PACKAGES;
    throw error;
  }
}
