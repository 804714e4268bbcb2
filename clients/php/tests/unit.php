<?php

// Unit tests of the PHP client, without an intake and without Monolog:
//
//     php clients/php/tests/unit.php
//
// Prints "ok: N checks" and exits 0, or prints the failures and exits 1.
// cmd/eventlogging/clients_php_test.go runs it.

declare(strict_types=1);

require __DIR__ . '/../autoload.php';

use EventLogging\EventLogging;
use EventLogging\MonologHandler;

ini_set('error_log', '/dev/null'); // the client's error_log lines are checked through onError

$checks = 0;
$failures = [];

function check(bool $ok, string $what): void
{
    global $checks, $failures;
    $checks++;
    if (!$ok) {
        $failures[] = $what;
    }
}

/** A Monolog 3 Level-like enum and LogRecord-like object, Monolog not installed. */
enum FakeLevel: int
{
    case Debug = 100;
    case Warning = 300;
    case Error = 400;
}

final class FakeLogRecord
{
    public function __construct(
        public readonly string $message,
        public readonly array $context = [],
        public readonly FakeLevel $level = FakeLevel::Warning,
        public readonly string $channel = 'app',
        public readonly array $extra = [],
    ) {
    }

    public function toArray(): array
    {
        return ['message' => $this->message, 'context' => $this->context, 'level' => $this->level->value,
            'level_name' => strtoupper($this->level->name), 'channel' => $this->channel, 'datetime' => new DateTimeImmutable(), 'extra' => $this->extra];
    }
}

/**
 * Sets up the client with a transport that records requests and answers
 * with $answer (array, or callable($body) => array).
 */
function setup(array|Closure $answer, array $options = []): stdClass
{
    $rec = new stdClass();
    $rec->requests = [];
    $rec->errors = [];
    $rec->results = [];
    EventLogging::reset();
    EventLogging::configure($options + [
        'url' => 'http://intake.test:8080/',
        'wiki' => 'testwiki',
        'webHost' => 'test.example.org',
        'flushOnShutdown' => false,
        'errorLog' => false,
        'onError' => function (string $msg, array $ctx) use ($rec): void {
            $rec->errors[] = $msg;
        },
        'onResult' => function (array $r) use ($rec): void {
            $rec->results[] = $r;
        },
        'transport' => function (string $url, string $body, array $opts) use ($rec, $answer): array {
            $rec->requests[] = ['url' => $url, 'body' => $body, 'opts' => $opts];
            return $answer instanceof Closure ? $answer($body) : $answer;
        },
    ]);
    return $rec;
}

/** The intake's synchronous answer: events with a "bad" field are invalid. */
function intakeAnswer(string $body): array
{
    $events = json_decode($body, true);
    $out = ['accepted' => 0, 'invalid' => 0, 'events' => []];
    foreach ($events as $i => $e) {
        $fields = $e['event'] ?? $e;
        if (isset($fields['bad'])) {
            $out['invalid']++;
            $out['events'][] = ['index' => $i, 'status' => 'invalid', 'uuid' => sprintf('%032x', $i), 'code' => 'validation',
                'message' => '/bad: additional property not allowed', 'errors' => [['pointer' => '/bad', 'reason' => 'additional property not allowed']]];
        } else {
            $out['accepted']++;
            $out['events'][] = ['index' => $i, 'status' => 'accepted', 'uuid' => sprintf('%032x', $i), 'topic' => 'eventlogging_X'];
        }
    }
    $status = $out['invalid'] === 0 ? 201 : ($out['accepted'] === 0 ? 400 : 207);
    return ['status' => $status, 'body' => json_encode($out)];
}

