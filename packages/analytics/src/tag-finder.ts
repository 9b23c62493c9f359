/**
 * A small streaming HTML tokenizer that finds where to inject the script: the
 * first `</head>` or `</body>` end tag that the browser would see as a tag.
 * It follows the WHATWG tokenizer just far enough to skip what is not markup:
 * comments (`<!-- -->`, `<!-->`, `--!>`), bogus comments (`<!doctype …>`,
 * `<? … >`, `</ …>`), `<![CDATA[ … ]]>`, quoted attribute values, raw-text
 * elements (`script`, `style`, `xmp`, `iframe`, `noembed`, `noframes`, and
 * `noscript`, raw text when scripting is on, as in the browsers that run the
 * script), RCDATA elements (`title`, `textarea`) and `plaintext` (nothing after
 * it is markup). Its state carries across chunks, so a tag, comment or
 * attribute split anywhere is handled. Not modelled: the script-data escape
 * states (`<!--` … `<script>` nested inside a script) and foreign content
 * (SVG/MathML); both only matter for a `</head>` hidden in such text.
 */

const LT = 60;
const GT = 62;
const SLASH = 47;
const BANG = 33;
const QMARK = 63;
const DASH = 45;
const EQ = 61;
const DQUOTE = 34;
const SQUOTE = 39;
const RBRACKET = 93;

/** Tokenizer states (a subset of the WHATWG ones). */
const DATA = 0;
const TAG_OPEN = 1;
const END_TAG_OPEN = 2;
const TAG_NAME = 3;
const ATTRS = 4;
const BEFORE_VALUE = 5;
const VALUE_DQ = 6;
const VALUE_SQ = 7;
const VALUE_UNQUOTED = 8;
const DECL = 9;
const COMMENT = 10;
const BOGUS_COMMENT = 11;
const CDATA = 12;
const RAW = 13;
const RAW_LT = 14;
const RAW_END_NAME = 15;
const PLAINTEXT = 16;

/** Longest tag name remembered (`plaintext`); longer names match nothing. */
const MAX_NAME = 9;

const ascii = (s: string): Uint8Array => Uint8Array.from(s, (c) => c.charCodeAt(0));
const HEAD = ascii('head');
const BODY = ascii('body');
const CDATA_OPEN = ascii('[CDATA[');
const PLAINTEXT_NAME = ascii('plaintext');
/** Elements whose content is text up to their own end tag. */
const RAW_ELEMENTS = [
  ...['script', 'style', 'title', 'textarea', 'noscript', 'xmp', 'iframe', 'noembed', 'noframes'].map(ascii),
  PLAINTEXT_NAME,
];

function isSpace(c: number): boolean {
  return c === 32 || c === 9 || c === 10 || c === 12 || c === 13;
}

function isAlpha(c: number): boolean {
  const l = c | 32;
  return l >= 97 && l <= 122;
}

function lower(c: number): number {
  return c >= 65 && c <= 90 ? c + 32 : c;
}

/**
 * Finds the first `</head>` or `</body>` (ASCII case-insensitive, attributes
 * or whitespace allowed, `</header>` not matched) outside comments and
 * raw-text/RCDATA elements, in a stream fed chunk by chunk. Offsets are
 * counted from the first byte ever fed.
 */
export class ClosingTagFinder {
  #state = DATA;
  /** Bytes fed so far. */
  #offset = 0;
  /** Stream offset of the `<` of the tag being read. */
  #tagStart = 0;
  #endTag = false;
  readonly #name = new Uint8Array(MAX_NAME);
  #nameLength = 0;
  /** The raw-text element a start tag opens (set at its name's end), or null. */
  #rawOpen: Uint8Array | null = null;
  /** The raw-text element whose content is being skipped. */
  #raw: Uint8Array = PLAINTEXT_NAME;
  #rawIndex = 0;
  /** Markup declaration: 1 after `<!-`, n after n bytes of `[CDATA[`. */
  #declIndex = 0;
  #declCdata = false;
  /** Comment: dashes seen in a row (the opening `--` counts, so `<!-->` closes). */
  #dashes = 0;
  #bang = false;
  #brackets = 0;
  #match = -1;

