<?php

declare(strict_types=1);

namespace EventLogging;

/**
 * EventLogging client for PHP 8: queues events during a request and sends
 * them in ONE POST to the intake's /v1/events when the request ends
 * (register_shutdown_function), with a short total timeout, so that a slow
 * or dead intake never slows a page. It never throws: failures are
 * returned (false), reported to the 'onError' callback and error_log().
 *
 *     EventLogging\EventLogging::configure(['url' => 'http://intake.example.org:8080', 'wiki' => 'enwiki']);
 *     EventLogging\EventLogging::logEvent('SearchQuery', 5, ['query' => 'kafka', 'results' => 42, 'source' => 'fulltext']);
 *
 * No extension and no Composer package is needed: HTTP is spoken over PHP
 * streams (stream_socket_client), with one deadline for connecting, sending
 * and reading the answer.
 *
 * With 'transport' => 'kafka' the same calls produce straight into Kafka
 * instead (EventLogging\Kafka\Producer, one produce per flush): each event
 * becomes a raw server-side line in the topic 'topic'
 * (eventlogging-server-side), "SEQID EventLogging JSON HOST TIME", which
 * the processors read by default and validate like any raw event:
 *
 *     EventLogging\EventLogging::configure(['transport' => 'kafka', 'brokers' => ['kafka1:9092', 'kafka2:9092']]);
 */
final class EventLogging
{
    /** Version of this client. */
    public const VERSION = '1.0.0';

    /** @var array<string, mixed> */
    private const DEFAULTS = [
        // Base URL of the intake, e.g. "http://intake.example.org:8080". Required.
        'url' => null,
        // 'wiki' and 'webHost' fields of legacy capsules (logEvent); webHost
        // defaults to $_SERVER['HTTP_HOST'] when set.
        'wiki' => null,
        'webHost' => null,
        // Seconds for the whole POST: connect, send, read the answer.
        'timeout' => 1.0,
        // Seconds for the TCP (and TLS) connection, within 'timeout'.
        'connectTimeout' => 1.0,
        // true: POST /v1/events?hasty=true (202 at once, validated later by the
        // processors); false: the synchronous path, with a result per event.
        'hasty' => false,
        // Most events queued in one request; past it logEvent returns false.
        'maxQueue' => 1000,
        // Send the queue when the request ends.
        'flushOnShutdown' => true,
        // At shutdown, end the response first (fastcgi_finish_request under
        // PHP-FPM) so the user never waits for the intake.
        'finishRequest' => true,
        // callable(string $message, array $context): void — each failure.
        'onError' => null,
        // callable(array $result): void — after each flush, see lastResult().
        'onResult' => null,
        // Write failures to error_log() as well.
        'errorLog' => true,
        'userAgent' => 'eventlogging-php-client/1',
        // null: HTTP to 'url'. 'kafka': produce to 'brokers' (see below).
        // callable(string $url, string $body, array $options): array — replaces
        // the HTTP transport (tests); returns ['status' => int, 'body' => string]
        // or ['error' => string].
        'transport' => null,
        // Kafka transport: bootstrap brokers ("host:port" each), required.
        'brokers' => null,
        // Kafka transport: the raw topic of the events.
        'topic' => 'eventlogging-server-side',
        // Kafka transport: further EventLogging\Kafka\Producer options (acks,
        // tls, sasl, clientId, metadataCache, metadataMaxAge); 'timeout' and
        // 'connectTimeout' are the ones above.
        'kafka' => [],
        // Kafka transport: the host named in each line (the uuid's recvFrom);
        // default gethostname().
        'recvFrom' => null,
    ];

    /** @var array<string, mixed> */
    private static array $config = self::DEFAULTS;

    /** @var list<array{json: string, label: string, time: int, legacy: bool}> */
    private static array $queue = [];

    private static ?Kafka\Producer $producer = null;

