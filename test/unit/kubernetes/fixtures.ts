/** Shared fixtures of the Kubernetes unit tests. */
import type { PodView } from '../../../src/kubernetes/node-actions.ts';

/** A running ReplicaSet pod `app/<name>` as the drain planning sees it (30 s grace); `over` overrides. */
export const podView = (name: string, over: Partial<PodView> = {}): PodView => ({
  namespace: 'app',
  name,
  controllerKind: 'ReplicaSet',
  annotations: {},
  phase: 'Running',
  hasEmptyDir: false,
  terminationGracePeriodSeconds: 30,
  terminating: false,
  ...over,
});
