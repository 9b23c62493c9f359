import type { Handler } from '@proxyd/model';
import type { BlockState } from './directives/directive.js';
import type { Dispenser } from './dispenser.js';
import { ProxyfileErrorCode } from './errors.js';
import type { Token } from './lexer.js';

/** Sets the block's terminal handler; a second one in the same block is an error naming the first. */
export function setHandler(d: Dispenser, state: BlockState, handler: Handler, at: Token = d.name): void {
  const previous = state.handlerAt;
  if (previous !== null) {
    throw d.error(
      at,
      ProxyfileErrorCode.DUPLICATE_DIRECTIVE,
      `"${at.text}": this block already has a handler ("${previous.text}" at ${previous.file}:${previous.line}:${previous.column}); route by path with handle blocks`,
    );
  }
  state.handlerAt = at;
  state.target.handler = handler;
}