    /** Sequence number of the next Kafka line: a random start per process, then +1. */
    private static ?int $seqId = null;

    private static bool $shutdownRegistered = false;

    /** @var array<string, mixed>|null */
    private static ?array $last = null;

    /**
     * Sets options (see DEFAULTS above); unknown keys are reported and ignored.
     *
     * @param array<string, mixed> $options
     */
    public static function configure(array $options): bool
    {
        $ok = true;
        foreach ($options as $key => $value) {
            if (!array_key_exists($key, self::DEFAULTS)) {
                self::report("configure: unknown option '$key' ignored", ['option' => $key]);
                $ok = false;
                continue;
            }
            self::$config[$key] = $value;
        }
        self::$producer = null;
        if (isset(self::$config['url']) && is_string(self::$config['url'])) {
            self::$config['url'] = rtrim(self::$config['url'], '/');
        }
        return $ok;
    }

    /**
     * Queues a legacy EventLogging event: the capsule {schema, revision,
     * event, webHost, wiki}. Returns false (and reports why) when the client
     * is not configured, the queue is full or the event cannot be encoded.
     *
     * @param array<string, mixed>|object $event
     */
    public static function logEvent(string $schema, int $revision, array|object $event): bool
    {
        $capsule = ['schema' => $schema, 'revision' => $revision, 'event' => null];
        $fields = self::object($event, "$schema/$revision");
        if ($fields === null) {
            return false;
        }
        $capsule['event'] = $fields;
        $webHost = self::$config['webHost'] ?? ($_SERVER['HTTP_HOST'] ?? null);
        if (is_string($webHost) && $webHost !== '') {
            $capsule['webHost'] = $webHost;
        }
        if (is_string(self::$config['wiki']) && self::$config['wiki'] !== '') {
            $capsule['wiki'] = self::$config['wiki'];
        }
        return self::enqueue($capsule, "$schema/$revision", true);
    }

    /**
     * Queues an Event Platform event for a stream: meta.stream is set and dt
     * (ISO 8601, UTC) added unless present; the event must have '$schema'.
     *
     * @param array<string, mixed>|object $event
     */
    public static function submit(string $stream, array|object $event): bool
    {
        $ev = self::object($event, $stream);
        if ($ev === null) {
            return false;
        }
        $ev = (array) $ev;
        if (!isset($ev['$schema']) || !is_string($ev['$schema']) || $ev['$schema'] === '') {
            self::report("submit to stream $stream: the event has no \$schema", ['stream' => $stream]);
            return false;
        }
        $meta = $ev['meta'] ?? [];
        $meta = is_object($meta) ? (array) $meta : (is_array($meta) ? $meta : []);
        $meta['stream'] = $stream;
        $ev['meta'] = (object) $meta;
        if (!isset($ev['dt'])) {
            $ev['dt'] = (new \DateTimeImmutable('now', new \DateTimeZone('UTC')))->format('Y-m-d\TH:i:s.v\Z');
        }
        return self::enqueue((object) $ev, $stream, false);
    }

