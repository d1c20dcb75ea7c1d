import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface LoopbackRequest {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  /** The body parsed as JSON (undefined when it is not JSON). */
  body: unknown;
  text: string;
}

/** A JSON answer, or a server-sent event stream given whole (`sse`: the `event:`/`data:` lines). */
export type LoopbackReply = { status?: number; json: unknown } | { status?: number; sse: string };

export interface Loopback {
  /** http://127.0.0.1:PORT — point an SDK's baseURL here. */
  baseURL: string;
  /** Every request received, in order. */
  requests: LoopbackRequest[];
  close(): Promise<void>;
}

/**
 * An HTTP server on 127.0.0.1 (a free port) answering JSON, for testing real SDK clients against a provider's wire
 * format without a network. `handle` decides each reply; requests are recorded.
 */
export async function startLoopback(
  handle: (req: LoopbackRequest) => LoopbackReply | Promise<LoopbackReply>,
): Promise<Loopback> {
  const requests: LoopbackRequest[] = [];
  const server = createServer((req, res) => {
    let text = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (text += c));
    req.on('end', () => {
      let body: unknown;
      try {
        body = text ? JSON.parse(text) : undefined;
      } catch {
        body = undefined;
      }
      const request: LoopbackRequest = {
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        body,
        text,
      };
      requests.push(request);
      Promise.resolve(handle(request)).then(
        (reply) =>
          'sse' in reply
            ? res
                .writeHead(reply.status ?? 200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' })
                .end(reply.sse)
            : res
                .writeHead(reply.status ?? 200, { 'content-type': 'application/json' })
                .end(JSON.stringify(reply.json)),
        (err: unknown) =>
          res
            .writeHead(500, { 'content-type': 'application/json' })
            .end(JSON.stringify({ error: { message: String(err) } })),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    baseURL: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
