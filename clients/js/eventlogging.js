// EventLogging browser client: a dependency-free ES module.
//
//   import * as eventlogging from 'https://intake.example.org/static/eventlogging.js';
//   eventlogging.init({ url: 'https://intake.example.org', wiki: 'enwiki' });
//   eventlogging.logEvent('NavigationTiming', 7, { responseStart: 120, loadEventEnd: 950 });
//
// Events are queued and sent in batches with navigator.sendBeacon
// (POST /v1/events?hasty=true, text/plain, a JSON array) every
// flushInterval milliseconds and when the page is hidden or unloaded
// (visibilitychange to hidden, pagehide). When sendBeacon is missing or
// refuses a batch, legacy events fall back to the GET beacon
// (/beacon/event?<url-encoded JSON>;) and Event Platform events to
// fetch(..., {keepalive: true}). See docs/clients/browser.md.
//
// This file is served as-is (not minified) by the intake at
// GET /static/eventlogging.js; internal/intake/static/eventlogging.js is a
// copy kept identical by `go generate ./internal/intake` and a test.

/**
 * Options of {@link init}.
 * @typedef {object} InitOptions
 * @property {string} url Base URL of the intake, e.g. "https://intake.example.org".
 * @property {string} [wiki] The `wiki` field of legacy capsules (e.g. "enwiki").
 * @property {string} [webHost] The `webHost` field of legacy capsules; default location.hostname.
 * @property {'respect'|'ignore'} [dnt] 'respect' (default): when the browser sends
 *   Do-Not-Track (navigator.doNotTrack === '1'), nothing is sent at all, not even
 *   the stream configuration request. 'ignore': send anyway.
 * @property {number} [flushInterval] Milliseconds between flushes of the queue; default 5000.
 *   The queue is also flushed when the page is hidden or unloaded, and when it holds
 *   maxBatchEvents events.
 * @property {boolean} [debug] Validate events against schemas given to {@link registerSchema}
 *   and report problems with console.error; default false.
 * @property {string|false} [streamConfigUrl] Where the stream configuration (sample rates)
 *   is read; default `${url}/v1/streams`. false disables sampling: every stream is sent.
 * @property {'session'|'pageview'} [sampling] The unit of sampling: the session token
 *   kept in sessionStorage (default; a session is in or out of every stream's sample
 *   consistently) or a token made for each page view.
 * @property {number} [maxUrlLength] Longest legacy beacon URL; longer events are refused;
 *   default 2000 (the intake's intake.max_url_length).
 * @property {number} [maxBatchEvents] Most events in one POST; default 100.
 * @property {number} [maxBatchBytes] Most bytes in one POST (sendBeacon allows 64 KiB in
 *   flight); a single larger event is refused; default 60000.
 * @property {(error: EventLoggingError) => void} [onError] Called when an event is refused
 *   or could not be handed to the browser for sending.
 */

/**
 * What happened to an event: 'queued' (it will be sent with the next flush),
 * 'do-not-track' (the browser asks not to be tracked; nothing is sent) or
 * 'sampled-out' (the session is not in the stream's sample).
 * @typedef {'queued'|'do-not-track'|'sampled-out'} Outcome
 */

/**
 * A problem found by client-side validation: a JSON pointer into the event
 * and the reason.
 * @typedef {{pointer: string, reason: string}} Violation
 */

/**
 * One stream of the intake's stream configuration (GET /v1/streams).
 * @typedef {{name: string, schema_title?: string, topic?: string, sample_rate?: number}} StreamConfig
 */

/** Version of this client. */
export const VERSION = '1.0.0';

/** The sessionStorage key of the session token used for sampling. */
export const SESSION_TOKEN_KEY = 'eventlogging.sessionToken';

const LOG_PREFIX = '[eventlogging]';

/**
 * The error of a refused or undeliverable event. `code` is one of
 * 'not-initialised', 'invalid-event', 'too-large', 'stream-config',
 * 'send-failed'.
 */