    /**
     * Sends every queued event now, in one POST. Returns true when the
     * intake took every event (201, or 202 for hasty); false otherwise —
     * details in lastResult(). Never throws. With the Kafka transport: one
     * produce, true when Kafka acknowledged every event (validation comes
     * later, in the processors: an invalid event becomes an EventError).
     */
    public static function flush(): bool
    {
        if (self::$queue === []) {
            return true;
        }
        $items = self::$queue;
        self::$queue = [];
        $start = hrtime(true);
        $result = ['ok' => false, 'status' => 0, 'error' => null, 'events' => count($items),
            'accepted' => 0, 'invalid' => 0, 'results' => [], 'elapsed' => 0.0];
        try {
            if (self::$config['transport'] === 'kafka') {
                $result = self::flushKafka($items, $result);
            } else {
                $url = self::$config['url'] . '/v1/events' . (self::$config['hasty'] ? '?hasty=true' : '');
                $body = '[' . implode(',', array_column($items, 'json')) . ']';
                $opts = [
                    'timeout' => (float) self::$config['timeout'],
                    'connectTimeout' => (float) self::$config['connectTimeout'],
                    'userAgent' => (string) self::$config['userAgent'],
                ];
                $transport = self::$config['transport'];
                $answer = is_callable($transport) ? $transport($url, $body, $opts) : self::post($url, $body, $opts);
                $result = self::interpret($answer, $items, $result);
            }
        } catch (\Throwable $e) {
            $result['error'] = get_class($e) . ': ' . $e->getMessage();
            self::report('flush failed: ' . $result['error'], ['events' => count($items)]);
        }
        $result['elapsed'] = (hrtime(true) - $start) / 1e9;
        self::$last = $result;
        $cb = self::$config['onResult'];
        if (is_callable($cb)) {
            try {
                $cb($result);
            } catch (\Throwable $e) {
                self::log('onResult callback failed: ' . $e->getMessage());
            }
        }
        return $result['ok'];
    }

    /**
     * The result of the last flush: ok, status (0 without an answer), error,
     * events (sent), accepted, invalid, results (the intake's per-event
     * entries) and elapsed (seconds); null before the first flush.
     *
     * @return array<string, mixed>|null
     */
    public static function lastResult(): ?array
    {
        return self::$last;
    }

    /** Number of events waiting for the flush. */
    public static function pending(): int
    {
        return count(self::$queue);
    }

    /** Forgets the queue, the options and the last result (tests). */
    public static function reset(): void
    {
        self::$queue = [];
        self::$config = self::DEFAULTS;
        self::$last = null;
        self::$producer = null;
    }

    /**
     * Runs at the end of the request: ends the response (PHP-FPM), then flushes.
     *
     * @internal
     */
    public static function shutdown(): void
    {
        if (!self::$config['flushOnShutdown'] || self::$queue === []) {
            return;
        }
        if (self::$config['finishRequest'] && function_exists('fastcgi_finish_request')) {
            fastcgi_finish_request();
        }
        self::flush();
    }

    /**
     * Parses a raw HTTP/1.x answer into status, headers (lower-case names)
     * and body (chunked transfer coding decoded).
     *
     * @internal exposed for the client's tests
     * @return array{status: int, headers: array<string, string>, body: string}|array{error: string}
     */
    public static function parseResponse(string $raw): array
    {
        $end = strpos($raw, "\r\n\r\n");
        if ($end === false || !preg_match('#^HTTP/\d(?:\.\d)? (\d{3})#', $raw, $m)) {
            return ['error' => 'malformed HTTP answer: ' . substr($raw, 0, 100)];
        }
        $headers = [];
        foreach (array_slice(explode("\r\n", substr($raw, 0, $end)), 1) as $line) {
            $p = strpos($line, ':');
            if ($p !== false) {
                $headers[strtolower(trim(substr($line, 0, $p)))] = trim(substr($line, $p + 1));
            }
        }
        $body = substr($raw, $end + 4);
        if (stripos($headers['transfer-encoding'] ?? '', 'chunked') !== false) {
            $decoded = '';
            $pos = 0;
            while (true) {
                $nl = strpos($body, "\r\n", $pos);
                if ($nl === false) {
                    return ['error' => 'truncated chunked answer'];
                }
                $size = hexdec(trim(explode(';', substr($body, $pos, $nl - $pos))[0]));
                if ($size === 0) {
                    break;
                }
                $decoded .= substr($body, $nl + 2, (int) $size);
                $pos = $nl + 2 + (int) $size + 2;
            }
            $body = $decoded;
        } elseif (isset($headers['content-length'])) {
            $body = substr($body, 0, (int) $headers['content-length']);
        }
        return ['status' => (int) $m[1], 'headers' => $headers, 'body' => $body];
    }

