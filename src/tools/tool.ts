import { z } from 'zod';

/**
 * A tool an agent can call, usable from any agent loop: a name, a description, an input schema (zod, and the JSON
 * Schema to hand to a provider), and `run`, which validates the input and answers with text. A bad input or a failure
 * is answered as text starting with "Error:" (a tool result the model can read and correct), never thrown.
 */
export interface AgentTool<I = unknown> {
  readonly name: string;
  readonly description: string;
  readonly input: z.ZodType<I>;
  /** JSON Schema of the input, for a provider's tool definition. */
  readonly inputSchema: Record<string, unknown>;
  run(input: unknown): Promise<string>;
}

export interface ToolDefinition<I> {
  name: string;
  description: string;
  input: z.ZodType<I>;
  run(input: I): Promise<string>;
}

export function defineTool<I>(def: ToolDefinition<I>): AgentTool<I> {
  const inputSchema = z.toJSONSchema(def.input) as Record<string, unknown>;
  delete inputSchema.$schema;
  return {
    name: def.name,
    description: def.description,
    input: def.input,
    inputSchema,
    async run(raw: unknown): Promise<string> {
      const parsed = def.input.safeParse(raw ?? {});
      if (!parsed.success) {
        const problems = parsed.error.issues
          .map((i) => `${i.path.length ? i.path.join('.') : 'input'}: ${i.message}`)
          .join('; ');
        return `Error: invalid input for ${def.name}: ${problems}`;
      }
      try {
        return await def.run(parsed.data);
      } catch (err) {
        return `Error: ${err instanceof Error ? err.message : String(err)}`;
      }
    },
  };
}

/** Anthropic-style tool definitions for a list of tools. */
export function toolDefinitions(
  tools: readonly AgentTool[],
): { name: string; description: string; input_schema: Record<string, unknown> }[] {
  return tools.map((t) => ({ name: t.name, description: t.description, input_schema: t.inputSchema }));
}
