/**
 * Where the next character of a JSON text being written lands: inside a string or not, and whether that string
 * is an object key or the value of which property. Fed the text piece by piece in output order (the template
 * renderer, template.ts, feeds each literal and each inserted value), so a `{{name}}` value can be escaped for
 * the place it lands in: a text property, a URL property, a key. A pure lexer over JSON's punctuation: it does
 * not validate (JSON.parse does, after rendering).
 */

interface Container {
  kind: 'object' | 'array';
  /** The property this object or array is the value of (array items inherit it). */
  property: string | undefined;
  /** In an object: the next string is a key. */
  expectKey: boolean;
  /** In an object: the last key read. */
  key: string | undefined;
}

/** Where a value lands: in a string (a key, or a value of `property`), or outside any string. */
export interface JsonPlace {
  inString: boolean;
  isKey: boolean;
  /** The property whose value the string is (for an array item, the array's property). */
  property: string | undefined;
}

export class JsonPosition {
  readonly #stack: Container[] = [];
  #inString = false;
  #isKey = false;
  #escaped = false;
  /** The raw text of the key being read (decoded when it ends). */
  #keyText = '';

  /** Advances over text written to the output. */
  feed(text: string): void {
    for (const ch of text) {
      if (this.#inString) this.#inStringChar(ch);
      else this.#structuralChar(ch);
    }
  }

  /** Where the next character lands. */
  place(): JsonPlace {
    const top = this.#stack.at(-1);
    const property = top === undefined ? undefined : top.kind === 'object' ? top.key : top.property;
    return { inString: this.#inString, isKey: this.#isKey, property };
  }

  #inStringChar(ch: string): void {
    if (this.#isKey) this.#keyText += ch;
    if (this.#escaped) {
      this.#escaped = false;
      return;
    }
    if (ch === '\\') {
      this.#escaped = true;
      return;
    }
    if (ch !== '"') return;
    this.#inString = false;
    if (!this.#isKey) return;
    const top = this.#stack.at(-1)!;
    top.key = decodeJsonString(this.#keyText.slice(0, -1));
    this.#isKey = false;
  }

  #structuralChar(ch: string): void {
    const top = this.#stack.at(-1);
    switch (ch) {
      case '"':
        this.#inString = true;
        this.#isKey = top?.kind === 'object' && top.expectKey;
        this.#keyText = '';
        break;
      case '{':
      case '[':
        this.#stack.push({
          kind: ch === '{' ? 'object' : 'array',
          property: this.place().property,
          expectKey: ch === '{',
          key: undefined,
        });
        break;
      case '}':
      case ']':
        this.#stack.pop();
        break;
      case ':':
        if (top?.kind === 'object') top.expectKey = false;
        break;
      case ',':
        if (top?.kind === 'object') top.expectKey = true;
        break;
    }
  }
}

/** The text of a JSON string literal's content (as written when it does not decode). */
function decodeJsonString(raw: string): string {
  try {
    return JSON.parse(`"${raw}"`) as string;
  } catch {
    return raw;
  }
}
