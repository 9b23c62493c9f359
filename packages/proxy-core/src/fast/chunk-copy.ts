import type { Socket } from 'node:net';

/**
 * Body chunks up to this size are copied before a write that would keep them queued (a TLS socket's, a
 * corked one's): the copy is cheaper than the new 128 KiB read buffer the upstream would take otherwise.
 */
const COPY_BYTES = 16 * 1024;
/**
 * A chunk a rewrite or a transform keeps is copied up to this size: below it the copy costs less than the new
 * 128 KiB read buffer the upstream would take (measured: 1 KiB 3.5 against 13 µs, 16 KiB 11 against 19 µs, even
 * at 64 KiB, 48 against 38 µs at 128 KiB), and it holds the chunk's bytes rather than 128 KiB.
 */
const KEEP_COPY_BYTES = 64 * 1024;

/**
 * What a rewrite or a transform keeps of an upstream read past it: a copy of `chunk`, so the upstream reads
 * on into the same buffer, or null when it is too large to copy (the upstream then reads into a new one).
 */
export function keptCopy(chunk: Buffer): Buffer | null {
  return chunk.length <= KEEP_COPY_BYTES ? Buffer.from(chunk) : null;
}

/**
 * The copy to write instead of `chunk` when the write would keep it queued past this read, else null: a TLS
 * socket finishes its writes after they return, a corked socket holds them until it uncorks.
 */
export function copyForWrite(chunk: Buffer, socket: Socket, secure: boolean): Buffer | null {
  return chunk.length <= COPY_BYTES && (secure || socket.writableCorked > 0) ? Buffer.from(chunk) : null;
}
