// `abridge-context/formats`: the transcript formats as values (a reader + writer each), for code that picks or adds one.
export type { DecoderOptions, DetectInput, EntryDecoder, TranscriptFormat, UnsupportedFormat } from './format.js';
export { formats, getFormat, isFormatId, recognizedButUnsupported } from './registry.js';
export { detectFormat, type Detection } from './detect.js';
export { readSession, parseSession, streamSession, type ReadOptions, type StreamResult } from './read.js';
export { writeSession, type WriteOptions } from './write.js';
export { inspectTranscript, type InspectReport, type InspectOptions } from './inspect.js';
export { FORMAT_IDS, type FormatId } from '../model/types.js';
