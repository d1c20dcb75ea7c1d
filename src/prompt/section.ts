/** A named piece of the system prompt: what PromptBuilder orders and the context note produces. */
export interface PromptSection {
  /** Unique within a builder: `base`, `rules`, `memories`, `skills`, `scratchpad`, `context-status`… */
  name: string;
  content: string;
  /** Whether the text stays byte-identical from request to request (it may then sit in the cached prefix). */
  cacheable: boolean;
}
