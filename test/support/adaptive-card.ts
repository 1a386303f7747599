/**
 * Adaptive Card validation with Microsoft's own `adaptivecards` library (the reference renderer's parser),
 * targeting version 1.4 (what Teams Workflows renders): unknown element or action types, invalid enum values
 * and properties newer than 1.4 are reported by the library's SerializationContext; its validateProperties()
 * adds structural failures (e.g. duplicate ids). The library does not check required properties, so the
 * few this project relies on are checked here too.
 *
 * The published JSON schema file (adaptivecards.io/schemas/1.4.0/adaptive-card.json) ships in no maintained npm
 * package, so the library is the maintained validator we use.
 */
import { createRequire } from 'node:module';

interface AcModule {
  AdaptiveCard: new () => {
    parse(json: unknown, context: unknown): void;
    validateProperties(): { validationEvents: Array<{ message: string }> };
  };
  SerializationContext: new (
    version: unknown,
  ) => { eventCount: number; getEventAt(i: number): { message: string } };
  Versions: { v1_4: unknown };
}

// The package's ESM build uses extension-less imports that Node cannot resolve; its UMD bundle works.
const AC = createRequire(import.meta.url)('adaptivecards/dist/adaptivecards.js') as AcModule;

/** Problems found in `card` (empty = valid Adaptive Card 1.4). `msteams` is a documented Teams host extension. */
export function adaptiveCardProblems(card: Record<string, unknown>): string[] {
  const problems: string[] = [];
  if (card.type !== 'AdaptiveCard')
    problems.push(`type must be "AdaptiveCard", got ${JSON.stringify(card.type)}`);
  if (card.version !== '1.4') problems.push(`version must be "1.4", got ${JSON.stringify(card.version)}`);
  const { msteams, ...standard } = card;
  if (msteams !== undefined && JSON.stringify(msteams) !== '{"width":"Full"}') {
    problems.push(`unexpected msteams extension ${JSON.stringify(msteams)}`);
  }
  const parsed = new AC.AdaptiveCard();
  const context = new AC.SerializationContext(AC.Versions.v1_4);
  parsed.parse(standard, context);
  for (let i = 0; i < context.eventCount; i++) problems.push(`parse: ${context.getEventAt(i).message}`);
  for (const event of parsed.validateProperties().validationEvents)
    problems.push(`validate: ${event.message}`);
  walk(standard.body, 'body', problems);
  return problems;
}

/** Required properties the library's parser does not enforce. */
function walk(node: unknown, path: string, problems: string[]): void {
  if (Array.isArray(node)) {
    for (const [i, child] of node.entries()) walk(child, `${path}[${i}]`, problems);
    return;
  }
  if (typeof node !== 'object' || node === null) return;
  const element = node as Record<string, unknown>;
  if (element.type === 'TextBlock' && typeof element.text !== 'string')
    problems.push(`${path}.text must be a string`);
  if (element.type === 'FactSet') {
    const facts = Array.isArray(element.facts) ? element.facts : [];
    for (const [i, fact] of (facts as Array<Record<string, unknown>>).entries()) {
      if (typeof fact.title !== 'string' || typeof fact.value !== 'string') {
        problems.push(`${path}.facts[${i}] needs string title and value`);
      }
    }
  }
  for (const key of ['items', 'columns', 'body']) walk(element[key], `${path}.${key}`, problems);
}