export class EventLoggingError extends Error {
  /**
   * @param {string} code
   * @param {string} message
   * @param {object} [details]
   */
  constructor(code, message, details) {
    super(message);
    this.name = 'EventLoggingError';
    /** @type {string} */
    this.code = code;
    /** @type {object|undefined} */
    this.details = details;
  }
}

/**
 * A queued event.
 * @typedef {object} Item
 * @property {'legacy'|'stream'} kind
 * @property {string} json The event (legacy: the capsule) as JSON text.
 * @property {number} bytes UTF-8 length of json.
 * @property {string} [beaconUrl] Legacy events: the GET beacon URL.
 * @property {string} label Schema/revision or stream, for messages.
 */

/**
 * @typedef {object} State
 * @property {Required<Omit<InitOptions, 'wiki'|'onError'|'streamConfigUrl'>> & {wiki?: string, onError?: (e: EventLoggingError) => void, streamConfigUrl: string|false}} options
 * @property {Item[]} queue
 * @property {ReturnType<typeof setTimeout>|null} timer
 * @property {Promise<StreamConfig[]|null>|null} streams
 * @property {Map<string, object>} schemas
 * @property {string|null} pageviewToken
 */

/** @type {State|null} */
let state = null;
let listening = false;

/** Schemas given to registerSchema, by "name/revision"; they survive init. */
const schemas = new Map();

/**
 * Configures the client. Call it once, before logging; calling it again
 * replaces the options (queued events are kept).
 * @param {InitOptions} options
 */
export function init(options) {
  if (!options || typeof options.url !== 'string' || options.url === '') {
    throw new EventLoggingError('invalid-event', 'init: options.url (the intake base URL) is required');
  }
  if (options.dnt !== undefined && options.dnt !== 'respect' && options.dnt !== 'ignore') {
    throw new EventLoggingError('invalid-event', "init: options.dnt must be 'respect' or 'ignore'");
  }
  const url = options.url.replace(/\/+$/, '');
  const o = {
    url,
    wiki: options.wiki,
    webHost: options.webHost || (typeof location !== 'undefined' ? location.hostname : ''),
    dnt: options.dnt || 'respect',
    flushInterval: options.flushInterval ?? 5000,
    debug: !!options.debug,
    streamConfigUrl: options.streamConfigUrl === false ? false : (options.streamConfigUrl || url + '/v1/streams'),
    sampling: options.sampling || 'session',
    maxUrlLength: options.maxUrlLength || 2000,
    maxBatchEvents: options.maxBatchEvents || 100,
    maxBatchBytes: options.maxBatchBytes || 60000,
    onError: options.onError,
  };
  const old = state;
  state = {
    options: o,
    queue: old ? old.queue : [],
    timer: null,
    streams: null,
    schemas,
    pageviewToken: old ? old.pageviewToken : null,
  };
  if (old && old.timer !== null) {
    clearTimeout(old.timer);
  }
  if (o.streamConfigUrl !== false && !(o.dnt === 'respect' && doNotTrack())) {
    state.streams = loadStreams(o.streamConfigUrl);
  }
  if (!listening && typeof addEventListener === 'function') {
    listening = true;
    // pagehide fires on unload and when the page goes into the back/forward
    // cache; visibilitychange to hidden is the last event a mobile browser
    // reliably fires before it kills a page.
    addEventListener('pagehide', () => flush());
    if (typeof document !== 'undefined') {
      document.addEventListener('visibilitychange', () => {
        if (document.visibilityState === 'hidden') {
          flush();
        }
      });
    }
  }
  if (state.queue.length > 0) {
    schedule();
  }
}

/**
 * Logs a legacy EventLogging event: the capsule
 * {schema, revision, event, webHost, wiki} is queued and sent with the next
 * flush. An event whose GET beacon URL would exceed maxUrlLength (2,000
 * characters) is refused: the promise rejects with an EventLoggingError
 * ('too-large') and nothing is sent.
 * @param {string} schema Schema name, e.g. "NavigationTiming".
 * @param {number} revision Schema revision, e.g. 7.
 * @param {Record<string, unknown>} event The event's fields.
 * @returns {Promise<Outcome>}
 */