// 1. Events queue and go in ONE POST of a JSON array of capsules.
$rec = setup(fn (string $b) => intakeAnswer($b));
check(EventLogging::logEvent('NavigationTiming', 7, ['responseStart' => 120, 'loadEventEnd' => 950]), 'logEvent returns true');
check(EventLogging::logEvent('SearchQuery', 5, ['query' => 'ünïcode/slash', 'results' => 3, 'source' => 'fulltext']), 'second logEvent');
check(EventLogging::logEvent('Empty', 1, []), 'an empty event is queued');
check(EventLogging::submit('analytics.search_satisfaction', ['$schema' => '/analytics/search_satisfaction/1.0.0', 'action' => 'click', 'meta' => ['domain' => 'x']]), 'submit');
check(EventLogging::pending() === 4, 'four pending');
check(count($rec->requests) === 0, 'nothing sent before flush');
check(EventLogging::flush() === true, 'flush returns true when all accepted');
check(count($rec->requests) === 1, 'one POST for the whole queue');
check(EventLogging::pending() === 0, 'queue empty after flush');
$req = $rec->requests[0];
check($req['url'] === 'http://intake.test:8080/v1/events', 'POST to /v1/events (trailing slash of url trimmed): ' . $req['url']);
check($req['opts']['timeout'] === 1.0 && $req['opts']['connectTimeout'] === 1.0, 'default timeouts of 1 s');
$sent = json_decode($req['body'], true);
check(count($sent) === 4, 'four events in the body');
check($sent[0] === ['schema' => 'NavigationTiming', 'revision' => 7, 'event' => ['responseStart' => 120, 'loadEventEnd' => 950], 'webHost' => 'test.example.org', 'wiki' => 'testwiki'], 'capsule: ' . json_encode($sent[0]));
check(str_contains($req['body'], '"query":"ünïcode/slash"'), 'unescaped unicode and slashes');
check(str_contains($req['body'], '"event":{}'), 'an empty event is a JSON object: ' . $req['body']);
check($sent[3]['meta'] === ['domain' => 'x', 'stream' => 'analytics.search_satisfaction'], 'meta.stream set, meta kept');
check(preg_match('/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/', $sent[3]['dt'] ?? '') === 1, 'dt set: ' . ($sent[3]['dt'] ?? ''));
$last = EventLogging::lastResult();
check($last['ok'] === true && $last['status'] === 201 && $last['accepted'] === 4 && $last['events'] === 4, 'lastResult: ' . json_encode($last));
check(count($rec->results) === 1, 'onResult called once');
check(EventLogging::flush() === true && count($rec->requests) === 1, 'an empty flush sends nothing');

// 2. A 207: invalid events are reported with their reason; flush returns false.
$rec = setup(fn (string $b) => intakeAnswer($b));
EventLogging::logEvent('NavigationTiming', 7, ['responseStart' => 1, 'loadEventEnd' => 2]);
EventLogging::logEvent('NavigationTiming', 7, ['bad' => true]);
check(EventLogging::flush() === false, 'flush of a 207 returns false');
$last = EventLogging::lastResult();
check($last['status'] === 207 && $last['accepted'] === 1 && $last['invalid'] === 1, '207 counted: ' . json_encode($last));
check($last['results'][1]['errors'][0]['pointer'] === '/bad', 'violation pointer kept');
check(count($rec->errors) === 1 && str_contains($rec->errors[0], 'NavigationTiming/7: invalid (validation): /bad'), 'invalid event reported: ' . json_encode($rec->errors));

// 3. Failures never throw: transport error, 503, not configured, list events, queue full, bad JSON.
$rec = setup(['error' => 'connecting to intake.test:8080: Connection refused']);
EventLogging::logEvent('S', 1, ['a' => 1]);
check(EventLogging::flush() === false, 'transport error: false');
check(EventLogging::lastResult()['error'] === 'connecting to intake.test:8080: Connection refused', 'error kept');
check(count($rec->errors) === 1 && str_contains($rec->errors[0], 'could not send 1 event(s)'), 'transport error reported');
check(EventLogging::pending() === 0, 'failed events are not retried within the request');

$rec = setup(['status' => 503, 'body' => '{"status":503,"error":"cannot accept events now; retry later"}']);
EventLogging::logEvent('S', 1, ['a' => 1]);
check(EventLogging::flush() === false, '503: false');
check(str_contains((string) EventLogging::lastResult()['error'], '503: cannot accept events now'), '503 message: ' . EventLogging::lastResult()['error']);

$rec = setup(['status' => 202, 'body' => '{"queued":1}'], ['hasty' => true]);
EventLogging::logEvent('S', 1, ['a' => 1]);
check(EventLogging::flush() === true && $rec->requests[0]['url'] === 'http://intake.test:8080/v1/events?hasty=true', 'hasty: 202 is success');

$rec = setup(['status' => 201, 'body' => '{}'], ['maxQueue' => 2]);
check(EventLogging::logEvent('S', 1, [1, 2, 3]) === false, 'a list is not an event');
check(EventLogging::logEvent('S', 1, ['a' => 1]) && EventLogging::logEvent('S', 1, ['a' => 2]), 'two fit');
check(EventLogging::logEvent('S', 1, ['a' => 3]) === false, 'third refused: queue full');
check(EventLogging::submit('s', ['no' => 'schema']) === false, 'submit without $schema refused');
check(EventLogging::logEvent('S', 1, ['f' => NAN]) === false, 'NAN cannot be encoded');
check(count($rec->errors) === 4, 'each refusal reported: ' . json_encode($rec->errors));
check(EventLogging::configure(['nope' => 1]) === false, 'unknown option reported');

EventLogging::reset();
EventLogging::configure(['errorLog' => false]);
check(EventLogging::logEvent('S', 1, ['a' => 1]) === false, 'not configured: false');

