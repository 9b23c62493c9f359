import { describe, expect, it } from 'vitest';
import { parseEvent } from './events.js';

const ID = '9b18cafc6f2e567701aff0a7d9dfd1c8fe6d47d51d24b116032d1553dc8c9c7d';
const NET = 'f0e1d2c3b4a5968778695a4b3c2d1e0ff0e1d2c3b4a5968778695a4b3c2d1e0f';

/** A line as Podman 4.3.1's compatible API writes it (captured from a real run). */
const podman = (action: string, extra: Record<string, string> = {}) =>
  JSON.stringify({
    status: action,
    id: ID,
    from: 'localhost/busybox-httpd:test',
    Type: 'container',
    Action: action,
    Actor: {
      ID,
      Attributes: {
        containerExitCode: '0',
        image: 'localhost/busybox-httpd:test',
        name: 'web',
        podId: '',
        'proxy.domain': 'a.test',
        ...extra,
      },
    },
    scope: 'local',
    time: 1795554911,
    timeNano: 1795554911000000000,
  });

/** A line as Docker Engine writes it. */
const docker = (action: string) =>
  JSON.stringify({
    status: action,
    id: ID,
    from: 'busybox',
    Type: 'container',
    Action: action,
    Actor: { ID, Attributes: { image: 'busybox', name: 'web', 'proxy.domain': 'a.test', 'com.example': 'x' } },
    scope: 'local',
    time: 1795554911,
    timeNano: 1795554911000000000,
  });

describe('parseEvent', () => {
  it.each([
    ['start', 'up'],
    ['restart', 'up'],
    ['unpause', 'up'],
    ['die', 'gone'],
    ['stop', 'gone'],
    ['destroy', 'gone'],
    ['remove', 'gone'],
    ['pause', 'gone'],
    ['oom', 'gone'],
  ])('container %s → %s (both runtimes)', (action, kind) => {
    for (const line of [podman(action), docker(action)]) {
      expect(parseEvent(line)).toMatchObject({ kind, id: ID, action, labels: { 'proxy.domain': 'a.test' } });
    }
  });

  it.each(['create', 'init', 'cleanup', 'kill', 'attach', 'exec_start: sh -c true', 'exec_die', 'rename'])(
    'ignores %s (kill: a signal may leave the container running; die follows a fatal one)',
    (action) => {
      expect(parseEvent(docker(action))).toBeNull();
    },
  );

  it('keeps only proxy.* labels and the time in ns', () => {
    const event = parseEvent(docker('start'));
    expect(event).toEqual({
      kind: 'up',
      id: ID,
      action: 'start',
      labels: { 'proxy.domain': 'a.test' },
      timeNano: BigInt(1795554911000000000),
    });
  });

  it("reads Docker's health_status: <state>", () => {
    expect(parseEvent(docker('health_status: healthy'))).toMatchObject({ kind: 'health', health: 'healthy' });
    expect(parseEvent(docker('health_status: unhealthy'))).toMatchObject({ kind: 'health', health: 'unhealthy' });
    expect(parseEvent(docker('health_status: starting'))).toMatchObject({ kind: 'health', health: 'starting' });
  });

  it("reads Podman's health_status event: the state in the attributes (4.6+), or none (4.3: inspect)", () => {
    expect(parseEvent(podman('health_status', { health_status: 'unhealthy' }))).toMatchObject({
      kind: 'health',
      id: ID,
      health: 'unhealthy',
    });
    expect(parseEvent(podman('health_status'))).toMatchObject({ kind: 'health', id: ID, health: null });
  });

  it('a health state it does not know is an invalid event', () => {
    expect(parseEvent(docker('health_status: sick'))).toMatchObject({ kind: 'invalid' });
  });

  it("network connect/disconnect: Docker's (Actor = network) and Podman's (Actor = container)", () => {
    const dockerLine = JSON.stringify({
      Type: 'network',
      Action: 'connect',
      Actor: { ID: NET, Attributes: { container: ID, name: 'backend', type: 'bridge' } },
      timeNano: 5,
    });
    expect(parseEvent(dockerLine)).toEqual({
      kind: 'network',
      id: ID,
      action: 'connect',
      network: 'backend',
      timeNano: 5n,
    });
    const podmanLine = JSON.stringify({
      status: 'disconnect',
      id: ID,
      Type: 'network',
      Action: 'disconnect',
      Actor: { ID, Attributes: { containerExitCode: '0', image: '', name: 'web', podId: '' } },
      time: 7,
    });
    expect(parseEvent(podmanLine)).toEqual({
      kind: 'network',
      id: ID,
      action: 'disconnect',
      network: '',
      timeNano: 7_000_000_000n,
    });
    expect(parseEvent(JSON.stringify({ Type: 'network', Action: 'create', Actor: { ID: NET } }))).toBeNull();
  });

  it('old API versions: status and id only', () => {
    expect(parseEvent(JSON.stringify({ status: 'die', id: ID, time: 1 }))).toMatchObject({ kind: 'gone', id: ID });
  });

  it('other types are ignored; bad lines are invalid, never thrown', () => {
    expect(parseEvent(JSON.stringify({ Type: 'image', Action: 'pull', Actor: { ID: 'x' } }))).toBeNull();
    expect(parseEvent('{"Type":"container"')).toMatchObject({ kind: 'invalid' });
    expect(parseEvent('[1,2]')).toMatchObject({ kind: 'invalid' });
    expect(parseEvent('null')).toMatchObject({ kind: 'invalid' });
    expect(parseEvent(JSON.stringify({ Type: 'container', Action: 'start' }))).toMatchObject({ kind: 'invalid' });
  });
});