export function logEvent(schema, revision, event) {
  try {
    const s = ready();
    if (typeof schema !== 'string' || schema === '') {
      throw new EventLoggingError('invalid-event', 'logEvent: schema must be a non-empty string');
    }
    if (!Number.isInteger(revision)) {
      throw new EventLoggingError('invalid-event', `logEvent ${schema}: revision must be an integer`);
    }
    if (!isObject(event)) {
      throw new EventLoggingError('invalid-event', `logEvent ${schema}/${revision}: event must be an object`);
    }
    const label = `${schema}/${revision}`;
    if (s.options.dnt === 'respect' && doNotTrack()) {
      return Promise.resolve('do-not-track');
    }
    /** @type {Record<string, unknown>} */
    const capsule = { schema, revision, event };
    if (s.options.webHost) {
      capsule.webHost = s.options.webHost;
    }
    if (s.options.wiki !== undefined) {
      capsule.wiki = s.options.wiki;
    }
    const json = JSON.stringify(capsule);
    const beaconUrl = `${s.options.url}/beacon/event?${encodeURIComponent(json)};`;
    if (beaconUrl.length > s.options.maxUrlLength) {
      throw new EventLoggingError('too-large',
        `${label}: event refused: its beacon URL of ${beaconUrl.length} characters exceeds the ${s.options.maxUrlLength}-character limit`,
        { length: beaconUrl.length, limit: s.options.maxUrlLength });
    }
    debugValidate(s, schema, String(revision), event, label);
    enqueue(s, { kind: 'legacy', json, bytes: utf8Length(json), beaconUrl, label });
    return Promise.resolve('queued');
  } catch (e) {
    return refuse(e);
  }
}

/**
 * Submits an Event Platform event to a stream: meta.stream is set to the
 * stream and dt to the current time (ISO 8601) unless the event has one;
 * the event must name its schema in `$schema` (e.g.
 * "/analytics/search_satisfaction/1.0.0"). The stream's sample_rate from
 * the stream configuration decides, by the session token, whether the event
 * is sent. The caller's object is not modified.
 * @param {string} stream Stream name, e.g. "analytics.search_satisfaction".
 * @param {Record<string, unknown>} event The event, with $schema.
 * @returns {Promise<Outcome>}
 */
export function submit(stream, event) {
  let s;
  try {
    s = ready();
    if (typeof stream !== 'string' || stream === '') {
      throw new EventLoggingError('invalid-event', 'submit: stream must be a non-empty string');
    }
    if (!isObject(event)) {
      throw new EventLoggingError('invalid-event', `submit ${stream}: event must be an object`);
    }
    if (typeof event.$schema !== 'string' || event.$schema === '') {
      throw new EventLoggingError('invalid-event', `submit ${stream}: the event has no $schema`);
    }
  } catch (e) {
    return refuse(e);
  }
  if (s.options.dnt === 'respect' && doNotTrack()) {
    return Promise.resolve('do-not-track');
  }
  /** @type {Record<string, unknown>} */
  const ev = { ...event };
  ev.meta = { ...(isObject(event.meta) ? event.meta : {}), stream };
  if (ev.dt === undefined) {
    ev.dt = new Date().toISOString();
  }
  const streams = s.streams || Promise.resolve(null);
  return streams.then((list) => {
    if (s.options.streamConfigUrl !== false) {
      if (list === null) {
        throw new EventLoggingError('stream-config',
          `submit ${stream}: the stream configuration (${s.options.streamConfigUrl}) could not be read; event not sent`);
      }
      const cfg = findStream(list, stream);
      if (!cfg && s.options.debug) {
        console.warn(LOG_PREFIX, `stream ${stream} is not in the stream configuration; the intake will refuse its events`);
      }
      const rate = cfg && typeof cfg.sample_rate === 'number' ? cfg.sample_rate : 1;
      if (!inSample(rate, s.options.sampling)) {
        return /** @type {Outcome} */ ('sampled-out');
      }
    }
    const json = JSON.stringify(ev);
    const bytes = utf8Length(json);
    if (bytes > s.options.maxBatchBytes) {
      throw new EventLoggingError('too-large',
        `${stream}: event refused: ${bytes} bytes exceed the ${s.options.maxBatchBytes}-byte limit`,
        { length: bytes, limit: s.options.maxBatchBytes });
    }
    const m = /^\/?(.+)\/([^/]+)$/.exec(String(ev.$schema));
    if (m) {
      debugValidate(s, m[1], m[2], ev, `${stream} (${ev.$schema})`);
    }
    enqueue(s, { kind: 'stream', json, bytes, label: stream });
    return /** @type {Outcome} */ ('queued');
  }).catch(refuse);
}

