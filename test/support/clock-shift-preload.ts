/**
 * Preloaded into a child process (`node --import <this file>`; see clockShiftArgs in clock-shift.ts): steps the
 * child's WALL clock — Date.now(), new Date() and Date() — by the offset in ms written to the file named by
 * SEF_TEST_CLOCK_SHIFT_FILE, as NTP or an operator's `date -s` would. The monotonic clock (performance.now) and
 * timers are untouched, exactly as with a real step. The file is re-read every 20 ms; each offset taken is
 * written back to `<file>.applied`, so the test knows when the step has happened.
 */
const { readFileSync, writeFileSync } = process.getBuiltinModule('node:fs');

const file = process.env.SEF_TEST_CLOCK_SHIFT_FILE;
const RealDate = Date;
const realNow = Date.now.bind(Date);
let offset = 0;

function shiftedNow(): number {
  return realNow() + offset;
}

function read(): void {
  if (file === undefined) return;
  let next: number;
  try {
    next = Number(readFileSync(file, 'utf8').trim());
  } catch {
    return;
  }
  if (!Number.isFinite(next) || next === offset) return;
  offset = next;
  writeFileSync(`${file}.applied`, String(offset));
}

read();
setInterval(read, 20).unref();

globalThis.Date = new Proxy(RealDate, {
  construct(target, args: unknown[], newTarget) {
    return Reflect.construct(target, args.length === 0 ? [shiftedNow()] : args, newTarget);
  },
  apply() {
    return new RealDate(shiftedNow()).toString();
  },
  get(target, property, receiver) {
    if (property === 'now') return shiftedNow;
    return Reflect.get(target, property, receiver);
  },
});
