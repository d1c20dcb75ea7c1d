import { ModelCatalog } from './catalog.js';
import { DEFAULT_BUDGET_SETTINGS } from './defaults.js';

let shared: ModelCatalog | undefined;

/**
 * The check every count of a session makes of its bills (PromptTracker `windowOf`): the largest window `catalog` (or
 * the bundled catalog) knows for a model. Inspect, compact, replay and the ContextManager ask it the same way, so that
 * they use the same bills.
 */
export function windowsOf(catalog?: ModelCatalog): (model: string) => number | undefined {
  const c = catalog ?? (shared ??= new ModelCatalog(DEFAULT_BUDGET_SETTINGS));
  return (model) => c.largestWindow(model);
}