  /** Bytes fed so far. */
  get offset(): number {
    return this.#offset;
  }

  /** Stream offset of the matched `<`, or -1. */
  get match(): number {
    return this.#match;
  }

  /**
   * Stream offset of a `<` that may still turn out to be `</head>` or
   * `</body>` (its name has not ended yet), or -1. A caller that emits bytes
   * as it goes holds back the bytes from there.
   */
  get pending(): number {
    if (this.#match >= 0) return -1;
    const s = this.#state;
    if (s === TAG_OPEN || s === END_TAG_OPEN) return this.#tagStart;
    if (s === TAG_NAME && this.#endTag && this.#nameLength <= 4) return this.#tagStart;
    return -1;
  }

  /**
   * Feeds the next bytes of the stream. Returns the stream offset of the `<`
   * of the first `</head>` / `</body>`, or -1 when none has been seen yet.
   * Once found, further calls only count bytes and return the same offset.
   */
  feed(data: Uint8Array): number {
    const base = this.#offset;
    this.#offset += data.length;
    if (this.#match >= 0) return this.#match;
    const n = data.length;
    let i = 0;
    while (i < n) {
      const c = data[i] as number;
      switch (this.#state) {
        case DATA: {
          const lt = data.indexOf(LT, i);
          if (lt < 0) return -1;
          this.#tagStart = base + lt;
          this.#state = TAG_OPEN;
          i = lt + 1;
          continue;
        }
        case TAG_OPEN:
          if (c === SLASH) this.#state = END_TAG_OPEN;
          else if (c === BANG) {
            this.#state = DECL;
            this.#declIndex = 0;
          } else if (c === QMARK) this.#state = BOGUS_COMMENT;
          else if (isAlpha(c)) {
            this.#startName(false, c);
          } else {
            this.#state = DATA;
            continue; // reprocess (`<<p>`: the second `<` opens a tag)
          }
          break;
        case END_TAG_OPEN:
          if (isAlpha(c)) this.#startName(true, c);
          else if (c === GT) this.#state = DATA;
          else this.#state = BOGUS_COMMENT;
          break;
        case TAG_NAME:
          if (isSpace(c) || c === SLASH) {
            if (this.#nameEnd()) return this.#match;
            this.#state = ATTRS;
          } else if (c === GT) {
            if (this.#nameEnd()) return this.#match;
            this.#tagEnd();
          } else {
            if (this.#nameLength < MAX_NAME) this.#name[this.#nameLength] = lower(c);
            this.#nameLength++;
          }
          break;
        case ATTRS:
          if (c === GT) this.#tagEnd();
          else if (c === EQ) this.#state = BEFORE_VALUE;
          break;
        case BEFORE_VALUE:
          if (c === DQUOTE) this.#state = VALUE_DQ;
          else if (c === SQUOTE) this.#state = VALUE_SQ;
          else if (c === GT) this.#tagEnd();
          else if (!isSpace(c)) this.#state = VALUE_UNQUOTED;
          break;
        case VALUE_DQ:
        case VALUE_SQ: {
          const q = data.indexOf(this.#state === VALUE_DQ ? DQUOTE : SQUOTE, i);
          if (q < 0) return -1;
          this.#state = ATTRS;
          i = q + 1;
          continue;
        }
        case VALUE_UNQUOTED:
          if (isSpace(c)) this.#state = ATTRS;
          else if (c === GT) this.#tagEnd();
          break;
        case DECL:
          if (this.#declIndex === 0 && c === DASH) {
            this.#declCdata = false;
            this.#declIndex = 1;
          } else if (this.#declIndex === 0 && c === CDATA_OPEN[0]) {
            this.#declCdata = true;
            this.#declIndex = 1;
          } else if (!this.#declCdata && this.#declIndex === 1 && c === DASH) {
            this.#state = COMMENT;
            this.#dashes = 2;
            this.#bang = false;
          } else if (this.#declCdata && c === CDATA_OPEN[this.#declIndex]) {
            this.#declIndex++;
            if (this.#declIndex === CDATA_OPEN.length) {
              this.#state = CDATA;
              this.#brackets = 0;
            }
          } else {
            this.#state = BOGUS_COMMENT;
            continue; // reprocess: `<!>` ends here
          }
          break;
        case COMMENT:
          if (c === DASH) {
            this.#dashes = this.#bang ? 1 : this.#dashes + 1;
            this.#bang = false;
          } else if (c === GT && this.#dashes >= 2) this.#state = DATA;
          else if (c === BANG && this.#dashes >= 2 && !this.#bang) this.#bang = true;
          else {
            this.#dashes = 0;
            this.#bang = false;
          }
          break;
        case BOGUS_COMMENT: {
          const gt = data.indexOf(GT, i);
          if (gt < 0) return -1;
          this.#state = DATA;
          i = gt + 1;
          continue;
        }
        case CDATA:
          if (c === RBRACKET) this.#brackets++;
          else if (c === GT && this.#brackets >= 2) this.#state = DATA;
          else this.#brackets = 0;
          break;
        case RAW: {
          const lt = data.indexOf(LT, i);
          if (lt < 0) return -1;
          this.#state = RAW_LT;
          i = lt + 1;
          continue;
        }
        case RAW_LT:
          if (c === SLASH) {
            this.#state = RAW_END_NAME;
            this.#rawIndex = 0;
            break;
          }
          this.#state = RAW;
          continue; // reprocess (it may be another `<`)
        case RAW_END_NAME:
          if (this.#rawIndex < this.#raw.length) {
            if (lower(c) === this.#raw[this.#rawIndex]) {
              this.#rawIndex++;
              break;
            }
          } else if (isSpace(c) || c === SLASH) {
            this.#endTag = true;
            this.#rawOpen = null;
            this.#state = ATTRS;
            break;
          } else if (c === GT) {
            this.#state = DATA;
            break;
          }
          this.#state = RAW;
          continue; // reprocess
        default:
          // PLAINTEXT: nothing after `<plaintext>` is markup.
          return -1;
      }
      i++;
    }
    return -1;
  }

  #startName(endTag: boolean, c: number): void {
    this.#state = TAG_NAME;
    this.#endTag = endTag;
    this.#name[0] = lower(c);
    this.#nameLength = 1;
  }

  #nameIs(want: Uint8Array): boolean {
    if (this.#nameLength !== want.length) return false;
    for (let k = 0; k < want.length; k++) if (this.#name[k] !== want[k]) return false;
    return true;
  }

  /** At the end of a tag name: true when it is the `</head` or `</body` sought. */
  #nameEnd(): boolean {
    if (this.#endTag) {
      this.#rawOpen = null;
      if (this.#nameIs(HEAD) || this.#nameIs(BODY)) {
        this.#match = this.#tagStart;
        return true;
      }
      return false;
    }
    this.#rawOpen = null;
    for (const raw of RAW_ELEMENTS) {
      if (this.#nameIs(raw)) {
        this.#rawOpen = raw;
        break;
      }
    }
    return false;
  }

  /** At the `>` of a tag: a raw-text start tag switches to its content. */
  #tagEnd(): void {
    const raw = this.#rawOpen;
    this.#rawOpen = null;
    if (raw === null) this.#state = DATA;
    else if (raw === PLAINTEXT_NAME) this.#state = PLAINTEXT;
    else {
      this.#raw = raw;
      this.#state = RAW;
    }
  }
}

/**
 * The offset of the first `</head>` or `</body>` in a whole document (see
 * {@link ClosingTagFinder}), or -1. A tag whose name ends the buffer is not
 * matched (its end is not seen).
 */
export function findClosingTag(data: Uint8Array): number {
  return new ClosingTagFinder().feed(data);
}
