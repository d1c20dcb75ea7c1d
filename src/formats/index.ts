// `abridge-context/formats`: the transcript formats as values (a reader + writer each), for code that picks or adds one.
export type { DecoderOptions, DetectInput, EntryDecoder, TranscriptFormat, UnsupportedFormat } from './format.js';
export { formats, getFormat, isFormatId, recognizedButUnsupported } from './registry.js';
export { detectFormat, type Detection } from './detect.js';
export { FORMAT_IDS } from '../model/types.js';
// Reading, writing and inspecting sessions (readSession, writeSession, inspectTranscript…) are the core's: `abridge-context`.