/**
 * Sends every queued event now. Called by the timer and on pagehide and
 * visibilitychange (hidden); call it yourself before a navigation the
 * browser would not announce.
 * @returns {Promise<void>} Settles when every batch was handed to the browser
 *   (sendBeacon) or its fallback request finished.
 */
export function flush() {
  if (!state) {
    return Promise.resolve();
  }
  const s = state;
  if (s.timer !== null) {
    clearTimeout(s.timer);
    s.timer = null;
  }
  const items = s.queue.splice(0);
  const pending = [];
  for (const batch of batches(items, s.options)) {
    pending.push(sendBatch(s, batch));
  }
  return Promise.all(pending).then(() => undefined);
}

/**
 * Number of events waiting for the next flush.
 * @returns {number}
 */
export function pending() {
  return state ? state.queue.length : 0;
}

/**
 * Registers a schema for client-side validation in debug mode. Legacy
 * schemas: name and revision ("NavigationTiming", 7). Event Platform
 * schemas: title and version from $schema ("analytics/search_satisfaction",
 * "1.0.0").
 * @param {string} name
 * @param {number|string} revision
 * @param {object} schema A JSON Schema (draft 3 `required: true` properties work).
 */
export function registerSchema(name, revision, schema) {
  schemas.set(`${name}/${revision}`, schema);
}

/**
 * Whether the current session (or page view) is in a sample of the given
 * rate in [0, 1]; for legacy events, which carry no stream.
 * @param {number} rate
 * @param {'session'|'pageview'} [unit] default 'session'.
 * @returns {boolean}
 */
export function inSample(rate, unit) {
  if (!(rate > 0)) {
    return false;
  }
  if (rate >= 1) {
    return true;
  }
  const token = unit === 'pageview' ? pageviewToken() : sessionToken();
  return parseInt(token.slice(0, 8), 16) / 0x100000000 < rate;
}

/**
 * The session token: random hex kept in sessionStorage, so one tab's
 * session is in or out of a sample consistently.
 * @returns {string}
 */
export function sessionToken() {
  try {
    let t = sessionStorage.getItem(SESSION_TOKEN_KEY);
    if (!t || !/^[0-9a-f]{8,}$/i.test(t)) {
      t = randomToken();
      sessionStorage.setItem(SESSION_TOKEN_KEY, t);
    }
    return t;
  } catch {
    // sessionStorage can be missing or forbidden (privacy modes, sandboxed
    // frames): sample by page view instead.
    return pageviewToken();
  }
}

/**
 * Validates an event against a JSON Schema, with the keywords event schemas
 * use: type (incl. integer and draft 3's any), required (draft 3 and later),
 * properties, additionalProperties, items, enum, const, minimum, maximum,
 * minLength, maxLength, pattern. At the root, additionalProperties defaults
 * to false, as on the server.
 * @param {object} schema
 * @param {unknown} event
 * @returns {Violation[]} The problems, none when the event is valid.
 */
export function validate(schema, event) {
  /** @type {Violation[]} */
  const out = [];
  check(schema, event, '', out, true);
  return out;
}

// ---- internals ----

/** @returns {State} */
function ready() {
  if (!state) {
    throw new EventLoggingError('not-initialised', 'call init({url, ...}) before logging events');
  }
  return state;
}

/**
 * Rejects with e and reports it.
 * @param {unknown} e
 * @returns {Promise<never>}
 */
