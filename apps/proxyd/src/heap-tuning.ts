import v8 from 'node:v8';

/** The V8 flag the tuning sets, and the value it restores (V8 13.0's default, MB). */
const FLAG = 'scavenger-max-new-space-capacity-mb';
const VALUE = 8;

/**
 * Keeps short-lived Buffers in the young generation's cheap collections on
 * Node 24.
 *
 * V8 13.6 (Node 24.0) raised the young generation's maximum from 8 to
 * 32 MB, and with it the point where young ArrayBuffer memory triggers a
 * scavenge (from 32 to 128 MB), above the 64 MB external-memory limit that
 * starts a mark-compact. A proxy streaming bodies allocates a Buffer per
 * socket read, so Node 24 reclaimed them with major GCs: in bench/proxy a
 * plain node:http proxy of 100 KB bodies used 1.4-1.6x the CPU per request
 * of Node 20 (nodejs/node#61967, #63863). Setting the old maximum restores
 * Node 20's figures; V8 reads the flag when it sizes the trigger, so setting
 * it at start, before any traffic, takes effect.
 *
 * Does nothing when the operator chose a value (`node --scavenger-max-…` or
 * `NODE_OPTIONS`). Returns whether it set the flag. Remove once a Node 24
 * release carries V8's own fix (external memory accounted in the global
 * limit).
 */
export function tuneHeapForStreaming(
  execArgv: readonly string[] = process.execArgv,
  nodeOptions: string = process.env.NODE_OPTIONS ?? '',
): boolean {
  const chosen = (arg: string) => arg.replaceAll('_', '-').includes(FLAG);
  if (execArgv.some(chosen) || chosen(nodeOptions)) return false;
  v8.setFlagsFromString(`--${FLAG}=${VALUE}`);
  return true;
}
