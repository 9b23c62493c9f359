import type { OutgoingHttpHeaders } from 'node:http';
import type { Transform } from 'node:stream';
import type { Encoding } from '@proxyd/model';
import {
  compressor,
  compressWhole,
  decideHead,
  declaredLength,
  ENCODING,
  editEncodedHead,
  HOLDING,
  PASS,
  type ResponseEncoder,
  setEncodedLength,
  WHOLE,
  WholeBody,
  wholeLength,
} from '../middleware/encode.js';
import type { FastRequest } from './fast-request.js';

/** Where a {@link FastEncode} sends the response: the fast-path connection. */
export interface EncodeOutput {
  /** Writes the head as it stands; `lazy`: it leaves with the first body bytes (`ResponseWriter.writeHead`). */
  sendHead(status: number, headers: OutgoingHttpHeaders, lazy?: boolean): void;
  /** Writes body bytes; false when the client's socket is full. */
  sendBody(chunk: Buffer): boolean;
  /** The compressor sent its last bytes: the response may end. */
  sendEnd(): void;
  /** The compressor took its input: the upstream may read on. */
  flow(): void;
  /** The compressor failed: the response is cut with its connection. */
  cut(): void;
}

/** No head yet. */
const PENDING = 0;

/**
 * A site's `encode` step on the fast path: the node:http path's decisions
 * (`decideHead`, `editEncodedHead`, `compressor` of `middleware/encode.ts`:
 * negotiation, what is encoded, the head, holding the first
 * `minimum_length` bytes of a body of unknown length, compressing a body
 * of declared length up to `WHOLE_BODY_BYTES` in one call) applied to a
 * response the connection writes itself, so both paths send the same bytes.
 * One per connection, {@link start} per request; a streaming compressor's
 * output is written as it comes (a chunk per output, as `res.write` sends
 * it), paused while the client's socket is full.
 */