function refuse(e) {
  const err = e instanceof EventLoggingError ? e : new EventLoggingError('invalid-event', String(e && /** @type {Error} */ (e).message || e));
  report(err);
  return Promise.reject(err);
}

/** @param {EventLoggingError} err */
function report(err) {
  if (state && state.options.debug) {
    console.error(LOG_PREFIX, err.message);
  }
  if (state && typeof state.options.onError === 'function') {
    try {
      state.options.onError(err);
    } catch (e) {
      console.error(LOG_PREFIX, 'onError callback failed:', e);
    }
  }
}

function doNotTrack() {
  if (typeof navigator === 'undefined') {
    return false;
  }
  const n = /** @type {any} */ (navigator);
  const w = /** @type {any} */ (typeof window !== 'undefined' ? window : {});
  return [n.doNotTrack, w.doNotTrack, n.msDoNotTrack].some((v) => v === '1' || v === 'yes');
}

/**
 * @param {State} s
 * @param {Item} item
 */
function enqueue(s, item) {
  s.queue.push(item);
  if (s.queue.length >= s.options.maxBatchEvents) {
    flush();
    return;
  }
  schedule();
}

function schedule() {
  const s = state;
  if (!s || s.timer !== null) {
    return;
  }
  s.timer = setTimeout(() => {
    s.timer = null;
    flush();
  }, Math.max(0, s.options.flushInterval));
}

/**
 * Splits items into batches under the event and byte limits.
 * @param {Item[]} items
 * @param {State['options']} o
 * @returns {Item[][]}
 */
function batches(items, o) {
  const out = [];
  let cur = [];
  let size = 2;
  for (const it of items) {
    if (cur.length > 0 && (cur.length >= o.maxBatchEvents || size + it.bytes + 1 > o.maxBatchBytes)) {
      out.push(cur);
      cur = [];
      size = 2;
    }
    cur.push(it);
    size += it.bytes + 1;
  }
  if (cur.length > 0) {
    out.push(cur);
  }
  return out;
}

/**
 * Hands one batch to sendBeacon, or to the fallbacks when it refuses.
 * @param {State} s
 * @param {Item[]} batch
 * @returns {Promise<void>}
 */
function sendBatch(s, batch) {
  const body = '[' + batch.map((i) => i.json).join(',') + ']';
  const postUrl = s.options.url + '/v1/events?hasty=true';
  if (typeof navigator !== 'undefined' && typeof navigator.sendBeacon === 'function') {
    try {
      // A string body goes out as text/plain;charset=UTF-8: a CORS-safelisted
      // request, so no preflight.
      if (navigator.sendBeacon(postUrl, body)) {
        return Promise.resolve();
      }
    } catch {
      // fall through to the fallbacks
    }
  }
  const legacy = batch.filter((i) => i.kind === 'legacy');
  const streamed = batch.filter((i) => i.kind === 'stream');
  const sends = legacy.map((i) => getBeacon(s, i));
  if (streamed.length > 0) {
    sends.push(postKeepalive(s, postUrl, streamed));
  }
  return Promise.all(sends).then(() => undefined);
}

/**
 * The GET beacon of one legacy event.
 * @param {State} s
 * @param {Item} item
 * @returns {Promise<void>}
 */
function getBeacon(s, item) {
  const url = /** @type {string} */ (item.beaconUrl);
  if (typeof fetch === 'function') {
    return fetch(url, { keepalive: true, mode: 'no-cors', credentials: 'omit', cache: 'no-store' })
      .then(() => undefined, (e) => failed(s, [item], e));
  }
  if (typeof Image === 'function') {
    new Image().src = url;
    return Promise.resolve();
  }
  failed(s, [item], new Error('no sendBeacon, fetch or Image in this environment'));
  return Promise.resolve();
}

/**
 * POSTs Event Platform events with fetch(keepalive).
 * @param {State} s
 * @param {string} postUrl
 * @param {Item[]} items
 * @returns {Promise<void>}
 */
