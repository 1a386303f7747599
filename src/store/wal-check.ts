/**
 * Detecting a damaged write-ahead log before SQLite opens the database (docs/delivery.md, "Damaged WAL").
 *
 * SQLite silently ignores a WAL whose header is invalid and stops replaying at the first frame whose checksum
 * is wrong: committed transactions in such a WAL vanish without an error, and `integrity_check` still says
 * "ok". Before opening, this module reads the WAL (format: https://www.sqlite.org/fileformat2.html#walformat)
 * and the wal-index header in `-shm` (which a crashed process leaves behind; it records how many frames were
 * committed and with which salts) and works out what SQLite will replay and what it will drop.
 *
 * Damage is reported when committed frames are known to exist but will not be replayed:
 *  - the wal-index says frames up to M were committed (beyond those already checkpointed), and the WAL is
 *    missing, shorter, has an invalid header, or has fewer valid frames with the same salts;
 *  - without a usable wal-index: the WAL header is invalid while the file holds frames, or the checksum chain
 *    breaks and later frames of the same WAL generation include a commit.
 * Pure reading: nothing is written here.
 */
import { endianness } from 'node:os';

const { closeSync, existsSync, openSync, readSync, statSync } = process.getBuiltinModule('node:fs');

const WAL_HEADER_BYTES = 32;
const FRAME_HEADER_BYTES = 24;
const WAL_MAGIC_LE = 0x377f0682;
const WAL_MAGIC_BE = 0x377f0683;
const WAL_VERSION = 3007000;
const SHM_HEADER_BYTES = 136;

export interface WalInspection {
  walPath: string;
  walBytes: number;
  /** Frames SQLite will replay (up to the last valid commit frame). */
  replayable: number;
  /** Committed frames the wal-index (-shm) recorded, when it was usable. */
  indexedFrames?: number;
  /** Frames already copied into the database file according to the wal-index. */
  checkpointedFrames?: number;
  /** Set when committed data in the WAL will not be replayed. */
  damage?: {
    /** What is wrong, in words. */
    detail: string;
    /** Committed transactions (commit frames) that will not be replayed, as far as they can be counted. */
    lostTransactions: number;
    /** Frames that will not be replayed. */
    lostFrames: number;
  };
}

interface ShmHeader {
  mxFrame: number;
  nBackfill: number;
  pageSize: number;
  salts: Buffer;
}

interface WalHeader {
  valid: boolean;
  bigEndianChecksums: boolean;
  pageSize: number;
  salts: Buffer;
  checksum: [number, number];
}

