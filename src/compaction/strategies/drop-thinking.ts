import type { ViewItem } from '../../model/view.js';
import type { Message } from '../../model/types.js';
import { isHumanUser, toolLoopUnderWay } from '../turns.js';
import { changeable, StrategySkipped, type Strategy } from './strategy.js';

/**
 * Drops the thinking of earlier turns, with its signatures. Providers need an assistant's signed thinking only while
 * its own tool-use loop is under way (Anthropic strips earlier turns' thinking from the prompt; OpenAI reasoning items
 * are likewise only carried within a turn), so thinking before the latest human message is no longer the model's to
 * read — nor, once the turn has ended with the assistant's answer, the thinking after it. A message that holds nothing
 * but thinking is left as it is.
 */
export const dropThinking: Strategy = {
  name: 'drop-thinking',
  async apply(view, ctx) {
    const end = thinkingNeededFrom(view);
    const out = view.slice();
    let dropped = 0;
    for (let i = 0; i < end; i++) {
      const item = out[i]!;
      if (!changeable(item, ctx)) continue;
      const message = withoutThinking(item.message);
      if (!message) continue;
      out[i] = { entry: item.entry, message, edit: item.edit ?? 'compressed' } as ViewItem;
      dropped++;
    }
    if (dropped === 0) throw new StrategySkipped('no thinking a provider still needs to be sent');
    return out;
  },
};

/** The view position from which thinking is still needed: the latest human message's in a tool-use loop, else none. */
export function thinkingNeededFrom(view: readonly ViewItem[]): number {
  if (!toolLoopUnderWay(view)) return view.length;
  let lastHuman = -1;
  view.forEach((it, i) => {
    if (isHumanUser(it.message)) lastHuman = i;
  });
  return lastHuman;
}

/** An assistant message without its thinking; undefined when it has none, or nothing else. */
export function withoutThinking(m: Message): Message | undefined {
  if (m.role !== 'assistant') return undefined;
  const rest = m.parts.filter((p) => p.type !== 'thinking');
  return rest.length === m.parts.length || rest.length === 0 ? undefined : { ...m, parts: rest };
}
