/**
 * Simulated VM identities: deterministic compute metadata per VM name, the instance metadata document
 * (shaped like Azure's `compute` section) and managed identity test tokens.
 */
import type { VmIdentity } from '../domain/index.ts';

const { createHash, createHmac } = process.getBuiltinModule('node:crypto');

/** A VM served by the simulator. */
export interface SimVm {
  identity: VmIdentity;
  /** VMs of the same availability set (or scale-set placement group) see each other's events. */
  availabilitySet: string;
  /** Current DocumentIncarnation of this VM's Scheduled Events document. */
  incarnation: number;
  platformFaultDomain: number;
  platformUpdateDomain: number;
}

export const SIM_SUBSCRIPTION_ID = '6f3c4a2e-0000-4000-8000-5157a7e0c0de';
export const SIM_TENANT_ID = '72f988bf-0000-4000-8000-5157a7e0c0de';
const SIM_RESOURCE_GROUP = 'sim-rg';

/** A deterministic GUID-shaped id derived from a string (the same name always yields the same id). */
export function deterministicGuid(seed: string): string {
  const hex = createHash('sha256').update(seed).digest('hex');
  const variant = ((Number.parseInt(hex.slice(16, 18), 16) & 0x3f) | 0x80).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-${variant}${hex.slice(18, 20)}-${hex.slice(20, 32)}`;
}

const SCALE_SET_NAME = /^(.+)_(\d+)$/;

/**
 * The compute identity Azure would report for a VM called `name`. Names of the form `<scaleSet>_<n>` are
 * scale-set instances (computerName `<scaleSet>` + 6 base-36 digits, as Azure names VMSS hosts).
 */
export function deriveIdentity(name: string, overrides: Partial<VmIdentity> = {}): VmIdentity {
  const vmss = SCALE_SET_NAME.exec(name);
  const scaleSet = overrides.vmScaleSetName ?? vmss?.[1] ?? '';
  const subscriptionId = overrides.subscriptionId ?? SIM_SUBSCRIPTION_ID;
  const resourceGroupName = overrides.resourceGroupName ?? SIM_RESOURCE_GROUP;
  const base = `/subscriptions/${subscriptionId}/resourceGroups/${resourceGroupName}/providers/Microsoft.Compute`;
  const resourceId =
    scaleSet && vmss
      ? `${base}/virtualMachineScaleSets/${scaleSet}/virtualMachines/${vmss[2]}`
      : `${base}/virtualMachines/${name}`;
  const computerName =
    scaleSet && vmss ? `${scaleSet}${Number(vmss[2]).toString(36).padStart(6, '0')}` : name.slice(0, 63);
  return {
    name,
    vmId: deterministicGuid(`vm:${name}`),
    resourceId,
    subscriptionId,
    resourceGroupName,
    location: 'westeurope',
    zone: '',
    vmScaleSetName: scaleSet,
    vmSize: 'Standard_D2s_v5',
    osType: 'Linux',
    computerName,
    ...overrides,
  };
}

/** The instance metadata document (GET /metadata/instance) for a VM, shaped like Azure's. */
export function instanceDocument(vm: SimVm): Record<string, unknown> {
  const id = vm.identity;
  return {
    compute: {
      azEnvironment: 'AzurePublicCloud',
      isHostCompatibilityLayerVm: 'false',
      licenseType: '',
      location: id.location,
      name: id.name,
      offer: 'ubuntu-24_04-lts',
      osProfile: {
        adminUsername: 'azureuser',
        computerName: id.computerName,
        disablePasswordAuthentication: 'true',
      },
      osType: id.osType,
      placementGroupId: id.vmScaleSetName ? deterministicGuid(`pg:${id.vmScaleSetName}`) : '',
      plan: { name: '', product: '', publisher: '' },
      platformFaultDomain: String(vm.platformFaultDomain),
      platformUpdateDomain: String(vm.platformUpdateDomain),
      priority: '',
      provider: 'Microsoft.Compute',
      publicKeys: [],
      publisher: 'canonical',
      resourceGroupName: id.resourceGroupName,
      resourceId: id.resourceId,
      securityProfile: { secureBootEnabled: 'true', virtualTpmEnabled: 'true' },
      sku: 'server',
      subscriptionId: id.subscriptionId,
      tags: '',
      tagsList: [],
      userData: '',
      version: '24.04.202501010',
      vmId: id.vmId,
      vmScaleSetName: id.vmScaleSetName,
      vmSize: id.vmSize,
      zone: id.zone,
    },
    network: {
      interface: [
        {
          ipv4: {
            ipAddress: [{ privateIpAddress: '10.0.0.4', publicIpAddress: '' }],
            subnet: [{ address: '10.0.0.0', prefix: '24' }],
          },
          ipv6: { ipAddress: [] },
          macAddress: createHash('sha256').update(`mac:${id.name}`).digest('hex').slice(0, 12).toUpperCase(),
        },
      ],
    },
  };
}

/** Signing key of simulator test tokens (not a secret: tokens are only for tests and drills). */
const TEST_TOKEN_KEY = 'scheduled-events-forwarder-simulator-test-key';

const base64url = (value: string | Buffer): string => Buffer.from(value).toString('base64url');

/**
 * A managed identity token response like IMDS's (/metadata/identity/oauth2/token), with a test JWT
 * (HS256 with a fixed, public test key) whose `aud` is the requested resource. Uses real wall time so
 * that token caches (MSAL) see a valid expiry.
 */
export function tokenResponse(
  vm: SimVm,
  resource: string,
  clientId: string | undefined,
  nowMs: number = Date.now(),
): Record<string, string> {
  const iat = Math.floor(nowMs / 1000);
  const exp = iat + 86_399;
  const appId = clientId ?? deterministicGuid(`app:${vm.identity.name}`);
  const oid = deterministicGuid(`oid:${vm.identity.name}:${appId}`);
  const header = { alg: 'HS256', typ: 'JWT', kid: 'simulator' };
  const payload = {
    aud: resource,
    iss: `https://sts.windows.net/${SIM_TENANT_ID}/`,
    iat,
    nbf: iat,
    exp,
    aio: 'simulator',
    appid: appId,
    appidacr: '2',
    idp: `https://sts.windows.net/${SIM_TENANT_ID}/`,
    oid,
    sub: oid,
    tid: SIM_TENANT_ID,
    uti: deterministicGuid(`uti:${oid}:${iat}`),
    ver: '1.0',
    xms_mirid: vm.identity.resourceId,
    xms_sim: true,
  };
  const unsigned = `${base64url(JSON.stringify(header))}.${base64url(JSON.stringify(payload))}`;
  const signature = createHmac('sha256', TEST_TOKEN_KEY).update(unsigned).digest('base64url');
  return {
    access_token: `${unsigned}.${signature}`,
    client_id: appId,
    expires_in: String(exp - iat),
    expires_on: String(exp),
    ext_expires_in: String(exp - iat),
    not_before: String(iat),
    resource,
    token_type: 'Bearer',
  };
}

/** Decodes the payload of a JWT (no verification): for tests that inspect simulator tokens. */
export function decodeJwtPayload(token: string): Record<string, unknown> {
  const part = token.split('.')[1];
  if (part === undefined) throw new Error('not a JWT: expected header.payload.signature');
  return JSON.parse(Buffer.from(part, 'base64url').toString('utf8')) as Record<string, unknown>;
}