/** Inspect `<databasePath>-wal` (and `-shm`) before the database is opened. */
export function inspectWal(databasePath: string): WalInspection {
  const walPath = `${databasePath}-wal`;
  // The index first: a concurrent writer only ever moves the WAL ahead of what its index said.
  const shm = readShmHeader(`${databasePath}-shm`);
  const wal = readAll(walPath);
  const result: WalInspection = { walPath, walBytes: wal?.length ?? 0, replayable: 0 };
  if (shm !== undefined) {
    result.indexedFrames = shm.mxFrame;
    result.checkpointedFrames = shm.nBackfill;
  }
  const header = wal !== undefined && wal.length >= WAL_HEADER_BYTES ? readWalHeader(wal) : undefined;
  const pageSize = header?.valid ? header.pageSize : (shm?.pageSize ?? databasePageSize(databasePath));
  const frameBytes = pageSize === undefined ? undefined : FRAME_HEADER_BYTES + pageSize;
  const framesInFile =
    wal === undefined || frameBytes === undefined || wal.length < WAL_HEADER_BYTES
      ? 0
      : Math.floor((wal.length - WAL_HEADER_BYTES) / frameBytes);
  const walk = header?.valid && wal !== undefined ? walkFrames(wal, header) : undefined;
  result.replayable = walk?.replayable ?? 0;

  /** Commit frames in frames (from, to] carrying `salts` (checksums unknown or broken: counted as written). */
  const commitsBetween = (from: number, to: number, salts: Buffer | undefined): number => {
    if (wal === undefined || frameBytes === undefined) return 0;
    let commits = 0;
    for (let i = from; i < Math.min(to, framesInFile); i++) {
      const at = WAL_HEADER_BYTES + i * frameBytes;
      if (salts !== undefined && !wal.subarray(at + 8, at + 16).equals(salts)) continue;
      if (wal.readUInt32BE(at + 4) !== 0) commits++;
    }
    return commits;
  };

  // 1. The wal-index of the crashed process says which frames were committed: compare.
  if (shm !== undefined && shm.mxFrame > shm.nBackfill) {
    const sameGeneration = header?.valid === true && header.salts.equals(shm.salts);
    let detail: string | undefined;
    if (wal === undefined || wal.length === 0) {
      detail = `the WAL file is missing or empty, but the WAL index (-shm) records ${shm.mxFrame} committed frames`;
    } else if (header === undefined || !header.valid) {
      detail =
        `the WAL header is invalid (SQLite ignores the whole file), but the WAL index (-shm) records ` +
        `${shm.mxFrame} committed frames`;
    } else if (sameGeneration && result.replayable < shm.mxFrame) {
      detail =
        `only ${result.replayable} of the ${shm.mxFrame} committed frames recorded in the WAL index (-shm) are ` +
        `valid (damaged at frame ${result.replayable + 1}; checksum or truncation)`;
    }
    if (detail !== undefined) {
      const from = Math.max(result.replayable, shm.nBackfill);
      result.damage = {
        detail,
        lostFrames: shm.mxFrame - from,
        lostTransactions: Math.max(1, commitsBetween(from, shm.mxFrame, shm.salts)),
      };
      return result;
    }
    if (sameGeneration) return result; // the index and the WAL agree
  }

  // 2. No usable wal-index: judge the WAL by itself.
  if (wal === undefined || wal.length < WAL_HEADER_BYTES + FRAME_HEADER_BYTES) return result;
  if (header === undefined || !header.valid) {
    if (framesInFile === 0) return result;
    const salts = majoritySalts(wal, framesInFile, frameBytes as number);
    const commits = commitsBetween(0, framesInFile, salts);
    if (commits === 0) return result; // nothing committed was ever written after this header
    result.damage = {
      detail: `the WAL header is invalid (SQLite ignores the whole file) while the file holds ${framesInFile} frames`,
      lostFrames: framesInFile,
      lostTransactions: commits,
    };
    return result;
  }
  if (walk !== undefined && walk.firstInvalid < framesInFile) {
    const laterCommits = commitsBetween(walk.firstInvalid + 1, framesInFile, header.salts);
    if (laterCommits > 0) {
      result.damage = {
        detail:
          `frame ${walk.firstInvalid + 1} of the WAL is damaged (checksum), and ${laterCommits} later committed ` +
          'transactions of the same WAL generation follow it',
        lostFrames: framesInFile - result.replayable,
        lostTransactions: laterCommits,
      };
    }
  }
  return result;
}

function readAll(path: string): Buffer | undefined {
  if (!existsSync(path)) return undefined;
  const size = statSync(path).size;
  const buffer = Buffer.alloc(size);
  const fd = openSync(path, 'r');
  try {
    let read = 0;
    while (read < size) {
      const n = readSync(fd, buffer, read, size - read, read);
      if (n === 0) break;
      read += n;
    }
    return buffer.subarray(0, read);
  } finally {
    closeSync(fd);
  }
}

/** SQLite's WAL checksum over `data` (a multiple of 8 bytes), continuing from `s`. */
function checksum(data: Buffer, bigEndian: boolean, s: [number, number]): [number, number] {
  let s0 = s[0];
  let s1 = s[1];
  for (let i = 0; i + 8 <= data.length; i += 8) {
    const x0 = bigEndian ? data.readUInt32BE(i) : data.readUInt32LE(i);
    const x1 = bigEndian ? data.readUInt32BE(i + 4) : data.readUInt32LE(i + 4);
    s0 = (s0 + x0 + s1) >>> 0;
    s1 = (s1 + x1 + s0) >>> 0;
  }
  return [s0, s1];
}

