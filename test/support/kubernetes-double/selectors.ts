/**
 * Label and field selectors as the API server parses them from `labelSelector=` and `fieldSelector=`, and the
 * metav1.LabelSelector (matchLabels / matchExpressions) of a PodDisruptionBudget or DaemonSet.
 */

export class SelectorError extends Error {}

type Labels = Record<string, string>;
type Requirement = (labels: Labels) => boolean;

/** Parses a label selector string (`a=b,c!=d,e in (x,y),f notin (z),g,!h`). */
export function parseLabelSelector(text: string): (labels: Labels) => boolean {
  const requirements: Requirement[] = [];
  for (const part of splitTopLevel(text)) {
    const term = part.trim();
    if (term === '') continue;
    let match = /^([\w./-]+)\s+(in|notin)\s+\(([^)]*)\)$/.exec(term);
    if (match) {
      const [, key, op, list] = match as unknown as [string, string, string, string];
      const values = new Set(list.split(',').map((v) => v.trim()));
      requirements.push(
        op === 'in' ? (l) => key in l && values.has(l[key]!) : (l) => !(key in l) || !values.has(l[key]!),
      );
      continue;
    }
    match = /^([\w./-]+)\s*(==|=|!=)\s*([\w.-]*)$/.exec(term);
    if (match) {
      const [, key, op, value] = match as unknown as [string, string, string, string];
      requirements.push(op === '!=' ? (l) => l[key] !== value : (l) => l[key] === value);
      continue;
    }
    match = /^(!?)([\w./-]+)$/.exec(term);
    if (match) {
      const [, not, key] = match as unknown as [string, string, string];
      requirements.push(not ? (l) => !(key in l) : (l) => key in l);
      continue;
    }
    throw new SelectorError(`unable to parse requirement: ${term}`);
  }
  return (labels) => requirements.every((r) => r(labels));
}

function splitTopLevel(text: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let current = '';
  for (const ch of text) {
    if (ch === '(') depth++;
    if (ch === ')') depth--;
    if (ch === ',' && depth === 0) {
      parts.push(current);
      current = '';
    } else current += ch;
  }
  parts.push(current);
  return parts;
}

/**
 * Parses a field selector (`spec.nodeName=n1,status.phase!=Succeeded`) against the fields `supported` for the
 * resource; an unsupported field throws (the API server answers 400 "field label not supported").
 */
export function parseFieldSelector(
  text: string,
  supported: Record<string, (object: Record<string, unknown>) => string>,
): (object: Record<string, unknown>) => boolean {
  const tests: ((object: Record<string, unknown>) => boolean)[] = [];
  for (const part of text.split(',')) {
    const term = part.trim();
    if (term === '') continue;
    const match = /^([\w.]+)\s*(==|=|!=)\s*(.*)$/.exec(term);
    if (!match) throw new SelectorError(`invalid selector: '${text}'; can't understand '${term}'`);
    const [, field, op, value] = match as unknown as [string, string, string, string];
    const get = supported[field];
    if (!get) throw new SelectorError(`field label not supported: ${field}`);
    tests.push(op === '!=' ? (o) => get(o) !== value : (o) => get(o) === value);
  }
  return (object) => tests.every((t) => t(object));
}

interface LabelSelectorSpec {
  matchLabels?: Labels;
  matchExpressions?: { key: string; operator: string; values?: string[] }[];
}

/** Matches a metav1.LabelSelector; an empty selector matches everything (policy/v1 PDB semantics). */
export function matchesLabelSelector(selector: LabelSelectorSpec | undefined, labels: Labels): boolean {
  if (!selector) return false;
  for (const [key, value] of Object.entries(selector.matchLabels ?? {}))
    if (labels[key] !== value) return false;
  for (const { key, operator, values = [] } of selector.matchExpressions ?? []) {
    const has = key in labels;
    if (operator === 'In' && !(has && values.includes(labels[key]!))) return false;
    if (operator === 'NotIn' && has && values.includes(labels[key]!)) return false;
    if (operator === 'Exists' && !has) return false;
    if (operator === 'DoesNotExist' && has) return false;
  }
  return true;
}
