/**
 * Live streams read over fetch rather than `EventSource`, which cannot send the API key as a
 * header: the frames parsed as they arrive, and the connection opened again where it stopped
 * (`Last-Event-ID`) when it is lost, as an `EventSource` would.
 */
import { APIConnectionError } from "./errors.js";
import { backoffDelay, sleep, type CallOptions, type RetryPolicy } from "./raw.js";

/** One server-sent event: its `event:` name, its `id:` (the position it carries), its
 * `data:` as JSON. */
export interface Frame {
  event: string;
  id: number | undefined;
  data: unknown;
}

/** A stream's options: those of any call, `timeout` and `maxRetries` for each connection. */
export interface StreamOptions extends CallOptions {
  /** Ends the iteration (cleanly: the loop just stops) when it aborts. */
  signal?: AbortSignal;
  /** Milliseconds without a byte, not even a heartbeat, after which the connection is taken
   * for lost and opened again (default 60 000: the server's heartbeats come every 15 s). */
  idleTimeout?: number;
}

/** Opens the stream, after `position` when there is one, closed by `signal`. */
export type Open = (
  position: number | undefined,
  signal: AbortSignal,
) => Promise<ReadableStream<Uint8Array> | undefined>;

/**
 * The frames of a stream until one that `ends` says is its last, across connections: one lost (dropped,
 * ended by the server, silent past `idleTimeout`) is opened again after the last `id` seen,
 * `policy.retries` times in a row at most before an `APIConnectionError` (with the
 * `requestId` the stream is opened with); any byte received resets that count. Opening it is
 * a read, resent as the client resends reads.
 */
export async function* follow(
  open: Open,
  position: number | undefined,
  ends: (frame: Frame) => boolean,
  policy: RetryPolicy,
  { signal: stop, idleTimeout = 60_000 }: StreamOptions,
  requestId: string | undefined,
): AsyncGenerator<Frame, void, undefined> {
  for (let losses = 0; ; ) {
    const connection = new AbortController();
    // Armed only while waiting for bytes, not while the caller holds a frame.
    const watch: Watch = async (read) => {
      const idle = setTimeout(() => connection.abort(), idleTimeout);
      try {
        const chunk = await read;
        if (!chunk.done) losses = 0;
        return chunk;
      } finally {
        clearTimeout(idle);
      }
    };
    let lost: unknown;
    try {
      const body = await open(
        position,
        stop ? AbortSignal.any([stop, connection.signal]) : connection.signal,
      );
      for await (const frame of body ? frames(body, watch) : []) {
        position = frame.id ?? position;
        yield frame;
        if (ends(frame)) return;
      }
      lost = new Error("the server ended the stream");
    } catch (error) {
      if (stop?.aborted) return;
      // A dropped connection is fetch's TypeError; a silent one, the abort above.
      if (!(error instanceof TypeError || connection.signal.aborted)) throw error;
      lost = error;
    } finally {
      connection.abort();
    }
    if (++losses > policy.retries) {
      throw new APIConnectionError(`the stream was lost ${losses} times in a row`, {
        cause: lost,
        requestId,
      });
    }
    try {
      await sleep(backoffDelay(policy, losses - 1), stop);
    } catch {
      return; // stopped while waiting
    }
  }
}

type Chunk = ReadableStreamReadResult<Uint8Array>;
/** Awaits a read of the body (to time it, to count it). */
type Watch = (read: Promise<Chunk>) => Promise<Chunk>;

/** The frames of a `text/event-stream` body as they arrive, comments (heartbeats) skipped. */
async function* frames(
  body: ReadableStream<Uint8Array>,
  watch: Watch,
): AsyncGenerator<Frame, void, undefined> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  let fields: { event?: string; id?: string; data?: string } = {};
  try {
    for (;;) {
      const { done, value } = await watch(reader.read());
      if (done) return;
      buffer += decoder.decode(value, { stream: true });
      // A line ends at CR, LF or CRLF; a CR last in the buffer may be the start of a CRLF.
      const lines = buffer.split(/\r\n|\r(?!$)|\n/);
      buffer = lines.pop()!;
      for (const line of lines) {
        if (line === "") {
          if (fields.data !== undefined) {
            const id = fields.id === undefined ? undefined : Number(fields.id);
            yield { event: fields.event ?? "message", id, data: JSON.parse(fields.data) };
          }
          fields = {};
          continue;
        }
        const colon = line.indexOf(":");
        if (colon === 0) continue; // a comment
        const name = colon < 0 ? line : line.slice(0, colon);
        const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
        if (name === "data") fields.data = fields.data === undefined ? value : `${fields.data}\n${value}`;
        else if (name === "event" || name === "id") fields[name] = value;
      }
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
}
