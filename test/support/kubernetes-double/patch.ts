/**
 * The three PATCH formats of the Kubernetes API, as the API server applies them to the objects the double holds:
 * JSON merge patch (RFC 7386), JSON patch (RFC 6902) and strategic merge patch (the Kubernetes dialect kubectl
 * sends for cordon, taint and label). Strategic merge follows apimachinery's strategicpatch for the fields in
 * MERGE_KEYS: lists declared `patchStrategy:"merge"` merge element-wise by their merge key (node
 * status.conditions and status.addresses by `type`, ownerReferences by `uid`), lists of primitives declared merge
 * (finalizers) are unions, every other list is replaced whole — node spec.taints has no patch strategy, so a
 * strategic patch carrying taints replaces the list (kubectl taint sends the complete new list). Directives:
 * `$patch: replace|delete|merge` in maps and list elements, `$retainKeys`, `$deleteFromPrimitiveList/<field>`,
 * `$setElementOrder/<field>` (order applied when it names the elements).
 */

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

/** A patch the server cannot apply: the double answers 422 (Invalid) or 400, like the API server. */
export class PatchError extends Error {
  readonly code: 400 | 422;
  constructor(message: string, code: 400 | 422 = 422) {
    super(message);
    this.code = code;
  }
}

function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function clone<T>(value: T): T {
  return structuredClone(value);
}

// ---------------------------------------------------------------------------------------------------------------
// RFC 7386 JSON merge patch

export function applyMergePatch(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return clone(patch);
  const result: JsonObject = isObject(target) ? clone(target) : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete result[key];
    else result[key] = applyMergePatch(result[key], value) as Json;
  }
  return result;
}

// ---------------------------------------------------------------------------------------------------------------
// RFC 6902 JSON patch

function pointer(path: string): string[] {
  if (path === '') return [];
  if (!path.startsWith('/')) throw new PatchError(`invalid JSON pointer "${path}"`, 400);
  return path
    .slice(1)
    .split('/')
    .map((token) => token.replaceAll('~1', '/').replaceAll('~0', '~'));
}

function parentOf(doc: Json, tokens: string[], path: string): { parent: JsonObject | Json[]; last: string } {
  let current: Json = doc;
  for (const token of tokens.slice(0, -1)) {
    if (Array.isArray(current)) current = current[Number(token)] as Json;
    else if (isObject(current)) current = current[token] as Json;
    else current = undefined as unknown as Json;
    if (current === undefined || current === null || typeof current !== 'object') {
      throw new PatchError(`doc is missing path: "${path}": missing value`);
    }
  }
  return { parent: current as JsonObject | Json[], last: tokens[tokens.length - 1]! };
}

function getAt(doc: Json, path: string): Json {
  let current: Json | undefined = doc;
  for (const token of pointer(path)) {
    if (Array.isArray(current)) current = current[Number(token)];
    else if (isObject(current)) current = current[token];
    else current = undefined;
    if (current === undefined) throw new PatchError(`doc is missing path: "${path}": missing value`);
  }
  return current as Json;
}

function removeAt(doc: Json, path: string): Json {
  const { parent, last } = parentOf(doc, pointer(path), path);
  if (Array.isArray(parent)) {
    const index = Number(last);
    if (!Number.isInteger(index) || index < 0 || index >= parent.length) {
      throw new PatchError(`unable to remove nonexistent key: ${last}: missing value`);
    }
    return parent.splice(index, 1)[0] as Json;
  }
  if (!(last in parent)) throw new PatchError(`unable to remove nonexistent key: ${last}: missing value`);
  const value = parent[last] as Json;
  delete parent[last];
  return value;
}

function addAt(doc: Json, path: string, value: Json, replace: boolean): Json {
  const tokens = pointer(path);
  if (tokens.length === 0) return value;
  const { parent, last } = parentOf(doc, tokens, path);
  if (Array.isArray(parent)) {
    const index = last === '-' ? parent.length : Number(last);
    if (
      !Number.isInteger(index) ||
      index < 0 ||
      index > parent.length ||
      (replace && index >= parent.length)
    ) {
      throw new PatchError(`unable to access invalid index: ${last}: invalid index referenced`);
    }
    if (replace) parent[index] = value;
    else parent.splice(index, 0, value);
  } else {
    if (replace && !(last in parent)) {
      throw new PatchError(`replace operation does not apply: doc is missing key: ${path}: missing value`);
    }
    parent[last] = value;
  }
  return doc;
}

export function applyJsonPatch(target: unknown, operations: unknown): unknown {
  if (!Array.isArray(operations)) throw new PatchError('json patch must be an array of operations', 400);
  let doc = clone(target) as Json;
  for (const raw of operations) {
    if (!isObject(raw) || typeof raw.op !== 'string' || typeof raw.path !== 'string') {
      throw new PatchError('invalid JSON patch operation', 400);
    }
    const { op, path } = raw;
    switch (op) {
      case 'add':
        doc = addAt(doc, path, clone(raw.value as Json), false);
        break;
      case 'replace':
        doc = addAt(doc, path, clone(raw.value as Json), true);
        break;
      case 'remove':
        removeAt(doc, path);
        break;
      case 'move': {
        const value = removeAt(doc, String(raw.from));
        doc = addAt(doc, path, value, false);
        break;
      }
      case 'copy':
        doc = addAt(doc, path, clone(getAt(doc, String(raw.from))), false);
        break;
      case 'test':
        if (JSON.stringify(getAt(doc, path)) !== JSON.stringify(raw.value)) {
          throw new PatchError(`testing value ${path} failed: test failed`);
        }
        break;
      default:
        throw new PatchError(`Unexpected kind: ${op}`, 400);
    }
  }
  return doc;
}