    // ---- internals ----

    /**
     * @param array<string, mixed>|object $event
     */
    private static function object(array|object $event, string $label): ?object
    {
        if (is_array($event) && $event !== [] && array_is_list($event)) {
            self::report("$label: the event must be an associative array (a JSON object), not a list", ['event' => $label]);
            return null;
        }
        return (object) $event;
    }

    private static function enqueue(array|object $value, string $label, bool $legacy): bool
    {
        if (self::$config['transport'] === 'kafka') {
            if (!is_array(self::$config['brokers']) || self::$config['brokers'] === []) {
                self::report("$label: not configured: the Kafka transport needs EventLogging::configure(['brokers' => [...]])", ['event' => $label]);
                return false;
            }
        } elseif (!is_string(self::$config['url']) || self::$config['url'] === '') {
            self::report("$label: not configured: call EventLogging::configure(['url' => ...]) first", ['event' => $label]);
            return false;
        }
        if (count(self::$queue) >= (int) self::$config['maxQueue']) {
            self::report("$label: queue full (maxQueue " . self::$config['maxQueue'] . '); event dropped', ['event' => $label]);
            return false;
        }
        try {
            $json = json_encode($value, JSON_THROW_ON_ERROR | JSON_UNESCAPED_SLASHES | JSON_UNESCAPED_UNICODE | JSON_PRESERVE_ZERO_FRACTION | JSON_INVALID_UTF8_SUBSTITUTE);
        } catch (\JsonException $e) {
            self::report("$label: cannot encode the event as JSON: " . $e->getMessage(), ['event' => $label]);
            return false;
        }
        self::$queue[] = ['json' => $json, 'label' => $label, 'time' => time(), 'legacy' => $legacy];
        if (!self::$shutdownRegistered) {
            self::$shutdownRegistered = true;
            register_shutdown_function([self::class, 'shutdown']);
        }
        return true;
    }

    /**
     * Produces the queued events to Kafka in one sendMany, as raw
     * server-side lines: "SEQID EventLogging JSON HOST TIME" (format
     * config.ServerSideFormat of the processors: the original's
     * "%{seqId}d EventLogging %j" and then "%{recvFrom}s %t"). Spaces in
     * the JSON are written \u0020, as the original PHP client did, since
     * %j ends at whitespace. A legacy capsule also carries recvFrom and
     * timestamp, so a processor reading with the original's format alone
     * finds them.
     *
     * @param list<array{json: string, label: string, time: int, legacy: bool}> $items
     * @param array<string, mixed> $result
     * @return array<string, mixed>
     */
    private static function flushKafka(array $items, array $result): array
    {
        $result['transport'] = 'kafka';
        $host = self::$config['recvFrom'];
        if (!is_string($host) || $host === '') {
            $host = gethostname() ?: 'localhost';
        }
        $host = (string) preg_replace('/[\x00-\x20]+/', '-', $host);
        $topic = (string) self::$config['topic'];
        self::$seqId ??= random_int(0, 1 << 52);
        $records = [];
        foreach ($items as $it) {
            $json = $it['json'];
            if ($it['legacy']) {
                $json = substr($json, 0, -1) . ',"recvFrom":' . json_encode($host) . ',"timestamp":' . $it['time'] . '}';
            }
            $seq = self::$seqId++;
            $records[] = [$topic, "$seq EventLogging " . str_replace(' ', '\u0020', $json) . " $host " . gmdate('Y-m-d\TH:i:s', $it['time'])];
        }
        $options = ['brokers' => self::$config['brokers'], 'timeout' => (float) self::$config['timeout'],
            'connectTimeout' => (float) self::$config['connectTimeout']];
        $producer = self::$producer ??= new Kafka\Producer(['errorLog' => false, 'onError' => null]
            + $options + (is_array(self::$config['kafka']) ? self::$config['kafka'] : []) + ['throw' => false]);
        $ok = $producer->sendMany($records);
        $r = $producer->lastResult() ?? [];
        $result['ok'] = $ok;
        $result['accepted'] = count(array_filter($r['records'] ?? [], static fn (array $x): bool => $x['error'] === null));
        $result['records'] = $r['records'] ?? [];
        if (!$ok) {
            $result['error'] = (string) ($r['error'] ?? 'Kafka produce failed');
            self::report('could not send ' . count($items) . ' event(s) to Kafka: ' . $result['error'], ['events' => count($items)]);
        }
        return $result;
    }

