/**
 * Builds the heartbeat CloudEvent (src/domain/heartbeat.ts, docs/record-format.md "Heartbeats") from what the
 * forwarder knows at the moment it is sent. Pure: the time, the identity and every status figure are inputs;
 * the id is a name-based UUID of source|heartbeat|startedAt|sequence, so a heartbeat re-built from the same
 * inputs has the same id.
 */
import {
  HEARTBEAT_TYPE,
  type HeartbeatData,
  type HeartbeatRecord,
  type KubernetesRecordContext,
  type VmIdentity,
} from '../domain/index.ts';
import { isoTime, recordSource, vmData } from './build-record.ts';
import { uuidV5 } from './ids.ts';

/** Everything a heartbeat says, besides the VM and the envelope. */
export interface HeartbeatInput extends Omit<HeartbeatData, 'vm' | 'kubernetes' | 'forwarder'> {
  /** When it is built, epoch ms. */
  timeMs: number;
  vm: VmIdentity | undefined;
  /** The Kubernetes node (kubernetes.enabled); its labels are not part of a heartbeat. */
  kubernetes?: KubernetesRecordContext | undefined;
  forwarder: Omit<HeartbeatData['forwarder'], 'startedAt'> & { startedAtMs: number };
}

/** The heartbeat of `input`. */
export function buildHeartbeat(input: HeartbeatInput): HeartbeatRecord {
  const source = recordSource(input.vm);
  const startedAt = isoTime(input.forwarder.startedAtMs);
  const { startedAtMs: _startedAtMs, ...forwarder } = input.forwarder;
  const k8s = input.kubernetes;
  const data: HeartbeatData = {
    trigger: input.trigger,
    sequence: input.sequence,
    intervalSeconds: input.intervalSeconds,
    vm: vmData(input.vm),
    ...(k8s === undefined
      ? {}
      : {
          kubernetes: {
            nodeName: k8s.nodeName,
            ...(k8s.clusterName === undefined ? {} : { clusterName: k8s.clusterName }),
          },
        }),
    forwarder: { ...forwarder, startedAt },
    imds: { ...input.imds },
    store: { ...input.store },
    sinks: input.sinks.map((s) => ({ ...s })),
    approval: { ...input.approval },
  };
  return {
    specversion: '1.0',
    id: uuidV5(`${source}|heartbeat|${startedAt}|${input.sequence}`),
    source,
    type: HEARTBEAT_TYPE,
    time: isoTime(input.timeMs),
    datacontenttype: 'application/json',
    vmid: input.vm?.vmId ?? '',
    data,
  };
}