function postKeepalive(s, postUrl, items) {
  if (typeof fetch !== 'function') {
    failed(s, items, new Error('no sendBeacon or fetch in this environment'));
    return Promise.resolve();
  }
  const body = '[' + items.map((i) => i.json).join(',') + ']';
  return fetch(postUrl, {
    method: 'POST', body, keepalive: true, credentials: 'omit',
    headers: { 'Content-Type': 'text/plain;charset=UTF-8' },
  }).then((r) => {
    if (!r.ok) {
      failed(s, items, new Error(`HTTP ${r.status}`));
    }
  }, (e) => failed(s, items, e));
}

/**
 * @param {State} s
 * @param {Item[]} items
 * @param {unknown} cause
 */
function failed(s, items, cause) {
  const what = items.map((i) => i.label).join(', ');
  const err = new EventLoggingError('send-failed', `could not send ${items.length} event(s) (${what}): ${cause && /** @type {Error} */ (cause).message || cause}`, { count: items.length });
  if (s.options.debug) {
    console.error(LOG_PREFIX, err.message);
  }
  if (typeof s.options.onError === 'function') {
    try {
      s.options.onError(err);
    } catch (e) {
      console.error(LOG_PREFIX, 'onError callback failed:', e);
    }
  }
}

/**
 * @param {string} url
 * @returns {Promise<StreamConfig[]|null>} null when the configuration cannot be read.
 */
function loadStreams(url) {
  if (typeof fetch !== 'function') {
    return Promise.resolve(null);
  }
  return fetch(url, { credentials: 'omit' })
    .then((r) => {
      if (!r.ok) {
        throw new Error(`HTTP ${r.status}`);
      }
      return r.json();
    })
    .then((body) => (body && Array.isArray(body.streams) ? body.streams : []))
    .catch((e) => {
      if (state && state.options.debug) {
        console.error(LOG_PREFIX, `reading the stream configuration from ${url}: ${e && e.message || e}`);
      }
      return null;
    });
}

/**
 * Exact names first, then /regex/ names in order (as the intake does).
 * @param {StreamConfig[]} list
 * @param {string} name
 * @returns {StreamConfig|undefined}
 */
function findStream(list, name) {
  const exact = list.find((c) => c.name === name);
  if (exact) {
    return exact;
  }
  for (const c of list) {
    if (c.name.length > 2 && c.name.startsWith('/') && c.name.endsWith('/')) {
      try {
        if (new RegExp(c.name.slice(1, -1)).test(name)) {
          return c;
        }
      } catch {
        // a Go regex JavaScript cannot compile: skip it
      }
    }
  }
  return undefined;
}

function pageviewToken() {
  if (state) {
    if (!state.pageviewToken) {
      state.pageviewToken = randomToken();
    }
    return state.pageviewToken;
  }
  return randomToken();
}

function randomToken() {
  const b = new Uint8Array(10);
  crypto.getRandomValues(b);
  return Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
}

/** @param {string} str */
function utf8Length(str) {
  let n = 0;
  for (let i = 0; i < str.length; i++) {
    const c = str.charCodeAt(i);
    if (c < 0x80) {
      n += 1;
    } else if (c < 0x800) {
      n += 2;
    } else if (c >= 0xd800 && c <= 0xdbff && i + 1 < str.length) {
      n += 4;
      i++;
    } else {
      n += 3;
    }
  }
  return n;
}

/**
 * @param {unknown} v
 * @returns {v is Record<string, any>}
 */
