/** Where the ssq binary is: SSQ_BIN, else this platform's package's. */
export function binaryPath(): string;

export interface StartOptions {
  /** More flags for ssq, e.g. ["--log-format", "json"]. */
  args?: string[];
  /** How long to wait for /ready (10 s). */
  timeoutMs?: number;
}

export class Server {
  constructor(endpoint: string);
  /** The URL to give the AWS SDK as its endpoint. */
  readonly endpoint: string;
  readonly clock: {
    now(): Promise<number>;
    advance(seconds: number): Promise<number>;
  };
  readonly faults: {
    add(rules: object | object[]): Promise<unknown>;
    list(): Promise<object[]>;
    clear(): Promise<unknown>;
  };
  reset(): Promise<{ queues_deleted: number; topics_deleted: number }>;
  stop(): Promise<void>;
}

/** Starts an ssq with the control API and the virtual clock on a free port. */
export function start(options?: StartOptions): Promise<Server>;

/** The `<os>-<cpu>` platforms ssq is built for, one package each. */
export const PLATFORMS: readonly string[];
