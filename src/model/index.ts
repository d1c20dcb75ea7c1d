export * from './types.js';
export * from './branch.js';
export * from './parts.js';
export * from './session.js';
export * from './stats.js';
export * from './view.js';