export class FastEncode {
  #req: FastRequest | null = null;
  #coding: Encoding | null = null;
  #minimum = 0;
  #mode = PENDING;
  #stream: Transform | null = null;
  #held: Buffer[] = [];
  #heldBytes = 0;
  #whole: WholeBody | null = null;
  #status = 0;
  #headers: OutgoingHttpHeaders = {};
  readonly #out: EncodeOutput;
  readonly #onData = (chunk: Buffer): void => {
    if (!this.#out.sendBody(chunk)) this.#stream?.pause();
  };
  readonly #onEnd = (): void => {
    this.#stream = null;
    this.#mode = PASS;
    this.#out.sendEnd();
  };
  readonly #onDrain = (): void => this.#out.flow();
  readonly #onError = (): void => this.#out.cut();

  constructor(out: EncodeOutput) {
    this.#out = out;
  }

  /**
   * Takes a request of a site with `encode`: false when it is left alone
   * (a `Range` request: its 206 is a byte range of the identity body), as
   * `ResponseEncoder.wrap` leaves it.
   */
  start(encoder: ResponseEncoder, req: FastRequest): boolean {
    const headers = req.headers;
    if (headers.range !== undefined) return false;
    this.#req = req;
    this.#coding = encoder.negotiator.choose(headers['accept-encoding']);
    this.#minimum = encoder.minimum;
    this.#mode = PENDING;
    return true;
  }

  /** The response head: sent now, encoded or not, or held with the first bytes of a body of unknown length. */
  head(status: number, headers: OutgoingHttpHeaders): void {
    if (this.#mode !== PENDING && this.#mode !== HOLDING && this.#mode !== WHOLE) {
      this.#out.sendHead(status, headers);
      return;
    }
    // A second head while holding (the connection's 408 or 502) starts over.
    this.#held = [];
    this.#heldBytes = 0;
    this.#whole = null;
    const req = this.#req as FastRequest;
    const decision = decideHead(null, req, this.#coding, this.#minimum, status, headers);
    if (decision === PASS) {
      this.#mode = PASS;
      this.#out.sendHead(status, headers);
      return;
    }
    this.#status = status;
    this.#headers = headers;
    if (decision !== ENCODING) {
      this.#mode = HOLDING;
      return;
    }
    const length = declaredLength(null, headers);
    if (wholeLength(req, length)) {
      this.#mode = WHOLE;
      this.#whole = new WholeBody(length);
    } else this.#encode(length);
  }

  /** Writes the encoded head and opens the compressor (`length`: the declared body length, or -1). */
  #encode(length: number): void {
    editEncodedHead(null, this.#headers, this.#coding as Encoding);
    const head = (this.#req as FastRequest).method === 'HEAD';
    // With the compressor's first output, as node:http sends the head with the first write.
    this.#out.sendHead(this.#status, this.#headers, !head);
    if (head) {
      this.#mode = PASS;
      return;
    }
    this.#mode = ENCODING;
    const stream = compressor(this.#coding as Encoding, length);
    stream.on('data', this.#onData);
    stream.on('end', this.#onEnd);
    stream.on('drain', this.#onDrain);
    stream.on('error', this.#onError);
    this.#stream = stream;
  }

  /**
   * Body bytes; false asks the upstream to wait for {@link EncodeOutput.flow}.
   * What is held or handed to the compressor is a copy of the exact size:
   * the upstream's read buffer (128 KiB, `upstream-conn.ts`) is then reused
   * rather than replaced by a new one per read, which for a 10 KB page cost
   * the fast path more (GC of the external memory) than node:http's path.
   */
  write(chunk: Buffer): boolean {
    if (this.#mode === PASS) return this.#out.sendBody(chunk);
    if (this.#mode === WHOLE) {
      // Copied into the body's own buffer.
      if ((this.#whole as WholeBody).add(chunk)) return true;
      this.#streamWhole();
    }
    const own = Buffer.from(chunk);
    if (this.#mode === HOLDING) {
      this.#held.push(own);
      this.#heldBytes += chunk.length;
      if (this.#heldBytes < this.#minimum) return true;
      return this.#release();
    }
    const stream = this.#stream;
    if (stream === null || stream.destroyed) return false;
    return stream.write(own);
  }

  /** The whole body, compressed in one call, goes out with its encoded head and length. */
  #sendWhole(body: Buffer): void {
    const coding = this.#coding as Encoding;
    const encoded = compressWhole(coding, body);
    this.#whole = null;
    this.#mode = PASS;
    editEncodedHead(null, this.#headers, coding);
    setEncodedLength(this.#headers, encoded.length);
    this.#out.sendHead(this.#status, this.#headers);
    this.#out.sendBody(encoded);
  }

  /** More bytes than declared: what was collected goes to a compressor, and the rest streams after it. */
  #streamWhole(): void {
    const bytes = (this.#whole as WholeBody).bytes;
    this.#whole = null;
    this.#encode(-1);
    (this.#stream as Transform).write(bytes);
  }

  /** Holding reached `minimum_length`: encode from the first held byte. */
  #release(): boolean {
    const held = this.#held;
    this.#held = [];
    this.#encode(-1);
    let ok = true;
    for (const b of held) ok = (this.#stream as Transform).write(b);
    return ok;
  }

  /**
   * The body ended: true when the response is whole now (identity; held
   * bytes under `minimum_length` sent with their length), false when the
   * compressor still flushes ({@link EncodeOutput.sendEnd} follows).
   */
  end(): boolean {
    if (this.#mode === WHOLE) {
      this.#sendWhole((this.#whole as WholeBody).bytes);
      return true;
    }
    if (this.#mode === HOLDING) {
      if (this.#heldBytes < this.#minimum) {
        const held = this.#held;
        const body = held.length === 1 ? (held[0] as Buffer) : Buffer.concat(held, this.#heldBytes);
        this.#held = [];
        this.#mode = PASS;
        this.#headers['content-length'] = String(body.length);
        this.#out.sendHead(this.#status, this.#headers);
        this.#out.sendBody(body);
        return true;
      }
      this.#release();
    }
    if (this.#mode !== ENCODING || this.#stream === null) return true;
    // zlib flushes what it holds when its input ends; its 'end' then ends the response.
    this.#stream.end();
    return false;
  }

  /** The client's socket drained: compressed output may flow again. */
  resume(): void {
    if (this.#stream?.isPaused() === true) this.#stream.resume();
  }

  /** The response is abandoned (the client left, the body timed out): the compressor's memory goes. */
  abort(): void {
    const stream = this.#stream;
    this.#stream = null;
    this.#held = [];
    this.#whole = null;
    this.#mode = PENDING;
    if (stream !== null && !stream.destroyed) stream.destroy();
  }
}