    /**
     * @param array<string, mixed> $answer
     * @param list<array{json: string, label: string}> $items
     * @param array<string, mixed> $result
     * @return array<string, mixed>
     */
    private static function interpret(array $answer, array $items, array $result): array
    {
        if (isset($answer['error'])) {
            $result['error'] = (string) $answer['error'];
            self::report('could not send ' . count($items) . ' event(s): ' . $result['error'], ['events' => count($items)]);
            return $result;
        }
        $status = (int) ($answer['status'] ?? 0);
        $result['status'] = $status;
        $body = json_decode((string) ($answer['body'] ?? ''), true);
        if ($status === 202) {
            $result['ok'] = true;
            $result['accepted'] = count($items);
            return $result;
        }
        if (in_array($status, [201, 207, 400], true) && is_array($body) && isset($body['events']) && is_array($body['events'])) {
            $result['accepted'] = (int) ($body['accepted'] ?? 0);
            $result['invalid'] = (int) ($body['invalid'] ?? 0);
            $result['results'] = $body['events'];
            foreach ($body['events'] as $r) {
                if (($r['status'] ?? '') !== 'accepted') {
                    $i = (int) ($r['index'] ?? -1);
                    $label = $items[$i]['label'] ?? "event $i";
                    $code = (string) ($r['code'] ?? 'invalid');
                    $message = (string) ($r['message'] ?? '');
                    self::report("$label: invalid ($code): $message", ['uuid' => $r['uuid'] ?? null, 'errors' => $r['errors'] ?? []]);
                }
            }
            $result['ok'] = $result['invalid'] === 0 && $result['accepted'] === count($items);
            return $result;
        }
        $msg = is_array($body) && isset($body['error']) ? (string) $body['error'] : substr((string) ($answer['body'] ?? ''), 0, 200);
        $result['error'] = "the intake answered $status: $msg";
        self::report('could not send ' . count($items) . ' event(s): ' . $result['error'], ['status' => $status]);
        return $result;
    }

    /**
     * POSTs body as JSON over a PHP stream, within one deadline.
     *
     * @param array{timeout: float, connectTimeout: float, userAgent: string} $opts
     * @return array{status: int, headers: array<string, string>, body: string}|array{error: string}
     */
    private static function post(string $url, string $body, array $opts): array
    {
        return self::request('POST', $url, ['Content-Type: application/json'], $body, $opts);
    }

