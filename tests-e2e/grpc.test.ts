import { readFileSync } from 'node:fs';
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitUntil } from './support/admin.js';
import { curlHttps } from './support/https-client.js';
import { type RunningProxyd, startProxyd } from './support/proxyd.js';

interface Msg {
  text: string;
  n?: number;
}

const json = {
  serialize: (v: Msg) => Buffer.from(JSON.stringify(v)),
  deserialize: (b: Buffer) => JSON.parse(b.toString()) as Msg,
};
const method = (name: string, requestStream: boolean, responseStream: boolean) => ({
  path: `/proxyd.test.Echo/${name}`,
  requestStream,
  responseStream,
  requestSerialize: json.serialize,
  requestDeserialize: json.deserialize,
  responseSerialize: json.serialize,
  responseDeserialize: json.deserialize,
});
/** A gRPC service without a .proto: JSON messages, as grpc-js allows. */
const SERVICE = {
  unary: method('Unary', false, false),
  count: method('Count', false, true),
  chat: method('Chat', true, true),
  missing: method('Missing', false, false),
} as unknown as grpc.ServiceDefinition;

/** The generic client's methods for {@link SERVICE}. */
interface EchoClient extends grpc.Client {
  unary(m: Msg, md: grpc.Metadata, cb: (e: grpc.ServiceError | null, r: Msg) => void): grpc.ClientUnaryCall;
  count(m: Msg): grpc.ClientReadableStream<Msg>;
  chat(): grpc.ClientDuplexStream<Msg, Msg>;
  missing(m: Msg, cb: (e: grpc.ServiceError | null) => void): grpc.ClientUnaryCall;
}

// Issue 34, group 4: a real gRPC server and client (@grpc/grpc-js) through the
// built daemon: the client speaks HTTP/2 over TLS (local CA) to proxyd,
// proxyd speaks h2c to the server (`reverse_proxy h2c://…`). Unary,
// server-streaming and bidirectional calls; trailers (grpc-status, trailing
// metadata) and a Trailers-Only error arrive intact.
describe('gRPC behind proxyd (built daemon, @grpc/grpc-js)', () => {
  let server: grpc.Server;
  let proxyd: RunningProxyd;
  let client: EchoClient;

  beforeAll(async () => {
    server = new grpc.Server();
    server.addService(SERVICE, {
      unary: (call: grpc.ServerUnaryCall<Msg, Msg>, done: grpc.sendUnaryData<Msg>) => {
        const trailer = new grpc.Metadata();
        trailer.set('x-served-by', 'echo-1');
        done(null, { text: `echo ${call.request.text} (${call.metadata.get('x-caller')[0]})` }, trailer);
      },
      count: (call: grpc.ServerWritableStream<Msg, Msg>) => {
        for (let i = 1; i <= (call.request.n ?? 0); i++) call.write({ text: `n${i}`, n: i });
        call.end();
      },
      chat: (call: grpc.ServerDuplexStream<Msg, Msg>) => {
        call.on('data', (m: Msg) => call.write({ text: m.text.toUpperCase() }));
        call.on('end', () => call.end());
      },
      missing: (_call: grpc.ServerUnaryCall<Msg, Msg>, done: grpc.sendUnaryData<Msg>) => {
        done({ code: grpc.status.NOT_FOUND, details: 'no such thing' });
      },
    });
    const port = await new Promise<number>((resolve, reject) =>
      server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) =>
        err ? reject(err) : resolve(p),
      ),
    );
    proxyd = await startProxyd({
      sites: `grpc.test {
	reverse_proxy h2c://127.0.0.1:${port}
}
`,
    });
    const root = path.join(proxyd.dir, 'certs', 'ca', 'local', 'root.crt');
    await waitUntil(async () => (await curlHttps('grpc.test', proxyd.httpsPort, root)).ok, 10_000);
    const Client = grpc.makeGenericClientConstructor(SERVICE as never, 'Echo');
    client = new Client(`127.0.0.1:${proxyd.httpsPort}`, grpc.credentials.createSsl(readFileSync(root)), {
      'grpc.ssl_target_name_override': 'grpc.test',
      'grpc.default_authority': 'grpc.test',
    }) as never;
  });

  afterAll(async () => {
    client?.close();
    server?.forceShutdown();
    await proxyd?.stop();
  });

  it('answers a unary call, with its trailing metadata and status', async () => {
    const md = new grpc.Metadata();
    md.set('x-caller', 'e2e');
    const { reply, status } = await new Promise<{ reply: Msg; status: grpc.StatusObject }>((resolve, reject) => {
      let reply: Msg | undefined;
      const call = client.unary({ text: 'hi' }, md, (err: grpc.ServiceError | null, r: Msg) => {
        if (err) reject(err);
        else reply = r;
      }) as grpc.ClientUnaryCall;
      call.on('status', (status: grpc.StatusObject) => resolve({ reply: reply as Msg, status }));
    });
    expect(reply).toEqual({ text: 'echo hi (e2e)' });
    expect(status.code).toBe(grpc.status.OK);
    expect(status.metadata.get('x-served-by')).toEqual(['echo-1']);
  });

  it('streams from the server, and both ways', async () => {
    const counted = await new Promise<Msg[]>((resolve, reject) => {
      const got: Msg[] = [];
      const call = client.count({ text: '', n: 5 }) as grpc.ClientReadableStream<Msg>;
      call.on('data', (m: Msg) => got.push(m));
      call.on('error', reject);
      call.on('end', () => resolve(got));
    });
    expect(counted.map((m) => m.n)).toEqual([1, 2, 3, 4, 5]);
    const chat = client.chat() as grpc.ClientDuplexStream<Msg, Msg>;
    const replies: string[] = [];
    const ended = new Promise<void>((resolve, reject) => {
      chat.on('data', (m: Msg) => replies.push(m.text));
      chat.on('error', reject);
      chat.on('end', () => resolve());
    });
    for (const word of ['one', 'two', 'three']) chat.write({ text: word });
    chat.end();
    await ended;
    expect(replies).toEqual(['ONE', 'TWO', 'THREE']);
  });

  it('relays an error status (Trailers-Only) as the server set it', async () => {
    const err = await new Promise<grpc.ServiceError>((resolve) => {
      client.missing({ text: 'x' }, (e: grpc.ServiceError | null) => resolve(e as grpc.ServiceError));
    });
    expect(err.code).toBe(grpc.status.NOT_FOUND);
    expect(err.details).toBe('no such thing');
  });
});
