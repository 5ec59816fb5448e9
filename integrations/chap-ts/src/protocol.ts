// Messages between the hooks (main thread) and the worker thread.

/** main → worker: one audit entry: [workspace, seq, head after it (or null), entry JSON, first sight of ws (1/0)]. */
export type EntryMsg = [string, number, string | null, string, number];

export type ToWorker =
  | EntryMsg
  | { t: "gap"; ws: string; items: [number, string | null, string][]; unknown?: boolean }
  /** the Coordinator's entries at seqs evidentd already holds, to compare (answer to needCheck) */
  | { t: "check"; ws: string; items: [number, string | null, string][] }
  /** a wrapped store is in use: entries wait for their save before they are sent */
  | { t: "gate" }
  /** the store saved these workspaces: every seq below the count may be sent */
  | { t: "release"; r: [string, number][] }
  | { t: "flush"; id: number }
  | { t: "submit"; id: number; ws: string; hash: string; payload: string; contentType: string }
  | { t: "close" };

/** worker → main, on the worker's parent port (asynchronous). */
export type FromWorker =
  | { t: "log"; level: "info" | "warn" | "error"; msg: string; fields?: Record<string, unknown> }
  | { t: "flushed"; id: number; error?: string };

/** worker → main, on the synchronous port (read with receiveMessageOnPort while blocked). */
export type SyncFromWorker =
  | { t: "submitted"; id: number; receipt?: Record<string, unknown> | null; error?: string }
  | { t: "needGap"; ws: string; from: number; to: number }
  | { t: "needCheck"; ws: string; from: number; to: number };

export interface WorkerConfig {
  url: string;
  token?: string;
  spoolDir: string;
  sealWaitMs: number;
  flag: SharedArrayBuffer;
  syncPort: MessagePort | import("node:worker_threads").MessagePort;
  backoffMinMs: number;
  backoffMaxMs: number;
  refusedRetryMs: number;
  maxBatch: number;
}
