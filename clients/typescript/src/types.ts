/**
 * Names for the generated schemas (`schema.ts`, from openapi/openapi.json), the frames of the
 * live streams, which the spec describes only as `text/event-stream`, and what an append did,
 * which the spec tells by status alone.
 */
import type { components } from "./schema.js";

export type Schemas = components["schemas"];
export type Session = Schemas["Session"];
export type SessionPage = Schemas["SessionPage"];
export type SessionCreate = Schemas["SessionCreate"];
export type SessionUpdate = Schemas["SessionUpdate"];
export type SessionFork = Schemas["SessionFork"];
export type ChildCreate = Schemas["ChildCreate"];
export type Event = Schemas["Event"];
export type EventIn = Schemas["EventIn"];
export type EventPage = Schemas["EventPage"];
export type QueuedEvent = Schemas["QueuedEvent"];
export type EventsRemoved = Schemas["EventsRemoved"];
export type Trimmed = Schemas["Trimmed"];
export type Content = Schemas["Content"];
export type State = Schemas["State"];
export type Outcome = Schemas["Outcome"];
export type ContextView = Schemas["ContextView"];
export type CompactionStrategy = Schemas["CompactionStrategy"];
export type ToolCall = Schemas["ToolCall"];
export type Healed = Schemas["HealResult"];
export type SearchPage = Schemas["SearchPage"];
export type SearchHit = Schemas["SearchHit"];
export type AppPage = Schemas["AppPage"];
export type AppSummary = Schemas["AppSummary"];
export type UserPage = Schemas["UserPage"];
export type UserSummary = Schemas["UserSummary"];
export type AppUsage = Schemas["AppUsage"];
export type EventCount = Schemas["EventCount"];
export type KeyScope = Schemas["KeyScope"];
export type Health = Schemas["Health"];
export type Readiness = Schemas["Readiness"];
export type ArtifactVersion = Schemas["ArtifactVersion"];
export type ArtifactPage = Schemas["ArtifactPage"];
export type ArtifactVersionPage = Schemas["ArtifactVersionPage"];
/** An artifact as ADK's `saveArtifact` takes it: a `Part` with one of `inlineData` (base64),
 * `text` or `fileData` (a reference by URI). */
export type ArtifactPart = Schemas["ArtifactPart"];
/** A memory of a user or of the whole app: a text of its own (`kind` text), or an event of a
 * session added to memory (`kind` event). `revision` is what `ifMatch` takes. */
export type Memory = Schemas["Memory"];
export type MemoryPage = Schemas["MemoryPage"];
export type MemoryCreate = Schemas["MemoryCreate"];
export type MemoryUpdate = Schemas["MemoryUpdate"];
export type MemorySource = Schemas["MemorySource"];
export type MemoryRevision = Schemas["MemoryRevisionEntry"];
export type MemoryRevisionPage = Schemas["MemoryRevisionPage"];
/** A vector of a model of the client's, sent with a memory or a recall. */
export type Embedding = Schemas["Embedding"];
export type RecallRequest = Schemas["RecallRequest"];
export type RecallResult = Schemas["RecallResult"];
export type RecalledMemory = Schemas["RecalledMemory"];
export type Remembered = Schemas["RememberResult"];
export type EmbeddingsStatus = Schemas["EmbeddingsStatus"];
/** One record of the audit log: which key (`keyId`, null with keys off) did what (`action`,
 * with ids and counts in `detail`, never content) when, to which app and user (`user`, a keyed
 * hash of the user's id, never the id), and how it went (`outcome`). */
export type AuditRecord = Schemas["AuditRecord"];
export type AuditPage = Schemas["AuditPage"];
/** An erase of a user (`eraseUser`, `getErasure`): `running` (the user's writes refused, what
 * is left being deleted) or `done`; `removed` counts the rows removed so far by kind
 * (`sessions`, `events`, `memories`, …), `deletedKeyIds` the user's API keys deleted. */
export type Erasure = Schemas["Erasure"];
/** What an import of a user's export did (`importUser`), in one transaction: what it
 * `created`, what was there already the same (`unchanged`: the same export again creates
 * nothing), by kind, and how many keys of the user's state it wrote. */
export type UserImport = Schemas["UserImport"];
export type UserImportCounts = Schemas["UserImportCounts"];
/** An erase of a whole app (`eraseApp`, `getAppErasure`), as `Erasure` without a user:
 * `removed` counts every user's rows and `appStates`, `deletedKeyIds` every key of the app. */
export type AppErasure = Schemas["AppErasure"];

/**
 * What an append did with its event (`appendEventOutcome`), as the Python client's `Appended`
 * says it: `stored` it now (201, with its `seq`); found it `replayed` (200: this id was stored
 * before with the same content, by an earlier call or an attempt of this one whose answer was
 * lost; nothing was written); or `acknowledged` a `partial` one (202: echoed, never stored).
 */
export interface Appended {
  event: Event;
  outcome: "stored" | "replayed" | "acknowledged";
}

/**
 * A frame of a session's stream (`streamEvents`): `event` names the change, `id` is the
 * version it took (an appended event's seq), `data` what changed.
 */
export type SessionChange =
  | { event: "appended"; id: number; data: Event }
  | {
      event: "updated";
      id: number;
      data: { version: number; event: Event | null; removedEventIds: string[] };
    }
  | { event: "removed"; id: number; data: EventsRemoved }
  | { event: "trimmed" | "reset"; id: number; data: Trimmed }
  /** Writes other than appends came after the position resumed from: read the session again. */
  | { event: "resync"; id: number; data: { version: number } }
  | { event: "closed"; id: number; data: { version: number; outcome: Outcome } }
  | { event: "deleted"; id: undefined; data: Record<string, never> }
  /** One of the session's forks or children was created, closed or deleted. */
  | {
      event: "child";
      id: undefined;
      data: {
        sessionId: string;
        change: "created" | "closed" | "deleted";
        kind?: Schemas["Kind"];
        outcome?: Outcome;
      };
    };

/** A frame of a user's or an app's stream (`streamSessions`, `streamAppSessions`): one of its
 * sessions created, updated, closed or deleted; or `erased`, when a user (`userId`) or the whole
 * app (`userId` `null`) is erased, after which a user's stream ends (an app's, for the app's). */
export type SessionsChange =
  | {
      event: "created" | "updated" | "closed" | "deleted";
      id: undefined;
      data: {
        userId: string;
        sessionId: string;
        version: number;
        kind?: Schemas["Kind"];
        parentId?: string | null;
        outcome?: Outcome;
      };
    }
  | { event: "erased"; id: undefined; data: { userId: string | null } };