function readWalHeader(wal: Buffer): WalHeader {
  const magic = wal.readUInt32BE(0);
  const bigEndianChecksums = magic === WAL_MAGIC_BE;
  const pageSize = wal.readUInt32BE(8);
  const salts = Buffer.from(wal.subarray(16, 24));
  const stored: [number, number] = [wal.readUInt32BE(24), wal.readUInt32BE(28)];
  const validShape =
    (magic === WAL_MAGIC_LE || magic === WAL_MAGIC_BE) &&
    wal.readUInt32BE(4) === WAL_VERSION &&
    pageSize >= 512 &&
    pageSize <= 65536 &&
    (pageSize & (pageSize - 1)) === 0;
  const computed = checksum(wal.subarray(0, 24), bigEndianChecksums, [0, 0]);
  const valid = validShape && computed[0] === stored[0] && computed[1] === stored[1];
  return { valid, bigEndianChecksums, pageSize, salts, checksum: stored };
}

/** Walk the frames as SQLite's recovery does: returns the replayable count and the first invalid frame. */
function walkFrames(wal: Buffer, header: WalHeader): { replayable: number; firstInvalid: number } {
  const frameBytes = FRAME_HEADER_BYTES + header.pageSize;
  let running = header.checksum;
  let replayable = 0;
  let i = 0;
  for (; WAL_HEADER_BYTES + (i + 1) * frameBytes <= wal.length; i++) {
    const at = WAL_HEADER_BYTES + i * frameBytes;
    const frame = wal.subarray(at, at + frameBytes);
    if (!frame.subarray(8, 16).equals(header.salts) || frame.readUInt32BE(0) === 0) break;
    let s = checksum(frame.subarray(0, 8), header.bigEndianChecksums, running);
    s = checksum(frame.subarray(FRAME_HEADER_BYTES), header.bigEndianChecksums, s);
    if (s[0] !== frame.readUInt32BE(16) || s[1] !== frame.readUInt32BE(20)) break;
    running = s;
    if (frame.readUInt32BE(4) !== 0) replayable = i + 1;
  }
  return { replayable, firstInvalid: i };
}

/** The salts most frames carry (the current generation when the header itself is unreadable). */
function majoritySalts(wal: Buffer, frames: number, frameBytes: number): Buffer | undefined {
  const counts = new Map<string, number>();
  for (let i = 0; i < frames; i++) {
    const at = WAL_HEADER_BYTES + i * frameBytes;
    const key = wal.subarray(at + 8, at + 16).toString('hex');
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  let best: string | undefined;
  for (const [key, n] of counts) if (best === undefined || n > (counts.get(best) ?? 0)) best = key;
  return best === undefined ? undefined : Buffer.from(best, 'hex');
}

/** The wal-index header in -shm (native byte order, two identical copies), or undefined when unusable. */
function readShmHeader(shmPath: string): ShmHeader | undefined {
  if (!existsSync(shmPath)) return undefined;
  const buffer = Buffer.alloc(SHM_HEADER_BYTES);
  const fd = openSync(shmPath, 'r');
  try {
    if (readSync(fd, buffer, 0, SHM_HEADER_BYTES, 0) < SHM_HEADER_BYTES) return undefined;
  } finally {
    closeSync(fd);
  }
  const be = endianness() === 'BE';
  const u32 = (at: number) => (be ? buffer.readUInt32BE(at) : buffer.readUInt32LE(at));
  const u16 = (at: number) => (be ? buffer.readUInt16BE(at) : buffer.readUInt16LE(at));
  if (!buffer.subarray(0, 48).equals(buffer.subarray(48, 96))) return undefined;
  if (u32(0) !== WAL_VERSION || buffer[12] !== 1) return undefined;
  const computed = checksum(buffer.subarray(0, 40), be, [0, 0]);
  if (computed[0] !== u32(40) || computed[1] !== u32(44)) return undefined;
  const sz = u16(14);
  const pageSize = (sz & 0xfe00) + ((sz & 0x0001) << 16);
  return { mxFrame: u32(16), nBackfill: u32(96), pageSize, salts: Buffer.from(buffer.subarray(32, 40)) };
}

/** Page size from the database file header (offset 16, big-endian; 1 means 65536). */
function databasePageSize(databasePath: string): number | undefined {
  const header = Buffer.alloc(18);
  try {
    const fd = openSync(databasePath, 'r');
    try {
      if (readSync(fd, header, 0, 18, 0) < 18) return undefined;
    } finally {
      closeSync(fd);
    }
  } catch {
    return undefined;
  }
  const raw = header.readUInt16BE(16);
  return raw === 1 ? 65536 : raw >= 512 ? raw : undefined;
}
