/**
 * Fails when a function in src is longer than 150 lines (part of `npm run depcheck`, hence `npm test`): a long
 * function is a list of steps without names. Measured on swc's syntax tree (the parser dependency-cruiser already
 * uses), so strings, comments and formatting cannot fool it: a function is every function declaration or
 * expression, arrow function, class method, constructor, accessor and object method, from its first line (the
 * `function` keyword, the method's name or the arrow's parameters) to its closing brace, nested functions included.
 *
 *   node scripts/check-function-length.ts            checks src
 *   node scripts/check-function-length.ts --top 10   also prints the ten longest functions
 *   node scripts/check-function-length.ts DIR        checks the .ts files under DIR instead (the test plants some)
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { parseSync } from '@swc/core';

export const MAX_FUNCTION_LINES = 150;

export interface FunctionLength {
  /** The file, relative to the checked directory's parent (src/...). */
  file: string;
  /** `name`, `Class.method`, `outer > name` for a nested one, `outer > (anonymous)` for a callback. */
  name: string;
  /** The 1-based line it starts on. */
  line: number;
  lines: number;
}

interface Span {
  start: number;
  end: number;
}
type Node = { type?: string; span?: Span } & Record<string, unknown>;

const FUNCTION_TYPES = new Set([
  'FunctionDeclaration',
  'FunctionExpression',
  'ArrowFunctionExpression',
  'ClassMethod',
  'PrivateMethod',
  'Constructor',
  'MethodProperty',
  'GetterProperty',
  'SetterProperty',
]);

function keyName(key: unknown): string | undefined {
  const k = key as Node | undefined;
  if (k === undefined || k === null) return undefined;
  if (k.type === 'Identifier' || k.type === 'StringLiteral') return String(k.value);
  if (k.type === 'PrivateName') return `#${String((k.id as Node | undefined)?.value ?? k.value)}`;
  if (k.type === 'Computed') return '[computed]';
  return undefined;
}

/** The name a function node carries itself (a declaration's identifier, a method's key). */
function ownName(node: Node): string | undefined {
  if (node.type === 'Constructor') return 'constructor';
  if (node.type === 'FunctionDeclaration' || node.type === 'FunctionExpression')
    return keyName(node.identifier);
  return keyName(node.key);
}

/** Every function of one TypeScript source with its length in lines. */
export function functionLengths(source: string, file: string): FunctionLength[] {
  const module = parseSync(source, { syntax: 'typescript', target: 'es2022' }) as unknown as Node;
  const bytes = Buffer.from(source, 'utf8');
  // swc's spans are 1-based byte offsets into this source (checked: a span past the end would mean they are not).
  const lineStarts = [0];
  for (let i = 0; i < bytes.length; i++) if (bytes[i] === 0x0a) lineStarts.push(i + 1);
  const lineOf = (offset: number): number => {
    if (offset - 1 > bytes.length) throw new Error(`${file}: swc span ${offset} is past the end of the file`);
    let low = 0;
    let high = lineStarts.length - 1;
    while (low < high) {
      const mid = (low + high + 1) >> 1;
      if ((lineStarts[mid] as number) <= offset - 1) low = mid;
      else high = mid - 1;
    }
    return low + 1;
  };

  const found: FunctionLength[] = [];
  const visit = (value: unknown, scope: string | undefined, hint: string | undefined): void => {
    if (Array.isArray(value)) {
      for (const item of value) visit(item, scope, hint);
      return;
    }
    if (value === null || typeof value !== 'object') return;
    const node = value as Node;
    let innerScope = scope;
    if (node.type === 'ClassDeclaration' || node.type === 'ClassExpression') {
      const className = keyName(node.identifier) ?? hint ?? '(class)';
      innerScope = scope === undefined ? className : `${scope} > ${className}`;
    } else if (node.type !== undefined && FUNCTION_TYPES.has(node.type) && node.span !== undefined) {
      const own = ownName(node) ?? hint ?? '(anonymous)';
      const method = node.type !== 'FunctionDeclaration' && node.type !== 'ArrowFunctionExpression';
      const name =
        scope === undefined ? own : method && ownName(node) ? `${scope}.${own}` : `${scope} > ${own}`;
      const line = lineOf(node.span.start);
      found.push({ file, name, line, lines: lineOf(node.span.end - 1) - line + 1 });
      innerScope = name;
    }
    for (const [key, child] of Object.entries(node)) {
      if (key === 'span' || child === null || typeof child !== 'object') continue;
      // What a function or class is called when it has no name of its own: the variable, property or
      // assignment target it is the value of.
      let childHint: string | undefined;
      if (node.type === 'VariableDeclarator' && key === 'init') childHint = keyName(node.id);
      else if (node.type === 'KeyValueProperty' && key === 'value') childHint = keyName(node.key);
      else if (node.type === 'ClassProperty' && key === 'value') childHint = keyName(node.key);
      else if (node.type === 'PrivateProperty' && key === 'value') childHint = keyName(node.key);
      else if (node.type === 'AssignmentExpression' && key === 'right') childHint = keyName(node.left);
      else if (node.type === 'ExportDefaultExpression' || node.type === 'ExportDefaultDeclaration')
        childHint = 'default';
      else if (node.type === 'ParenthesisExpression' || node.type === 'TsAsExpression') childHint = hint;
      visit(child, innerScope, childHint);
    }
  };
  visit(module, undefined, undefined);
  return found;
}

/** Every .ts file under dir (sorted), skipping declaration files. */
function tsFiles(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'))
    .map((f) => join(dir, f))
    .sort();
}

/** The functions of every .ts file under dir, longest first. */
export function measure(dir: string): FunctionLength[] {
  const base = join(dir, '..');
  return tsFiles(dir)
    .flatMap((path) =>
      functionLengths(readFileSync(path, 'utf8'), relative(base, path).split('\\').join('/')),
    )
    .sort((a, b) => b.lines - a.lines || a.file.localeCompare(b.file) || a.line - b.line);
}

if (import.meta.main) {
  const args = process.argv.slice(2);
  const topAt = args.indexOf('--top');
  const top = topAt === -1 ? 0 : Number(args.splice(topAt, 2)[1]);
  const dir = args[0] ?? join(import.meta.dirname, '..', 'src');
  const all = measure(dir);
  for (const f of all.slice(0, top))
    console.log(`${String(f.lines).padStart(4)}  ${f.name}  (${f.file}:${f.line})`);
  const long = all.filter((f) => f.lines > MAX_FUNCTION_LINES);
  if (long.length > 0) {
    console.error(`functions longer than ${MAX_FUNCTION_LINES} lines (split each into named steps):`);
    for (const f of long) console.error(`  ${f.file}:${f.line}  ${f.name}  ${f.lines} lines`);
    process.exit(1);
  }
  console.log(
    `✔ no function over ${MAX_FUNCTION_LINES} lines (${all.length} functions in ${relative(process.cwd(), dir) || '.'})`,
  );
}