    /**
     * One HTTP/1.1 request over a PHP stream, within one deadline: the
     * intake's POSTs and the Kafka transport's schema registry reads
     * (Kafka\AvroSerializer). Credentials in the URL are sent as Basic
     * authentication. Internal to the client.
     *
     * @param list<string> $headers extra header lines, without CRLF
     * @param array{timeout: float, connectTimeout: float, userAgent: string} $opts
     * @return array{status: int, headers: array<string, string>, body: string}|array{error: string}
     */
    public static function request(string $method, string $url, array $headers, string $body, array $opts): array
    {
        $deadline = hrtime(true) + (int) ($opts['timeout'] * 1e9);
        $left = static fn (): float => max(0.0, ($deadline - hrtime(true)) / 1e9);
        $u = parse_url($url);
        if (!is_array($u) || !isset($u['host']) || !in_array($u['scheme'] ?? '', ['http', 'https'], true)) {
            return ['error' => "bad URL $url"];
        }
        $tls = $u['scheme'] === 'https';
        $port = $u['port'] ?? ($tls ? 443 : 80);
        $host = $u['host'];
        $target = ($u['path'] ?? '/') . (isset($u['query']) ? '?' . $u['query'] : '');
        $ctx = stream_context_create(['ssl' => ['peer_name' => trim($host, '[]'), 'SNI_enabled' => true]]);
        $errno = 0;
        $errstr = '';
        $sock = @stream_socket_client(($tls ? 'tls' : 'tcp') . "://$host:$port", $errno, $errstr,
            min($opts['connectTimeout'], $left()), STREAM_CLIENT_CONNECT, $ctx);
        if ($sock === false) {
            return ['error' => "connecting to $host:$port: " . ($errstr !== '' ? $errstr : "error $errno")];
        }
        try {
            stream_set_blocking($sock, false);
            $hostHeader = $host . (isset($u['port']) ? ':' . $u['port'] : '');
            if (isset($u['user'])) {
                $headers[] = 'Authorization: Basic ' . base64_encode(rawurldecode($u['user']) . ':' . rawurldecode($u['pass'] ?? ''));
            }
            if ($method !== 'GET') {
                $headers[] = 'Content-Length: ' . strlen($body);
            }
            $req = "$method $target HTTP/1.1\r\nHost: $hostHeader\r\n" . implode('', array_map(static fn (string $h): string => "$h\r\n", $headers))
                . "User-Agent: {$opts['userAgent']}\r\nConnection: close\r\n\r\n" . $body;
            while ($req !== '') {
                $t = $left();
                $r = null;
                $w = [$sock];
                $e = null;
                if ($t <= 0 || @stream_select($r, $w, $e, (int) $t, (int) (fmod($t, 1) * 1e6)) !== 1) {
                    return ['error' => sprintf('timeout after %.3fs sending the request', $opts['timeout'])];
                }
                $n = @fwrite($sock, $req);
                if ($n === false || $n === 0) {
                    return ['error' => 'connection closed while sending the request'];
                }
                $req = substr($req, $n);
            }
            $raw = '';
            while (true) {
                // Read first: TLS streams can hold decrypted data select does not see.
                $chunk = @fread($sock, 65536);
                if ($chunk === false) {
                    return ['error' => 'reading the answer failed'];
                }
                if ($chunk !== '') {
                    $raw .= $chunk;
                    if (self::complete($raw)) {
                        break;
                    }
                    continue;
                }
                if (feof($sock)) {
                    break;
                }
                $t = $left();
                $r = [$sock];
                $w = null;
                $e = null;
                if ($t <= 0 || @stream_select($r, $w, $e, (int) $t, (int) (fmod($t, 1) * 1e6)) !== 1) {
                    return ['error' => sprintf('timeout after %.3fs waiting for the answer', $opts['timeout'])];
                }
            }
            return self::parseResponse($raw);
        } finally {
            fclose($sock);
        }
    }

    /** Whether raw holds a whole answer (headers + Content-Length bytes). */
    private static function complete(string $raw): bool
    {
        $end = strpos($raw, "\r\n\r\n");
        if ($end === false || !preg_match('/\r\ncontent-length:\s*(\d+)/i', substr($raw, 0, $end + 2), $m)) {
            return false;
        }
        return strlen($raw) - $end - 4 >= (int) $m[1];
    }

    /**
     * @param array<string, mixed> $context
     */
    private static function report(string $message, array $context = []): void
    {
        $cb = self::$config['onError'];
        if (is_callable($cb)) {
            try {
                $cb($message, $context);
            } catch (\Throwable $e) {
                self::log('onError callback failed: ' . $e->getMessage());
            }
        }
        self::log($message);
    }

    private static function log(string $message): void
    {
        if (self::$config['errorLog']) {
            error_log('EventLogging: ' . $message);
        }
    }
}

