// Type declarations of eventlogging.js, the EventLogging browser client.
// See docs/clients/browser.md.

/** Options of init(). */
export interface InitOptions {
  /** Base URL of the intake, e.g. "https://intake.example.org". */
  url: string;
  /** The `wiki` field of legacy capsules (e.g. "enwiki"). */
  wiki?: string;
  /** The `webHost` field of legacy capsules; default location.hostname. */
  webHost?: string;
  /**
   * 'respect' (default): when the browser sends Do-Not-Track
   * (navigator.doNotTrack === '1'), nothing is sent at all, not even the
   * stream configuration request. 'ignore': send anyway.
   */
  dnt?: 'respect' | 'ignore';
  /** Milliseconds between flushes of the queue; default 5000. */
  flushInterval?: number;
  /** Validate events against registered schemas and log problems; default false. */
  debug?: boolean;
  /**
   * Where the stream configuration (sample rates) is read; default
   * `${url}/v1/streams`. false disables sampling.
   */
  streamConfigUrl?: string | false;
  /** The unit of sampling; default 'session' (a token kept in sessionStorage). */
  sampling?: 'session' | 'pageview';
  /** Longest legacy beacon URL; longer events are refused; default 2000. */
  maxUrlLength?: number;
  /** Most events in one POST; default 100. */
  maxBatchEvents?: number;
  /** Most bytes in one POST; a single larger event is refused; default 60000. */
  maxBatchBytes?: number;
  /** Called when an event is refused or could not be handed to the browser. */
  onError?: (error: EventLoggingError) => void;
}

/**
 * What happened to an event: 'queued' (sent with the next flush),
 * 'do-not-track' (nothing is sent) or 'sampled-out'.
 */
export type Outcome = 'queued' | 'do-not-track' | 'sampled-out';

/** A problem found by client-side validation. */
export interface Violation {
  /** JSON pointer into the event, e.g. "/responseStart". */
  pointer: string;
  reason: string;
}

/** One stream of GET /v1/streams. */
export interface StreamConfig {
  name: string;
  schema_title?: string;
  topic?: string;
  sample_rate?: number;
}

/** Error codes of EventLoggingError. */
export type ErrorCode = 'not-initialised' | 'invalid-event' | 'too-large' | 'stream-config' | 'send-failed';

/** The error of a refused or undeliverable event. */
export class EventLoggingError extends Error {
  constructor(code: ErrorCode, message: string, details?: object);
  name: 'EventLoggingError';
  code: ErrorCode;
  details?: object;
}

/** Version of the client. */
export const VERSION: string;
/** The sessionStorage key of the session token used for sampling. */
export const SESSION_TOKEN_KEY: string;

/** Configures the client; calling it again replaces the options. */
export function init(options: InitOptions): void;

/**
 * Queues a legacy event: the capsule {schema, revision, event, webHost, wiki}.
 * Rejects with EventLoggingError 'too-large' when its beacon URL would exceed
 * maxUrlLength.
 */
export function logEvent(schema: string, revision: number, event: Record<string, unknown>): Promise<Outcome>;

/**
 * Queues an Event Platform event: sets meta.stream and dt; the event must
 * have $schema. Sampled by the stream's sample_rate.
 */
export function submit(stream: string, event: Record<string, unknown> & { $schema: string }): Promise<Outcome>;

/** Sends every queued event now. */
export function flush(): Promise<void>;

/** Number of events waiting for the next flush. */
export function pending(): number;

/** Registers a schema for validation in debug mode. */
export function registerSchema(name: string, revision: number | string, schema: object): void;

/** Validates an event against a JSON Schema (the keywords event schemas use). */
export function validate(schema: object, event: unknown): Violation[];

/** Whether the session (or page view) is in a sample of the rate in [0, 1]. */
export function inSample(rate: number, unit?: 'session' | 'pageview'): boolean;

/** The session token kept in sessionStorage. */
export function sessionToken(): string;
