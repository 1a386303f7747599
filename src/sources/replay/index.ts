/** Replay source and capture format (`--record FILE`). */
export {
  type CaptureDocumentLine,
  type CaptureFailureLine,
  type CaptureLine,
  CaptureLineError,
  CaptureWriter,
  parseCaptureLine,
} from '../capture/capture.ts';
export { ReplaySource, type ReplaySourceOptions } from './source.ts';
