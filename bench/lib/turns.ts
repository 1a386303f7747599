/**
 * Children of a benchmark measured side by side, in turns. Each child prepares on its own (a load, say), then
 * waits at a gate; the parent lets one child at a time through for one round of measurements, then the next, so
 * that two sizes are timed within a second of each other rather than minutes apart. A ratio of two runs measured
 * minutes apart carries whatever the machine did in between (a 40,000-VM fleet run measured every API about 1.3×
 * slower than the one before it, with the same code: pages of events included, which do not grow with N).
 *
 * Protocol over the IPC channel of `fork`: the child sends `{ type: 'gate' }` when it reaches a gate and waits for
 * `{ type: 'go' }`; last it sends `{ type: 'result', result }` and exits.
 */
import { fork } from 'node:child_process';

/** Waits at the gate until the parent says go. */
export type Gate = () => Promise<void>;

/**
 * In a child forked with an IPC channel: a gate that tells the parent this child is waiting and returns when the
 * parent says go (the parent sends go only to a child at its gate). If the parent goes away (the channel closes),
 * the gate it waits at, and any later one, fails, so that the child unwinds (its history closed, its directory
 * removed) instead of waiting for ever. Without a channel (run in process, alone) it opens at once.
 */
export function childGate(): Gate {
  const send = process.send?.bind(process);
  if (send === undefined) return async () => {};
  const gone = () => new Error('the benchmark parent went away (its IPC channel closed)');
  let waiting: { resolve: () => void; reject: (error: Error) => void } | undefined;
  let disconnected = false;
  process.on('message', (message: { type?: string }) => {
    if (message?.type !== 'go') return;
    const w = waiting;
    waiting = undefined;
    w?.resolve();
  });
  process.on('disconnect', () => {
    disconnected = true;
    const w = waiting;
    waiting = undefined;
    w?.reject(gone());
  });
  return () =>
    new Promise<void>((resolve, reject) => {
      if (disconnected) return reject(gone());
      waiting = { resolve, reject };
      send({ type: 'gate' });
    });
}

/** In the child: hands the result to the parent (flushed before it resolves). Without a channel: nothing. */
export function sendResult(result: unknown): Promise<void> {
  const send = process.send?.bind(process);
  if (send === undefined) return Promise.resolve();
  return new Promise((resolve, reject) =>
    send({ type: 'result', result }, undefined, {}, (error) => (error ? reject(error) : resolve())),
  );
}

/** The parent's handle on one child. */
export interface TurnChild<T> {
  /** Resolves when the child waits at its next gate; rejects if it exits first. */
  atGate(): Promise<void>;
  /** Lets the child through the gate it waits at. */
  go(): void;
  /** The child's result; rejects if it exits without one (the error names its exit and its last stderr). */
  readonly result: Promise<T>;
}

/** Forks `script` with `args`; every line of its stderr goes to `log`. */
export function forkTurnChild<T>(
  script: string,
  args: readonly string[],
  options: { execArgv?: string[]; log: (line: string) => void },
): TurnChild<T> {
  const child = fork(script, [...args], {
    execArgv: options.execArgv ?? [],
    stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
    serialization: 'advanced',
  });
  const stderrTail: string[] = [];
  child.stderr?.setEncoding('utf8');
  let partial = '';
  child.stderr?.on('data', (chunk: string) => {
    const lines = (partial + chunk).split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) {
      options.log(line);
      stderrTail.push(line);
      if (stderrTail.length > 20) stderrTail.shift();
    }
  });
  let arrived = 0;
  let consumed = 0;
  let wake: (() => void) | undefined;
  let failure: Error | undefined;
  let settle: { resolve: (value: T) => void; reject: (error: Error) => void } | undefined;
  const result = new Promise<T>((resolve, reject) => {
    settle = { resolve, reject };
  });
  // A result nobody awaits yet must not become an unhandled rejection; atGate and the caller see the failure.
  result.catch(() => {});
  let got = false;
  child.on('message', (message: { type?: string; result?: T }) => {
    if (message?.type === 'gate') {
      arrived++;
      wake?.();
    } else if (message?.type === 'result') {
      got = true;
      settle?.resolve(message.result as T);
    }
  });
  // 'close': after the exit and the end of its stderr, so the error carries the child's last words.
  child.on('close', (code, signal) => {
    if (partial !== '') options.log(partial);
    if (got && code === 0) return;
    failure = new Error(
      `benchmark child ${script} exited (${signal ?? `code ${code}`}) without a result:\n${[...stderrTail, partial].join('\n').trim()}`,
    );
    settle?.reject(failure);
    wake?.();
  });
  return {
    async atGate() {
      while (arrived === consumed) {
        if (failure) throw failure;
        await new Promise<void>((resolve) => {
          wake = resolve;
        });
        wake = undefined;
      }
      consumed++;
    },
    go() {
      child.send({ type: 'go' });
    },
    result,
  };
}

/**
 * Lets every child (each waiting at a gate) through `rounds` rounds, one child at a time; the order turns round
 * every round (A B, B A, A B, …) so that neither child always goes first: in a run with a fixed order, the second
 * child's fastest requests came out up to 0.72 of the first's at the same size of answer.
 */
export async function takeTurns(children: ReadonlyArray<TurnChild<unknown>>, rounds: number): Promise<void> {
  for (let round = 0; round < rounds; round++)
    for (const child of round % 2 === 0 ? children : [...children].reverse()) {
      child.go();
      await child.atGate();
    }
}
