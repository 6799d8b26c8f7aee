/**
 * A typed client for Sessionary. `Sessionary` has a method per operation; `sessionary.raw` (or
 * `createSessionaryClient()`) is the low-level openapi-fetch client typed by the spec.
 */
export type { ArtifactContent, ArtifactData, ByteRange } from "./artifacts.js";
export {
  Sessionary,
  type DownloadOptions,
  type MemoryWriteOptions,
  type SessionHandle,
  type UploadOptions,
  type WriteOptions,
} from "./client.js";
export * from "./errors.js";
export {
  DEFAULT_URL,
  VERSION,
  createSessionaryClient,
  ifMatch,
  iterEvents,
  iterSessions,
  ok,
  paginate,
  versionOf,
  type CallOptions,
  type Fetch,
  type IfMatch,
  type SessionaryClient,
  type SessionaryOptions,
} from "./raw.js";
export type { components, operations, paths } from "./schema.js";
export type { Frame, StreamOptions } from "./stream.js";
export type * from "./types.js";
