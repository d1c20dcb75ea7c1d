export type { DetectInput, EntryDecoder, TranscriptFormat, UnsupportedFormat } from './format.js';
export { formats, getFormat, isFormatId, recognizedButUnsupported } from './registry.js';
export { detectFormat, sampleSource, type Detection } from './detect.js';
export { readSession, parseSession, streamSession, type ReadOptions, type StreamResult } from './read.js';
export { writeSession, type WriteOptions } from './write.js';
export { JsonlParser, readJsonlStream, readJsonlBuffer, splitConcatenated, writeJsonl, type JsonlItem } from './jsonl.js';
export { inspectTranscript, inspectSession, type InspectReport, type InspectOptions } from './inspect.js';