function isObject(v) {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * In debug mode, validates against a registered schema and logs problems.
 * @param {State} s
 * @param {string} name
 * @param {string} revision
 * @param {unknown} event
 * @param {string} label
 */
function debugValidate(s, name, revision, event, label) {
  if (!s.options.debug) {
    return;
  }
  const schema = schemas.get(`${name}/${revision}`);
  if (!schema) {
    return;
  }
  const problems = validate(schema, event);
  if (problems.length > 0) {
    console.error(LOG_PREFIX, `${label}: invalid event (the intake will record an EventError): ` +
      problems.map((p) => `${p.pointer || '/'}: ${p.reason}`).join('; '), event);
  }
}

/**
 * @param {any} schema
 * @param {unknown} v
 * @param {string} ptr
 * @param {Violation[]} out
 * @param {boolean} root
 */
function check(schema, v, ptr, out, root) {
  if (!isObject(schema)) {
    return;
  }
  const add = (/** @type {string} */ p, /** @type {string} */ reason) => out.push({ pointer: p, reason });
  if (schema.type !== undefined) {
    const types = Array.isArray(schema.type) ? schema.type : [schema.type];
    if (!types.some((t) => hasType(v, t))) {
      add(ptr, `expected ${types.join(' or ')}, got ${typeName(v)}`);
      return;
    }
  }
  if (Array.isArray(schema.enum) && !schema.enum.some((e) => equal(e, v))) {
    add(ptr, `value must be one of ${schema.enum.map((e) => JSON.stringify(e)).join(', ')}`);
  }
  if ('const' in schema && !equal(schema.const, v)) {
    add(ptr, `value must be ${JSON.stringify(schema.const)}`);
  }
  if (typeof v === 'number') {
    if (typeof schema.minimum === 'number' && v < schema.minimum) {
      add(ptr, `must be >= ${schema.minimum}`);
    }
    if (typeof schema.maximum === 'number' && v > schema.maximum) {
      add(ptr, `must be <= ${schema.maximum}`);
    }
  }
  if (typeof v === 'string') {
    const len = Array.from(v).length;
    if (typeof schema.minLength === 'number' && len < schema.minLength) {
      add(ptr, `length must be >= ${schema.minLength}`);
    }
    if (typeof schema.maxLength === 'number' && len > schema.maxLength) {
      add(ptr, `length must be <= ${schema.maxLength}`);
    }
    if (typeof schema.pattern === 'string') {
      try {
        if (!new RegExp(schema.pattern, 'u').test(v)) {
          add(ptr, `does not match pattern ${schema.pattern}`);
        }
      } catch {
        // a pattern JavaScript cannot compile is left to the server
      }
    }
  }
  if (Array.isArray(v) && schema.items !== undefined && isObject(schema.items)) {
    v.forEach((x, i) => check(schema.items, x, `${ptr}/${i}`, out, false));
  }
  if (isObject(v)) {
    const props = isObject(schema.properties) ? schema.properties : {};
    const required = Array.isArray(schema.required) ? schema.required.slice() : [];
    for (const [k, p] of Object.entries(props)) {
      if (isObject(p) && p.required === true) {
        required.push(k); // draft 3
      }
    }
    for (const k of required) {
      if (!(k in v)) {
        add(`${ptr}/${escapePointer(k)}`, 'missing required property');
      }
    }
    let additional = schema.additionalProperties;
    if (additional === undefined && root) {
      additional = false;
    }
    for (const [k, x] of Object.entries(v)) {
      const p = `${ptr}/${escapePointer(k)}`;
      if (k in props) {
        check(props[k], x, p, out, false);
      } else if (additional === false) {
        add(p, 'additional property not allowed');
      } else if (isObject(additional)) {
        check(additional, x, p, out, false);
      }
    }
  }
}

/**
 * @param {unknown} v
 * @param {string} t
 */
function hasType(v, t) {
  switch (t) {
    case 'any': return true;
    case 'null': return v === null;
    case 'boolean': return typeof v === 'boolean';
    case 'string': return typeof v === 'string';
    case 'number': return typeof v === 'number' && Number.isFinite(v);
    case 'integer': return Number.isInteger(v);
    case 'array': return Array.isArray(v);
    case 'object': return isObject(v);
    default: return true;
  }
}

/** @param {unknown} v */
function typeName(v) {
  if (v === null) {
    return 'null';
  }
  if (Array.isArray(v)) {
    return 'array';
  }
  if (Number.isInteger(v)) {
    return 'integer';
  }
  return typeof v;
}

/**
 * @param {unknown} a
 * @param {unknown} b
 */
function equal(a, b) {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** @param {string} k */
function escapePointer(k) {
  return k.replace(/~/g, '~0').replace(/\//g, '~1');
}
