import type { ErrorHandleBlock, GlobalOptions, HandleBlock, Site } from '@proxyd/model';
import type { Dispenser } from '../dispenser.js';
import type { Token } from '../lexer.js';

/** What a directive writes into while a block (a site or a `handle`) compiles. */
export interface BlockState {
  /** `site` for a site block, `handle` inside `handle` / `handle_path`. */
  readonly scope: 'site' | 'handle';
  /** The block's fields (the site itself, or the handle block). */
  readonly target: Site | HandleBlock | ErrorHandleBlock;
  /** The enclosing site. */
  readonly site: Site;
  /** The global options, read before any site (e.g. `on_demand_tls` for `tls { on_demand }`). */
  readonly global: GlobalOptions;
  /** Directives that may appear once per block, by name → where they first appeared. */
  readonly seen: Map<string, Token>;
  /** The directive that set the terminal handler, if any. */
  handlerAt: Token | null;
  /** `root <dir>` of this block, waiting for `file_server`. */
  root: { dir: string; at: Token } | null;
  /** `file_server` of this block, waiting for a root. */
  fileServerAt: Token | null;
  /** `handle` patterns of the site (`@name` for `handle @name`), to reject duplicates. */
  readonly handlePatterns: Map<string, Token>;
  /** The site's named matchers (`@name`, by name without @) and where each is defined. */
  readonly matchers: ReadonlyMap<string, Token>;
  /** `try_files` of this block, waiting for the block's root (set at the block's end). */
  tryFilesAt?: Token;
  /** The site block's `root` directory, which its `handle` and `handle_errors` blocks inherit (Caddy's rule). */
  siteRoot?: string;
  /** Inside `handle_errors` (`respond … {err.status_code}` allowed). */
  readonly errorRoute?: boolean;
  /** Compiles the lines of a nested block into another state (used by `handle`). */
  readonly compileBlock: (lines: Dispenser[], state: BlockState) => void;
}

/**
 * The state a nested block (`handle`, `handle_path`, `handle_errors`) of the
 * site compiles into: its own once-per-block bookkeeping, the site's handle
 * patterns, matchers and root shared.
 */
export function nestedBlockState(
  parent: BlockState,
  target: HandleBlock | ErrorHandleBlock,
  errorRoute = false,
): BlockState {
  return {
    scope: 'handle',
    target,
    site: parent.site,
    global: parent.global,
    seen: new Map(),
    handlerAt: null,
    root: null,
    fileServerAt: null,
    handlePatterns: parent.handlePatterns,
    matchers: parent.matchers,
    ...(parent.siteRoot === undefined ? {} : { siteRoot: parent.siteRoot }),
    ...(errorRoute ? { errorRoute: true } : {}),
    compileBlock: parent.compileBlock,
  };
}

/** One directive: its name, where it may stand, and its parser. */
export interface Directive {
  readonly name: string;
  /** `site`: only directly in a site block; `any`: also inside `handle` / `handle_path`. */
  readonly scope: 'site' | 'any';
  /** Whether a second occurrence in one block is an error. */
  readonly once: boolean;
  /** Reads the line (and block) at the dispenser into the state. */
  parse(d: Dispenser, state: BlockState): void;
}
