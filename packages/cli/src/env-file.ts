import { readFileSync } from 'node:fs';
import { parseEnv } from 'node:util';

/**
 * `--envfile <path>`: loads `KEY=VALUE` lines (Node's dotenv syntax,
 * `util.parseEnv`: `#` comments, quotes, `export` prefixes) into `env`
 * before the command reads its environment or its Proxyfile. A variable
 * already set in the environment keeps its value (as `node --env-file`).
 * Returns the names it set. A file that cannot be read throws with the path.
 */
export function applyEnvFile(file: string, env: NodeJS.ProcessEnv = process.env): string[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    const reason = (err as NodeJS.ErrnoException).code ?? (err instanceof Error ? err.message : String(err));
    throw new Error(`cannot read env file ${file}: ${reason}`);
  }
  const set: string[] = [];
  for (const [name, value] of Object.entries(parseEnv(text))) {
    if (env[name] !== undefined) continue;
    env[name] = value;
    set.push(name);
  }
  return set;
}
