import type { ViewItem } from '../../model/view.js';
import { isHumanUser } from '../turns.js';
import { changeable, StrategySkipped, type Strategy } from './strategy.js';

/**
 * Drops the thinking of earlier turns, with its signatures. Providers need an assistant's signed thinking only while
 * its own tool-use loop is under way (Anthropic strips earlier turns' thinking from the prompt; OpenAI reasoning items
 * are likewise only carried within a turn), so thinking before the latest human message is no longer the model's to
 * read. Thinking of the current turn stays, and a message that holds nothing but thinking is left as it is.
 */
export const dropThinking: Strategy = {
  name: 'drop-thinking',
  async apply(view, ctx) {
    let lastHuman = -1;
    view.forEach((it, i) => {
      if (isHumanUser(it.message)) lastHuman = i;
    });
    const out = view.slice();
    let dropped = 0;
    for (let i = 0; i < lastHuman; i++) {
      const item = out[i]!;
      if (item.message.role !== 'assistant' || !changeable(item, ctx)) continue;
      const rest = item.message.parts.filter((p) => p.type !== 'thinking');
      if (rest.length === item.message.parts.length || rest.length === 0) continue;
      out[i] = {
        entry: item.entry,
        message: { ...item.message, parts: rest },
        edit: item.edit ?? 'compressed',
      } as ViewItem;
      dropped++;
    }
    if (dropped === 0) throw new StrategySkipped('no thinking before the current turn');
    return out;
  },
};
