/**
 * What artifacts need beyond JSON: an upload's body from bytes or a stream, its metadata as a
 * header, and a download's content with what its answer says of it.
 */
import { APIConnectionError, SessionaryError } from "./errors.js";
import { jsonText, textBody, type Upload } from "./raw.js";

/**
 * What an upload sends: bytes (a `Uint8Array`, an `ArrayBuffer`, a `Blob` or `File`, a string
 * as UTF-8), which are sent again when the connection was refused, or a stream (a
 * `ReadableStream`, or any async iterable of `Uint8Array`s: a Node `fs.createReadStream()`),
 * read as it is sent and so sent once.
 */
export type ArtifactData =
  | Uint8Array
  | ArrayBuffer
  | Blob
  | string
  | ReadableStream<Uint8Array>
  | AsyncIterable<Uint8Array>;

/** Which bytes of the content to download: from `start` to `end` (inclusive, as HTTP counts;
 * to the last byte without it), or the `last` n bytes. */
export type ByteRange = { start: number; end?: number } | { last: number };

/** A download (`downloadArtifact`): the content's bytes, and what the answer says of them. */
export interface ArtifactContent {
  /** The content, or the part of it `range` asked for; empty for a reference. */
  data: Uint8Array;
  /** Its media type, as it was saved (a text: `text/plain; charset=utf-8`); null for a reference. */
  mimeType: string | null;
  /** The version served (its `Artifact-Version`); null where the answer does not say, as in a
   * browser on another origin, which shows a page only the headers the server exposes. */
  version: number | null;
  /** The SHA-256 of the whole content, in hex (its `ETag`); null for a reference. */
  sha256: string | null;
  /** With `range`: the first and last byte these are, and the whole content's `size`. */
  range: { start: number; end: number; size: number } | null;
  /** A reference's URI, where the content is (saved as `fileData.fileUri`, other than an
   * `artifact://` one, which the server follows). */
  fileUri: string | null;
}

// Node (and Deno, Bun) send a stream over HTTP/1.1, so that every upload goes as one, which
// says when its last byte was read; a browser sends a stream over HTTP/2 alone, if at all, so
// there bytes go as they are.
const STREAMS_UPLOADS = Boolean(
  (globalThis as { process?: { versions?: { node?: string } } }).process?.versions?.node,
);
// The pieces bytes are streamed in: views of them, not copies.
const PIECE = 1 << 20;

/** The body of an upload of `data`. */
export function uploadOf(data: ArtifactData): Upload {
  if (typeof data === "string") data = new TextEncoder().encode(textBody(data));
  if (data instanceof ArrayBuffer) data = new Uint8Array(data);
  if (data instanceof Uint8Array || data instanceof Blob) {
    const bytes = data;
    return {
      replayable: true,
      open: () =>
        STREAMS_UPLOADS
          ? tracked(bytes instanceof Blob ? readerOf(bytes.stream()) : piecesOf(bytes))
          : // fetch takes bytes of an ArrayBuffer; the caller's may be of a SharedArrayBuffer too
            { body: bytes as Blob | Uint8Array<ArrayBuffer>, sent: Promise.resolve(), failure: () => undefined },
    };
  }
  const source = data instanceof ReadableStream ? readerOf(data) : data[Symbol.asyncIterator]();
  return { replayable: false, open: () => tracked(source) };
}

/** The media type an upload of `data` is sent with, when the call names none. */
export function mediaTypeOf(data: ArtifactData): string {
  if (typeof data === "string") return "text/plain; charset=utf-8";
  return (data instanceof Blob && data.type) || "application/octet-stream";
}

/** Custom metadata as the `Artifact-Metadata` header carries it: JSON, ASCII alone (a header's
 * bytes are not UTF-8), so every other character as a `\u` escape, which JSON reads back. */
export function metadataHeader(metadata: Record<string, unknown>): string {
  return jsonText(metadata, "header", "Artifact-Metadata").replace(
    /[\u007f-\uffff]/g,
    (character) => `\\u${character.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
}

/** The `Range` header of a `ByteRange`. */
export function rangeHeader(range: ByteRange): string {
  return "last" in range ? `bytes=-${range.last}` : `bytes=${range.start}-${range.end ?? ""}`;
}

/** What `answer` (a download's: 200, 206 or a reference's 303) carries. A body cut short (the
 * version deleted meanwhile, a dropped connection) is an `APIConnectionError`. */
export async function contentOf(answer: Response): Promise<ArtifactContent> {
  if (answer.type === "opaqueredirect") {
    throw new SessionaryError(
      "the artifact is a reference, whose URI a browser does not show: read its record's fileUri (getArtifactVersion)",
    );
  }
  const served = answer.headers.get("Artifact-Version");
  const version = served === null ? null : Number(served);
  if (answer.status === 303) {
    await answer.body?.cancel();
    const fileUri = answer.headers.get("Location");
    return { data: new Uint8Array(), mimeType: null, version, sha256: null, range: null, fileUri };
  }
  let data: Uint8Array;
  try {
    data = new Uint8Array(await answer.arrayBuffer());
  } catch (error) {
    throw new APIConnectionError(`the download ended before its last byte: ${String(error)}`, { cause: error });
  }
  const part = /^bytes (\d+)-(\d+)\/(\d+)$/.exec(answer.headers.get("Content-Range") ?? "");
  const [start, end, size] = (part ?? []).slice(1).map(Number);
  return {
    data,
    mimeType: answer.headers.get("Content-Type"),
    version,
    sha256: answer.headers.get("ETag")?.replaceAll('"', "") ?? null,
    range: part ? { start: start!, end: end!, size: size! } : null,
    fileUri: null,
  };
}

type Pieces = { next(): Promise<IteratorResult<Uint8Array>>; return?(): Promise<unknown> };

function readerOf(stream: ReadableStream<Uint8Array>): Pieces {
  const reader = stream.getReader();
  return {
    next: () => reader.read() as Promise<IteratorResult<Uint8Array>>,
    return: () => reader.cancel(),
  };
}

async function* piecesOf(bytes: Uint8Array): AsyncGenerator<Uint8Array, void, undefined> {
  for (let at = 0; at < bytes.length; at += PIECE) yield bytes.subarray(at, at + PIECE);
}

/** A stream of `source`'s pieces for fetch to send, saying when fetch has read the last, and
 * keeping the source's own error if reading it fails. */
function tracked(source: Pieces): ReturnType<Upload["open"]> {
  let done!: () => void;
  const sent = new Promise<void>((resolve) => (done = resolve));
  let failure: unknown;
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const piece = await source.next();
        if (piece.done) {
          controller.close();
          done();
        } else if (piece.value instanceof Uint8Array) {
          controller.enqueue(piece.value);
        } else {
          throw new TypeError(`an upload's pieces are Uint8Arrays, not ${typeof piece.value}`);
        }
      } catch (error) {
        failure = error;
        controller.error(error);
      }
    },
    async cancel() {
      await source.return?.();
    },
  });
  return { body, sent, failure: () => failure };
}