// ---------------------------------------------------------------------------------------------------------------
// Strategic merge patch

/**
 * Lists with `patchStrategy:"merge"` in the Kubernetes types the double serves, by dotted path from the object
 * root: the merge key, or null for a list of primitives (set union). Lists not named here are replaced.
 */
const MERGE_KEYS: Record<string, Record<string, string | null>> = {
  common: {
    'metadata.ownerReferences': 'uid',
    'metadata.finalizers': null,
  },
  Node: {
    'spec.podCIDRs': null,
    'status.conditions': 'type',
    'status.addresses': 'type',
    'status.volumesAttached': 'name',
  },
  Pod: {
    'spec.containers': 'name',
    'spec.initContainers': 'name',
    'spec.volumes': 'name',
    'status.conditions': 'type',
  },
};

function mergeKeyOf(kind: string, path: string): string | null | undefined {
  const own = MERGE_KEYS[kind];
  if (own && path in own) return own[path];
  const common = MERGE_KEYS.common!;
  return path in common ? common[path] : undefined;
}

/** Applies a strategic merge patch to an object of `kind` (Node, Pod, ...). */
export function applyStrategicMergePatch(target: unknown, patch: unknown, kind: string): unknown {
  if (!isObject(patch)) throw new PatchError('strategic merge patch must be a JSON object', 400);
  return mergeMap(isObject(target) ? clone(target) : {}, patch, kind, '');
}

function mergeMap(original: JsonObject, patch: JsonObject, kind: string, path: string): JsonObject {
  const directive = patch.$patch;
  if (directive === 'replace') {
    const { $patch: _, ...rest } = patch;
    return stripDirectives(rest) as JsonObject;
  }
  if (directive === 'delete') return {};
  let result = original;
  const retain = patch.$retainKeys;
  if (Array.isArray(retain)) {
    const keep = new Set(retain.map(String));
    result = Object.fromEntries(Object.entries(result).filter(([key]) => keep.has(key)));
  }
  const orders: Record<string, Json[]> = {};
  for (const [key, value] of Object.entries(patch)) {
    if (key === '$patch' || key === '$retainKeys') continue;
    if (key.startsWith('$setElementOrder/')) {
      if (Array.isArray(value)) orders[key.slice('$setElementOrder/'.length)] = value;
      continue;
    }
    if (key.startsWith('$deleteFromPrimitiveList/')) {
      const field = key.slice('$deleteFromPrimitiveList/'.length);
      const remove = new Set((Array.isArray(value) ? value : []).map((v) => JSON.stringify(v)));
      const current = result[field];
      if (Array.isArray(current)) result[field] = current.filter((v) => !remove.has(JSON.stringify(v)));
      continue;
    }
    const childPath = path === '' ? key : `${path}.${key}`;
    if (value === null) {
      delete result[key];
    } else if (isObject(value)) {
      result[key] = mergeMap(
        isObject(result[key]) ? (result[key] as JsonObject) : {},
        value,
        kind,
        childPath,
      );
    } else if (Array.isArray(value)) {
      result[key] = mergeList(result[key], value, kind, childPath);
    } else {
      result[key] = value;
    }
  }
  for (const [field, order] of Object.entries(orders)) {
    const list = result[field];
    const mergeKey = mergeKeyOf(kind, path === '' ? field : `${path}.${field}`);
    if (!Array.isArray(list)) continue;
    const id = (item: Json): string =>
      mergeKey && isObject(item) ? JSON.stringify(item[mergeKey]) : JSON.stringify(item);
    const rank = new Map(order.map((item, index) => [id(item), index]));
    result[field] = [...list].sort(
      (a, b) => (rank.get(id(a)) ?? order.length) - (rank.get(id(b)) ?? order.length),
    );
  }
  return result;
}

function mergeList(original: Json | undefined, patch: Json[], kind: string, path: string): Json[] {
  const mergeKey = mergeKeyOf(kind, path);
  const replaceDirective = patch.find(
    (item) => isObject(item) && item.$patch === 'replace' && !hasKeys(item),
  );
  if (mergeKey === undefined || replaceDirective !== undefined) {
    return stripDirectives(patch.filter((item) => item !== replaceDirective)) as Json[];
  }
  const current = Array.isArray(original) ? [...original] : [];
  if (mergeKey === null) {
    const seen = new Set(current.map((v) => JSON.stringify(v)));
    for (const item of patch) if (!seen.has(JSON.stringify(item))) current.push(item);
    return current;
  }
  for (const item of patch) {
    if (!isObject(item) || !(mergeKey in item)) {
      throw new PatchError(`map: ${JSON.stringify(item)} does not contain declared merge key: ${mergeKey}`);
    }
    const index = current.findIndex(
      (existing) => isObject(existing) && existing[mergeKey] === item[mergeKey],
    );
    if (item.$patch === 'delete') {
      if (index >= 0) current.splice(index, 1);
    } else if (index >= 0) {
      current[index] = mergeMap(current[index] as JsonObject, item, kind, path);
    } else {
      current.push(stripDirectives(item));
    }
  }
  return current;
}

function hasKeys(item: JsonObject): boolean {
  return Object.keys(item).some((key) => key !== '$patch');
}

function stripDirectives(value: Json): Json {
  if (Array.isArray(value)) return value.map(stripDirectives);
  if (!isObject(value)) return value;
  const out: JsonObject = {};
  for (const [key, inner] of Object.entries(value)) {
    if (key.startsWith('$')) continue;
    if (inner === null) continue;
    out[key] = stripDirectives(inner);
  }
  return out;
}