// 4. MonologHandler: arrays (Monolog 1/2) and LogRecord-like objects (Monolog 3).
$rec = setup(fn (string $b) => intakeAnswer($b));
$h = new MonologHandler('PhpLog', 900100, 'warning');
check(!$h->isHandling(['level' => 200, 'message' => 'info']), 'info below warning not handled');
check($h->handle(['level' => 200, 'message' => 'info']) === false, 'unhandled record: false');
check($h->handle(['message' => 'disk full', 'context' => ['path' => '/var'], 'level' => 400, 'level_name' => 'ERROR', 'channel' => 'app', 'extra' => []]) === false, 'bubbling handler returns false');
check($h->handle(new FakeLogRecord('slow query', ['ms' => 1200], FakeLevel::Warning, 'db')) === false, 'object record');
check($h->handle(new FakeLogRecord('debug noise', [], FakeLevel::Debug)) === false && EventLogging::pending() === 2, 'debug object record not handled');
$h->pushProcessor(function (array|object $r): array|object {
    $a = MonologHandler::toArray($r);
    $a['message'] = '[processed] ' . $a['message'];
    return $a;
});
$h->handleBatch([['message' => 'batch', 'level' => 500, 'channel' => 'app']]);
check(EventLogging::pending() === 3, 'three events from records');
$stop = new MonologHandler('PhpLog', 900100, FakeLevel::Error, false);
check($stop->getLevel() === 400, 'Level enum accepted');
check($stop->handle(['message' => 'stop here', 'level' => 400, 'channel' => 'app']) === true, 'non-bubbling handler returns true');
$mapped = new MonologHandler('Custom', 2, 100, true, fn (array $r) => $r['message'] === 'skip' ? null : ['text' => $r['message'], 'lvl' => $r['level']]);
$mapped->handle(['message' => 'skip', 'level' => 100]);
$mapped->handle(['message' => 'kept', 'level' => 100]);
$h->close(); // Monolog's close(): flushes
check(count($rec->requests) === 1, 'close() flushed in one POST');
$sent = json_decode($rec->requests[0]['body'], true);
check(count($sent) === 5, 'five events: ' . count($sent));
check($sent[0]['schema'] === 'PhpLog' && $sent[0]['revision'] === 900100, 'schema and revision of the handler');
check($sent[0]['event'] === ['message' => 'disk full', 'channel' => 'app', 'level' => 'ERROR', 'context' => '{"path":"/var"}'], 'array record event: ' . json_encode($sent[0]['event']));
check($sent[1]['event'] === ['message' => 'slow query', 'channel' => 'db', 'level' => 'WARNING', 'context' => '{"ms":1200}'], 'object record event: ' . json_encode($sent[1]['event']));
check($sent[2]['event'] === ['message' => '[processed] batch', 'channel' => 'app', 'level' => 'CRITICAL'], 'processed record: ' . json_encode($sent[2]['event']));
check($sent[4] === ['schema' => 'Custom', 'revision' => 2, 'event' => ['text' => 'kept', 'lvl' => 100], 'webHost' => 'test.example.org', 'wiki' => 'testwiki'], 'mapper: ' . json_encode($sent[4]));
$long = MonologHandler::defaultEvent(['message' => str_repeat('é', 1500), 'level' => 100]);
check(mb_strlen_fallback($long['message']) === 1000 && $long['level'] === 'DEBUG', 'message cut at 1,000 characters');

function mb_strlen_fallback(string $s): int
{
    return preg_match_all('/./su', $s);
}

// 5. HTTP answers: Content-Length and chunked bodies.
$p = EventLogging::parseResponse("HTTP/1.1 207 Multi-Status\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}trailing");
check($p['status'] === 207 && $p['body'] === '{}' && $p['headers']['content-type'] === 'application/json', 'content-length answer: ' . json_encode($p));
$p = EventLogging::parseResponse("HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n4\r\n{\"a\"\r\n3;ext=1\r\n:1}\r\n0\r\n\r\n");
check($p['status'] === 201 && $p['body'] === '{"a":1}', 'chunked answer: ' . json_encode($p));
check(isset(EventLogging::parseResponse('garbage')['error']), 'garbage answer is an error');

// 6. Shutdown flush: registered once, sends the queue when the script ends.
$rec = setup(fn (string $b) => intakeAnswer($b), ['flushOnShutdown' => true]);
EventLogging::logEvent('S', 1, ['at' => 'shutdown']);
EventLogging::shutdown();
check(count($rec->requests) === 1 && EventLogging::pending() === 0, 'shutdown() flushed');
EventLogging::reset();

if ($failures !== []) {
    fwrite(STDERR, "FAIL:\n  " . implode("\n  ", $failures) . "\n");
    exit(1);
}
echo "ok: $checks checks\n";
