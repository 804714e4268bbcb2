<?php

// Drives the PHP client against a running intake, for
// cmd/eventlogging/clients_php_test.go:
//
//     php driver.php send URL [TIMEOUT]
//                                   logs events the way a page does and lets
//                                   the shutdown flush send them; prints the
//                                   flush result as one JSON line (TIMEOUT:
//                                   the client's timeout in seconds, default 1)
//     php driver.php timeout URL    one event, flushed at once; prints
//                                   {"ok", "elapsed" (hrtime, seconds), "error"}

declare(strict_types=1);

require __DIR__ . '/../autoload.php';

use EventLogging\EventLogging;
use EventLogging\MonologHandler;

[$mode, $url] = [$argv[1] ?? '', $argv[2] ?? ''];
if ($url === '' || !in_array($mode, ['send', 'timeout'], true)) {
    fwrite(STDERR, "usage: php driver.php send|timeout URL\n");
    exit(2);
}

$errors = [];
EventLogging::configure([
    'url' => $url,
    'wiki' => 'testwiki',
    'webHost' => 'php.example.org',
    'errorLog' => false,
    'onError' => function (string $msg) use (&$errors): void {
        $errors[] = $msg;
    },
]);

if ($mode === 'timeout') {
    EventLogging::logEvent('NavigationTiming', 7, ['responseStart' => 1, 'loadEventEnd' => 2]);
    $t0 = hrtime(true);
    $ok = EventLogging::flush();
    $elapsed = (hrtime(true) - $t0) / 1e9;
    echo json_encode(['ok' => $ok, 'elapsed' => $elapsed, 'error' => EventLogging::lastResult()['error'] ?? null, 'reported' => $errors]), "\n";
    exit(0);
}

// send: what a page would do during a request; the flush happens at shutdown.
EventLogging::configure([
    'timeout' => (float) ($argv[3] ?? 1.0),
    'onResult' => function (array $r) use (&$errors): void {
        $r['reported'] = $errors;
        echo json_encode($r), "\n";
    },
]);
EventLogging::logEvent('NavigationTiming', 7, ['responseStart' => 101, 'loadEventEnd' => 901, 'isHttps' => true]);
EventLogging::logEvent('NavigationTiming', 7, ['responseStart' => 102, 'loadEventEnd' => 902, 'mobileMode' => 'stable']);
EventLogging::logEvent('SearchQuery', 5, ['query' => 'php client', 'results' => 7, 'source' => 'autocomplete']);
// Invalid: responseStart must be an integer; the intake says why.
EventLogging::logEvent('NavigationTiming', 7, ['responseStart' => 'fast', 'loadEventEnd' => 903]);

$log = new MonologHandler('PhpLog', 900100, 'warning');
$log->handle(['message' => 'payment gateway slow', 'context' => ['ms' => 2300], 'level' => 300, 'level_name' => 'WARNING', 'channel' => 'billing', 'datetime' => new DateTimeImmutable(), 'extra' => []]);
$log->handle(['message' => 'debug noise', 'context' => [], 'level' => 100, 'level_name' => 'DEBUG', 'channel' => 'billing', 'datetime' => new DateTimeImmutable(), 'extra' => []]);
$log->handle(['message' => 'card declined', 'context' => [], 'level' => 400, 'level_name' => 'ERROR', 'channel' => 'billing', 'datetime' => new DateTimeImmutable(), 'extra' => []]);

fwrite(STDERR, 'queued ' . EventLogging::pending() . " events\n");
