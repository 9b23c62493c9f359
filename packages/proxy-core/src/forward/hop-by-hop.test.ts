import { describe, expect, it } from 'vitest';
import { stripHopByHop } from './hop-by-hop.js';

describe('stripHopByHop', () => {
  it('drops every hop-by-hop header and those Connection names, from rawHeaders or the object', () => {
    const make = () => ({
      connection: 'close, X-Private',
      'keep-alive': 'timeout=5',
      'proxy-connection': 'keep-alive',
      'proxy-authorization': 'Basic x',
      'proxy-authenticate': 'Basic',
      te: 'trailers',
      trailer: 'x',
      'transfer-encoding': 'chunked',
      upgrade: 'h2c',
      'x-private': '1',
      host: 'a.test',
      'x-keep': 'yes',
    });
    const raw = Object.entries(make()).flatMap(([k, v]) => [k.replace(/^./, (c) => c.toUpperCase()), v]);
    for (const stripped of [stripHopByHop(make(), raw), stripHopByHop(make())]) {
      expect(stripped).toEqual({ host: 'a.test', 'x-keep': 'yes' });
    }
  });
});
