// What the tests share: fresh names on the live server, and local servers that misbehave on purpose.
import { randomUUID } from "node:crypto";
import { createServer, type IncomingHttpHeaders, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** An app of its own for each test, so that tests never see each other's sessions. */
export function freshApp(): string {
  return `ts-${randomUUID().slice(0, 8)}`;
}

export interface Received {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

export interface FakeServer {
  url: string;
  received: Received[];
  close: () => void;
}

/** A local HTTP server whose `answer` sees each request (numbered from 1) once its body is read. */
export async function fakeServer(
  answer: (request: Received, response: ServerResponse, n: number) => void,
): Promise<FakeServer> {
  const received: Received[] = [];
  const server = createServer(async (request, response) => {
    let body = "";
    for await (const chunk of request) body += chunk;
    const seen = { method: request.method!, url: request.url!, headers: request.headers, body };
    received.push(seen);
    answer(seen, response, received.length);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    received,
    close: () => {
      server.closeAllConnections();
      server.close();
    },
  };
}

/** Answers as an append would: the body back as JSON, with a seq. */
export function echo(request: Received, response: ServerResponse, status = 201): void {
  response.writeHead(status, { "Content-Type": "application/json", ETag: '"1"' });
  response.end(JSON.stringify({ ...JSON.parse(request.body || "{}"), seq: 1 }));
}

/** A problem+json answer, with `headers` besides. */
export function problem(
  response: ServerResponse,
  status: number,
  code: string,
  headers: Record<string, string> = {},
): void {
  response.writeHead(status, { "Content-Type": "application/problem+json", ...headers });
  response.end(
    JSON.stringify({ type: `urn:sessionary:problem:${code}`, title: code, status, detail: code, code }),
  );
}

/** The URL of a port nothing listens on: connections to it are refused. */
export async function refusedUrl(): Promise<string> {
  const server = await fakeServer(() => undefined);
  server.close();
  return server.url;
}
